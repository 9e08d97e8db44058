package master

import (
	"strings"
	"testing"

	"github.com/dfly/dfly/journal"
)

// The feed's merge as a state machine: entries are pushed shard by shard
// and drain emits what the heads allow.

func newTestFeed(shards int) (*Master, *feedState) {
	m := &Master{curDB: -1, replicas: map[*replicaConn]struct{}{}, wake: make(chan struct{}, 1),
		backlog: make([]byte, 1<<16)}
	m.queues = make([][]feedItem, shards)
	st := &feedState{local: make([][]feedItem, shards), txs: map[uint64]*feedTx{}, waiting: make([]bool, shards)}
	return m, st
}

func cmdEntry(db int, words ...string) *journal.Entry {
	e := &journal.Entry{Op: journal.OpCommand, DB: db}
	for _, w := range words {
		e.Args = append(e.Args, []byte(w))
	}
	return e
}

func multiEntry(tx uint64, seq uint32, words ...string) *journal.Entry {
	e := cmdEntry(0, words...)
	e.Op, e.TxID, e.Seq = journal.OpMulti, tx, seq
	return e
}

func execEntry(tx uint64, shards ...uint16) *journal.Entry {
	return &journal.Entry{Op: journal.OpExec, TxID: tx, Shards: shards}
}

func (st *feedState) add(sid int, es ...*journal.Entry) {
	for _, e := range es {
		st.local[sid] = append(st.local[sid], feedItem{e: e})
	}
}

// emitted renders the emitted RESP as one command per line.
func emitted(m *Master) string {
	held, _ := m.backlogFrom(1)
	var lines []string
	for _, part := range strings.Split(string(held), "*")[1:] {
		f := strings.Split(part, "\r\n")
		var words []string
		for i := 2; i < len(f); i += 2 {
			words = append(words, f[i])
		}
		lines = append(lines, strings.Join(words, " "))
	}
	return strings.Join(lines, "\n")
}

func TestFeedMergesTransactionsAndKeepsShardOrder(t *testing.T) {
	m, st := newTestFeed(2)
	st.add(0, cmdEntry(0, "SET", "a", "1"), multiEntry(7, 1, "SET", "x", "1"), multiEntry(7, 3, "INCR", "x"),
		execEntry(7, 0, 1), cmdEntry(0, "SET", "b", "1"))
	m.drain(st)
	// Shard 1's part has not arrived: shard 0 waits behind the transaction.
	if got, want := emitted(m), "SELECT 0\nSET a 1"; got != want {
		t.Fatalf("before shard 1's part:\n%s\nwant:\n%s", got, want)
	}
	st.add(1, multiEntry(7, 2, "SET", "y", "1"), execEntry(7, 0, 1), cmdEntry(2, "SET", "c", "1"))
	m.drain(st)
	// After the block each shard goes on in its order; which shard first
	// is the merge's choice (their writes are independent).
	want := "SELECT 0\nSET a 1\nMULTI\nSET x 1\nSET y 1\nINCR x\nEXEC\nSELECT 2\nSET c 1\nSELECT 0\nSET b 1"
	if got := emitted(m); got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	if m.offset != int64(m.backlogLen) {
		t.Fatalf("offset %d, backlog %d", m.offset, m.backlogLen)
	}
}

func TestFeedEmptyAndSingleCommandTransactions(t *testing.T) {
	m, st := newTestFeed(3)
	// A transaction that wrote nothing leaves only markers: nothing emitted.
	st.add(0, execEntry(1, 0, 2))
	st.add(2, execEntry(1, 0, 2))
	// One command over shards: no MULTI needed.
	st.add(1, multiEntry(2, 1, "MSET", "p", "1", "q", "2"), execEntry(2, 1, 2))
	st.add(2, execEntry(2, 1, 2), cmdEntry(0, "DEL", "p"))
	m.drain(st)
	if got, want := emitted(m), "SELECT 0\nMSET p 1 q 2\nDEL p"; got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	for sid, q := range st.local {
		if len(q) != 0 || st.waiting[sid] {
			t.Fatalf("shard %d left %d items (waiting %v)", sid, len(q), st.waiting[sid])
		}
	}
	if len(st.txs) != 0 {
		t.Fatalf("%d transactions left", len(st.txs))
	}
}

func TestFeedPartArrivesInPieces(t *testing.T) {
	m, st := newTestFeed(2)
	st.add(0, multiEntry(5, 1, "SET", "x", "1"))
	m.drain(st)
	if m.offset != 0 {
		t.Fatal("emitted a transaction before its part was complete")
	}
	st.add(0, execEntry(5, 0))
	m.drain(st)
	if got, want := emitted(m), "SELECT 0\nSET x 1"; got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
}

func TestBacklogRing(t *testing.T) {
	m, _ := newTestFeed(1)
	m.backlog = make([]byte, 10)
	m.emit([]byte("abcdef"))
	m.emit([]byte("ghijkl"))
	if b, ok := m.backlogFrom(3); !ok || string(b) != "cdefghijkl" {
		t.Fatalf("from 3: %q %v", b, ok)
	}
	if _, ok := m.backlogFrom(2); ok {
		t.Fatal("offset 2 fell out of the ring")
	}
	if b, ok := m.backlogFrom(13); !ok || len(b) != 0 {
		t.Fatalf("from the end: %q %v", b, ok)
	}
	if _, ok := m.backlogFrom(14); ok {
		t.Fatal("a future offset")
	}
	m.emit([]byte(strings.Repeat("z", 25)))
	if b, ok := m.backlogFrom(m.offset - 9); !ok || string(b) != strings.Repeat("z", 10) {
		t.Fatalf("after a big write: %q %v", b, ok)
	}
}

func TestFeedBarrierPassesEachShardIndependently(t *testing.T) {
	m, st := newTestFeed(2)
	b := &barrier{left: 2, done: make(chan int64, 1)}
	// Shard 1 is held by a transaction whose other part lies behind
	// shard 0's barrier: the barrier must not wait for alignment.
	st.add(0, cmdEntry(0, "SET", "a", "1"))
	st.local[0] = append(st.local[0], feedItem{barrier: b})
	st.add(0, multiEntry(3, 1, "SET", "x", "1"), execEntry(3, 0, 1))
	st.add(1, multiEntry(3, 2, "SET", "y", "1"), execEntry(3, 0, 1))
	st.local[1] = append(st.local[1], feedItem{barrier: b})
	m.drain(st)
	select {
	case off := <-b.done:
		if off != m.offset {
			t.Fatalf("barrier at %d, stream at %d", off, m.offset)
		}
	default:
		t.Fatalf("barrier not passed; stream:\n%s", emitted(m))
	}
	if !strings.Contains(emitted(m), "MULTI") {
		t.Fatalf("transaction not emitted:\n%s", emitted(m))
	}
}

// A snapshot's cut mark (PositionCut) reports the offset of exactly the
// entries before it on every shard: a shard's entries after the cut wait
// behind its mark until every shard reached its own, so the offset a
// file keeps never covers a write the file does not hold (a barrier,
// which lets a shard go on past it, would).
func TestSnapshotCutMarkOffsetCoversOnlyBeforeTheCut(t *testing.T) {
	m, st := newTestFeed(2)
	mark := &cutMark{done: make(chan int64, 1)}
	st.add(0, cmdEntry(0, "SET", "a", "1"))
	st.local[0] = append(st.local[0], feedItem{cut: mark})
	st.add(0, cmdEntry(0, "SET", "after", "1")) // after the cut, before shard 1's mark
	st.add(1, cmdEntry(0, "SET", "b", "1"))
	m.drain(st)
	select {
	case off := <-mark.done:
		t.Fatalf("offset %d reported before shard 1 reached the cut", off)
	default:
	}
	st.local[1] = append(st.local[1], feedItem{cut: mark})
	m.drain(st)
	off := <-mark.done
	before := strings.Split(emitted(m), "\n")
	if got := strings.Join(before, ","); !strings.HasSuffix(got, "SET after 1") {
		t.Fatalf("stream %q: the entry after the cut follows it", got)
	}
	held, _ := m.backlogFrom(1)
	atCut := string(held[:off])
	if strings.Contains(atCut, "after") || !strings.Contains(atCut, "$1\r\na") || !strings.Contains(atCut, "$1\r\nb") {
		t.Fatalf("the offset at the cut (%d) covers %q", off, atCut)
	}
}
