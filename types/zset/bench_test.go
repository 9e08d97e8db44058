package zset

import (
	"strconv"
	"testing"
)

func members(n int) [][]byte {
	m := make([][]byte, n)
	for i := range m {
		m[i] = []byte("member:" + strconv.Itoa(i))
	}
	return m
}

// filled is a set of n members with pseudo-random distinct-ish scores.
func filled(n int) (*Set, [][]byte) {
	ms := members(n)
	s := New()
	for i, m := range ms {
		s.Add(m, float64(uint32(i)*2654435761%uint32(n*4)))
	}
	return s, ms
}

var sizes = []struct {
	name string
	n    int
}{{"1K", 1000}, {"1M", 1000000}}

// BenchmarkAdd measures ZADD of a new member into a set of the given size
// (each add is undone so the size stays put).
func BenchmarkAdd(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			s, _ := filled(sz.n)
			extra := members(1024)
			for i := range extra {
				extra[i] = append([]byte("new:"), extra[i]...)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				m := extra[i&1023]
				s.Add(m, float64(i%(sz.n*4)))
				s.Remove(m)
			}
		})
	}
}

// BenchmarkRank measures ZRANK of a present member.
func BenchmarkRank(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			s, ms := filled(sz.n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, _, ok := s.Rank(ms[(i*7919)%sz.n]); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}

// BenchmarkRange measures ZRANGE of 10 members at a random rank.
func BenchmarkRange(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			s, _ := filled(sz.n)
			b.ReportAllocs()
			b.ResetTimer()
			sum := 0.0
			for i := 0; b.Loop(); i++ {
				left := 10
				s.Ascend((i*7919)%(sz.n-10), func(m string, sc float64) bool {
					sum += sc
					left--
					return left > 0
				})
			}
			_ = sum
		})
	}
}
