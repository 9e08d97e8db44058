package stream

import (
	"strconv"
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	fields := [][]byte{[]byte("sensor"), []byte("temperature"), []byte("value"), []byte("21.5")}
	s := New()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		id, _ := s.NextID(int64(i), nil, true)
		s.Append(id, fields)
	}
}

func BenchmarkRange10(b *testing.B) {
	s := New()
	fields := [][]byte{[]byte("f"), []byte("v")}
	const n = 1 << 20
	for i := 1; i <= n; i++ {
		s.Append(ID{uint64(i), 0}, fields)
	}
	var scratch [][]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := s.Range(ID{uint64(i%n + 1), 0}, MaxID, false)
		for k := 0; k < 10; k++ {
			e, ok := it.Next()
			if !ok {
				break
			}
			scratch = e.Fields(scratch[:0])
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	s := New()
	for i := 1; i <= 1<<20; i++ {
		s.Append(ID{uint64(i), 0}, [][]byte{[]byte("f"), []byte(strconv.Itoa(i))})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Lookup(ID{uint64(i&(1<<20-1) + 1), 0})
	}
}
