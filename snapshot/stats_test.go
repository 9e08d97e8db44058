package snapshot

import (
	"runtime"
	"testing"
	"time"
)

// lockedStallThread locks the test's goroutine to its thread, as a loop
// is during a snapshot, clears the stall maxima (and again at the end),
// and returns the thread's id.
func lockedStallThread(tb testing.TB) int {
	runtime.LockOSThread()
	ResetMaxStall()
	tb.Cleanup(func() {
		ResetMaxStall()
		runtime.UnlockOSThread()
	})
	return threadID()
}

// spin keeps the thread busy for d of wall time.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// spinCPU keeps the thread busy until it has run d of CPU time and wall of
// wall time (wall alone where the thread clock cannot be read): on a
// loaded machine a wall-time spin may get a fraction of its CPU (CI
// measured 0.66 ms in a 3 ms spin).
func spinCPU(d, wall time.Duration) {
	start, c0 := time.Now(), threadClock()
	for {
		el := time.Since(start)
		if el >= wall && (c0 < 0 || threadClock()-c0 >= d) || el > 10*time.Second {
			return
		}
	}
}

// The stall maxima: a long stretch raises both; a shorter one, which reads
// no clock, raises neither; a sleeping stretch raises only the wall time
// (where the thread clock can be read: a sleep is not CPU time of the
// thread the goroutine is locked to, as a loop is during a snapshot).
func TestStallTimerMaxima(t *testing.T) {
	tid := lockedStallThread(t)
	st := startStall(tid)
	spinCPU(3*time.Millisecond, 20*time.Millisecond) // long enough that a preempted 100 us spin stays shorter
	st.done()
	cpu, wall := ReadStats().MaxStall, ReadStats().MaxStallWall
	if wall < 20*time.Millisecond || cpu > wall {
		t.Fatalf("after a 20 ms stretch: max stall %v, wall %v", cpu, wall)
	}
	if threadClock() >= 0 && cpu < 3*time.Millisecond {
		t.Fatalf("a stretch of 3 ms of CPU counted %v", cpu)
	}
	st = startStall(tid)
	spin(100 * time.Microsecond)
	st.done()
	if got := ReadStats(); got.MaxStall != cpu || got.MaxStallWall != wall {
		t.Fatalf("a shorter stretch moved the maxima: %v, %v -> %v, %v", cpu, wall, got.MaxStall, got.MaxStallWall)
	}
	st = startStall(tid)
	time.Sleep(cpu + 20*time.Millisecond)
	st.done()
	got := ReadStats()
	if got.MaxStallWall < cpu+20*time.Millisecond {
		t.Fatalf("a %v sleep left the wall maximum at %v", cpu+20*time.Millisecond, got.MaxStallWall)
	}
	if threadClock() >= 0 && got.MaxStall > cpu+10*time.Millisecond {
		t.Fatalf("a sleep counted as CPU stall: %v -> %v", cpu, got.MaxStall)
	}
	ResetMaxStall()
	if got := ReadStats(); got.MaxStall != 0 || got.MaxStallWall != 0 {
		t.Fatalf("after ResetMaxStall: %v, %v", got.MaxStall, got.MaxStallWall)
	}
}

// BenchmarkStallTimerShort is a hook's stretch once the maximum is above
// it: one thread clock read (at the start) instead of two.
func BenchmarkStallTimerShort(b *testing.B) {
	tid := lockedStallThread(b)
	st := startStall(tid)
	spin(time.Millisecond)
	st.done()
	for b.Loop() {
		startStall(tid).done()
	}
}
