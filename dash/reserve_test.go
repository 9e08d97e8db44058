package dash

import (
	"strconv"
	"testing"
)

// A table reserved for n keys takes them without a split, and its arenas
// grow about once each.
func TestReserveEmpty(t *testing.T) {
	for _, n := range []int{1, 500, 10_000, 300_000} {
		tbl := New[uint64]()
		tbl.Reserve(n)
		segs := tbl.Segments()
		if n > reserveFill && segs*reserveFill < n {
			t.Fatalf("n=%d: %d segments hold %d at reserveFill", n, segs, segs*reserveFill)
		}
		grows := 0
		last := map[uint32]int{}
		for i := range n {
			k := "key:" + strconv.Itoa(i)
			it, ok := tbl.Insert(k, uint64(i), 1)
			if !ok {
				t.Fatalf("n=%d: %s not inserted", n, k)
			}
			s := tbl.segs[it.seg]
			if c := cap(s.arena); c != last[s.id] {
				last[s.id] = c
				grows++
			}
		}
		if tbl.Segments() != segs {
			t.Errorf("n=%d: %d segments after the inserts, %d reserved: a segment split", n, tbl.Segments(), segs)
		}
		// Each segment's arena is allocated from its first key's size, then
		// again from the mean of the keys it holds when that falls short
		// (here often: keys come in order, short ones first). Without the
		// reservation, 300k keys took 2964 arena allocations in 512
		// segments, besides the splits.
		if grows > 3*segs {
			t.Errorf("n=%d: %d arena allocations for %d segments", n, grows, segs)
		}
		if err := tbl.check(); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for i := range n {
			if it := tbl.Find("key:" + strconv.Itoa(i)); !it.Valid() || *tbl.Value(it) != uint64(i) {
				t.Fatalf("n=%d: key:%d lost", n, i)
			}
		}
	}
}

// Reserve on a table holding items splits it as Inserts would: items,
// versions and the reported moves stay exact.
func TestReserveNonEmpty(t *testing.T) {
	tbl := New[uint64]()
	sh := newShadow(tbl)
	tbl.OnMove(sh.apply)
	versions := map[string]uint64{}
	for i := range 5000 {
		k := "m" + strconv.Itoa(i)
		it, _ := tbl.Insert(k, uint64(i), uint64(i+1))
		sh.at[position{tbl.BucketOf(it), it.Slot()}] = k
		versions[k] = uint64(i + 1)
	}
	before := tbl.Segments()
	tbl.Reserve(200_000)
	if tbl.Segments() <= before {
		t.Fatalf("Reserve(200000) left %d segments", tbl.Segments())
	}
	if err := tbl.check(); err != nil {
		t.Fatal(err)
	}
	if err := sh.compare(tbl); err != nil {
		t.Fatalf("moves: %v", err)
	}
	for k, v := range versions {
		it := tbl.Find(k)
		if !it.Valid() {
			t.Fatalf("%s lost", k)
		}
		if got := tbl.Version(tbl.BucketOf(it)); got < v {
			t.Fatalf("%s: bucket version %d below the insert's %d", k, got, v)
		}
	}
	// A smaller reservation changes nothing.
	segs := tbl.Segments()
	tbl.Reserve(1000)
	if tbl.Segments() != segs {
		t.Fatalf("Reserve(1000) after Reserve(200000): %d segments, was %d", tbl.Segments(), segs)
	}
}

// A count from outside is capped: Reserve never builds more than
// MaxReserve needs.
func TestReserveCap(t *testing.T) {
	tbl := New[uint64]()
	tbl.Reserve(1 << 50)
	if max := 2 * MaxReserve / reserveFill; tbl.Segments() > max {
		t.Fatalf("Reserve(1<<50): %d segments, cap %d", tbl.Segments(), max)
	}
	tbl.Clear()
	if tbl.Segments() != 1 {
		t.Fatalf("Clear left %d segments", tbl.Segments())
	}
}
