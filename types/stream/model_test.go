package stream

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

var seedFlag = flag.Int64("seed", 1, "seed of the randomized tests (0: from the clock)")

// newRand returns the randomized tests' source, logging its seed so a
// failure can be replayed with -seed.
func newRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	return rand.New(rand.NewSource(seed))
}

type modelEntry struct {
	id     ID
	fields []string
}

func fieldStrings(e Entry) []string {
	var out []string
	for _, f := range e.Fields(nil) {
		out = append(out, string(f))
	}
	return out
}

// checkInvariants verifies the node layout against doc.go's invariants.
func checkInvariants(t *testing.T, s *Stream) {
	t.Helper()
	total := 0
	var prev ID
	first := true
	for ni, n := range s.nodes {
		if len(n.ids) == 0 {
			t.Fatalf("node %d is empty", ni)
		}
		if len(n.ids) != len(n.ends) {
			t.Fatalf("node %d: %d ids, %d ends", ni, len(n.ids), len(n.ends))
		}
		if len(n.ids)+n.deleted > NodeMaxEntries {
			t.Fatalf("node %d over-full: %d+%d", ni, len(n.ids), n.deleted)
		}
		if int(n.ends[len(n.ends)-1]) != len(n.data) {
			t.Fatalf("node %d: data %d bytes, last end %d", ni, len(n.data), n.ends[len(n.ends)-1])
		}
		for _, id := range n.ids {
			if !first && !prev.Less(id) {
				t.Fatalf("IDs out of order: %v then %v", prev, id)
			}
			if s.LastID.Less(id) {
				t.Fatalf("entry %v beyond LastID %v", id, s.LastID)
			}
			prev, first = id, false
		}
		total += len(n.ids)
	}
	if total != s.length {
		t.Fatalf("length %d, nodes hold %d", s.length, total)
	}
}

func compareRange(t *testing.T, s *Stream, model []modelEntry, start, end ID, rev bool) {
	t.Helper()
	var want []modelEntry
	for _, e := range model {
		if !e.id.Less(start) && !end.Less(e.id) {
			want = append(want, e)
		}
	}
	if rev {
		slices.Reverse(want)
	}
	it := s.Range(start, end, rev)
	for i := 0; ; i++ {
		e, ok := it.Next()
		if !ok {
			if i != len(want) {
				t.Fatalf("range [%v,%v] rev=%v: got %d entries, want %d", start, end, rev, i, len(want))
			}
			return
		}
		if i >= len(want) || e.ID != want[i].id || !slices.Equal(fieldStrings(e), want[i].fields) {
			t.Fatalf("range [%v,%v] rev=%v: entry %d is %v %v", start, end, rev, i, e.ID, fieldStrings(e))
		}
	}
}

func TestStreamModel(t *testing.T) {
	rng := newRand(t)
	for round := 0; round < 20; round++ {
		s := New()
		var model []modelEntry
		var added int64
		var maxDeleted ID
		randID := func() ID {
			if len(model) > 0 && rng.Intn(3) > 0 {
				id := model[rng.Intn(len(model))].id
				if rng.Intn(4) == 0 {
					id.Seq++
				}
				return id
			}
			return ID{uint64(rng.Intn(int(s.LastID.Ms) + 10)), uint64(rng.Intn(4))}
		}
		for op := 0; op < 3000; op++ {
			switch r := rng.Intn(100); {
			case r < 60:
				var explicit *ID
				seqGiven := true
				switch rng.Intn(3) {
				case 0:
					id := ID{s.LastID.Ms + uint64(rng.Intn(3)), uint64(rng.Intn(3))}
					explicit = &id
				case 1:
					id := ID{s.LastID.Ms + uint64(rng.Intn(2)), 0}
					explicit, seqGiven = &id, false
				}
				id, err := s.NextID(int64(op), explicit, seqGiven)
				if err != nil {
					if explicit == nil || s.LastID.Less(*explicit) && seqGiven {
						t.Fatalf("NextID(%v, %v): %v", explicit, seqGiven, err)
					}
					continue
				}
				n := 1 + rng.Intn(3)
				var fields [][]byte
				var strs []string
				for i := 0; i < 2*n; i++ {
					f := fmt.Sprintf("f%d-%d", op, rng.Intn(1000))
					if rng.Intn(50) == 0 {
						f = string(make([]byte, 1000+rng.Intn(3000)))
					}
					fields = append(fields, []byte(f))
					strs = append(strs, f)
				}
				s.Append(id, fields)
				model = append(model, modelEntry{id, strs})
				added++
			case r < 75:
				id := randID()
				i, found := slices.BinarySearchFunc(model, id, func(e modelEntry, id ID) int { return e.id.Compare(id) })
				if got := s.Delete(id); got != found {
					t.Fatalf("Delete(%v) = %v, want %v", id, got, found)
				}
				if found {
					model = slices.Delete(model, i, i+1)
					if maxDeleted.Less(id) {
						maxDeleted = id
					}
				}
			case r < 85:
				tr := Trim{Strategy: TrimMaxLen, MaxLen: int64(rng.Intn(len(model) + 5)), Approx: rng.Intn(2) == 0}
				if tr.Approx && rng.Intn(2) == 0 {
					tr.Limit = int64(rng.Intn(300))
				}
				before := len(model)
				would := s.Trims(tr)
				n := s.Trim(tr)
				if would != (n > 0) {
					t.Fatalf("Trims(%+v) = %v, Trim removed %d", tr, would, n)
				}
				if n < 0 || int(n) > before {
					t.Fatalf("Trim(%+v) = %d of %d", tr, n, before)
				}
				model = model[n:]
				if !tr.Approx && int64(len(model)) != min(tr.MaxLen, int64(before)) {
					t.Fatalf("exact Trim(%+v) left %d of %d", tr, len(model), before)
				}
				if tr.Limit > 0 && n > tr.Limit {
					t.Fatalf("Trim(%+v) removed %d", tr, n)
				}
				if int64(len(model)) < min(tr.MaxLen, int64(before)) {
					t.Fatalf("Trim(%+v) removed too much: %d left", tr, len(model))
				}
			case r < 90:
				tr := Trim{Strategy: TrimMinID, MinID: randID(), Approx: rng.Intn(2) == 0}
				if tr.Approx && rng.Intn(2) == 0 {
					tr.Limit = int64(rng.Intn(300))
				}
				would := s.Trims(tr)
				n := s.Trim(tr)
				if would != (n > 0) {
					t.Fatalf("Trims(%+v) = %v, Trim removed %d", tr, would, n)
				}
				for _, e := range model[:n] {
					if !e.id.Less(tr.MinID) {
						t.Fatalf("Trim(%+v) removed %v", tr, e.id)
					}
				}
				model = model[n:]
				if !tr.Approx && len(model) > 0 && model[0].id.Less(tr.MinID) {
					t.Fatalf("exact Trim(%+v) kept %v", tr, model[0].id)
				}
			default:
				a, b := randID(), randID()
				if b.Less(a) {
					a, b = b, a
				}
				compareRange(t, s, model, a, b, rng.Intn(2) == 0)
			}
			if s.Len() != len(model) {
				t.Fatalf("op %d: Len %d, model %d", op, s.Len(), len(model))
			}
		}
		checkInvariants(t, s)
		if s.EntriesAdded != added || s.MaxDeletedID != maxDeleted {
			t.Fatalf("EntriesAdded %d MaxDeletedID %v, want %d %v", s.EntriesAdded, s.MaxDeletedID, added, maxDeleted)
		}
		compareRange(t, s, model, MinID, MaxID, false)
		compareRange(t, s, model, MinID, MaxID, true)
		if len(model) > 0 && (s.FirstID() != model[0].id || s.LastEntryID() != model[len(model)-1].id) {
			t.Fatalf("FirstID %v LastEntryID %v", s.FirstID(), s.LastEntryID())
		}
		// Walk in chunks, mutating between chunks: the cursor resumes by ID.
		var walked []ID
		c := Cursor{}
		for !c.Done() {
			c = s.Walk(c, 1+rng.Intn(50), func(e Entry) { walked = append(walked, e.ID) })
		}
		var want []ID
		for _, e := range model {
			want = append(want, e.id)
		}
		if !slices.Equal(walked, want) {
			t.Fatalf("Walk: %d entries, want %d", len(walked), len(want))
		}
		// A clone is independent.
		cl := s.Clone().(*Stream)
		cl.Trim(Trim{Strategy: TrimMaxLen})
		if s.Len() != len(model) {
			t.Fatalf("Clone shares entries")
		}
		compareRange(t, s, model, MinID, MaxID, false)
	}
}

// Removed entries are always the oldest; a MINID trim never removes an
// entry at or above MinID.
func TestTrimMinIDKeepsNewer(t *testing.T) {
	s := New()
	for i := 1; i <= 350; i++ {
		s.Append(ID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")})
	}
	if n := s.Trim(Trim{Strategy: TrimMinID, MinID: ID{150, 0}, Approx: true}); n != 100 {
		t.Fatalf("approx MINID 150 removed %d, want one node of 100", n)
	}
	if n := s.Trim(Trim{Strategy: TrimMinID, MinID: ID{150, 0}}); n != 49 {
		t.Fatalf("exact MINID 150 removed %d, want 49", n)
	}
	if s.FirstID() != (ID{150, 0}) {
		t.Fatalf("first %v", s.FirstID())
	}
	if n := s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 0, Approx: true, Limit: 120}); n != 51 {
		t.Fatalf("approx MAXLEN 0 LIMIT 120 removed %d, want the 51-entry node", n)
	}
	if n := s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 10}); n != 140 || s.Len() != 10 {
		t.Fatalf("exact MAXLEN 10 removed %d, left %d", n, s.Len())
	}
	checkInvariants(t, s)
}

// A node's entries deleted by XDEL stay in it, as in a Redis listpack, so
// an approximate MINID trim compares with the last entry the node was
// given, not its last live one (found by the differential test).
func TestApproxMinIDSeesDeletedTail(t *testing.T) {
	s := New()
	for i := 1; i <= 5; i++ {
		s.Append(ID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")})
	}
	s.Delete(ID{5, 0})
	if n := s.Trim(Trim{Strategy: TrimMinID, MinID: ID{5, 0}, Approx: true}); n != 0 {
		t.Fatalf("approx MINID 5 removed %d entries of a node whose last entry (deleted) is 5-0", n)
	}
	if s.Trims(Trim{Strategy: TrimMinID, MinID: ID{5, 0}, Approx: true}) {
		t.Fatal("Trims says approx MINID 5 trims")
	}
	if n := s.Trim(Trim{Strategy: TrimMinID, MinID: ID{5, 1}, Approx: true}); n != 4 {
		t.Fatalf("approx MINID 5-1 removed %d, want the whole node's 4", n)
	}
	checkInvariants(t, s)
}

func TestNextID(t *testing.T) {
	s := New()
	if id, err := s.NextID(5, &ID{0, 0}, false); err != nil || id != (ID{0, 1}) {
		t.Fatalf("0-* on a new stream: %v %v", id, err)
	}
	s.Append(ID{10, 5}, nil)
	if _, err := s.NextID(5, &ID{10, 5}, true); err != ErrIDTooSmall {
		t.Fatalf("equal ID: %v", err)
	}
	if id, _ := s.NextID(5, &ID{10, 0}, false); id != (ID{10, 6}) {
		t.Fatalf("10-*: %v", id)
	}
	if id, _ := s.NextID(5, nil, true); id != (ID{10, 6}) {
		t.Fatalf("* with a clock behind: %v", id)
	}
	if id, _ := s.NextID(20, nil, true); id != (ID{20, 0}) {
		t.Fatalf("*: %v", id)
	}
	s.LastID = MaxID
	if _, err := s.NextID(20, nil, true); err != ErrExhausted {
		t.Fatalf("exhausted: %v", err)
	}
}

func TestParseID(t *testing.T) {
	for _, c := range []struct {
		in      string
		strict  bool
		auto    bool
		want    ID
		seq, ok bool
	}{
		{"1-2", true, false, ID{1, 2}, true, true},
		{"7", true, false, ID{7, 0}, true, true},
		{"-", false, false, MinID, true, true},
		{"+", false, false, MaxID, true, true},
		{"-", true, false, ID{}, false, false},
		{"5-*", true, true, ID{5, 0}, false, true},
		{"5-*", true, false, ID{}, false, false},
		{"18446744073709551615-18446744073709551615", true, false, MaxID, true, true},
		{"18446744073709551616", true, false, ID{}, false, false},
		{"-1", true, false, ID{}, false, false},
		{"1-", true, false, ID{}, false, false},
		{"a-1", true, false, ID{}, false, false},
		{"", true, false, ID{}, false, false},
		{" 5-+3", true, false, ID{5, 3}, true, true}, // strtoull's leniency
	} {
		id, seq, ok := ParseID([]byte(c.in), 0, c.strict, c.auto)
		if ok != c.ok || (ok && (id != c.want || seq != c.seq)) {
			t.Errorf("ParseID(%q) = %v %v %v, want %v %v %v", c.in, id, seq, ok, c.want, c.seq, c.ok)
		}
	}
}
