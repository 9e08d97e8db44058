package snapshot

import (
	"iter"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// Two Slices on one loop goroutine (two shards of one loop, or a BGSAVE and
// a replication flow) must leave its OS lock count at 1: a big value's
// coroutine (iter.Pull) created while both run is switched to after one
// finished, and the runtime aborts the process ("coro: OS thread locking
// must match locking at coroutine creation") if the count moved.
func TestLoopLockDoesNotNest(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		lockLoop() // first Slice starts
		lockLoop() // second Slice on the same goroutine
		next, stop := iter.Pull(func(yield func(int) bool) {
			for i := 0; yield(i); i++ {
			}
		})
		next()
		unlockLoop() // one finishes
		if v, ok := next(); !ok || v != 1 {
			t.Errorf("coroutine: %d %v", v, ok)
		}
		stop()
		unlockLoop() // the other finishes
	}()
	<-done
	loopLocks.mu.Lock()
	defer loopLocks.mu.Unlock()
	if len(loopLocks.n) != 0 {
		t.Fatalf("threads still counted as locked: %v", loopLocks.n)
	}
}

// TestCollectAhead: a heap fresh from a collection is left alone; one
// that used more than half of its cycle's room is collected, after which
// it is fresh again.
func TestCollectAhead(t *testing.T) {
	runtime.GC()
	if CollectAhead() {
		t.Fatal("collected a heap fresh from a collection")
	}
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	var sink []byte
	for i := 0; ; i++ {
		if i > 1<<16 {
			t.Fatal("the heap never reached 60% of its cycle's room")
		}
		sink = make([]byte, 64<<10) // garbage at the next allocation
		metrics.Read(s)
		goal, live, used := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
		if used > live+(goal-live)*6/10 {
			break
		}
	}
	_ = sink
	if !CollectAhead() {
		t.Fatal("a heap past half of its cycle's room was not collected")
	}
	if CollectAhead() {
		t.Fatal("collected again right after a collection")
	}
}

// TestPacerYieldsAfterItsShare: a Pacer yields once its thread has used
// SectionYield of CPU since the last yield, and not before; with
// DFLY_BG_YIELD_US=0 never.
func TestPacerYieldsAfterItsShare(t *testing.T) {
	runtime.LockOSThread() // thread CPU time is per thread
	defer runtime.UnlockOSThread()
	if threadClock() < 0 {
		t.Skip("no thread CPU clock here")
	}
	t.Setenv("DFLY_BG_YIELD_US", "2000")
	var p Pacer
	p.Step()
	first := p.next
	if first <= threadClock() {
		t.Fatalf("the first step set the yield point to %v, not ahead of the thread's CPU time", first)
	}
	p.Step() // far less than 2 ms of CPU since: no yield
	if p.next != first || p.yields != 0 {
		t.Fatalf("yielded after less than its share: next %v -> %v, %d yields", first, p.next, p.yields)
	}
	for threadClock() < first { // spin past the share
	}
	p.Step()
	if p.yields != 1 || p.next < first+2*time.Millisecond {
		t.Fatalf("did not yield after its share: %d yields, next %v, first %v", p.yields, p.next, first)
	}

	t.Setenv("DFLY_BG_YIELD_US", "0")
	var off Pacer
	off.Step()
	for start := threadClock(); threadClock() < start+time.Millisecond; {
	}
	off.Step()
	if off.yields != 0 {
		t.Fatalf("DFLY_BG_YIELD_US=0: %d yields", off.yields)
	}
}
