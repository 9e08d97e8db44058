package metrics

import (
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Buckets' counts are exact at the powers of two: a value just under a
// bound counts in it, one at the bound only in the next.
func TestBuckets(t *testing.T) {
	h := hdrhistogram.New(1, 1_000_000_000, 2)
	for _, v := range []int64{1, 1023, 1024, 2047, 5000, 1 << 20, 2_000_000_000 / 2} {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	count, sum, buckets := Buckets(h)
	if count != 7 {
		t.Errorf("count %d, want 7", count)
	}
	if sum < 1.0 || sum > 1.02 {
		t.Errorf("sum %v s, want about 1.0015 s", sum)
	}
	want := map[float64]uint64{1024e-9: 2, 2048e-9: 4, 4096e-9: 4, 8192e-9: 5, float64(1<<20) / 1e9: 5,
		float64(1<<21) / 1e9: 6, float64(1<<29) / 1e9: 6, float64(1<<30) / 1e9: 7}
	for le, n := range want {
		if buckets[le] != n {
			t.Errorf("bucket le=%v: %d, want %d", le, buckets[le], n)
		}
	}
	if len(buckets) != lastBucket-firstBucket+1 {
		t.Errorf("%d buckets", len(buckets))
	}
}

func TestIsHTTP(t *testing.T) {
	for in, want := range map[string]bool{
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n": true,
		"GET /metrics HTTP/1.0\r\n":                true,
		"GET /metrics HTTP/1.1":                    false, // the line is not whole yet
		"GET key\r\n":                              false, // an inline GET
		"*2\r\n$3\r\nGET\r\n$1\r\na\r\n":           false,
		"POST /metrics HTTP/1.1\r\n":               false,
	} {
		if got := IsHTTP([]byte(in)); got != want {
			t.Errorf("IsHTTP(%q) = %v", in, got)
		}
	}
}
