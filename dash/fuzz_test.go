package dash

import (
	"strconv"
	"testing"
)

// FuzzTable interprets the input as a sequence of operations (3 bytes
// each: opcode, 16-bit key id) run against a Go map, with move replay over
// a shadow layout, then checks invariants, contents, and that both
// traversals see every item once. Seed corpus: testdata/fuzz/FuzzTable.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 2, 1, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl := New[uint64]()
		sh := newShadow(tbl)
		tbl.OnMove(sh.apply)
		model := map[string]uint64{}
		key := func(id int) string { return "f" + strconv.Itoa(id) }
		insert := func(k string, v uint64) {
			it, inserted := tbl.Insert(k, v, v)
			if _, had := model[k]; had == inserted {
				t.Fatalf("Insert(%q) inserted=%v, model has=%v", k, inserted, had)
			}
			if inserted {
				model[k] = v
				sh.at[position{tbl.BucketOf(it), it.Slot()}] = k
			}
		}
		erase := func(k string) {
			it := tbl.Find(k)
			if _, had := model[k]; had != it.Valid() {
				t.Fatalf("Find(%q) valid=%v, model has=%v", k, it.Valid(), had)
			}
			if it.Valid() {
				delete(sh.at, position{tbl.BucketOf(it), it.Slot()})
				tbl.Erase(it)
				delete(model, k)
			}
		}
		for i := 0; i+2 < len(data) && i < 3*4096; i += 3 {
			id := int(data[i+1]) | int(data[i+2])<<8
			v := uint64(i)
			switch data[i] % 6 {
			case 0, 1:
				insert(key(id), v)
			case 2:
				erase(key(id))
			case 3:
				if it := tbl.Find(key(id)); it.Valid() {
					*tbl.Value(it) = v
					tbl.Bump(it, v)
					model[key(id)] = v
				}
			case 4: // a run of inserts from a block of ids, to force splits
				for j := 0; j < int(data[i+2]&31)*64 && len(model) < 20000; j++ {
					insert(key(int(data[i+1])*2048+j), v)
				}
			case 5: // a run of deletes, for stash unloads
				for j := 0; j < int(data[i+2]&31)*32; j++ {
					erase(key(int(data[i+1])*2048 + j*2))
				}
			}
		}
		if err := tbl.check(); err != nil {
			t.Fatal(err)
		}
		if err := sameContents(tbl, model); err != nil {
			t.Fatal(err)
		}
		if err := sh.compare(tbl); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for c := tbl.TraverseBuckets(0, func(b Cursor) {
			tbl.ForEach(b, func(it Iterator) { seen[tbl.Key(it)]++ })
		}); c != 0; {
			c = tbl.TraverseBuckets(c, func(b Cursor) {
				tbl.ForEach(b, func(it Iterator) { seen[tbl.Key(it)]++ })
			})
		}
		scanned := map[string]int{}
		for c := tbl.Traverse(0, func(it Iterator) { scanned[tbl.Key(it)]++ }); c != 0; {
			c = tbl.Traverse(c, func(it Iterator) { scanned[tbl.Key(it)]++ })
		}
		for k := range model {
			if seen[k] != 1 || scanned[k] != 1 {
				t.Fatalf("key %q: bucket traversal %d, scan %d", k, seen[k], scanned[k])
			}
		}
		if len(seen) != len(model) || len(scanned) != len(model) {
			t.Fatalf("traversals saw %d/%d keys, model has %d", len(seen), len(scanned), len(model))
		}
	})
}
