package list

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

func testSeed(t testing.TB) uint64 {
	seed := uint64(20240601) // fixed, so a run is reproducible; override to explore
	if s, err := strconv.ParseUint(os.Getenv("LIST_TEST_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (rerun with LIST_TEST_SEED=%d)", seed, seed)
	return seed
}

func randElem(r *rand.Rand) []byte {
	n := r.IntN(12)
	switch r.IntN(40) {
	case 0:
		n = 200 + r.IntN(300)
	case 1:
		n = 8<<10 + r.IntN(100) // a node of its own
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(3))
	}
	return b
}

func check(t *testing.T, l *List, model [][]byte) {
	t.Helper()
	if l.Len() != len(model) {
		t.Fatalf("len %d, model %d", l.Len(), len(model))
	}
	total := 0
	for i := 0; i < l.NumNodes(); i++ {
		b, n := l.Node(i)
		if n == 0 || len(b) == 0 {
			t.Fatal("empty node")
		}
		total += n
	}
	if total != len(model) {
		t.Fatalf("node counts %d", total)
	}
	i := 0
	if len(model) > 0 {
		l.Range(0, len(model)-1, func(v []byte) bool {
			if !bytes.Equal(v, model[i]) {
				t.Fatalf("elem %d: %q want %q", i, v, model[i])
			}
			i++
			return true
		})
		it := l.At(len(model) - 1)
		for j := len(model) - 1; j >= 0; j-- {
			if !bytes.Equal(it.Value(), model[j]) {
				t.Fatalf("backward elem %d", j)
			}
			it.Prev()
		}
	}
}

func TestListModel(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 1))
	for round := 0; round < 40; round++ {
		l := New()
		var model [][]byte
		for op := 0; op < 3000; op++ {
			switch k := r.IntN(12); {
			case k < 3:
				v := randElem(r)
				l.PushLeft(v)
				model = slices.Insert(model, 0, v)
			case k < 6:
				v := randElem(r)
				l.PushRight(v)
				model = append(model, v)
			case k == 6:
				v, ok := l.PopLeft()
				if ok != (len(model) > 0) || (ok && !bytes.Equal(v, model[0])) {
					t.Fatalf("op %d popleft", op)
				}
				if ok {
					model = model[1:]
				}
			case k == 7:
				v, ok := l.PopRight()
				if ok != (len(model) > 0) || (ok && !bytes.Equal(v, model[len(model)-1])) {
					t.Fatalf("op %d popright", op)
				}
				if ok {
					model = model[:len(model)-1]
				}
			case k == 8 && len(model) > 0:
				i := r.IntN(len(model))
				v := randElem(r)
				l.Set(i, v)
				model[i] = v
				if got, _ := l.Index(i - len(model)); !bytes.Equal(got, v) {
					t.Fatal("index after set")
				}
			case k == 9 && len(model) > 0:
				pivot := model[r.IntN(len(model))]
				after := r.IntN(2) == 0
				v := randElem(r)
				at := slices.IndexFunc(model, func(e []byte) bool { return bytes.Equal(e, pivot) })
				if after {
					at++
				}
				model = slices.Insert(model, at, v)
				if n := l.Insert(pivot, v, after); n != len(model) {
					t.Fatalf("insert: %d", n)
				}
			case k == 10:
				v := []byte{byte('a' + r.IntN(3))}
				count := r.IntN(5) - 2
				want := 0
				limit := count
				if limit < 0 {
					limit = -limit
				}
				if count >= 0 {
					for i := 0; i < len(model) && (count == 0 || want < limit); i++ {
						if bytes.Equal(model[i], v) {
							model = slices.Delete(model, i, i+1)
							i--
							want++
						}
					}
				} else {
					for i := len(model) - 1; i >= 0 && want < limit; i-- {
						if bytes.Equal(model[i], v) {
							model = slices.Delete(model, i, i+1)
							want++
						}
					}
				}
				if got := l.Remove(count, v); got != want {
					t.Fatalf("remove %d: %d want %d", count, got, want)
				}
			case k == 11 && len(model) > 4:
				a := r.IntN(3)
				b := r.IntN(3)
				l.DropLeft(a)
				l.DropRight(b)
				model = model[a : len(model)-b]
			}
		}
		check(t, l, model)
		check(t, l.Clone().(*List), model)
	}
}

func TestListPosAndIndex(t *testing.T) {
	l := New()
	for i := 0; i < 5000; i++ {
		l.PushRight([]byte(fmt.Sprintf("element-%05d", i)))
	}
	if l.NumNodes() < 5 {
		t.Fatalf("%d nodes for 5000 elements", l.NumNodes())
	}
	for _, i := range []int{0, 1, 2499, 2500, 4998, 4999} {
		v, _ := l.Index(i)
		if string(v) != fmt.Sprintf("element-%05d", i) {
			t.Fatalf("index %d: %q", i, v)
		}
	}
	if _, ok := l.Index(5000); ok {
		t.Fatal("index past end")
	}
}

func BenchmarkPushPop(b *testing.B) {
	v := []byte("a list element")
	for _, side := range []string{"right", "left"} {
		b.Run(side, func(b *testing.B) {
			l := New()
			for i := 0; i < 1000; i++ {
				l.PushRight(v)
			}
			b.ReportAllocs()
			for b.Loop() {
				if side == "right" {
					l.PushRight(v)
					l.PopLeft()
				} else {
					l.PushLeft(v)
					l.PopRight()
				}
			}
		})
	}
}
