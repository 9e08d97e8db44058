package shard

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// checkStrs verifies strs.go's invariants on db against the tables: every
// packed value is in a chunk of db's arena and counted there once; the
// arena's totals add up; a chunk it holds has live values or takes
// allocations; and each key's bytes equal the model's.
func checkStrs(t *testing.T, db *DB, model map[string][]byte, ctx string) {
	t.Helper()
	a := &db.strs
	live := make([]int32, len(a.chunks))
	total := 0
	var cursor uint64
	for {
		cursor = db.Table.Traverse(cursor, func(it Iterator) {
			key, v := db.Table.Key(it), db.Table.Value(it)
			if model != nil {
				if want, ok := model[key]; !ok || !bytes.Equal(v.Str(), want) {
					t.Fatalf("%s: key %q holds %q, want %q (in model: %v)", ctx, key, v.Str(), want, ok)
				}
			}
			if !v.Packed() {
				return
			}
			if !a.owns(v) {
				t.Fatalf("%s: key %q is packed in chunk %d, which does not hold its bytes", ctx, key, v.c)
			}
			if cap(v.Str()) != int(v.n) {
				t.Fatalf("%s: key %q: a packed value's capacity reaches into its neighbour", ctx, key)
			}
			live[v.c] += held(v.n)
			total += int(held(v.n))
		})
		if cursor == 0 {
			break
		}
	}
	if model != nil && db.Len() != len(model) {
		t.Fatalf("%s: %d keys, model has %d", ctx, db.Len(), len(model))
	}
	used, reclaimable := 0, 0
	free := map[uint32]bool{}
	for _, id := range a.free {
		free[id] = true
	}
	for id, c := range a.chunks {
		if free[uint32(id)] != (c.buf == nil) {
			t.Fatalf("%s: chunk %d: dropped %v, on the free list %v", ctx, id, c.buf == nil, free[uint32(id)])
		}
		if c.live != live[id] {
			t.Fatalf("%s: chunk %d counts %d live bytes, its values have %d", ctx, id, c.live, live[id])
		}
		if c.buf != nil && c.live == 0 && int32(id) != a.cur && int32(id) != a.imp {
			t.Fatalf("%s: chunk %d is held with no live value", ctx, id)
		}
		used += int(c.used)
		if int32(id) != a.cur && int32(id) != a.imp && c.buf != nil && c.live < defragSparse {
			reclaimable += int(c.used - c.live)
		}
	}
	if a.live != total || a.used != used {
		t.Fatalf("%s: arena counts live %d used %d, chunks have %d and %d", ctx, a.live, a.used, total, used)
	}
	if a.reclaimable != reclaimable {
		t.Fatalf("%s: arena counts %d reclaimable bytes, its sparse chunks have %d dead", ctx, a.reclaimable, reclaimable)
	}
}

func randBytes(r *rand.Rand) []byte {
	var n int
	switch r.Intn(10) {
	case 0:
		n = 0
	case 1:
		n = MaxPackedString + r.Intn(100) // own heap object
	case 2:
		n = MaxPackedString - r.Intn(8)
	default:
		n = 1 + r.Intn(120)
	}
	b := make([]byte, n)
	r.Read(b)
	return b
}

// Random writes through every DB path that stores, replaces, edits or
// drops a string (and the server's MOVE and cross-shard moves of a Value),
// with defragmentation steps in between: the arena's accounting must stay
// exact and every value intact.
func TestPackedStringsModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	s, other := New(0, 2), New(1, 1)
	models := []map[string][]byte{{}, {}}
	key := func() []byte { return []byte(fmt.Sprintf("k%d", r.Intn(3000))) }
	// held: slices a snapshot's deferred records keep (Value.Share); their
	// bytes must never change.
	type heldBytes struct{ view, want []byte }
	var held []heldBytes
	for step := 0; step < 60000; step++ {
		d := r.Intn(2)
		db, model := s.DBs[d], models[d]
		k := key()
		it, v := db.Find(k)
		op := r.Intn(15)
		switch {
		case op < 4: // SET
			b := randBytes(r)
			if v != nil && v.Type == TypeString && r.Intn(2) == 0 {
				db.SetBytes(it, b)
			} else {
				db.Set(k, db.NewString(b), false)
			}
			model[string(k)] = b
		case op == 4 && v == nil: // SETNX, a loaded value
			b := randBytes(r)
			if r.Intn(2) == 0 {
				db.Insert(k, db.NewString(b))
			} else {
				db.Load(k, NewString(b), 0)
			}
			model[string(k)] = b
		case op == 5 && v != nil: // DEL
			db.Delete(it)
			delete(model, string(k))
		case op == 6 && v != nil: // APPEND: an in-place edit
			add := randBytes(r)
			p := db.Mutate(it)
			p.SetStr(append(p.Str(), add...))
			model[string(k)] = append(append([]byte(nil), model[string(k)]...), add...)
		case op == 7 && v != nil && v.StrLen() > 0: // SETRANGE 0 within the value
			p := db.Mutate(it)
			p.Str()[0] ^= 0xff
			model[string(k)] = append([]byte(nil), model[string(k)]...)
			model[string(k)][0] ^= 0xff
		case op == 8 && v != nil: // EXPIRE, then lazy expiry of some
			db.MutateMeta(it)
			at := s.Now() + 60_000
			if r.Intn(3) == 0 {
				at = s.Now() - 1
				delete(model, string(k))
			}
			db.SetExpire(it, at)
			db.Find(k)
		case op == 9 && v != nil: // MOVE to the other DB (as server.takeValue/putValue)
			dst, dmodel := s.DBs[1-d], models[1-d]
			if it, _ := dst.Find(k); it.Valid() {
				break
			}
			m := *v
			m.HasExpire = false
			db.Delete(it)
			dst.Set(k, m, false)
			dmodel[string(k)] = model[string(k)]
			delete(model, string(k))
		case op == 10 && v != nil: // a cross-shard RENAME: out to another shard and back
			m := *v
			m.HasExpire = false
			db.Delete(it)
			o := other.DBs[0]
			o.Set([]byte("tmp"), m, false)
			ov := *o.Table.Value(o.Table.Find("tmp"))
			o.Delete(o.Table.Find("tmp"))
			ov.HasExpire = false
			db.Set(k, ov, false)
			checkStrs(t, o, nil, "other shard")
		case op == 11 && r.Intn(200) == 0: // FLUSHDB
			db.Flush()
			models[d] = map[string][]byte{}
		case op == 12:
			db.DefragStep(1 + r.Intn(64))
		case op == 13 && v != nil && v.Packed(): // (an own buffer relies on the snapshot's cow hook)
			v.Share()
			held = append(held, heldBytes{v.Str(), append([]byte(nil), v.Str()...)})
		}
		for _, h := range held {
			if !bytes.Equal(h.view, h.want) {
				t.Fatalf("seed %d step %d: shared bytes %q changed to %q", seed, step, h.want, h.view)
			}
		}
		if step%2000 == 0 {
			checkStrs(t, s.DBs[0], models[0], fmt.Sprintf("seed %d step %d db 0", seed, step))
			checkStrs(t, s.DBs[1], models[1], fmt.Sprintf("seed %d step %d db 1", seed, step))
		}
	}
	for d, db := range s.DBs {
		for db.DefragStep(1000) {
		}
		checkStrs(t, db, models[d], fmt.Sprintf("seed %d end db %d", seed, d))
	}
}

// filledDB returns a one-shard DB holding key:0 ... key:n-1, each the
// 100-byte value it returns, packed.
func filledDB(n int) (*DB, []byte) {
	db := New(0, 1).DBs[0]
	val := bytes.Repeat([]byte("v"), 100)
	for i := 0; i < n; i++ {
		db.Set([]byte(fmt.Sprintf("key:%d", i)), db.NewString(val), false)
	}
	return db, val
}

// Deleting most keys leaves chunks mostly dead; the pass must move the
// survivors and drop the chunks, leaving the held bytes near the live.
func TestDefragReclaims(t *testing.T) {
	const n = 100_000
	db, val := filledDB(n)
	st := db.Packed()
	used, live, chunks := st.Used, st.Live, st.Chunks
	if live != n*104 || used > live*12/10+strChunkSize {
		t.Fatalf("after %d sets: used %d live %d in %d chunks", n, used, live, chunks)
	}
	for i := 0; i < n; i++ {
		if i%5 != 0 {
			db.Delete(db.Table.Find(fmt.Sprintf("key:%d", i)))
		}
	}
	st = db.Packed()
	used, live = st.Used, st.Live
	if !db.strs.wasteful() {
		t.Fatalf("used %d live %d: no pass starts", used, live)
	}
	steps := 0
	for db.DefragStep(256) {
		steps++
	}
	st = db.Packed()
	used, live, chunks = st.Used, st.Live, st.Chunks
	t.Logf("after deleting 80%% and %d steps: used %d live %d in %d chunks", steps, used, live, chunks)
	if live != n/5*104 || used > live*12/10+strChunkSize {
		t.Fatalf("the pass left used %d for live %d", used, live)
	}
	checkStrs(t, db, nil, "after the pass")
	for i := 0; i < n; i += 5 {
		if _, v := db.Find([]byte(fmt.Sprintf("key:%d", i))); v == nil || !bytes.Equal(v.Str(), val) {
			t.Fatalf("key:%d lost its value", i)
		}
	}
}

// Values of 8 bytes or less fill chunks as densely as the alignment
// allows; no pass may take them for waste. (Counted by length they were
// 1/8 live: every chunk looked sparse, and passes moved every value over
// and over, each pass's moves opening chunks that charged the next.)
func TestDefragLeavesSmallValues(t *testing.T) {
	for _, size := range []int{1, 5, 8} {
		db := New(0, 1).DBs[0]
		val := bytes.Repeat([]byte("1"), size)
		for i := 0; i < 100_000; i++ {
			db.Set([]byte(fmt.Sprintf("key:%d", i)), db.NewString(val), false)
		}
		for i := 0; i < 100 && db.payDefrag(); i++ {
		}
		for i := 0; i < 100; i++ {
			db.DefragStep(256)
		}
		if st := db.Packed(); st.Passes != 0 || st.Moves != 0 || st.Used > st.Live*11/10+strChunkSize {
			t.Fatalf("%d-byte values: %d passes moved %d values; used %d live %d", size, st.Passes, st.Moves, st.Used, st.Live)
		}
		checkStrs(t, db, nil, fmt.Sprintf("%d-byte values", size))
	}
}

// Deletes that go on while a pass runs empty chunks the pass has already
// visited; later passes must take them too, so the arena ends near its
// live bytes however the deletes and the pass interleave (the end-to-end
// TestPackedStringsDefragment failed on a slow machine: 1.33x live).
func TestDefragCatchesUpWithDeletes(t *testing.T) {
	for _, every := range []int{10, 100, 1000, 10000} {
		const n = 100_000
		db, _ := filledDB(n)
		for i := 0; i < n; i++ {
			if i%5 != 0 {
				db.Delete(db.Table.Find(fmt.Sprintf("key:%d", i)))
			}
			if i%every == 0 {
				db.DefragStep(256) // a tick's step between the deletes
			}
		}
		steps := 0
		for ; steps < 10_000 && (db.DefragStep(256) || db.strs.wasteful()); steps++ {
		}
		st := db.Packed()
		t.Logf("a step each %d deletes: %d steps after them, used %d live %d, %d passes", every, steps, st.Used, st.Live, st.Passes)
		if st.Used > st.Live*12/10+strChunkSize {
			t.Fatalf("a step each %d deletes: the passes left used %d for live %d", every, st.Used, st.Live)
		}
		checkStrs(t, db, nil, "after the passes")
	}
}

// A slice of a packed value that a snapshot holds (Share) keeps the old
// bytes: SET, an in-place edit and a defragmentation move never write
// them. A SET of no more bytes over an unshared packed value reuses them.
func TestPackedBytesRewrittenOnlyInPlace(t *testing.T) {
	s := New(0, 1)
	db := s.DBs[0]
	for i := 0; i < 5000; i++ {
		db.Set([]byte(fmt.Sprintf("f%d", i)), db.NewString(bytes.Repeat([]byte{'f'}, 200)), false)
	}
	db.Set([]byte("k"), db.NewString([]byte("hello world")), false)
	it, v := db.Find([]byte("k"))
	before := v.Str()
	db.SetBytes(it, []byte("hi there"))
	if _, v = db.Find([]byte("k")); unsafe.SliceData(v.Str()) != unsafe.SliceData(before) || string(v.Str()) != "hi there" {
		t.Fatalf("a shorter SET over a packed value moved it or lost it: %q", v.Str())
	}
	checkStrs(t, db, nil, "after SET in place")
	v.Share()
	held := v.Str()
	db.SetBytes(it, []byte("HELLO"))
	p := db.Mutate(it)
	p.Str()[0] = 'J'
	for i := 0; i < 5000; i++ {
		db.Delete(db.Table.Find(fmt.Sprintf("f%d", i)))
	}
	for db.DefragStep(64) {
	}
	if string(held) != "hi there" {
		t.Fatalf("a shared slice of the old value now reads %q", held)
	}
	if _, v := db.Find([]byte("k")); string(v.Str()) != "JELLO" {
		t.Fatalf("the value is %q", v.Str())
	}
	checkStrs(t, db, nil, "at the end")
}

// BenchmarkGCMark times a full collection over a DB of 1M 100-byte
// string values, packed in chunks and one heap object each: the mark work
// every GC cycle pays for the dataset (issue 8: a cycle during a full
// sync is the master's p99).
func BenchmarkGCMark(b *testing.B) {
	for _, packed := range []bool{true, false} {
		name := "packed"
		if !packed {
			name = "objects"
		}
		b.Run(name, func(b *testing.B) {
			s := New(0, 1)
			db := s.DBs[0]
			val := bytes.Repeat([]byte("v"), 100)
			for i := 0; i < 1_000_000; i++ {
				v := NewString(val)
				if packed {
					v = db.NewString(val)
				}
				db.Insert([]byte(fmt.Sprintf("key:%d", i)), v)
			}
			runtime.GC()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runtime.GC()
			}
			b.StopTimer()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
			runtime.KeepAlive(db)
		})
	}
}

// A loader's block becomes a chunk (ImportChunk): values loaded from it
// stay where they are, a value of another DB is copied, and an imported
// chunk left without values is dropped at the next import.
func TestImportChunk(t *testing.T) {
	s := New(0, 2)
	db, db1 := s.DBs[0], s.DBs[1]
	model := map[string][]byte{}
	for round := 0; round < 3; round++ {
		block := make([]byte, 0, ChunkSize)
		db.ImportChunk(block[:ChunkSize])
		for i := 0; ; i++ {
			val := bytes.Repeat([]byte{byte('a' + i%26)}, 10+i%90)
			off := (len(block) + 7) &^ 7
			if off+len(val) > cap(block) {
				break
			}
			block = append(block[:off], val...)
			v := StringValue(block[off:len(block):len(block)])
			key := fmt.Sprintf("r%d:%d", round, i)
			if round == 2 {
				db1.Load([]byte(key), v, 0) // another DB: copied, the import holds nothing
				continue
			}
			db.Load([]byte(key), v, 0)
			model[key] = val
			if stored := db.Table.Value(db.Table.Find(key)); unsafe.SliceData(stored.Str()) != unsafe.SliceData(block[off:]) {
				t.Fatalf("%s was copied out of the imported chunk", key)
			}
		}
		checkStrs(t, db, model, fmt.Sprintf("round %d", round))
	}
	db.ImportChunk(make([]byte, ChunkSize))
	checkStrs(t, db, model, "after the last import")
	checkStrs(t, db1, nil, "db 1")
	if st := db.Packed(); st.Chunks != 3 || st.Used != 3*ChunkSize || st.Live == 0 {
		t.Fatalf("db 0 holds %d chunks, %d bytes, %d live; want the 2 filled imports and the empty current one", st.Chunks, st.Used, st.Live)
	}
}
