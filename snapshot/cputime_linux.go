package snapshot

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time and its id.
// CLOCK_THREAD_CPUTIME_ID is the scheduler's precise runtime, where
// getrusage(RUSAGE_THREAD) reads in steps of a timer tick (4 ms at HZ=250).
func threadCPU() (time.Duration, int) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, -1
	}
	return time.Duration(ts.Nano()), unix.Gettid()
}

// setThreadNice sets the calling thread's nice value; 0 restores the
// default. It reports whether the thread now has it.
func setThreadNice(n int) bool {
	if v, err := strconv.Atoi(os.Getenv("DFLY_BG_NICE")); err == nil && n > 0 {
		n = v // a development aid for measurements
	}
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n) == nil
}
