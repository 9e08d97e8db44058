package zset

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"
)

// model is the reference: a sorted slice of entries.
type model []entry

func (m model) find(member string) int {
	for i := range m {
		if m[i].member == member {
			return i
		}
	}
	return -1
}

func (m *model) add(member string, score float64) bool {
	i := m.find(member)
	added := i < 0
	if i >= 0 {
		*m = append((*m)[:i], (*m)[i+1:]...)
	}
	e := entry{member, score}
	pos := sort.Search(len(*m), func(k int) bool { return less(&e, &(*m)[k]) })
	*m = append(*m, entry{})
	copy((*m)[pos+1:], (*m)[pos:])
	(*m)[pos] = e
	return added
}

// seed is fixed so runs repeat; ZSET_SEED=n picks another, ZSET_SEED=time
// a fresh one. It is always printed.
func seed(t *testing.T) uint64 {
	s := uint64(20240607)
	switch v := os.Getenv("ZSET_SEED"); v {
	case "":
	case "time":
		s = uint64(time.Now().UnixNano())
	default:
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with ZSET_SEED=%d)", s, s)
	return s
}

// check compares every observable of s with m, and the tree invariants.
func check(t *testing.T, s *Set, m model) {
	t.Helper()
	if s.Len() != len(m) {
		t.Fatalf("len %d, model %d", s.Len(), len(m))
	}
	i := 0
	s.Ascend(0, func(member string, score float64) bool {
		if member != m[i].member || score != m[i].score {
			t.Fatalf("rank %d: got %q %v, model %q %v", i, member, score, m[i].member, m[i].score)
		}
		i++
		return true
	})
	if i != len(m) {
		t.Fatalf("ascend saw %d of %d", i, len(m))
	}
	if s.tree != nil {
		if s.dict.Len() != len(m) {
			t.Fatalf("dict has %d, model %d", s.dict.Len(), len(m))
		}
		checkNode(t, s.tree.root, nil, nil, true)
	}
}

func checkNode(t *testing.T, n *node, lo, hi *entry, root bool) {
	t.Helper()
	if n.leaf() {
		if n.count != len(n.entries) {
			t.Fatalf("leaf count %d, has %d", n.count, len(n.entries))
		}
		if !root && len(n.entries) == 0 {
			t.Fatalf("empty non-root leaf")
		}
		for i := range n.entries {
			e := &n.entries[i]
			if i > 0 && !less(&n.entries[i-1], e) {
				t.Fatalf("leaf out of order at %d", i)
			}
			if lo != nil && less(e, lo) || hi != nil && !less(e, hi) {
				t.Fatalf("entry %v outside its bounds", *e)
			}
		}
		return
	}
	if len(n.kids) != len(n.lows) || len(n.kids) > innerMax {
		t.Fatalf("inner node with %d kids %d lows", len(n.kids), len(n.lows))
	}
	if !root && len(n.kids) < 2 {
		t.Fatalf("non-root inner node with %d kids", len(n.kids))
	}
	if n.count != sumCounts(n.counts) || len(n.counts) != len(n.kids) {
		t.Fatalf("inner count %d, counts sum %d", n.count, sumCounts(n.counts))
	}
	for i, k := range n.kids {
		if n.counts[i] != k.count {
			t.Fatalf("counts[%d] = %d, kid has %d", i, n.counts[i], k.count)
		}
		klo, khi := lo, hi
		if i > 0 {
			klo = &n.lows[i]
		}
		if i+1 < len(n.kids) {
			khi = &n.lows[i+1]
		}
		checkNode(t, k, klo, khi, false)
	}
}

func TestModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 1))
	for round := 0; round < 4; round++ {
		s := New()
		if round%2 == 1 {
			s = NewSkiplist()
		}
		var m model
		pool := []int{50, 300, 3000, 8000}[round]
		steps := []int{3000, 6000, 20000, 40000}[round]
		for step := 0; step < steps; step++ {
			member := fmt.Sprintf("m%d", rng.IntN(pool))
			score := float64(rng.IntN(20))
			if rng.IntN(8) == 0 {
				score = rng.NormFloat64() * 1000
			}
			switch op := rng.IntN(20); {
			case op < 10 || step < steps/3:
				if got, want := s.Add([]byte(member), score), m.add(member, score); got != want {
					t.Fatalf("step %d: Add(%s) = %v, model %v", step, member, got, want)
				}
			case op < 14:
				i := m.find(member)
				if got := s.Remove([]byte(member)); got != (i >= 0) {
					t.Fatalf("step %d: Remove(%s) = %v", step, member, got)
				}
				if i >= 0 {
					m = append(m[:i], m[i+1:]...)
				}
			case op == 14 && len(m) > 0:
				a := rng.IntN(len(m))
				b := min(len(m)-1, a+rng.IntN(40))
				if n := s.RemoveRange(a, b); n != b-a+1 {
					t.Fatalf("RemoveRange = %d", n)
				}
				m = append(m[:a], m[b+1:]...)
			case op < 17:
				i := m.find(member)
				r, sc, ok := s.Rank([]byte(member))
				if ok != (i >= 0) || ok && (r != i || sc != m[i].score) {
					t.Fatalf("step %d: Rank(%s) = %d %v %v, model %d", step, member, r, sc, ok, i)
				}
				if len(m) > 0 {
					k := rng.IntN(len(m))
					if mem, sc := s.At(k); mem != m[k].member || sc != m[k].score {
						t.Fatalf("At(%d) = %s", k, mem)
					}
				}
			case op < 19:
				lo := float64(rng.IntN(22) - 1)
				r := ScoreRange{Min: lo, Max: lo + float64(rng.IntN(5)), MinEx: rng.IntN(2) == 0, MaxEx: rng.IntN(2) == 0}
				a, b := s.ScoreSpan(r)
				wa, wb := 0, 0
				for _, e := range m {
					if e.score < r.Min || r.MinEx && e.score == r.Min {
						wa++
					}
					if e.score < r.Max || !r.MaxEx && e.score == r.Max {
						wb++
					}
				}
				wb = max(wa, wb)
				if a != wa || b != wb {
					t.Fatalf("ScoreSpan(%+v) = %d,%d, model %d,%d", r, a, b, wa, wb)
				}
				// Descend from b-1 down to a matches the model.
				k := b - 1
				s.Descend(b-1, func(mem string, sc float64) bool {
					if mem != m[k].member {
						t.Fatalf("Descend at %d: %s, model %s", k, mem, m[k].member)
					}
					k--
					return k >= a
				})
			case len(m) > 300:
			default:
				// Lex ranges are defined for equal scores; test on a
				// one-score copy.
				lex := New()
				var lm model
				for _, e := range m {
					lex.Add([]byte(e.member), 0)
					lm.add(e.member, 0)
				}
				lo := fmt.Sprintf("m%d", rng.IntN(pool))
				hi := fmt.Sprintf("m%d", rng.IntN(pool))
				r := LexRange{Min: LexBound{Value: lo, Exclude: rng.IntN(2) == 0}, Max: LexBound{Value: hi, Exclude: rng.IntN(2) == 0}}
				if rng.IntN(5) == 0 {
					r.Min.Inf = -1
				}
				a, b := lex.LexSpan(r, false)
				if ra, rb := lex.LexSpan(r, true); ra != a || rb != b {
					t.Fatalf("LexSpan rev = %d,%d, forward %d,%d", ra, rb, a, b)
				}
				for _, rev := range []bool{false, true} {
					ga, gb := s.LexSpan(r, rev)
					if wa, wb := listpackLexWalk(m, r, rev); (ga != wa || gb != wb) && (ga != gb || wa != wb) {
						t.Fatalf("mixed scores: LexSpan(%+v, rev %v) = %d,%d, listpack walk %d,%d", r, rev, ga, gb, wa, wb)
					}
				}
				wa, wb := 0, 0
				for _, e := range lm {
					if r.belowMin(e.member) {
						wa++
					}
					if r.upToMax(e.member) {
						wb++
					}
				}
				if a != wa || b != max(wa, wb) {
					t.Fatalf("LexSpan = %d,%d, model %d,%d", a, b, wa, wb)
				}
			}
			if step%997 == 0 {
				check(t, s, m)
			}
		}
		check(t, s, m)
		c := s.Clone().(*Set)
		check(t, c, m)
		// Walk in chunks while mutating members already visited.
		var got model
		var cur Cursor
		for {
			next, done := c.Walk(cur, 7, func(mem string, sc float64) { got = append(got, entry{mem, sc}) })
			if done {
				break
			}
			if len(got) > 0 {
				c.Remove([]byte(got[0].member))
			}
			cur = next
		}
		if len(got) != len(m) {
			t.Fatalf("walk saw %d of %d", len(got), len(m))
		}
		for i := range got {
			if got[i] != m[i] {
				t.Fatalf("walk %d: %v, model %v", i, got[i], m[i])
			}
		}
		// Drain through removals down to empty.
		for len(m) > 0 {
			k := rng.IntN(len(m))
			s.Remove([]byte(m[k].member))
			m = append(m[:k], m[k+1:]...)
			if len(m)%501 == 0 {
				check(t, s, m)
			}
		}
		check(t, s, m)
	}
}

func TestEncodingLimits(t *testing.T) {
	s := New()
	for i := 0; i < int(MaxListpackEntries()); i++ {
		s.Add([]byte(strconv.Itoa(i)), float64(i))
	}
	if s.Encoding() != "listpack" {
		t.Fatalf("%d members: %s", s.Len(), s.Encoding())
	}
	s.Add([]byte("x"), 1)
	if s.Encoding() != "skiplist" {
		t.Fatalf("%d members: %s", s.Len(), s.Encoding())
	}
	s.RemoveRange(0, 10)
	s.Shrink()
	if s.Encoding() != "listpack" || s.Len() != int(MaxListpackEntries())-10 {
		t.Fatalf("after Shrink: %s %d", s.Encoding(), s.Len())
	}
	l := New()
	l.Add(make([]byte, MaxListpackValue()), 1)
	if l.Encoding() != "listpack" {
		t.Fatal("64-byte member converted")
	}
	l.Add(make([]byte, MaxListpackValue()+1), 1)
	if l.Encoding() != "skiplist" {
		t.Fatal("65-byte member kept listpack")
	}
}

// listpackLexWalk is the span Redis 7.0 answers a lex range with on a
// listpack sorted set of any scores (zzlFirstInLexRange /
// zzlLastInLexRange, then the walk on while the far end holds).
func listpackLexWalk(m model, r LexRange, rev bool) (start, end int) {
	n := len(m)
	if n == 0 || !r.upToMax(m[0].member) || r.belowMin(m[n-1].member) {
		return 0, 0
	}
	if rev {
		i := n - 1
		for i >= 0 && !r.upToMax(m[i].member) {
			i--
		}
		if i < 0 || r.belowMin(m[i].member) {
			return 0, 0
		}
		j := i
		for j >= 0 && !r.belowMin(m[j].member) {
			j--
		}
		return j + 1, i + 1
	}
	i := 0
	for i < n && r.belowMin(m[i].member) {
		i++
	}
	if i == n || !r.upToMax(m[i].member) {
		return 0, 0
	}
	j := i
	for j < n && r.upToMax(m[j].member) {
		j++
	}
	return i, j
}
