package main

import "testing"

func TestBuckets(t *testing.T) {
	for us := uint64(0); us < 1<<20; us++ {
		b := bucket(us)
		if us > upper(b) || (b > 0 && us <= upper(b-1)) {
			t.Fatalf("%d µs in bucket %d of (%d, %d]", us, b, upper(b-1), upper(b))
		}
		if us >= 8 && float64(upper(b)-us) > 0.125*float64(us) {
			t.Fatalf("%d µs: bucket bound %d is over 12.5%% off", us, upper(b))
		}
	}
	var h hist
	for us := uint64(1); us <= 1000; us++ { // 1..1000 µs, one each
		h[bucket(us)]++
	}
	if q := h.quantile(0.99); q < 0.990 || q > 0.990*1.125 {
		t.Fatalf("p99 of 1..1000 µs: %.3f ms", q)
	}
	if q := h.quantile(0.5); q < 0.500 || q > 0.500*1.125 {
		t.Fatalf("p50 of 1..1000 µs: %.3f ms", q)
	}
}
