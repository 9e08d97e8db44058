package rdb

import (
	"bytes"
	"testing"
)

func benchData(b *testing.B) []byte {
	r := testRandSeed(42)
	ds := randDataset(r, 3000, false)
	var out bytes.Buffer
	if err := encodeDataset(NewEncoder(&out), ds); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}

func BenchmarkDecode(b *testing.B) {
	data := benchData(b)
	d := NewDecoder(nil)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(bytes.NewReader(data))
		if err := d.Decode(NopHandler{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeList(b *testing.B) {
	elem := []byte("some-list-element-0123456789")
	e := NewEncoder(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(elem)) * 1000)
	for b.Loop() {
		e.BeginList([]byte("key"), 1000, Meta{})
		for range 1000 {
			e.ListElement(elem)
		}
		if err := e.End(); err != nil {
			b.Fatal(err)
		}
		e.buf = e.buf[:0]
	}
}
