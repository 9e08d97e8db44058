package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func seed(t testing.TB) uint64 {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("DFLY_TEST_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (DFLY_TEST_SEED=%d to repeat)", s, s)
	return s
}

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

func TestInactiveUntilSubscribedOrStarted(t *testing.T) {
	var nilJ *Journal
	if nilJ.Active() {
		t.Fatal("nil journal active")
	}
	j := New(0, Config{BacklogBytes: 1 << 10})
	if j.Active() {
		t.Fatal("new journal active")
	}
	id, lsn := j.Subscribe(func(*Entry) {})
	if !j.Active() || lsn != 0 {
		t.Fatalf("after subscribe: active %v lsn %d", j.Active(), lsn)
	}
	j.Unsubscribe(id)
	if j.Active() {
		t.Fatal("active after the last unsubscribe")
	}
	j.Start()
	if !j.Active() {
		t.Fatal("not active after Start")
	}
	j.Stop()
	if j.Active() {
		t.Fatal("active after Stop")
	}
}

// TestStopSkipsAnLSN: writes made while nothing records are in no
// backlog, so a reader that had every entry before the stop must not
// continue from there once recording starts again.
func TestStopSkipsAnLSN(t *testing.T) {
	j := New(0, Config{BacklogBytes: 1 << 20})
	j.Start()
	j.Record(0, args("SET", "a", "1"))
	j.Record(0, args("SET", "b", "1"))
	if !j.ReadFrom(3, func(*Entry) {}) {
		t.Fatal("ReadFrom(LSN+1) failed while recording")
	}
	j.Stop()
	// (A write now is not recorded: shards record only while Active.)
	j.Start()
	if j.ReadFrom(3, func(*Entry) {}) {
		t.Fatal("ReadFrom(3) continued across the stop")
	}
	j.Record(0, args("SET", "c", "1"))
	var got []uint64
	if !j.ReadFrom(j.LSN(), func(e *Entry) { got = append(got, e.LSN) }) || len(got) != 1 || got[0] != 4 {
		t.Fatalf("after the restart: entries %v, LSN %d; want the first new entry at LSN 4", got, j.LSN())
	}
	// A subscriber that stays keeps the journal recording: no skip.
	id, _ := j.Subscribe(func(*Entry) {})
	j.Stop()
	before := j.LSN()
	j.Record(0, args("SET", "d", "1"))
	if j.LSN() != before+1 {
		t.Fatalf("LSN %d after a recorded write, want %d", j.LSN(), before+1)
	}
	j.Unsubscribe(id)
}

func TestLSNsConsecutiveAndSubscribersSeeLaterEntries(t *testing.T) {
	j := New(3, Config{BacklogBytes: 1 << 20})
	j.Start()
	j.Record(0, args("SET", "a", "1"))
	var got []*Entry
	_, last := j.Subscribe(func(e *Entry) {
		c := e.Clone() // valid only during the call
		got = append(got, &c)
	})
	if last != 1 {
		t.Fatalf("subscribe lsn %d, want 1", last)
	}
	buf := args("SET", "b", "2")
	j.Record(2, buf)
	buf[1][0] = 'X' // the backlog copied the args
	j.Record(0, args("DEL", "a"))
	if len(got) != 2 || got[0].LSN != 2 || got[1].LSN != 3 {
		t.Fatalf("subscriber saw %+v", got)
	}
	if string(got[0].Args[1]) != "b" || got[0].DB != 2 || got[0].Op != OpCommand {
		t.Fatalf("entry wrong: %+v", got[0])
	}
	var held []string
	j.ReadFrom(2, func(e *Entry) { held = append(held, string(e.Args[1])) })
	if !reflect.DeepEqual(held, []string{"b", "a"}) {
		t.Fatalf("backlog holds %q, want [b a]", held)
	}
}

// TestBacklogRingMatchesModel appends entries of random sizes (some
// larger than the whole bound) and checks after each that ReadFrom
// returns exactly the newest entries whose sizes fit the bound, byte for
// byte, wherever their encodings wrapped around the buffer's end.
func TestBacklogRingMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 3))
	const bound = 1500
	j := New(0, Config{BacklogBytes: bound})
	j.Start()
	var model []Entry // every appended entry, cloned
	for i := 0; i < 3000; i++ {
		var e Entry
		switch r.IntN(10) {
		case 0: // a transaction part
			p := NewPart(nil)
			prev := j.Enter(p)
			j.Record(r.IntN(3), args("SET", fmt.Sprint("t", i), string(make([]byte, r.IntN(40)))))
			j.Leave(prev)
			j.Commit(p, uint64(i), []uint16{0, uint16(r.IntN(4))})
			for lsn := j.LSN() - 1; lsn <= j.LSN(); lsn++ {
				model = append(model, Entry{LSN: lsn}) // checked by LSN and size below
			}
			continue
		case 1:
			e.Args = args("SET", "big", string(make([]byte, bound+r.IntN(500))))
		default:
			e.Args = args("SET", fmt.Sprint("k", i), string(bytes.Repeat([]byte{byte(i)}, r.IntN(200))))
		}
		e.DB = r.IntN(16)
		j.Record(e.DB, e.Args)
		e.LSN, e.Op = j.LSN(), OpCommand
		model = append(model, e.Clone())
		// The newest entries whose encodings sum to at most the bound
		// (at least the newest one) must be held, in order.
		first := j.First()
		var got []Entry
		if !j.ReadFrom(first, func(e *Entry) { got = append(got, e.Clone()) }) {
			t.Fatalf("step %d: ReadFrom(First()=%d) failed", i, first)
		}
		if got[len(got)-1].LSN != j.LSN() || uint64(len(got)) != j.LSN()-first+1 {
			t.Fatalf("step %d: held LSNs %d..%d, last %d", i, first, got[len(got)-1].LSN, j.LSN())
		}
		size := 0
		for k := range got {
			size += got[k].EncodedSize()
			m := model[int(got[k].LSN)-1]
			if m.Op == OpCommand && !reflect.DeepEqual(got[k], m) {
				t.Fatalf("step %d: entry %d is %+v, want %+v", i, got[k].LSN, got[k], m)
			}
		}
		if len(got) > 1 && size > bound {
			t.Fatalf("step %d: %d bytes held, bound %d", i, size, bound)
		}
		if size != j.BacklogBytes() {
			t.Fatalf("step %d: BacklogBytes %d, entries %d", i, j.BacklogBytes(), size)
		}
		// The buffer is the bound's size, or the one entry's larger than it.
		if want := max(bound, got[len(got)-1].EncodedSize()); len(got) == 1 && len(j.buf) > want || len(got) > 1 && len(j.buf) != bound {
			t.Fatalf("step %d: buffer of %d bytes holding %d entries (bound %d)", i, len(j.buf), len(got), bound)
		}
	}
}

func TestBacklogBoundAndReadFrom(t *testing.T) {
	j := New(0, Config{BacklogBytes: 2000})
	j.Start()
	for i := 0; i < 200; i++ {
		j.Record(0, args("SET", fmt.Sprint("k", i), "vvvvvvvvvvvvvvvvvvvvvv"))
		if j.BacklogBytes() > 2000 {
			t.Fatalf("backlog %d bytes over its bound", j.BacklogBytes())
		}
	}
	first := j.First()
	if first <= 1 || j.LSN() != 200 {
		t.Fatalf("first %d last %d", first, j.LSN())
	}
	if j.ReadFrom(first-1, func(*Entry) { t.Fatal("called for a lost LSN") }) {
		t.Fatal("ReadFrom of an LSN the ring dropped succeeded")
	}
	var lsns []uint64
	if !j.ReadFrom(first+3, func(e *Entry) { lsns = append(lsns, e.LSN) }) {
		t.Fatal("ReadFrom of a held LSN failed")
	}
	if uint64(len(lsns)) != 200-first-2 || lsns[0] != first+3 || lsns[len(lsns)-1] != 200 {
		t.Fatalf("read %d entries from %d", len(lsns), lsns[0])
	}
	if !j.ReadFrom(201, func(*Entry) { t.Fatal("nothing to read") }) {
		t.Fatal("ReadFrom(LSN+1) must succeed with nothing")
	}
	if j.ReadFrom(202, func(*Entry) {}) {
		t.Fatal("ReadFrom of a future LSN succeeded")
	}
}

func TestBacklogAge(t *testing.T) {
	j := New(0, Config{BacklogBytes: 1 << 20, BacklogAge: 20 * time.Millisecond})
	j.Start()
	j.Record(0, args("SET", "a", "1"))
	time.Sleep(40 * time.Millisecond)
	j.Record(0, args("SET", "b", "1"))
	if j.First() != 2 {
		t.Fatalf("old entry kept: first %d", j.First())
	}
}

// TestBacklogAgeOwnersClock: with Config.Now the age bound reads the
// owner's clock, not the wall clock.
func TestBacklogAgeOwnersClock(t *testing.T) {
	now := int64(1_000_000)
	j := New(0, Config{BacklogBytes: 1 << 20, BacklogAge: time.Second, Now: func() int64 { return now }})
	j.Start()
	j.Record(0, args("SET", "a", "1"))
	now += 500
	j.Record(0, args("SET", "b", "1"))
	if j.First() != 1 {
		t.Fatalf("an entry 500 ms old by the clock was dropped: first %d", j.First())
	}
	now += 600 // a is 1.1 s old, b 0.6 s
	j.Record(0, args("SET", "c", "1"))
	if j.First() != 2 {
		t.Fatalf("first %d, want 2: the age bound did not read Config.Now", j.First())
	}
}

func TestTransactionParts(t *testing.T) {
	var seq atomic.Uint32
	a, b := New(0, Config{BacklogBytes: 1 << 20}), New(1, Config{BacklogBytes: 1 << 20})
	a.Start()
	b.Start()
	pa, pb := NewPart(&seq), NewPart(&seq)
	prev := a.Enter(pa)
	a.Record(0, args("SET", "x", "1"))
	a.Leave(prev)
	a.Record(0, args("SET", "outside", "1")) // not in the part
	b.Enter(pb)
	b.Record(0, args("SET", "y", "1"))
	b.Leave(nil)
	pa.Add(0, args("MSET", "x", "2", "y", "2"))
	a.Commit(pa, 7, []uint16{0, 1})
	b.Commit(pb, 7, []uint16{0, 1})
	var got []Entry
	a.ReadFrom(1, func(e *Entry) { got = append(got, *e) })
	if len(got) != 4 || got[0].Op != OpCommand || got[1].Op != OpMulti || got[2].Op != OpMulti || got[3].Op != OpExec {
		t.Fatalf("shard a: %+v", got)
	}
	if got[1].Seq != 1 || got[2].Seq != 3 || got[3].TxID != 7 || !reflect.DeepEqual(got[3].Shards, []uint16{0, 1}) {
		t.Fatalf("seq/txid wrong: %+v", got)
	}
	got = got[:0]
	b.ReadFrom(1, func(e *Entry) { got = append(got, *e) })
	if len(got) != 2 || got[0].Seq != 2 || got[1].Op != OpExec {
		t.Fatalf("shard b: %+v", got)
	}
	if pa.Len() != 0 {
		t.Fatal("commit did not reset the part")
	}
}

func randEntry(r *rand.Rand) Entry {
	e := Entry{Op: Op(1 + r.IntN(3)), LSN: r.Uint64() >> 1, DB: r.IntN(16)}
	switch e.Op {
	case OpExec:
		e.TxID = r.Uint64() >> 1
		e.Shards = make([]uint16, 1+r.IntN(4))
		for i := range e.Shards {
			e.Shards[i] = uint16(r.IntN(1 << 16))
		}
		return e
	case OpMulti:
		e.TxID, e.Seq = r.Uint64()>>1, r.Uint32()
	}
	e.Args = make([][]byte, 1+r.IntN(5))
	for i := range e.Args {
		a := make([]byte, r.IntN(300))
		for k := range a {
			a[k] = byte(r.Uint32())
		}
		e.Args[i] = a
	}
	return e
}

func TestEncodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	var buf []byte
	var want []Entry
	for i := 0; i < 500; i++ {
		e := randEntry(r)
		want = append(want, e)
		buf = e.Encode(buf)
	}
	for i, w := range want {
		e, n, err := Decode(buf)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		buf = buf[n:]
		if !reflect.DeepEqual(e, w) {
			t.Fatalf("entry %d: got %+v want %+v", i, e, w)
		}
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left", len(buf))
	}
}

func TestDecodeTruncatedAndCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 2))
	for i := 0; i < 300; i++ {
		e := randEntry(r)
		b := e.Encode(nil)
		for cut := 0; cut < len(b); cut++ {
			if _, _, err := Decode(b[:cut]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("truncated at %d of %d: err %v", cut, len(b), err)
			}
		}
		// Flip bytes: any outcome but a panic is fine; a success must
		// consume no more than the input.
		for k := 0; k < 20; k++ {
			c := bytes.Clone(b)
			c[r.IntN(len(c))] ^= byte(1 + r.IntN(255))
			if _, n, err := Decode(c); err == nil && (n <= 0 || n > len(c)) {
				t.Fatalf("decoded %d bytes of %d", n, len(c))
			}
		}
	}
	// A huge declared count must not allocate it.
	b := []byte{byte(OpCommand), 1, 0, 0xff, 0xff, 0x3f}
	if _, _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("huge arg count: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 20; i++ {
		e := randEntry(r)
		f.Add(e.Encode(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := Decode(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("n %d of %d", n, len(b))
		}
		// What decodes re-encodes to the same bytes.
		if got := e.Encode(nil); !bytes.Equal(got, b[:n]) {
			// Non-minimal varints decode but re-encode shorter; only a
			// longer result would be wrong.
			if len(got) > n {
				t.Fatalf("re-encoding grew: %d > %d", len(got), n)
			}
		}
	})
}

// BenchmarkRecord journals SET key value (100 bytes) with the default
// 1 MiB backlog and one subscriber that encodes each entry, as a
// replication flow does.
func BenchmarkRecord(b *testing.B) {
	j := New(0, Config{BacklogBytes: 1 << 20, BacklogAge: time.Hour})
	var out []byte
	j.Subscribe(func(e *Entry) {
		out = e.Encode(out[:0])
	})
	args := [][]byte{[]byte("SET"), []byte("key:000000123456"), make([]byte, 100)}
	b.ReportAllocs()
	for b.Loop() {
		j.Record(0, args)
	}
}
