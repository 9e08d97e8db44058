package set

import (
	"runtime"
	"strconv"
	"testing"
)

// TestSetMemory reports bytes per member of a 1M-member string set after
// GC ("member:N"). Redis 7.0.15 spends about 56 bytes per member.
func TestSetMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1M-member set")
	}
	const n = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New()
	for i := 0; i < n; i++ {
		s.Add([]byte("member:" + strconv.Itoa(i)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("1M-member set: %.1f bytes/member, %d heap objects", per, int64(after.HeapObjects)-int64(before.HeapObjects))
	if per > 1.5*56 {
		t.Errorf("%.1f bytes/member, more than 1.5x Redis's 56", per)
	}
	runtime.KeepAlive(s)
}
