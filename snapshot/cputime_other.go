//go:build !linux

package snapshot

import "time"

// threadCPU is unknown here: stalls are measured in wall time only.
func threadCPU() (time.Duration, int) { return 0, -1 }

// threadClock: unknown here (-1).
func threadClock() time.Duration { return -1 }

// threadID: unknown here (-1), so loops are not locked (lockLoop).
func threadID() int { return -1 }

// threadNice, setThreadNice: thread priorities are Linux only here.
func threadNice() (int, bool) { return 0, false }

func setThreadNice(int) bool { return true }

// yieldThread: unused where threadClock is unknown.
func yieldThread() {}
