package hash

import (
	"runtime"
	"strconv"
	"testing"
)

// TestMapMemory reports bytes per field of a 1M-field hash, as the heap
// sees it after GC (fields "field:N", values "value:N"). Redis 7.0.15
// spends about 72 bytes per field on the same data (INFO used_memory).
func TestMapMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1M-field hash")
	}
	const n = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h := New()
	for i := 0; i < n; i++ {
		h.Set([]byte("field:"+strconv.Itoa(i)), []byte("value:"+strconv.Itoa(i)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perField := float64(after.HeapAlloc-before.HeapAlloc) / n
	objects := int64(after.HeapObjects) - int64(before.HeapObjects)
	t.Logf("1M-field hash: %.1f bytes/field, %d heap objects, Bytes()=%d", perField, objects, h.Bytes())
	if perField > 1.5*72 {
		t.Errorf("%.1f bytes/field, more than 1.5x Redis's 72", perField)
	}
	runtime.KeepAlive(h)
}
