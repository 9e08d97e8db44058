package snapshot

import (
	"fmt"
	"iter"
	"runtime"
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
	start := time.Now()
	p.Step()
	first := p.next
	if first <= threadClock() {
		t.Fatalf("the first step set the yield point to %v, not ahead of the thread's CPU time", first)
	}
	p.Step() // far less than 2 ms of CPU since: no yield
	if p.next != first || p.yields != 0 {
		t.Fatalf("yielded after less than its share: next %v -> %v, %d yields", first, p.next, p.yields)
	}
	// Steps before the share can be used up by the wall clock read no
	// thread clock (a system call).
	reads := p.reads
	for i := 0; i < 1000; i++ {
		p.Step()
	}
	if p.reads != reads && time.Since(start) < 2*time.Millisecond {
		t.Fatalf("%d thread clock reads within the first 2 ms", p.reads-reads)
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

// TestBackgroundSectionLowersByAStep: a BackgroundSection runs SectionNice
// steps below the thread's own priority, whatever that is (a server
// started under nice 10 gets 11, never 1, which would put its flows above
// its loops), and gives the thread its priority back at the end.
func TestBackgroundSectionLowersByAStep(t *testing.T) {
	if _, ok := threadNice(); !ok {
		t.Skip("no thread priorities here")
	}
	t.Setenv("DFLY_BG_NICE", "") // the default, SectionNice
	for _, base := range []int{0, 10} {
		errc := make(chan string, 1)
		go func() {
			// A thread of its own, ended with the goroutine: its priority
			// goes with it.
			runtime.LockOSThread()
			was, _ := threadNice()
			if base < was {
				errc <- "" // raising a thread's priority needs CAP_SYS_NICE
				return
			}
			if !setThreadNice(base) {
				errc <- "cannot set the base priority"
				return
			}
			end := BackgroundSection()
			in, _ := threadNice()
			end()
			after, _ := threadNice()
			switch {
			case in != base+SectionNice:
				errc <- fmt.Sprintf("base nice %d: %d inside the section, want %d", base, in, base+SectionNice)
			case after != base:
				errc <- fmt.Sprintf("base nice %d: %d after the section", base, after)
			default:
				errc <- ""
			}
		}()
		if e := <-errc; e != "" {
			t.Error(e)
		}
	}
}
