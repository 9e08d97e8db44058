package snapshot

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time and its id.
// CLOCK_THREAD_CPUTIME_ID is the scheduler's precise runtime, where
// getrusage(RUSAGE_THREAD) reads in steps of a timer tick (4 ms at HZ=250).
//
// Both are raw system calls: they never block, and a Go system call
// (entersyscall) lets the runtime take the processor away from a thread the
// kernel deschedules inside it; the shard's goroutine then waits in the run
// queue for a processor on return. Measured under a save with the SET load
// of tests/bench/bgsave.sh: a 13.6 ms stall of a step whose own work was
// microseconds, all clients of the loop waiting.
func threadCPU() (time.Duration, int) {
	cpu := threadClock()
	if cpu < 0 {
		return 0, -1
	}
	return cpu, threadID()
}

// threadClock is the calling thread's CPU time, or -1 where it cannot be
// read.
func threadClock() time.Duration {
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return time.Duration(ts.Nano())
}

// threadID is the calling thread's id (a raw system call, as above).
func threadID() int {
	tid, _, _ := unix.RawSyscall(unix.SYS_GETTID, 0, 0, 0)
	return int(tid)
}

// threadNice is the calling thread's nice value (false: unknown).
func threadNice() (int, bool) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		return 0, false
	}
	return 20 - p, true // the system call returns 20 - nice, never negative
}

// setThreadNice sets the calling thread's nice value. It reports whether
// the thread now has it.
func setThreadNice(n int) bool {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n) == nil
}

// yieldThread gives the CPU to another runnable thread, if any (a raw
// system call, as above: the thread keeps its P while it waits).
func yieldThread() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
