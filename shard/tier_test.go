package shard

import (
	"bytes"
	"testing"
	"unsafe"
)

// fakeTier keeps offloaded values in a map by offset.
type fakeTier struct {
	file  map[int64][]byte
	freed []int64
	loads int
}

func (f *fakeTier) Free(v *Value) {
	off, _ := v.External()
	f.freed = append(f.freed, off)
}

func (f *fakeTier) Load(v *Value) ([]byte, error) {
	off, _ := v.External()
	f.loads++
	return bytes.Clone(f.file[off]), nil
}

func (f *fakeTier) FreeLater(v *Value) { f.Free(v) }

func (f *fakeTier) Read(v *Value, cb func([]byte, error)) {
	b, err := f.Load(v)
	cb(b, err)
}

func (f *fakeTier) offload(db *DB, key string, off int64) {
	v := db.Peek([]byte(key))
	f.file[off] = bytes.Clone(v.Str())
	v.SetExternal(off, uint32(v.StrLen()))
}

func TestValueStays24Bytes(t *testing.T) {
	if n := unsafe.Sizeof(Value{}); n != 24 {
		t.Fatalf("Value is %d bytes, want 24", n)
	}
	var v Value
	v.SetStr([]byte("hello"))
	v.HasExpire = true
	v.SetExternal(8<<20, 5)
	if off, n := v.External(); !v.IsExternal() || off != 8<<20 || n != 5 || v.StrLen() != 5 || v.Str() != nil || !v.HasExpire {
		t.Fatalf("external value: %v %d %d", v.IsExternal(), off, n)
	}
	v.SetStr([]byte("x"))
	if v.IsExternal() {
		t.Fatal("SetStr left the value external")
	}
}

func TestDBKeepsOffloadedValuesConsistent(t *testing.T) {
	s := New(0, 1)
	ft := &fakeTier{file: map[int64][]byte{}}
	s.SetTier(ft)
	db := s.DBs[0]
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		db.Insert([]byte(k), NewString(bytes.Repeat([]byte(k), 100)))
		ft.offload(db, k, int64(i)*128)
	}
	// Find loads and frees.
	_, v := db.Find([]byte("a"))
	if v.IsExternal() || string(v.Str()) != string(bytes.Repeat([]byte("a"), 100)) || ft.loads != 1 || len(ft.freed) != 1 {
		t.Fatalf("Find did not load: ext=%v loads=%d freed=%v", v.IsExternal(), ft.loads, ft.freed)
	}
	// With loading off, Find leaves it; Set replaces and frees.
	s.SetNoLoad(true)
	_, v = db.Find([]byte("b"))
	if !v.IsExternal() || ft.loads != 1 {
		t.Fatal("Find loaded with loading off")
	}
	db.Set([]byte("b"), NewString([]byte("new")), false)
	s.SetNoLoad(false)
	if len(ft.freed) != 2 || ft.freed[1] != 128 {
		t.Fatalf("Set did not free the old value: %v", ft.freed)
	}
	// Delete and expiry free.
	db.Delete(db.Table.Find("c"))
	it := db.Table.Find("d")
	db.SetExpire(it, 1)
	if _, v := db.Find([]byte("d")); v != nil {
		t.Fatal("d did not expire")
	}
	if len(ft.freed) != 4 || ft.loads != 1 {
		t.Fatalf("delete/expiry: freed %v loads %d", ft.freed, ft.loads)
	}
	// Flush frees the rest.
	db.Flush()
	if len(ft.freed) != 5 || ft.freed[4] != 4*128 {
		t.Fatalf("flush: freed %v", ft.freed)
	}
}
