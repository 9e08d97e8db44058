package list

import (
	"runtime"
	"strconv"
	"testing"
)

// TestListMemory reports bytes per element of a 1M-element list after GC
// ("element:N"). Redis 7.0.15 spends about 16 bytes per element.
func TestListMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1M-element list")
	}
	const n = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := New()
	for i := 0; i < n; i++ {
		l.PushRight([]byte("element:" + strconv.Itoa(i)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("1M-element list: %.1f bytes/element, %d heap objects", per, int64(after.HeapObjects)-int64(before.HeapObjects))
	if per > 1.5*16 {
		t.Errorf("%.1f bytes/element, more than 1.5x Redis's 16", per)
	}
	runtime.KeepAlive(l)
}
