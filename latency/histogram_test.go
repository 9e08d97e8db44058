package latency

import (
	"slices"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/dfly/dfly/command"
)

// The buckets are Redis's: 1024 ns times a power of two, named by their
// highest equivalent value in whole microseconds, cumulative, only where
// the count grew (values as redis-server 7.0.15 reports them: a 9 µs SET
// in "16", a 10 ms DEBUG SLEEP in "16908").
func TestCDF(t *testing.T) {
	for _, c := range []struct {
		ns   []int64
		want []int64
	}{
		{[]int64{1}, []int64{1, 1}},
		{[]int64{1031}, []int64{1, 1}},
		{[]int64{1032}, []int64{2, 1}},
		{[]int64{9023}, []int64{16, 1}},
		{[]int64{10_289_151}, []int64{16908, 1}},
		{[]int64{500, 700, 9000, 20_000, 20_000}, []int64{1, 2, 16, 3, 33, 5}},
		{[]int64{highestNs}, nil}, // past the last bucket, as in Redis
	} {
		h := hdrhistogram.New(lowestNs, highestNs, digits)
		for _, v := range c.ns {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		if got := cdf(h); !slices.Equal(got, c.want) {
			t.Errorf("cdf of %v: %v, want %v", c.ns, got, c.want)
		}
	}
}

// Recorders merge per command; a reader copies while recording goes on.
func TestTrackerMerged(t *testing.T) {
	set, get := &command.Command{Name: "set"}, &command.Command{Name: "get"}
	tr := NewTracker(3)
	tr.Recorder(0).Record(set, 100)
	tr.Recorder(2).Record(set, 5000)
	tr.Recorder(1).Record(get, 0) // counted as 1 ns
	m := tr.Merged()
	if m[set].TotalCount() != 2 || m[get].TotalCount() != 1 || m[set].Max() < 4900 {
		t.Fatalf("merged: set %d get %d", m[set].TotalCount(), m[get].TotalCount())
	}
	tr.Recorder(0).Record(set, 100)
	if m[set].TotalCount() != 2 {
		t.Fatal("Merged's histograms are not copies")
	}
	tr.Reset()
	if len(tr.Merged()) != 0 {
		t.Fatal("Reset kept histograms")
	}
}

// BenchmarkRecord is the cost latency tracking adds to a command on a
// shard: the recorder's mutex (uncontended) and the histogram's count.
func BenchmarkRecord(b *testing.B) {
	cmds := []*command.Command{{Name: "get"}, {Name: "set"}, {Name: "incr"}, {Name: "lpush"}}
	r := &Recorder{}
	for _, c := range cmds {
		r.Record(c, 1) // the first call allocates the histogram
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Record(cmds[i&3], int64(300+i&1023))
	}
}

// BenchmarkRecordWhileScraped records while another goroutine reads every
// histogram in a loop, as a scraper would.
func BenchmarkRecordWhileScraped(b *testing.B) {
	cmd := &command.Command{Name: "get"}
	tr := NewTracker(1)
	r := tr.Recorder(0)
	r.Record(cmd, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				tr.Merged()
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Record(cmd, int64(300+i&1023))
	}
	b.StopTimer()
	close(stop)
	<-done
}
