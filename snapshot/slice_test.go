package snapshot

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// collector decodes a snapshot's records and flags keys seen twice.
type collector struct {
	rdb.NopHandler
	db   int
	got  map[string]string
	dups []string
}

func (c *collector) SelectDB(db uint64) error { c.db = int(db); return nil }

func (c *collector) String(key, val []byte, m rdb.Meta) error {
	k := strconv.Itoa(c.db) + "/" + string(key)
	if _, ok := c.got[k]; ok {
		c.dups = append(c.dups, k)
	}
	c.got[k] = string(val)
	return nil
}

func encodeString(e *rdb.Encoder, key []byte, v *shard.Value, expireAt int64) {
	e.String(key, v.Str(), rdb.Meta{ExpireAt: expireAt})
}

// TestSlicePointInTime drives a shard's snapshot step by step, one bucket
// position per step, while a random workload overwrites, deletes and
// inserts keys in two databases between the steps (inserts split segments
// and displace items), and flushes one database midway. The snapshot must hold exactly the dataset at the
// cut, every key once. The test owns the shard: it is the shard's
// goroutine, and the shard's messages land in a slice it runs by hand.
//
// With Defer, string values leave the shard by reference and a consumer
// encodes them later (deferred.go): the test materializes the chunks at
// random moments, often long after the values were captured, while the
// workload also changes values in place (Mutate) — copy-on-write must
// keep every referenced value as it was at the cut.
func TestSlicePointInTime(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runPIT(t, seed, false) })
		t.Run(fmt.Sprint("defer-", seed), func(t *testing.T) { runPIT(t, seed, true) })
	}
}

func runPIT(t *testing.T, seed uint64, deferred bool) {
	rng := rand.New(rand.NewPCG(seed, 42))
	sh := shard.New(0, 2)
	var queued []shard.Runnable
	sh.Attach(func(r shard.Runnable) { queued = append(queued, r) })

	want := map[string]string{}
	for db := 0; db < 2; db++ {
		for i := 0; i < 5000; i++ {
			k := fmt.Sprintf("k%d", i)
			v := fmt.Sprintf("v0-%d-%d", db, i)
			sh.DBs[db].Set([]byte(k), shard.NewString([]byte(v)), false)
			want[strconv.Itoa(db)+"/"+k] = v
		}
	}
	out := make(chan Chunk, 1<<16)
	stepOnePosition(t)
	sl := Start(sh, Options{Encode: encodeString, Out: out, Defer: deferred})
	m := NewMaterializer(true, nil)
	var data []byte
	last := false
	consume := func() {
		for len(out) > 0 {
			c := <-out
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			if c.deferred != nil && !deferred {
				t.Fatal("a chunk with deferred records from a Slice without Defer")
			}
			m.Materialize(&c)
			data = append(data, c.Data...)
			last = last || c.Last
		}
	}

	next := 0
	steps := 0
	for !sl.done {
		if steps < 400 && rng.IntN(8) == 0 {
			consume() // and later only at the end, long after the capture
		}
		if len(queued) == 0 {
			t.Fatalf("seed %d: the walk stopped posting steps", seed)
		}
		r := queued[0]
		queued = queued[1:]
		sh.Exec(r)
		steps++
		if steps == 300 {
			sh.DBs[1].Flush() // what db 1 held at the cut must still be written
		}
		// Mutations between steps, in both databases.
		for j := 0; j < 3; j++ {
			db := sh.DBs[rng.IntN(2)]
			k := []byte(fmt.Sprintf("k%d", rng.IntN(5000)))
			switch rng.IntN(5) {
			case 0:
				if it, v := db.Find(k); v != nil {
					db.Delete(it)
				}
			case 4: // in place, in the value's own bytes when they fit
				if it, v := db.Find(k); v != nil {
					p := db.Mutate(it)
					p.SetStr(append(p.Str()[:0], "mut"...))
				}
			case 1:
				db.Set([]byte(fmt.Sprintf("new%d", next)), shard.NewString([]byte("late")), false)
				next++
			default:
				db.Set(k, shard.NewString([]byte("changed")), false)
			}
		}
	}
	// The walk is over and its hooks are gone, but the chunks may still
	// be waiting for their consumer: values changed in place now must not
	// reach the snapshot either.
	if deferred && sl.outstanding.Load() == 0 {
		t.Fatal("no deferred cut outstanding after the walk: the case below is not exercised")
	}
	for i := 0; i < 5000; i += 7 {
		db := sh.DBs[i%2]
		if it, v := db.Find([]byte(fmt.Sprintf("k%d", i))); v != nil {
			p := db.Mutate(it)
			p.SetStr(append(p.Str()[:0], "after"...))
		}
	}
	consume()
	if deferred && sl.outstanding.Load() != 0 {
		t.Fatalf("seed %d: %d deferred cuts outstanding after all were materialized", seed, sl.outstanding.Load())
	}
	if !last {
		t.Fatalf("seed %d: no last chunk", seed)
	}
	col := &collector{got: map[string]string{}}
	if err := rdb.NewDecoder(bytes.NewReader(data)).DecodeFragment(col); err != nil {
		t.Fatalf("seed %d: decode: %v", seed, err)
	}
	if len(col.dups) > 0 {
		t.Fatalf("seed %d: keys written twice: %v", seed, col.dups[:min(5, len(col.dups))])
	}
	for k, v := range want {
		if col.got[k] != v {
			t.Fatalf("seed %d (%d steps, %d inserts): %s = %q in the snapshot, want %q", seed, steps, next, k, col.got[k], v)
		}
	}
	if len(col.got) != len(want) {
		t.Fatalf("seed %d: %d keys in the snapshot, want %d", seed, len(col.got), len(want))
	}
	if sl.Keys != uint64(len(want)) {
		t.Fatalf("Keys = %d, want %d", sl.Keys, len(want))
	}
	t.Logf("seed %d: %d steps, %d inserts during the walk", seed, steps, next)
}

// stepOnePosition makes every step visit one bucket position (a zero
// budget) for the rest of the test.
func stepOnePosition(t *testing.T) {
	saved := stepBudget
	stepBudget = 0
	t.Cleanup(func() { stepBudget = saved })
}
