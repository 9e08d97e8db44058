package snapshot

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/set"
)

// The seed's counter-examples, each driven step by step.

// bigSetup fills db 0 with small keys and one big key and starts a tagged
// PIT snapshot with the journal; it returns the harness once the big
// key's bucket is Serializing (its first pieces are out, the rest due).
func bigSetup(t *testing.T, ttl time.Duration) (*harness, string) {
	h := newHarness(t, 1)
	stepOnePosition(t)
	db := h.sh.DBs[0]
	for i := 0; i < 2000; i++ {
		db.Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte(fmt.Sprintf("v%d", i))), false)
	}
	const big = "big"
	db.Set([]byte(big), shard.NewString([]byte(strings.Repeat("B", 200<<10))), false)
	if ttl > 0 {
		it, _ := db.Find([]byte(big))
		db.SetExpire(it, h.sh.Now()+ttl.Milliseconds())
	}
	h.start(Options{Mode: PIT, Tagged: true, MaxChunk: 4 << 10})
	for h.sl.KeyState(0, big) != Serializing {
		if !h.step() {
			t.Fatal("the big key never became Serializing")
		}
	}
	return h, big
}

// stepUntilCovered runs steps until key's bucket is Covered, checking
// that pending writers stay parked meanwhile.
func stepUntilCovered(t *testing.T, h *harness, key string, parked int) {
	t.Helper()
	for h.sl.KeyState(0, key) == Serializing {
		if h.parked != parked {
			t.Fatalf("%d writers parked while %s is Serializing, want %d", h.parked, key, parked)
		}
		if !h.step() {
			t.Fatal("the snapshot stopped before the bucket was Covered")
		}
	}
}

func finishAndCheck(t *testing.T, h *harness) *streamCheck {
	t.Helper()
	h.finish()
	sc := checkStream(t, h.data)
	if h.sl.opt.Mode == PIT {
		if err := sc.ordered(); err != nil {
			t.Fatal(err)
		}
	}
	if d := diff(sc.replay, h.dataset()); d != "" {
		t.Fatalf("replay differs from the dataset:\n%s", d)
	}
	if !h.sh.Idle() {
		t.Fatal("locks or gates left behind")
	}
	return sc
}

// A DEL of a key whose baseline is half written waits (parked) until the
// bucket is Covered; its journal entry follows the whole baseline.
func TestDelMidBaseline(t *testing.T) {
	h, big := bigSetup(t, 0)
	h.del(0, big)
	if h.parked != 1 {
		t.Fatal("DEL of a Serializing key was not parked")
	}
	if it, _ := h.sh.DBs[0].Find([]byte(big)); !it.Valid() {
		t.Fatal("the parked DEL ran")
	}
	stepUntilCovered(t, h, big, 1)
	for h.parked > 0 && h.step() {
	}
	if h.parked != 0 {
		t.Fatal("the DEL stayed parked after Covered")
	}
	sc := finishAndCheck(t, h)
	if _, ok := sc.baseline["0/"+big]; !ok {
		t.Fatal("the baseline lost the key deleted after the cut")
	}
	if _, ok := sc.replay["0/"+big]; ok {
		t.Fatal("the DEL did not reach the stream")
	}
}

// A delete that bypasses the gate (a path that does not declare its key)
// finishes the baseline inline before the mutation: slower, still ordered.
func TestDelMidBaselineUngated(t *testing.T) {
	h, big := bigSetup(t, 0)
	before := ReadStats().InlineDrains
	db := h.sh.DBs[0]
	it, _ := db.Find([]byte(big))
	db.Delete(it)
	h.journal("D0|" + big)
	if ReadStats().InlineDrains != before+1 {
		t.Fatal("the delete did not drain the big value first")
	}
	finishAndCheck(t, h)
}

// A write to a Serializing bucket: the big key's writer is parked; a small
// key of the same bucket (already written) proceeds at once.
func TestMutationOfSerializingBucket(t *testing.T) {
	h, big := bigSetup(t, 0)
	db := h.sh.DBs[0]
	bit, _ := db.Find([]byte(big))
	b := db.Table.BucketOf(bit)
	var neighbour string
	db.Table.ForEach(b, func(it shard.Iterator) {
		if k := db.Table.Key(it); k != big {
			neighbour = k
		}
	})
	h.set(0, big, "new value")
	if h.parked != 1 {
		t.Fatal("SET of a Serializing key was not parked")
	}
	if neighbour != "" {
		h.set(0, neighbour, "neighbour changed")
		if h.parked != 1 {
			t.Fatal("SET of a written key of the Serializing bucket was parked")
		}
	}
	stepUntilCovered(t, h, big, 1)
	for h.parked > 0 && h.step() {
	}
	sc := finishAndCheck(t, h)
	if sc.replay["0/"+big] != "new value" {
		t.Fatal("the parked SET was lost")
	}
	if len(sc.baseline["0/"+big]) != 200<<10 {
		t.Fatal("the baseline of the big key is not its value at the cut")
	}
}

// Expiry of a key whose bucket is Serializing: the delete happens, its
// journal DEL is deferred until the bucket is Covered, and goes out once.
func TestExpiryWhileSerializing(t *testing.T) {
	h, big := bigSetup(t, 30*time.Millisecond)
	before := ReadStats().DeferredDeletions
	time.Sleep(40 * time.Millisecond)
	expired := expireJournaled(h)
	if len(expired) != 1 || expired[0] != big {
		t.Fatalf("expired %v, want [%s]", expired, big)
	}
	if ReadStats().DeferredDeletions != before+1 {
		t.Fatal("the expiry DEL was not deferred")
	}
	sc := finishAndCheck(t, h)
	if n := len(sc.entries["0/"+big]); n != 1 {
		t.Fatalf("%d journal entries for the expired key, want 1", n)
	}
	if _, ok := sc.baseline["0/"+big]; !ok {
		t.Fatal("the baseline lost the key that expired after the cut")
	}
}

// Expiry of a small key whose bucket is Serializing for another key's big
// value: its baseline went out whole at the capture, so its DEL goes out
// at once. Held back until the bucket is Covered, it would follow a SET
// that created the key again, and the replica would lose that key.
func TestExpiryOfSmallKeyWhileSerializing(t *testing.T) {
	h, big := bigSetup(t, 0)
	db := h.sh.DBs[0]
	it, _ := db.Find([]byte(big))
	small := ""
	db.Table.ForEach(db.Table.BucketOf(it), func(it shard.Iterator) {
		if k := db.Table.Key(it); k != big && small == "" {
			small = k
		}
	})
	if small == "" {
		t.Fatal("no other key in the big value's bucket")
	}
	sit, _ := db.Find([]byte(small))
	db.SetExpire(sit, h.sh.Now()+1)
	time.Sleep(5 * time.Millisecond)
	expired := expireJournaled(h)
	if len(expired) != 1 || expired[0] != small {
		t.Fatalf("expired %v, want [%s]", expired, small)
	}
	h.set(0, small, "again")
	if h.sl.KeyState(0, big) != Serializing {
		t.Fatal("the big value was finished meanwhile: the test proves nothing")
	}
	sc := finishAndCheck(t, h) // the replay must hold small = "again"
	if es := sc.entries["0/"+small]; len(es) != 2 || es[0] > es[1] {
		t.Fatalf("entries of %s at chunks %v", small, es)
	}
}

// A flush during a non-PIT snapshot: the walk goes on taking values as
// they are now, so the journal may not wait for the baseline as PIT's
// does. Held, RENAME a b then SET a x would replay after a baseline that
// already has b = a's old value and a = x, and b would end as x.
func TestFlushNonPITHoldsNothing(t *testing.T) {
	h := newHarness(t, 2)
	stepOnePosition(t)
	for db := 0; db < 2; db++ {
		for i := 0; i < 2000; i++ {
			h.sh.DBs[db].Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte(fmt.Sprintf("v%d", i))), false)
		}
	}
	h.start(Options{Mode: NonPIT, Tagged: true})
	h.step()
	h.flush(1)
	h.rename(0, "k1", "k2")
	h.set(0, "k1", "x")
	sc := finishAndCheck(t, h) // the replay must hold k2 = v1, k1 = x
	if sc.replay["0/k2"] != "v1" {
		t.Fatalf("k2 = %q after the replay", sc.replay["0/k2"])
	}
}

// expireJournaled runs db 0's active expiry and offers the snapshot each
// expiry's DEL, as the journal records it: after the delete applied.
func expireJournaled(h *harness) []string {
	var expired []string
	rec := expiryRecorder{&expired}
	h.sh.AddExpiryHook(rec)
	defer h.sh.RemoveExpiryHook(rec)
	h.sh.Exec(shard.Func(func(s *shard.Shard) {
		s.DBs[0].ExpireStep(10000)
		for _, k := range expired {
			h.sl.Journal(JournalEntry{Data: []byte("D0|" + k), DB: 0, Expired: k, Expiry: true})
		}
	}))
	return expired
}

type expiryRecorder struct{ keys *[]string }

func (r expiryRecorder) OnExpire(db *shard.DB, it shard.Iterator, key string) {
	*r.keys = append(*r.keys, key)
}

// A split during the walk, non-PIT: items that a split moves from buckets
// the walk has not reached into buckets it passed are written on the move
// (OnMoved); without it they would be missing from the replica.
func TestSplitDuringWalkNonPIT(t *testing.T) {
	h := newHarness(t, 1)
	stepOnePosition(t)
	for i := 0; i < 5000; i++ {
		h.sh.DBs[0].Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte("v")), false)
	}
	before := ReadStats().MovedSaved
	h.start(Options{Mode: NonPIT, Tagged: true})
	for i := 0; i < 30; i++ {
		h.step()
	}
	for i := 0; i < 60000; i++ { // many splits, while the walk is midway
		h.set(0, fmt.Sprintf("n%d", i), "w")
	}
	sc := finishAndCheck(t, h)
	if ReadStats().MovedSaved == before {
		t.Fatal("no move crossed the walk's position: the test proves nothing")
	}
	for i := 0; i < 5000; i++ {
		if _, ok := sc.replay[fmt.Sprintf("0/k%d", i)]; !ok {
			t.Fatalf("k%d, moved by a split, is missing", i)
		}
	}
}

// A split during the walk, PIT: the whole segment is written before it
// splits, so the baseline is the dataset at the cut, every key once.
func TestSplitDuringWalkPIT(t *testing.T) {
	h := newHarness(t, 1)
	stepOnePosition(t)
	for i := 0; i < 5000; i++ {
		h.sh.DBs[0].Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte("v")), false)
	}
	atCut := h.dataset()
	h.start(Options{Mode: PIT, Tagged: true})
	for i := 0; i < 30; i++ {
		h.step()
	}
	for i := 0; i < 20000; i++ {
		h.set(0, fmt.Sprintf("n%d", i), "w")
	}
	sc := finishAndCheck(t, h)
	if len(sc.dups) > 0 {
		t.Fatalf("written twice: %v", sc.dups[:min(5, len(sc.dups))])
	}
	if d := diff(sc.baseline, atCut); d != "" {
		t.Fatalf("baseline differs from the cut:\n%s", d)
	}
}

// Backpressure: while the consumer takes nothing, writers that need a
// baseline are parked (not the shard), and resume once it drains.
func TestBackpressureParksWriters(t *testing.T) {
	defer func(n int) { maxPending = n }(maxPending)
	maxPending = 4 << 20 // the 6 MB of values below fill it
	ResetMaxStall()
	h := newHarness(t, 1)
	stepOnePosition(t)
	rng := rand.New(rand.NewPCG(1, 2))
	val := func() string { // incompressible, unlike a repeated letter
		b := make([]byte, 100)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	values := map[string]string{}
	for i := 0; i < 60000; i++ {
		k := fmt.Sprintf("k%d", i)
		values[k] = val()
		h.sh.DBs[0].Set([]byte(k), shard.NewString([]byte(values[k])), false)
	}
	h.out = make(chan Chunk, 1) // a consumer that is not reading
	h.start(Options{Mode: PIT, Tagged: true})
	for i := 0; i < 100000 && h.sl.pendingBytes < walkPending; i++ {
		h.step()
	}
	// The walk pauses once walkPending waits: the rest of the room is the
	// writers'.
	keys := h.sl.Keys
	for i := 0; i < 10; i++ {
		h.step()
	}
	if h.sl.pendingBytes < walkPending || h.sl.pendingBytes >= maxPending || h.sl.Keys != keys {
		t.Fatalf("the walk did not pause: %d pending, keys %d then %d", h.sl.pendingBytes, keys, h.sl.Keys)
	}
	// Writes to keys the walk has not reached capture their buckets until
	// the output is full.
	next := 59999
	notVisited := func() string {
		for ; next >= 0; next-- {
			if k := fmt.Sprintf("k%d", next); h.sl.KeyState(0, k) == NotVisited {
				return k
			}
		}
		t.Fatal("every key visited")
		return ""
	}
	for h.sl.pendingBytes < maxPending {
		k := notVisited()
		values[k] = "written"
		h.set(0, k, "written")
		if h.parked != 0 {
			t.Fatalf("a writer was held back with %d pending", h.sl.pendingBytes)
		}
	}
	// INFO's snapshot_max_pending_bytes saw the output held.
	if got := ReadStats().MaxPending; got < int64(h.sl.pendingBytes) {
		t.Fatalf("max pending %d with %d held", got, h.sl.pendingBytes)
	}
	// A write to a key the walk has not reached must now wait.
	waiting := notVisited()
	h.set(0, waiting, "late")
	if h.parked != 1 {
		t.Fatal("a writer needing a baseline was not held back by the full output")
	}
	// The consumer takes a chunk at a time: the writer goes on once the
	// output is below resumePending, long before half of it has drained
	// (which was a stop of tens of milliseconds for every parked writer).
	var consumed []byte
	for i := 0; h.parked != 0; i++ {
		if i == 10000 {
			t.Fatalf("the writer is still held with %d pending (resume below %d)", h.sl.pendingBytes, resumePending())
		}
		select {
		case c := <-h.out:
			consumed = append(consumed, c.Data...)
		default:
		}
		if !h.step() {
			time.Sleep(time.Millisecond) // a timer posts the next step
		}
	}
	if h.sl.pendingBytes < maxPending/2 {
		t.Fatalf("the writer waited until %d of %d pending", h.sl.pendingBytes, maxPending)
	}
	// The consumer catches up.
	done := make(chan []byte)
	go func() {
		all := consumed
		for c := range h.out {
			all = append(all, c.Data...)
			if c.Last {
				break
			}
		}
		done <- all
	}()
	for !h.sl.Done() {
		if !h.step() {
			time.Sleep(time.Millisecond)
		}
	}
	// The last chunks may still wait for the consumer: keep running the
	// shard (timers post the retries) until it has them all.
	for h.data == nil {
		select {
		case h.data = <-done:
		default:
			if !h.step() {
				time.Sleep(time.Millisecond)
			}
		}
	}
	if h.parked != 0 {
		t.Fatal("the held writer never ran")
	}
	sc := checkStream(t, h.data)
	if sc.baseline["0/"+waiting] != values[waiting] {
		t.Fatal("the held write leaked into the baseline")
	}
}

// Non-PIT: a transaction applies its writes in one step and journals them
// in a later one. The walk must not take a baseline of its keys in
// between, or the replica would apply the write twice (once in the
// baseline, once from the journal).
func TestNonPITWaitsForTransactionCommit(t *testing.T) {
	h := newHarness(t, 1)
	stepOnePosition(t)
	db := h.sh.DBs[0]
	for i := 0; i < 3000; i++ {
		db.Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte("0")), false)
	}
	h.start(Options{Mode: NonPIT, Tagged: true})
	// A transaction locks k7 and applies INCR; its journal part waits.
	lock := []shard.KeyLock{{DB: 0, Key: "k7", Excl: true}}
	h.sh.Acquire(lock, false)
	db.Set([]byte("k7"), shard.NewString([]byte("1")), false)
	for i := 0; i < 2000 && h.sl.KeyState(0, "k7") == NotVisited; i++ {
		if !h.step() {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if h.sl.KeyState(0, "k7") != NotVisited {
		t.Fatal("the walk took a baseline of a key whose transaction has not journaled yet")
	}
	// The commit: journal, then release.
	h.journal("S0|k7|1")
	h.sh.Release(lock, false)
	sc := finishAndCheck(t, h)
	if sc.replay["0/k7"] != "1" {
		t.Fatalf("k7 = %q after replay", sc.replay["0/k7"])
	}
}

// encodeTypes is encodeTest plus sets, which a command creates empty and
// then fills (SADD: DB.Insert of a new set, then its members).
func encodeTypes(e *rdb.Encoder, key []byte, v *shard.Value, at int64) {
	if v.Type != shard.TypeSet {
		encodeTest(e, key, v, at)
		return
	}
	s := v.Obj().(*set.Set)
	e.BeginSet(key, s.Len(), rdb.Meta{ExpireAt: at})
	s.Range(func(m []byte) bool { e.SetMember(m); return true })
	e.End()
}

// Non-PIT, a command's insert splits a segment while the walk is midway:
// the items it moves behind the walk's position must be written, but not
// in the middle of the command. SADD of a new key inserts an empty set
// and fills it afterwards; an empty set written then broke the main
// stream's encoder, and every record after it was lost with no error the
// consumer checked. And a key written then holds the command's effect
// before its journal entry, which the replica would apply twice.
func TestMovesMidCommandNonPIT(t *testing.T) {
	h := newHarness(t, 1)
	stepOnePosition(t)
	for i := 0; i < 5000; i++ {
		h.sh.DBs[0].Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte("v")), false)
	}
	before := ReadStats().MovedSaved
	h.start(Options{Mode: NonPIT, Tagged: true, Encode: encodeTypes})
	for i := 0; i < 30; i++ {
		h.step()
	}
	for i := 0; i < 60000; i++ { // many splits, while the walk is midway
		if i%2 == 0 { // SADD of a new key
			key := fmt.Sprintf("s%d", i)
			h.write(0, key, func(s *shard.Shard) {
				_, v := s.DBs[0].Insert([]byte(key), shard.ObjectValue(shard.TypeSet, set.New()))
				v.Obj().(*set.Set).Add([]byte("m"))
				h.journal(fmt.Sprintf("A0|%s", key))
			})
			continue
		}
		key := fmt.Sprintf("n%d", i) // INCR of a new key
		h.write(0, key, func(s *shard.Shard) {
			s.DBs[0].Insert([]byte(key), shard.NewString([]byte("1")))
			h.journal(fmt.Sprintf("I0|%s", key))
		})
	}
	h.finish()
	if ReadStats().MovedSaved == before {
		t.Fatal("no move crossed the walk's position: the test proves nothing")
	}
	sc := checkStream(t, h.data)
	for i := 0; i < 5000; i++ {
		if _, ok := sc.replay[fmt.Sprintf("0/k%d", i)]; !ok {
			t.Fatalf("k%d, moved by a split, is missing", i)
		}
	}
	for i := 1; i < 60000; i += 2 {
		if v := sc.replay[fmt.Sprintf("0/n%d", i)]; v != "1" {
			t.Fatalf("n%d: the replay of baseline and journal gives %q, want 1 (INCR applied twice?)", i, v)
		}
	}
	// No set may have a baseline before its own entry (the entry created it).
	for k, items := range sc.sets {
		if es := sc.entries[k]; len(es) > 0 && len(items) > 0 && items[0][0] < es[0] {
			t.Fatalf("%s: baseline at chunk %d before the entry that created it (chunk %d)", k, items[0][0], es[0])
		}
	}
}
