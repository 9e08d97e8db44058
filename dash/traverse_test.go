package dash

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// workload drives random mutations between traversal steps: inserts of new
// keys (with bursts that force splits), deletes and in-place updates. The
// hooks let a test's snapshot act before each mutation, as a shard would.
type workload struct {
	rng   *rand.Rand
	tbl   *Table[uint64]
	live  []string
	index map[string]int
	next  int
	ver   uint64

	beforeInsert func(key string)
	beforeUpdate func(it Iterator)
	beforeErase  func(it Iterator)
	afterInsert  func(key string, it Iterator)
	erased       func(key string)
}

// newWorkload fills a table to segs segments, most of them near full, so
// the workload's inserts split many segments during a traversal.
func newWorkload(seed uint64, segs int) *workload {
	w := &workload{rng: rand.New(rand.NewPCG(seed, 11)), tbl: New[uint64](), index: map[string]int{}}
	for w.tbl.Segments() < segs || w.tbl.Len() < segs*slotsPerSeg*87/100 {
		w.insert()
	}
	return w
}

func (w *workload) insert() {
	k := "t" + strconv.Itoa(w.next)
	w.next++
	w.ver++
	if w.beforeInsert != nil {
		w.beforeInsert(k)
	}
	it, _ := w.tbl.Insert(k, w.rng.Uint64(), w.ver)
	if w.afterInsert != nil {
		w.afterInsert(k, it)
	}
	w.index[k] = len(w.live)
	w.live = append(w.live, k)
}

func (w *workload) step() {
	r := w.rng.IntN(100)
	switch {
	case r < 1:
		for i := 0; i < 100; i++ {
			w.insert()
		}
	case r < 45 || len(w.live) == 0:
		w.insert()
	case r < 75:
		j := w.rng.IntN(len(w.live))
		k := w.live[j]
		last := w.live[len(w.live)-1]
		w.live[j] = last
		w.index[last] = j
		w.live = w.live[:len(w.live)-1]
		delete(w.index, k)
		it := w.tbl.Find(k)
		if w.beforeErase != nil {
			w.beforeErase(it)
		}
		if w.erased != nil {
			w.erased(k)
		}
		w.tbl.Erase(it)
	default:
		it := w.tbl.Find(w.live[w.rng.IntN(len(w.live))])
		if w.beforeUpdate != nil {
			w.beforeUpdate(it)
		}
		w.ver++
		*w.tbl.Value(it) = w.rng.Uint64()
		w.tbl.Bump(it, w.ver)
	}
}

// splitsSeen counts the splits that happened during traversals, so a
// test can assert its workload exercised them.
var splitsSeen int

func traversalSeeds() uint64 {
	switch {
	case longMode():
		return 200
	case testing.Short():
		return 3
	}
	return 9
}

// TestTraverseNonPIT runs a bucket traversal step by step under a random
// workload, with a caller that handles moves like Dragonfly's OnMoved (it
// serializes an item moved from an unvisited to a visited position), and
// checks: every item present at the start and not deleted before it was
// reached is visited; an item never moved is visited exactly once; an item
// is visited twice only after a reported move from a visited to an
// unvisited position.
func TestTraverseNonPIT(t *testing.T) {
	splitsSeen = 0
	for seed := uint64(1); seed <= traversalSeeds(); seed++ {
		segs := []int{8, 32, 128}[seed%3]
		if err := runNonPIT(seed, segs, 2); err != nil {
			t.Fatalf("seed %d segments %d: %v", seed, segs, err)
		}
	}
	if splitsSeen < 2*int(traversalSeeds()) {
		t.Fatalf("only %d splits during %d traversals", splitsSeen, traversalSeeds())
	}
}

func runNonPIT(seed uint64, initial, opsPerStep int) error {
	w := newWorkload(seed, initial)
	tbl := w.tbl
	start := tbl.contents()
	sh := newShadow(tbl)
	visits := map[string]int{}
	extra := map[string]int{} // reported moves from visited to unvisited
	exempt := map[string]bool{}
	var cursor Cursor
	var err error
	fail := func(format string, a ...any) {
		if err == nil {
			err = fmt.Errorf(format, a...)
		}
	}
	tbl.OnMove(func(moves []Move) {
		for _, m := range moves {
			key := sh.at[position{m.From, m.FromSlot}]
			from, to := tbl.Visited(m.From, cursor), tbl.Visited(m.To, cursor)
			switch {
			case from && !to:
				extra[key]++
			case !from && to:
				// OnMoved: serialize the moved item at its destination.
				it := tbl.At(m.To, m.ToSlot)
				if !it.Valid() || tbl.Key(it) != key {
					fail("move %v: destination holds %q, want %q", m, tbl.Key(it), key)
					return
				}
				visits[key]++
			}
		}
		sh.apply(moves)
	})
	w.afterInsert = func(k string, it Iterator) { sh.at[position{tbl.BucketOf(it), it.Slot()}] = k }
	w.beforeErase = func(it Iterator) {
		k := tbl.Key(it)
		if visits[k] == 0 {
			exempt[k] = true // deleted before it was reached
		}
		delete(sh.at, position{tbl.BucketOf(it), it.Slot()})
	}
	steps, splitsBefore := 0, tbl.Segments()
	for {
		next := tbl.TraverseBuckets(cursor, func(b Cursor) {
			tbl.ForEach(b, func(it Iterator) { visits[tbl.Key(it)]++ })
		})
		steps++
		if next == 0 {
			break
		}
		cursor = next
		for i := 0; i < opsPerStep; i++ {
			w.step()
		}
		if err != nil {
			return fmt.Errorf("step %d: %v", steps, err)
		}
	}
	if err := sh.compare(tbl); err != nil {
		return err
	}
	splitsSeen += tbl.Segments() - splitsBefore
	moved := 0
	for k := range start {
		if exempt[k] {
			continue
		}
		n := visits[k]
		if sh.moved[k] > 0 {
			moved++
		}
		switch {
		case n == 0:
			return fmt.Errorf("key %q present at start never visited (moved %d times)", k, sh.moved[k])
		case sh.moved[k] == 0 && n != 1:
			return fmt.Errorf("key %q never moved but visited %d times", k, n)
		case n > 1+extra[k]:
			return fmt.Errorf("key %q visited %d times with %d visited->unvisited moves", k, n, extra[k])
		}
	}
	if moved == 0 {
		return fmt.Errorf("no start item moved: the test exercised nothing")
	}
	return nil
}

// pitSnapshot is a miniature point-in-time snapshot: bucket versions tell
// serialized from not, and the change hooks serialize buckets before a
// mutation touches them (OnDbChange, CVCUponInsert).
type pitSnapshot struct {
	tbl   *Table[uint64]
	snap  uint64
	out   map[string]uint64
	err   error
	hooks bool
	cs    []Cursor
}

func (p *pitSnapshot) serialize(b Cursor) {
	if p.tbl.Version(b) >= p.snap {
		return
	}
	p.tbl.ForEach(b, func(it Iterator) {
		k := p.tbl.Key(it)
		if _, dup := p.out[k]; dup && p.err == nil {
			p.err = fmt.Errorf("key %q serialized twice", k)
		}
		p.out[k] = *p.tbl.Value(it)
	})
	p.tbl.SetVersion(b, p.snap)
}

func (p *pitSnapshot) beforeInsert(key string) {
	if !p.hooks {
		return
	}
	for {
		p.cs = p.tbl.InsertChanges(p.cs[:0], key)
		pending := false
		for _, c := range p.cs {
			if p.tbl.Version(c) < p.snap {
				pending = true
				p.serialize(c)
			}
		}
		if !pending {
			return
		}
	}
}

func (p *pitSnapshot) beforeUpdate(it Iterator) {
	if p.hooks {
		p.serialize(p.tbl.BucketOf(it))
	}
}

func (p *pitSnapshot) beforeErase(it Iterator) {
	if !p.hooks {
		return
	}
	p.cs = p.tbl.EraseChanges(p.cs[:0], it)
	for _, c := range p.cs {
		p.serialize(c)
	}
}

// TestTraversePIT checks that a caller using versions and change hooks gets
// every item present at the start exactly once, with its value at the
// start, while the workload inserts, deletes, updates and splits.
func TestTraversePIT(t *testing.T) {
	splitsSeen = 0
	for seed := uint64(1); seed <= traversalSeeds(); seed++ {
		segs := []int{8, 32, 128}[seed%3]
		if err := runPIT(seed, segs, 2, true); err != nil {
			t.Fatalf("seed %d segments %d: %v", seed, segs, err)
		}
	}
	if splitsSeen < 2*int(traversalSeeds()) {
		t.Fatalf("only %d splits during %d traversals", splitsSeen, traversalSeeds())
	}
	// Without the hooks the same check must fail: the test can see a bug.
	if err := runPIT(1, 32, 2, false); err == nil {
		t.Fatal("PIT without change hooks passed: the check is blind")
	}
}

func runPIT(seed uint64, initial, opsPerStep int, hooks bool) error {
	w := newWorkload(seed, initial)
	tbl := w.tbl
	start := tbl.contents()
	w.ver++
	p := &pitSnapshot{tbl: tbl, snap: w.ver, out: map[string]uint64{}, hooks: hooks}
	w.ver++
	w.beforeInsert, w.beforeUpdate, w.beforeErase = p.beforeInsert, p.beforeUpdate, p.beforeErase
	var cursor Cursor
	segs := tbl.Segments()
	for {
		next := tbl.TraverseBuckets(cursor, p.serialize)
		if next == 0 {
			break
		}
		cursor = next
		for i := 0; i < opsPerStep; i++ {
			w.step()
		}
		if p.err != nil {
			return p.err
		}
	}
	splitsSeen += tbl.Segments() - segs
	if len(p.out) != len(start) {
		return fmt.Errorf("snapshot has %d items, start had %d", len(p.out), len(start))
	}
	for k, v := range start {
		if got, ok := p.out[k]; !ok || got != v {
			return fmt.Errorf("key %q: snapshot %d/%v, start %d", k, got, ok, v)
		}
	}
	return nil
}

// TestScan checks the SCAN guarantee: every key present for the whole scan
// is returned (exactly once here, since cursors come from the table), while
// keys are inserted and deleted and segments split between steps.
func TestScan(t *testing.T) {
	w := newWorkload(9, 32)
	tbl := w.tbl
	stable := map[string]bool{}
	for _, k := range w.live {
		stable[k] = true
	}
	w.erased = func(k string) { delete(stable, k) }
	seen := map[string]int{}
	var cursor uint64
	segs := tbl.Segments()
	for {
		cursor = tbl.Traverse(cursor, func(it Iterator) { seen[tbl.Key(it)]++ })
		if cursor == 0 {
			break
		}
		for i := 0; i < 2; i++ {
			w.step()
		}
	}
	if tbl.Segments() <= segs {
		t.Fatalf("workload split too little: %d -> %d segments", segs, tbl.Segments())
	}
	for k := range stable {
		if seen[k] != 1 {
			t.Fatalf("key %q present throughout returned %d times", k, seen[k])
		}
	}
	// Garbage cursors end the scan or continue it, never panic.
	for _, c := range []uint64{1 << 63, 255, 1<<40 | 3, 57} {
		tbl.Traverse(c, func(Iterator) {})
	}
}

// TestTraverseStatic checks that with no mutation a bucket traversal
// visits every item exactly once and the SCAN traversal too.
func TestTraverseStatic(t *testing.T) {
	tbl := New[uint64]()
	for i := 0; i < 30000; i++ {
		tbl.Insert(modelKey(i), uint64(i), 1)
	}
	seen := map[string]int{}
	var c Cursor
	buckets := 0
	for {
		c = tbl.TraverseBuckets(c, func(b Cursor) {
			buckets++
			tbl.ForEach(b, func(it Iterator) { seen[tbl.Key(it)]++ })
		})
		if c == 0 {
			break
		}
		if !tbl.Visited(tbl.BucketOf(tbl.Find("k1")), c) && seen["k1"] > 0 {
			t.Fatal("Visited says no for a visited item's bucket")
		}
	}
	scanned := map[string]int{}
	var sc uint64
	for {
		sc = tbl.Traverse(sc, func(it Iterator) { scanned[tbl.Key(it)]++ })
		if sc == 0 {
			break
		}
	}
	for i := 0; i < 30000; i++ {
		if seen[modelKey(i)] != 1 || scanned[modelKey(i)] != 1 {
			t.Fatalf("key %q: traversal %d, scan %d", modelKey(i), seen[modelKey(i)], scanned[modelKey(i)])
		}
	}
}
