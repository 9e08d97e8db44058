package offload

import (
	"bytes"
	"errors"
	"math/rand"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
	"github.com/dfly/dfly/tiered/tieredtest"
)

// testShards runs callbacks on the shards of a Tiering, as the server's
// OnShard does.
type testShards struct{ shards []*shard.Shard }

func (h testShards) OnShard(sid int, fn func(*shard.Shard)) {
	done := make(chan struct{})
	h.shards[sid].Send(shard.Func(func(sh *shard.Shard) { fn(sh); close(done) }))
	<-done
}

// newTestShard is one shard with tiering on a tieredtest.File, running on its
// own goroutine; offload steps are run by hand.
func newTestShard(t *testing.T) (testShards, *Shard, *tieredtest.File) {
	f := &tieredtest.File{}
	sh := shard.New(0, 1)
	ts, err := Open(Config{
		Prefix:           t.TempDir() + "/tier",
		MinValueSize:     64,
		OffloadThreshold: 0.5,
		MaxMemory:        func() int64 { return 0 },
		Warnf:            func(string, ...any) {},
		Open:             func(string) (tiered.File, error) { return f, nil },
	}, []*shard.Shard{sh})
	if err != nil {
		t.Fatal(err)
	}
	sh.Start()
	t.Cleanup(func() { sh.Stop(); ts.pool.Close() })
	return testShards{[]*shard.Shard{sh}}, ts.shards[0], f
}

// offload runs steps (each waiting for its writes) until one whole pass
// over the table has been made.
func offload(t *testing.T, srv testShards, ts *Shard) {
	t.Helper()
	for i := 0; i < 40; i++ {
		srv.OnShard(0, func(*shard.Shard) {
			ts.backoff, ts.idle = time.Time{}, false
			ts.budget.Store(1 << 30)
		})
		srv.OnShard(0, func(s *shard.Shard) { ts.Run(s) })
		waitWrites(t, srv, ts)
	}
}

func waitWrites(t *testing.T, srv testShards, ts *Shard) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		var pending int
		srv.OnShard(0, func(*shard.Shard) { pending = ts.writes })
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writes never completed")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTieredWriteErrorsKeepValuesInMemory(t *testing.T) {
	srv, ts, f := newTestShard(t)
	vals := map[string][]byte{}
	srv.OnShard(0, func(s *shard.Shard) {
		for i := 0; i < 50; i++ {
			k := "key" + strconv.Itoa(i)
			vals[k] = bytes.Repeat([]byte{byte('a' + i%26)}, 100+i*40)
			s.DBs[0].Insert([]byte(k), shard.NewString(vals[k]))
		}
	})
	check := func(what string, wantExternal bool) {
		t.Helper()
		srv.OnShard(0, func(s *shard.Shard) {
			for k, want := range vals {
				v := s.DBs[0].Peek([]byte(k))
				if v.IsExternal() != wantExternal {
					t.Errorf("%s: %s external=%v", what, k, v.IsExternal())
					continue
				}
				if !wantExternal && !bytes.Equal(v.Str(), want) {
					t.Errorf("%s: %s holds other bytes", what, k)
				}
			}
		})
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EIO} {
		f.Fail(e, nil)
		offload(t, srv, ts)
		check(e.Error(), false)
		srv.OnShard(0, func(*shard.Shard) {
			if ts.store.Stats.WriteErrors == 0 || ts.entries != 0 || ts.store.Allocator().Segments != 0 {
				t.Errorf("%v: stats %+v entries %d segments %d", e, ts.store.Stats, ts.entries, ts.store.Allocator().Segments)
			}
		})
	}
	// The disk recovers: everything is offloaded and reads back.
	f.Fail(nil, nil)
	offload(t, srv, ts)
	check("recovered", true)
	srv.OnShard(0, func(s *shard.Shard) {
		if ts.entries != 50 {
			t.Errorf("%d offloaded, want 50", ts.entries)
		}
		_, v := s.DBs[0].Find([]byte("key7")) // the blocking fallback loads it
		if v.IsExternal() || !bytes.Equal(v.Str(), vals["key7"]) || ts.entries != 49 {
			t.Errorf("Find did not load key7 back (entries %d)", ts.entries)
		}
	})
	// A read error: the value stays offloaded, a serializer fails.
	f.Fail(nil, syscall.EIO)
	srv.OnShard(0, func(s *shard.Shard) {
		_, v := s.DBs[0].Find([]byte("key8"))
		if !v.IsExternal() {
			t.Error("a failed load changed the value")
		}
		e := rdb.NewEncoder(nil)
		rdbvalue.Encode(e, []byte("key8"), View(s, e, v), rdb.Meta{})
		if !errors.Is(e.Err(), syscall.EIO) {
			t.Errorf("encoder error %v, want EIO", e.Err())
		}
	})
	f.Fail(nil, nil)
	// Deleting, overwriting and flushing free the space.
	srv.OnShard(0, func(s *shard.Shard) {
		db := s.DBs[0]
		db.Delete(db.Table.Find("key9"))
		db.Set([]byte("key10"), shard.NewString([]byte("small")), false)
		if ts.entries != 47 {
			t.Errorf("entries %d after a delete and an overwrite, want 47", ts.entries)
		}
		db.Flush()
		if ts.entries != 0 || ts.store.Allocator().Segments != 0 {
			t.Errorf("after FLUSH: %d entries, %d segments", ts.entries, ts.store.Allocator().Segments)
		}
	})
}

// TestTieredChangedDuringWrite: a value changed while its write is in
// flight keeps its new bytes and the written space is freed.
func TestTieredChangedDuringWrite(t *testing.T) {
	srv, ts, _ := newTestShard(t)
	srv.OnShard(0, func(s *shard.Shard) {
		s.DBs[0].Insert([]byte("a"), shard.NewString(bytes.Repeat([]byte("x"), 500)))
		s.DBs[0].Insert([]byte("b"), shard.NewString(bytes.Repeat([]byte("y"), 500)))
	})
	srv.OnShard(0, func(s *shard.Shard) {
		// The tiering ticker may have run a pass over the empty table
		// and gone idle: the direct inserts above count no writes.
		ts.backoff, ts.idle = time.Time{}, false
		ts.budget.Store(1 << 30)
		// Both writes are in flight once a and b are stashed. A step ends
		// at its time budget (tierStepBudget), which a slow run (the race
		// detector) may spend after the first of them; their completions
		// run on this goroutine, so none lands inside this loop.
		for i := 0; len(ts.stashed) < 2 && i < 100; i++ {
			ts.Run(s)
		}
		it, _ := s.DBs[0].Find([]byte("a"))
		p := s.DBs[0].Mutate(it)
		p.SetStr(append(p.Str(), 'z'))
	})
	waitWrites(t, srv, ts)
	srv.OnShard(0, func(s *shard.Shard) {
		a, b := s.DBs[0].Peek([]byte("a")), s.DBs[0].Peek([]byte("b"))
		if a.IsExternal() || a.StrLen() != 501 {
			t.Errorf("a: external %v len %d", a.IsExternal(), a.StrLen())
		}
		if !b.IsExternal() {
			t.Error("b not offloaded")
		}
		if ts.entries != 1 || ts.store.Allocator().Segments != 1 {
			t.Errorf("entries %d segments %d, want 1 and 1", ts.entries, ts.store.Allocator().Segments)
		}
	})
}

// TestTieredAsyncReadOutlivesDelete: the snapshot's read API delivers the
// bytes a value had even when it is deleted before the read completes, and
// its space is freed only after.
func TestTieredAsyncReadOutlivesDelete(t *testing.T) {
	srv, ts, f := newTestShard(t)
	want := bytes.Repeat([]byte("q"), 3000)
	srv.OnShard(0, func(s *shard.Shard) { s.DBs[0].Insert([]byte("k"), shard.NewString(want)) })
	offload(t, srv, ts)
	got := make(chan []byte, 1)
	f.Lock() // hold the read until the delete is done
	srv.OnShard(0, func(s *shard.Shard) {
		v := s.DBs[0].Peek([]byte("k"))
		if !v.IsExternal() {
			t.Error("not offloaded")
			got <- want
			return
		}
		s.Tier().Read(v, func(data []byte, err error) {
			if err != nil {
				t.Error(err)
			}
			if ts.store.Allocator().Segments != 1 {
				t.Error("space freed before the read's callback")
			}
			got <- bytes.Clone(data)
		})
		s.DBs[0].Delete(s.DBs[0].Table.Find("k"))
	})
	f.Unlock()
	if d := <-got; !bytes.Equal(d, want) {
		t.Fatalf("read %d bytes of other data", len(d))
	}
	srv.OnShard(0, func(*shard.Shard) {
		if ts.store.Allocator().Segments != 0 || ts.entries != 0 {
			t.Errorf("space not freed after the read: %d segments", ts.store.Allocator().Segments)
		}
	})
}

type nopHook struct{}

func (nopHook) PreUpdate(*shard.DB, shard.Iterator) {}
func (nopHook) PreDelete(*shard.DB, shard.Iterator) {}
func (nopHook) PreInsert(*shard.DB, string)         {}
func (nopHook) PreFlush(*shard.DB)                  {}

// TestTieredFlushDuringSnapshot: a flush while a snapshot runs (which may
// still walk the old tables) frees the space only after the snapshot.
func TestTieredFlushDuringSnapshot(t *testing.T) {
	srv, ts, _ := newTestShard(t)
	srv.OnShard(0, func(s *shard.Shard) {
		for i := 0; i < 10; i++ {
			s.DBs[0].Insert([]byte("k"+strconv.Itoa(i)), shard.NewString(bytes.Repeat([]byte("v"), 700)))
		}
	})
	offload(t, srv, ts)
	var h nopHook
	srv.OnShard(0, func(s *shard.Shard) {
		if ts.entries != 10 {
			t.Errorf("%d offloaded", ts.entries)
		}
		s.AddHook(h)
		s.DBs[0].Flush()
		ts.budget.Store(0)
		ts.Run(s)
		if ts.entries != 0 || ts.store.Allocator().Segments != 10 {
			t.Errorf("during the snapshot: entries %d, segments %d (want 0, 10)", ts.entries, ts.store.Allocator().Segments)
		}
		s.RemoveHook(h)
		ts.Run(s)
		if ts.store.Allocator().Segments != 0 {
			t.Errorf("after the snapshot: %d segments", ts.store.Allocator().Segments)
		}
	})
}

// TestTieredPinnedStaysInMemory: a value a coordinated command preloaded
// is not offloaded again until the command unpins it — neither by the
// offload walk nor by a write job that stashed it before the pin.
func TestTieredPinnedStaysInMemory(t *testing.T) {
	srv, ts, _ := newTestShard(t)
	val := bytes.Repeat([]byte("p"), 700)
	srv.OnShard(0, func(s *shard.Shard) {
		s.DBs[0].Insert([]byte("a"), shard.NewString(val))
		s.DBs[0].Insert([]byte("b"), shard.NewString(val))
	})
	offload(t, srv, ts)
	pinA := []Key{{0, "a"}}
	done := make(chan struct{})
	srv.OnShard(0, func(*shard.Shard) { ts.Pin(pinA); ts.LoadKeys(pinA, func(bool) { close(done) }) })
	<-done
	// c: stashed and its write in flight when it is pinned.
	pinC := []Key{{0, "c"}}
	srv.OnShard(0, func(s *shard.Shard) {
		s.DBs[0].Insert([]byte("c"), shard.NewString(val))
		ts.backoff, ts.idle = time.Time{}, false
		ts.budget.Store(1 << 30)
		ts.Run(s)
		if _, ok := ts.stashed[Key{0, "c"}]; !ok {
			t.Error("c not stashed")
		}
		ts.Pin(pinC)
	})
	offload(t, srv, ts)
	check := func(key string, external bool) {
		t.Helper()
		srv.OnShard(0, func(s *shard.Shard) {
			v := s.DBs[0].Peek([]byte(key))
			if v.IsExternal() != external {
				t.Errorf("%s: external %v, want %v", key, v.IsExternal(), external)
			}
			if !v.IsExternal() && !bytes.Equal(v.Str(), val) {
				t.Errorf("%s: wrong bytes", key)
			}
		})
	}
	check("a", false)
	check("b", true)
	check("c", false)
	srv.OnShard(0, func(*shard.Shard) {
		if ts.entries != 1 || ts.store.Allocator().Segments != 1 || ts.syncLoads != 0 {
			t.Errorf("entries %d segments %d sync loads %d, want 1, 1, 0", ts.entries,
				ts.store.Allocator().Segments, ts.syncLoads)
		}
		ts.Unpin(pinA)
		ts.Unpin(pinC)
		if len(ts.pins) != 0 {
			t.Errorf("pins left: %v", ts.pins)
		}
	})
	offload(t, srv, ts)
	check("a", true)
	check("c", true)
}

// TestTieredSkippedValueKeepsWalkAwake: a pass that skips a value whose
// write is in flight does not put the walk to sleep, so when the write
// finds the value changed (and leaves it in memory) a later step still
// offloads it.
func TestTieredSkippedValueKeepsWalkAwake(t *testing.T) {
	srv, ts, f := newTestShard(t)
	srv.OnShard(0, func(s *shard.Shard) {
		s.DBs[0].Insert([]byte("a"), shard.NewString(bytes.Repeat([]byte("x"), 500)))
		ts.backoff, ts.idle = time.Time{}, false
		ts.budget.Store(1 << 30)
	})
	f.Lock() // hold the write job
	srv.OnShard(0, func(s *shard.Shard) {
		ts.Run(s) // stashes a: its write is in flight
		it, _ := s.DBs[0].Find([]byte("a"))
		p := s.DBs[0].Mutate(it)
		p.SetStr(append(p.Str(), 'z'))
		ts.Run(s) // a whole pass that skips a
	})
	f.Unlock()
	waitWrites(t, srv, ts) // finds a changed: a stays in memory
	srv.OnShard(0, func(s *shard.Shard) { ts.Run(s) })
	waitWrites(t, srv, ts)
	srv.OnShard(0, func(s *shard.Shard) {
		if v := s.DBs[0].Peek([]byte("a")); !v.IsExternal() {
			t.Errorf("a left in memory: the walk went idle (idle %v)", ts.idle)
		}
	})
}

// bigVal is a string of n pseudo-random bytes.
func bigVal(n int, seed int64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewSource(seed))
	r.Read(b)
	return b
}

// TestTieredBigValueInParts: a string bigger than a step's budget is
// written a part per step (never more than BigValue copied in a step)
// and becomes external once every part is written. One changed in place,
// replaced or deleted meanwhile is not made external with the bytes it
// had (its space is freed and the new bytes written anew); one pinned
// meanwhile stays in memory.
func TestTieredBigValueInParts(t *testing.T) {
	srv, ts, f := newTestShard(t)
	val, val2 := bigVal(5<<20+3, 1), bigVal(5<<20+3, 2)
	step := func() (copied int64) {
		srv.OnShard(0, func(s *shard.Shard) {
			ts.backoff, ts.idle = time.Time{}, false
			ts.budget.Store(1 << 30)
			before := ts.big
			var rem int64
			if before != nil {
				rem = before.w.Remaining()
			}
			ts.Run(s)
			if ts.big != nil {
				if ts.big != before {
					rem = int64(ts.big.w.Seg.Len)
				}
				copied = rem - ts.big.w.Remaining()
			}
		})
		return copied
	}
	for _, change := range []string{"none", "setrange", "replace", "delete", "pin"} {
		want := val
		srv.OnShard(0, func(s *shard.Shard) {
			s.DBs[0].Flush()
			s.DBs[0].Insert([]byte("big"), shard.NewString(val))
		})
		if n := step(); n <= 0 || n > BigValue {
			t.Fatalf("%s: first step copied %d bytes, want 1..%d", change, n, BigValue)
		}
		srv.OnShard(0, func(s *shard.Shard) {
			db := s.DBs[0]
			switch change {
			case "setrange": // an in-place edit of bytes already written
				it, _ := db.Find([]byte("big"))
				db.Mutate(it).Str()[0] ^= 0xff
				want = append([]byte{val[0] ^ 0xff}, val[1:]...)
			case "replace":
				db.Set([]byte("big"), shard.NewString(val2), false)
				want = val2
			case "delete":
				db.Delete(db.Table.Find("big"))
			case "pin":
				ts.Pin([]Key{{0, "big"}})
			}
		})
		for i := 0; i < 30; i++ {
			if n := step(); n > BigValue {
				t.Fatalf("%s: a step copied %d bytes", change, n)
			}
			waitWrites(t, srv, ts)
		}
		srv.OnShard(0, func(s *shard.Shard) {
			v := s.DBs[0].Peek([]byte("big"))
			a := ts.store.Allocator()
			switch change {
			case "delete":
				if v != nil || a.Segments != 0 || ts.big != nil {
					t.Errorf("delete: value %v segments %d", v, a.Segments)
				}
			case "pin":
				if v.IsExternal() || a.Segments != 0 || !bytes.Equal(v.Str(), val) {
					t.Errorf("pin: external %v, %d segments", v.IsExternal(), a.Segments)
				}
				ts.Unpin([]Key{{0, "big"}})
			default:
				off, n := v.External()
				ok := v.IsExternal() && bytes.Equal(f.Bytes(off, int(n)), want)
				if !ok || ts.entries != 1 || a.Segments != 1 {
					t.Errorf("%s: external %v (file holds the value: %v), entries %d segments %d",
						change, v.IsExternal(), ok, ts.entries, a.Segments)
				}
			}
			if ts.store.Stats.WriteErrors != 0 {
				t.Errorf("%s: write errors %d", change, ts.store.Stats.WriteErrors)
			}
		})
	}
}
