package dash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// modelKey maps an id to a key; some keys are long (two-byte length
// prefix in the arena) and id 0 is the empty key.
func modelKey(id int) string {
	switch {
	case id == 0:
		return ""
	case id%97 == 0:
		return strings.Repeat("L", 130) + strconv.Itoa(id)
	default:
		return "k" + strconv.Itoa(id)
	}
}

func longMode() bool { return os.Getenv("DASH_LONG") != "" }

// TestModel runs random inserts, updates, deletes and finds against a Go
// map, with checks of every structural invariant along the way.
func TestModel(t *testing.T) {
	ops := 1_500_000
	if testing.Short() {
		ops = 150_000
	}
	if longMode() {
		ops = 20_000_000
	}
	for _, seed := range []uint64{1, 2, 3} {
		if err := runModel(seed, ops/3, ops/30); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func runModel(seed uint64, ops, checkEvery int) error {
	rng := rand.New(rand.NewPCG(seed, 99))
	tbl := New[uint64]()
	model := map[string]uint64{}
	version := uint64(1)
	keyspace := 1000
	target := 500
	for op := 0; op < ops; op++ {
		if op%20000 == 0 {
			// New phase: grow or shrink towards a random size.
			keyspace = 1 + rng.IntN(400_000)
			target = rng.IntN(keyspace + 1)
		}
		key := modelKey(rng.IntN(keyspace))
		version++
		r := rng.IntN(100)
		grow := len(model) < target
		switch {
		case r < 40 && grow || r < 15:
			v := rng.Uint64()
			it, inserted := tbl.Insert(key, v, version)
			_, had := model[key]
			if inserted == had {
				return fmt.Errorf("op %d: Insert(%q) inserted=%v, model has=%v", op, key, inserted, had)
			}
			if !it.Valid() || tbl.Key(it) != key {
				return fmt.Errorf("op %d: Insert(%q) iterator names %q", op, key, tbl.Key(it))
			}
			if inserted {
				model[key] = v
				if got := tbl.Version(tbl.BucketOf(it)); got < version {
					return fmt.Errorf("op %d: bucket version %d after insert at %d", op, got, version)
				}
			} else if *tbl.Value(it) != model[key] {
				return fmt.Errorf("op %d: Insert(%q) of present key changed value", op, key)
			}
		case r < 55:
			it := tbl.Find(key)
			if _, had := model[key]; had != it.Valid() {
				return fmt.Errorf("op %d: Find(%q) valid=%v, model has=%v", op, key, it.Valid(), had)
			}
			if it.Valid() {
				v := rng.Uint64()
				*tbl.Value(it) = v
				tbl.Bump(it, version)
				model[key] = v
				if got := tbl.Version(tbl.BucketOf(it)); got < version {
					return fmt.Errorf("op %d: bucket version %d after bump at %d", op, got, version)
				}
			}
		case r < 80:
			_, had := model[key]
			var ok bool
			if r%2 == 0 {
				ok = tbl.Delete(key)
			} else if it := tbl.Find(key); it.Valid() {
				tbl.Erase(it)
				ok = true
			}
			if ok != had {
				return fmt.Errorf("op %d: Delete(%q)=%v, model has=%v", op, key, ok, had)
			}
			delete(model, key)
		default:
			it := tbl.Find(key)
			v, had := model[key]
			if had != it.Valid() {
				return fmt.Errorf("op %d: Find(%q) valid=%v, model has=%v", op, key, it.Valid(), had)
			}
			if had && (*tbl.Value(it) != v || tbl.Key(it) != key) {
				return fmt.Errorf("op %d: Find(%q) = %q/%d, want %d", op, key, tbl.Key(it), *tbl.Value(it), v)
			}
		}
		if tbl.Len() != len(model) {
			return fmt.Errorf("op %d: Len %d, model %d", op, tbl.Len(), len(model))
		}
		if op%checkEvery == checkEvery-1 {
			if err := tbl.check(); err != nil {
				return fmt.Errorf("op %d: %v", op, err)
			}
			if err := sameContents(tbl, model); err != nil {
				return fmt.Errorf("op %d: %v", op, err)
			}
		}
	}
	if err := tbl.check(); err != nil {
		return err
	}
	return sameContents(tbl, model)
}

func sameContents(tbl *Table[uint64], model map[string]uint64) error {
	got := tbl.contents()
	if len(got) != len(model) {
		return fmt.Errorf("table holds %d items, model %d", len(got), len(model))
	}
	for k, v := range model {
		if g, ok := got[k]; !ok || g != v {
			return fmt.Errorf("key %q: table %d/%v, model %d", k, g, ok, v)
		}
	}
	return nil
}

func TestClearAndRandom(t *testing.T) {
	tbl := New[int]()
	if it := tbl.Random(7); it.Valid() {
		t.Fatal("Random on empty table returned an item")
	}
	for i := 0; i < 5000; i++ {
		tbl.Insert(modelKey(i), i, 1)
	}
	seen := map[string]bool{}
	for r := uint64(0); r < 20000; r++ {
		it := tbl.Random(r * 0x9E3779B97F4A7C15)
		if !it.Valid() {
			t.Fatal("Random on non-empty table returned nothing")
		}
		seen[tbl.Key(it)] = true
	}
	if len(seen) < 2000 {
		t.Fatalf("Random reached only %d of 5000 keys", len(seen))
	}
	k := tbl.Key(tbl.Find("k42"))
	tbl.Clear()
	if tbl.Len() != 0 || tbl.Find("k42").Valid() || tbl.Depth() != 0 {
		t.Fatal("Clear left items")
	}
	if k != "k42" {
		t.Fatalf("key string changed after Clear: %q", k)
	}
	if err := tbl.check(); err != nil {
		t.Fatal(err)
	}
	tbl.Insert("a", 1, 1)
	if it := tbl.Random(0); !it.Valid() || tbl.Key(it) != "a" {
		t.Fatal("Random after Clear")
	}
}

// TestKeyStringsImmutable checks that strings from Key survive erasure,
// compaction and splits unchanged.
func TestKeyStringsImmutable(t *testing.T) {
	tbl := New[int]()
	var keys []string
	var want []string
	for i := 0; i < 50000; i++ {
		k := modelKey(i)
		it, _ := tbl.Insert(k, i, 1)
		if i%100 == 0 {
			keys = append(keys, tbl.Key(it))
			want = append(want, k)
		}
		if i%3 == 0 {
			tbl.Delete(modelKey(i / 2))
		}
	}
	for i := 0; i < 50000; i += 2 {
		tbl.Delete(modelKey(i))
	}
	for i := range keys {
		if keys[i] != want[i] {
			t.Fatalf("key %d changed: %q want %q", i, keys[i], want[i])
		}
	}
	if err := tbl.check(); err != nil {
		t.Fatal(err)
	}
}
