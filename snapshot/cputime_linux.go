package snapshot

import (
	"syscall"
	"time"
)

// threadCPU is the calling thread's CPU time (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(1, &ru) != nil { // 1: RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
