package set

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

func testSeed(t testing.TB) uint64 {
	seed := uint64(20240601) // fixed, so a run is reproducible; override to explore
	if s, err := strconv.ParseUint(os.Getenv("SET_TEST_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (rerun with SET_TEST_SEED=%d)", seed, seed)
	return seed
}

func check(t *testing.T, s *Set, model map[string]bool) {
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("len %d, model %d (%s)", s.Len(), len(model), s.Encoding())
	}
	for m := range model {
		if !s.Contains([]byte(m)) {
			t.Fatalf("missing %q", m)
		}
	}
	n := 0
	s.Range(func(m []byte) bool {
		if !model[string(m)] {
			t.Fatalf("unexpected %q", m)
		}
		n++
		return true
	})
	if n != len(model) {
		t.Fatalf("range saw %d", n)
	}
}

func TestSetModel(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 1))
	for round := 0; round < 30; round++ {
		s := New()
		model := map[string]bool{}
		universe := 10 + r.IntN(1500)
		strings := r.IntN(3) == 0 // otherwise integers only, mostly intset
		for op := 0; op < 5000; op++ {
			m := strconv.Itoa(r.IntN(universe) - universe/2)
			if strings && r.IntN(100) == 0 {
				m = fmt.Sprintf("m%d", r.IntN(universe))
			}
			switch r.IntN(5) {
			case 0, 1:
				if s.Add([]byte(m)) == model[m] {
					t.Fatalf("add %q", m)
				}
				model[m] = true
			case 2:
				if s.Remove([]byte(m)) != model[m] {
					t.Fatalf("remove %q", m)
				}
				delete(model, m)
			case 3:
				if s.Contains([]byte(m)) != model[m] {
					t.Fatalf("contains %q", m)
				}
			case 4:
				if s.Len() > 0 && r.IntN(10) == 0 {
					p := s.Pop(nil, r.Uint64())
					if !model[string(p)] {
						t.Fatalf("popped %q", p)
					}
					delete(model, string(p))
				}
			}
		}
		check(t, s, model)
		check(t, s.Clone().(*Set), model)
		if s.IsIntset() {
			ints := s.Ints()
			for i := 1; i < len(ints); i++ {
				if ints[i-1] >= ints[i] {
					t.Fatal("intset not sorted")
				}
			}
		}
	}
}

func TestSetEncodingBoundaries(t *testing.T) {
	s := New()
	for i := 0; i < int(MaxIntsetEntries()); i++ {
		s.Add([]byte(strconv.Itoa(i * 7)))
	}
	if s.Encoding() != "intset" {
		t.Fatalf("%d ints: %s", MaxIntsetEntries(), s.Encoding())
	}
	s.Add([]byte("7")) // present: no growth
	if s.Encoding() != "intset" {
		t.Fatal("duplicate converted")
	}
	s.Add([]byte("1"))
	if s.Encoding() != "hashtable" || int64(s.Len()) != MaxIntsetEntries()+1 {
		t.Fatalf("%d ints: %s", MaxIntsetEntries()+1, s.Encoding())
	}
	for _, m := range []string{"01", "+1", " 1", "1.0", "9223372036854775808", "-0", ""} {
		s := New()
		s.Add([]byte("5"))
		s.Add([]byte(m))
		if s.Encoding() != "hashtable" {
			t.Fatalf("%q kept intset", m)
		}
	}
	s = New()
	s.Add([]byte("-9223372036854775808"))
	s.Add([]byte("9223372036854775807"))
	if s.Encoding() != "intset" {
		t.Fatal("int64 bounds left intset")
	}
}

func BenchmarkSAdd(b *testing.B) {
	for _, kind := range []string{"int", "str"} {
		b.Run(kind, func(b *testing.B) {
			members := make([][]byte, 1<<16)
			for i := range members {
				if kind == "int" {
					members[i] = []byte(strconv.Itoa(i * 3))
				} else {
					members[i] = []byte("member:" + strconv.Itoa(i))
				}
			}
			b.ReportAllocs()
			s := New()
			for i := 0; b.Loop(); i++ {
				s.Add(members[i&(len(members)-1)])
			}
		})
	}
}

func BenchmarkSIsMember(b *testing.B) {
	for _, n := range []int{500, 1 << 16} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			members := make([][]byte, n)
			s := New()
			for i := range members {
				members[i] = []byte(strconv.Itoa(i))
				s.Add(members[i])
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if !s.Contains(members[i%n]) {
					b.Fatal("missing")
				}
			}
		})
	}
}
