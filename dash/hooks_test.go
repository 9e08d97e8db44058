package dash

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
)

type position struct {
	c    Cursor
	slot uint8
}

// shadow is a copy of the table's layout (position -> key) kept up to date
// only from what the table reports: the position Insert returns, the
// position Erase is given, and the OnMove reports.
type shadow struct {
	at    map[position]string
	moved map[string]int // reported moves per key
	err   error
}

func newShadow(tbl *Table[uint64]) *shadow {
	return &shadow{at: layout(tbl), moved: map[string]int{}}
}

// layout is the table's actual position -> key map.
func layout(tbl *Table[uint64]) map[position]string {
	m := make(map[position]string, tbl.Len())
	for _, s := range tbl.segs {
		for bi := range s.b {
			for mm := s.b[bi].busy; mm != 0; mm &= mm - 1 {
				i := bits.TrailingZeros16(mm)
				m[position{s.base | Cursor(bi), uint8(i)}] = s.key(s.b[bi].off[i])
			}
		}
	}
	return m
}

// apply replays one report: the moves are simultaneous.
func (sh *shadow) apply(moves []Move) {
	keys := make([]string, len(moves))
	for i, m := range moves {
		from := position{m.From, m.FromSlot}
		k, ok := sh.at[from]
		if !ok && sh.err == nil {
			sh.err = fmt.Errorf("move %v from empty position %v/%d", m, m.From, m.FromSlot)
		}
		keys[i] = k
		delete(sh.at, from)
	}
	for i, m := range moves {
		to := position{m.To, m.ToSlot}
		if _, busy := sh.at[to]; busy && sh.err == nil {
			sh.err = fmt.Errorf("move %v into occupied position", m)
		}
		sh.at[to] = keys[i]
		sh.moved[keys[i]]++
	}
}

func (sh *shadow) compare(tbl *Table[uint64]) error {
	if sh.err != nil {
		return sh.err
	}
	real := layout(tbl)
	if len(real) != len(sh.at) {
		return fmt.Errorf("shadow has %d items, table %d", len(sh.at), len(real))
	}
	for p, k := range real {
		if sk, ok := sh.at[p]; !ok || sk != k {
			return fmt.Errorf("position %v/%d: table %q, replayed %q (%v)", p.c, p.slot, k, sk, ok)
		}
	}
	return nil
}

// TestMoveReplay replays every reported move over a copy of the layout and
// checks the copy equals the table, through splits, displacements and
// stash unloads.
func TestMoveReplay(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		rng := rand.New(rand.NewPCG(seed, 5))
		tbl := New[uint64]()
		sh := newShadow(tbl)
		tbl.OnMove(sh.apply)
		var live []string
		n := 60_000
		if testing.Short() {
			n = 15_000
		}
		for op := 0; op < n; op++ {
			if rng.IntN(100) < 62 || len(live) == 0 {
				k := "m" + strconv.Itoa(op)
				it, _ := tbl.Insert(k, uint64(op), uint64(op))
				sh.at[position{tbl.BucketOf(it), it.Slot()}] = k
				live = append(live, k)
			} else {
				j := rng.IntN(len(live))
				k := live[j]
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				it := tbl.Find(k)
				delete(sh.at, position{tbl.BucketOf(it), it.Slot()})
				tbl.Erase(it)
			}
			if op < 3000 || op%997 == 0 {
				if err := sh.compare(tbl); err != nil {
					t.Fatalf("seed %d op %d: %v", seed, op, err)
				}
			}
		}
		if err := sh.compare(tbl); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(sh.moved) == 0 {
			t.Fatalf("seed %d: no moves reported", seed)
		}
	}
}

// bucketDigests fingerprints every bucket's contents (keys and values).
func bucketDigests(tbl *Table[uint64]) map[Cursor]uint64 {
	m := make(map[Cursor]uint64, len(tbl.segs)*bucketsPerSeg)
	for _, s := range tbl.segs {
		for bi := range s.b {
			var d uint64
			for mm := s.b[bi].busy; mm != 0; mm &= mm - 1 {
				i := bits.TrailingZeros16(mm)
				d += Hash(s.key(s.b[bi].off[i]))*31 + s.vals[bi*slotsPerBucket+i]*0x9E3779B97F4A7C15 + uint64(i)
			}
			m[s.base|Cursor(bi)] = d
		}
	}
	return m
}

// changedBuckets lists the buckets whose contents differ between two
// digests. A bucket of a segment created since before is reported as its
// parent: the bucket its cursor resolved to before (clear the lowest
// segment bits until a known cursor remains).
func changedBuckets(before, after map[Cursor]uint64) map[Cursor]bool {
	changed := map[Cursor]bool{}
	for c, d := range after {
		p := c
		for {
			if _, ok := before[p]; ok {
				break
			}
			seg := uint64(p) >> 8
			p = Cursor((seg&(seg-1))<<8) | Cursor(p.Bucket())
		}
		if p != c {
			if d != 0 { // a new bucket that received items
				changed[p] = true
			}
			continue
		}
		if before[c] != d {
			changed[c] = true
		}
	}
	return changed
}

// TestChangeHooks checks that InsertChanges and EraseChanges report every
// bucket a mutation changes, across every kind of placement.
func TestChangeHooks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	tbl := New[uint64]()
	var live []string
	kinds := map[uint8]int{}
	unloads := 0
	n := 6000
	if testing.Short() {
		n = 2000
	}
	if longMode() {
		n = 60000
	}
	var cs []Cursor
	next := 0
	// Keep the table near a size where segments run full, so stash,
	// displacement and splits all happen; then the checked phase.
	for tbl.Segments() < 4 || tbl.Len() < 4*slotsPerSeg*92/100 {
		k := "h" + strconv.Itoa(next)
		next++
		tbl.Insert(k, uint64(next), 1)
		live = append(live, k)
	}
	for op := 0; op < n; op++ {
		before := bucketDigests(tbl)
		var reported []Cursor
		what := ""
		if rng.IntN(100) < 62 {
			k := "h" + strconv.Itoa(next)
			next++
			h := Hash(k)
			kinds[tbl.segmentOf(h).plan(h).kind]++
			cs = tbl.InsertChanges(cs[:0], k)
			reported = append(reported, cs...)
			if again := tbl.InsertChanges(nil, k); fmt.Sprint(again) != fmt.Sprint(cs) {
				t.Fatalf("op %d: InsertChanges not stable: %v then %v", op, cs, again)
			}
			tbl.Insert(k, uint64(next), uint64(op))
			live = append(live, k)
			what = "insert " + k
		} else {
			j := rng.IntN(len(live))
			k := live[j]
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			it := tbl.Find(k)
			cs = tbl.EraseChanges(cs[:0], it)
			if len(cs) > 1 {
				unloads++
			}
			reported = append(reported, cs...)
			tbl.Erase(it)
			what = "erase " + k
		}
		// A present key: Insert changes nothing and nothing is reported.
		if len(live) > 0 {
			if cs := tbl.InsertChanges(nil, live[0]); len(cs) != 0 {
				t.Fatalf("op %d: InsertChanges of a present key reported %v", op, cs)
			}
		}
		after := bucketDigests(tbl)
		rep := map[Cursor]bool{}
		for _, c := range reported {
			rep[c] = true
		}
		for c := range changedBuckets(before, after) {
			if !rep[c] {
				t.Fatalf("op %d (%s): bucket %v changed but was not reported (reported %v)", op, what, c, reported)
			}
		}
	}
	t.Logf("placements %v, unloads %d, segments %d", kinds, unloads, tbl.Segments())
	for _, k := range []uint8{planDirect, planDisplace, planStash, planSplit} {
		if kinds[k] == 0 {
			t.Errorf("placement kind %d never exercised: %v", k, kinds)
		}
	}
	if unloads == 0 {
		t.Error("no stash unload exercised")
	}
	if err := tbl.check(); err != nil {
		t.Fatal(err)
	}
}
