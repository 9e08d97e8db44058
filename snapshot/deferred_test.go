package snapshot

import (
	"bytes"
	"testing"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// A value moved to another key (RENAME, MOVE: DB.Take) and then edited in
// place (INCRBY, APPEND, SETRANGE) must leave the bytes a deferred record
// references alone: the record is encoded later, on the consumer's thread
// (a data race under -race in TestReplCrossShardTransactions, and a
// snapshot holding the edited value).
func TestDeferredValueMovedThenEdited(t *testing.T) {
	// move takes a from src and stores it as b in dst, then edits b's
	// bytes in place as INCRBY does.
	move := func(src, dst *shard.DB) {
		it, _ := src.Find([]byte("a"))
		dst.Set([]byte("b"), src.Take(it), false)
		it, _ = dst.Find([]byte("b"))
		p := dst.Mutate(it)
		p.SetStr(append(p.Str()[:0], "99"...))
	}
	// PIT, the walk not at a yet: Take's hooks capture a, sharing the
	// bytes that go with the value.
	t.Run("captured-by-the-move", func(t *testing.T) {
		sh, sl, out := deferredShard(t)
		move(sh.DBs[0], sh.DBs[0])
		checkA(t, sh, sl, out)
	})
	// a's record is out (the walk is over, its cut not materialized) and
	// the value lands on a shard without a snapshot, whose hooks know
	// nothing of the reader.
	t.Run("to-another-shard", func(t *testing.T) {
		sh, sl, out := deferredShard(t)
		runSlice(t, sh, sl)
		other := shard.New(1, 1)
		move(sh.DBs[0], other.DBs[0])
		checkA(t, sh, sl, out)
	})
}

// deferredShard is a shard holding a = "10" in bytes of its own (as INCR
// makes it) with a deferred PIT Slice started on it, no step run yet.
func deferredShard(t *testing.T) (*shard.Shard, *Slice, chan Chunk) {
	sh := shard.New(0, 1)
	sh.Attach(func(shard.Runnable) {}) // steps are run by runSlice
	sh.DBs[0].Set([]byte("a"), shard.NewString([]byte("10")), false)
	out := make(chan Chunk, 1<<10)
	sl := Start(sh, Options{Encode: encodeString, Out: out, Defer: true, Mode: PIT})
	return sh, sl, out
}

// runSlice runs sl's steps until it is done.
func runSlice(t *testing.T, sh *shard.Shard, sl *Slice) {
	for i := 0; !sl.Done(); i++ {
		if i > 1000 {
			t.Fatal("the snapshot did not finish")
		}
		sh.Exec(sl)
	}
}

// checkA finishes sl and checks that its output holds a = "10" alone.
func checkA(t *testing.T, sh *shard.Shard, sl *Slice, out chan Chunk) {
	t.Helper()
	runSlice(t, sh, sl)
	m := NewMaterializer(true, nil)
	var data []byte
	for last := false; !last; {
		c := <-out
		m.Materialize(&c)
		data = append(data, c.Data...)
		last = c.Last
	}
	col := &collector{got: map[string]string{}}
	if err := rdb.NewDecoder(bytes.NewReader(data)).DecodeFragment(col); err != nil {
		t.Fatal(err)
	}
	if len(col.got) != 1 || col.got["0/a"] != "10" {
		t.Fatalf("snapshot %v, want a = 10 alone (the value at the cut)", col.got)
	}
}

// The copy copy-on-write makes is equal to the value, how it was written
// (OBJECT ENCODING) included: an APPENDed value stays raw.
func TestCopyOnWriteKeepsEncoding(t *testing.T) {
	sh, sl, out := deferredShard(t)
	db := sh.DBs[0]
	it, _ := db.Find([]byte("a"))
	db.Table.Value(it).SetEncoding(shard.EncRaw)
	runSlice(t, sh, sl) // a's record references its bytes
	p := db.Mutate(it)
	if p.Shared() || p.Encoding() != shard.EncRaw {
		t.Fatalf("after copy-on-write: shared %v, encoding %d, want a copy still raw", p.Shared(), p.Encoding())
	}
	checkA(t, sh, sl, out)
}
