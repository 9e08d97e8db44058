package snapshot

import (
	"fmt"
	"testing"

	"github.com/dfly/dfly/shard"
)

// Commands with more than one key (Capture): one that reads or moves a key
// the walk has not reached into a key it has passed must find the first
// key's baseline ahead of its journal entry, or the replica cannot apply
// it and the second key is never sent again.

// walkedSome fills db 0, starts a snapshot and steps the walk part way; it
// returns a key whose bucket is still due and one whose bucket is done.
func walkedSome(t *testing.T, mode Mode) (h *harness, due, done string) {
	h = newHarness(t, 1)
	stepOnePosition(t)
	for i := 0; i < 3000; i++ {
		h.sh.DBs[0].Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte(fmt.Sprintf("v%d", i))), false)
	}
	h.start(Options{Mode: mode, Tagged: true, FullSyncCut: true})
	for i := 0; i < 40; i++ {
		h.step()
	}
	for i := 0; i < 3000 && (due == "" || done == ""); i++ {
		k := fmt.Sprintf("k%d", i)
		switch h.sl.KeyState(0, k) {
		case NotVisited:
			if due == "" {
				due = k
			}
		case Covered:
			if done == "" {
				done = k
			}
		}
	}
	if due == "" || done == "" {
		t.Fatalf("the walk is not part way: due %q, done %q", due, done)
	}
	return h, due, done
}

func TestMultiKeyCapture(t *testing.T) {
	for _, mode := range []Mode{NonPIT, PIT} {
		// RENAME due done: the moved key's baseline precedes the entry.
		t.Run(fmt.Sprintf("rename/mode%d", mode), func(t *testing.T) {
			h, due, done := walkedSome(t, mode)
			want := string(h.sh.DBs[0].Table.Value(h.sh.DBs[0].Table.Find(due)).Str())
			before := ReadStats().MultiKeyCaptures
			h.rename(0, due, done)
			sc := finishAndCheck(t, h)
			if sc.replay["0/"+done] != want {
				t.Fatalf("%s = %q on the replica, want %q", done, sc.replay["0/"+done], want)
			}
			if mode == NonPIT && ReadStats().MultiKeyCaptures == before {
				t.Fatal("RENAME from a bucket the walk has not reached captured nothing")
			}
		})
		// A store reading a key it leaves alone (SUNIONSTORE done due).
		t.Run(fmt.Sprintf("store/mode%d", mode), func(t *testing.T) {
			h, due, done := walkedSome(t, mode)
			h.store(0, done, due)
			sc := finishAndCheck(t, h)
			if sc.replay["0/"+done] != sc.replay["0/"+due] {
				t.Fatalf("%s = %q on the replica, want %s's %q", done, sc.replay["0/"+done], due, sc.replay["0/"+due])
			}
		})
	}
}

// Non-PIT: a captured bucket leaves out a key another transaction holds
// exclusively; it may have applied a write it has not journaled yet, which
// the replica would otherwise get twice. The walk writes it after the
// commit (see TestNonPITWaitsForTransactionCommit).
func TestMultiKeyCaptureSkipsKeysInFlight(t *testing.T) {
	h, due, done := walkedSome(t, NonPIT)
	tb := h.sh.DBs[0].Table
	var held string
	tb.ForEach(tb.BucketOf(tb.Find(due)), func(it shard.Iterator) {
		if k := tb.Key(it); k != due && held == "" {
			held = k
		}
	})
	if held == "" {
		t.Skip("the due key is alone in its bucket")
	}
	lock := []shard.KeyLock{{DB: 0, Key: held, Excl: true}}
	h.sh.Acquire(lock, false)
	h.sh.DBs[0].Set([]byte(held), shard.NewString([]byte("in flight")), false)
	h.rename(0, due, done)
	h.journal("S0|" + held + "|in flight") // the commit: journal, then release
	h.sh.Release(lock, false)
	sc := finishAndCheck(t, h)
	entry := sc.entries["0/"+held][0]
	for _, it := range sc.items["0/"+held] {
		if it[0] < entry {
			t.Fatalf("%s's baseline (chunk %d) holds a write journaled later (chunk %d)", held, it[0], entry)
		}
	}
}

// A multi-key command reading a big value whose baseline is half written
// finishes it first: its entry must not overtake the value's last piece.
func TestMultiKeyCaptureFinishesBigValue(t *testing.T) {
	h, big := bigSetup(t, 0)
	h.store(0, "copy", big)
	if h.parked != 0 {
		t.Fatal("a reader of the Serializing key was parked")
	}
	sc := finishAndCheck(t, h)
	if len(sc.replay["0/copy"]) != 200<<10 {
		t.Fatalf("the copy of the big value has %d bytes on the replica", len(sc.replay["0/copy"]))
	}
}
