package snapshot

import (
	"iter"
	"testing"
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
