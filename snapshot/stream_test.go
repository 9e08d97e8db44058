package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// The tests here drive a shard and its snapshot by hand: the test is the
// shard's goroutine, the shard's messages land in a queue it runs one at
// a time, and "commands" are closures that pass the shard's gate like a
// connection's batch does (parking when a key is pinned). Journal entries
// are text: "S<db>|key|value", "D<db>|key", "F<db>", "I<db>|key" (INCR),
// "A<db>|key" (a set created; replay tracks strings only), and two that read a
// key: "R<db>|from|to" (RENAME; nothing happens when from is missing) and
// "C<db>|dst|src" (a store from src, like SUNIONSTORE of one set: dst
// becomes src's value, or goes when src is missing).

// encodeTest writes strings; big ones in parts, as the server does.
func encodeTest(e *rdb.Encoder, key []byte, v *shard.Value, at int64) {
	s := v.Str()
	m := rdb.Meta{ExpireAt: at}
	if len(s) <= 2048 {
		e.String(key, s, m)
		return
	}
	e.BeginString(key, len(s), m)
	for len(s) > 0 {
		n := min(len(s), 1024)
		e.StringPart(s[:n])
		s = s[n:]
	}
}

type harness struct {
	t      *testing.T
	sh     *shard.Shard
	mu     sync.Mutex // timers post steps from their goroutines
	queue  []shard.Runnable
	sl     *Slice
	out    chan Chunk
	data   []byte
	parked int
	// after: journal entries once the snapshot is done, which a flow
	// sends after its last chunk
	after []byte
	// deferred: the Slice defers string values (Options.Defer) and finish
	// materializes its chunks, as a replication flow does.
	deferred bool
	// others: Slices started with the same options beside sl whose output
	// nobody uses (a replica's abandoned full sync): drained and dropped.
	others int
	// othersAfter: the others start after sl (they take later cuts).
	othersAfter bool
	extra       []*Slice
}

func newHarness(t *testing.T, dbs int) *harness {
	h := &harness{t: t, sh: shard.New(0, dbs), out: make(chan Chunk, 1<<20)}
	h.sh.Attach(func(r shard.Runnable) {
		h.mu.Lock()
		h.queue = append(h.queue, r)
		h.mu.Unlock()
	})
	return h
}

func (h *harness) start(opt Options) {
	if opt.Encode == nil {
		opt.Encode = encodeTest
	}
	opt.Out = h.out
	if opt.MaxChunk == 0 {
		opt.MaxChunk = 4 << 10
	}
	opt.Journal = opt.Tagged
	opt.Defer = h.deferred
	// The cut is taken while the test holds the shard: nothing else runs.
	if h.othersAfter {
		h.sl = Start(h.sh, opt)
	}
	for range h.others {
		o := opt
		out := make(chan Chunk, 4)
		o.Out = out
		go func() {
			m := NewMaterializer(!o.NoLZF, nil)
			for {
				c := <-out
				m.Materialize(&c)
				if c.Last {
					return
				}
			}
		}()
		h.extra = append(h.extra, Start(h.sh, o))
	}
	if !h.othersAfter {
		h.sl = Start(h.sh, opt)
	}
}

// step runs the shard's next message; it reports false when none is queued.
func (h *harness) step() bool {
	h.mu.Lock()
	if len(h.queue) == 0 {
		h.mu.Unlock()
		return false
	}
	r := h.queue[0]
	h.queue = h.queue[1:]
	h.mu.Unlock()
	h.sh.Exec(r)
	return true
}

func (h *harness) queued() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue)
}

// finish runs messages until the snapshot is done and collects its output.
func (h *harness) finish() {
	done := func() bool {
		for _, o := range h.extra {
			if !o.Done() {
				return false
			}
		}
		return h.sl.Done()
	}
	for idle := 0; !done(); {
		if h.step() {
			idle = 0
			continue
		}
		// A timer may post the next step (backpressure, a wait).
		if idle++; idle > 500 {
			h.t.Fatal("the snapshot stopped posting steps")
		}
		time.Sleep(2 * time.Millisecond)
	}
	for h.queued() > 0 {
		h.step()
	}
	m := NewMaterializer(true, nil)
	for last := false; !last; {
		c := <-h.out
		m.Materialize(&c)
		if c.Err != nil {
			h.t.Fatal(c.Err)
		}
		h.data = append(h.data, c.Data...)
		last = c.Last
	}
	h.data = append(h.data, h.after...)
}

// command runs fn now if the gate admits its keys, else parks it until
// they are free, as a connection's batch does.
type command struct {
	keys []shard.KeyLock
	fn   func(s *shard.Shard)
	h    *harness
}

func (c *command) LockKeys() ([]shard.KeyLock, bool) { return c.keys, false }
func (c *command) Resume(s *shard.Shard) {
	c.h.parked--
	if len(c.keys) > 1 {
		s.Capture(c.keys)
	}
	c.fn(s)
}

// multi runs fn, a command with several keys, as a connection's batch
// does: parked while a key is busy, and its keys shown to the gate's
// Capture before it runs.
func (h *harness) multi(keys []shard.KeyLock, fn func(s *shard.Shard)) {
	c := &command{keys: keys, fn: fn, h: h}
	if !h.sh.Idle() {
		if !h.sh.Available(keys) {
			h.parked++
			h.sh.Park(c)
			return
		}
		h.sh.Capture(keys)
	}
	fn(h.sh)
}

// rename moves from's value to to (RENAME), journaled as an R entry.
func (h *harness) rename(db int, from, to string) {
	h.multi([]shard.KeyLock{{DB: db, Key: from, Excl: true}, {DB: db, Key: to, Excl: true}}, func(s *shard.Shard) {
		d := s.DBs[db]
		it, v := d.Find([]byte(from))
		if v == nil {
			return
		}
		val := string(v.Str())
		d.Delete(it)
		d.Set([]byte(to), shard.NewString([]byte(val)), false)
		h.journal(fmt.Sprintf("R%d|%s|%s", db, from, to))
	})
}

// store makes dst a copy of src, which it only reads (a C entry).
func (h *harness) store(db int, dst, src string) {
	h.multi([]shard.KeyLock{{DB: db, Key: dst, Excl: true}, {DB: db, Key: src}}, func(s *shard.Shard) {
		d := s.DBs[db]
		if _, v := d.Find([]byte(src)); v != nil {
			d.Set([]byte(dst), shard.NewString(append([]byte(nil), v.Str()...)), false)
		} else if it, v := d.Find([]byte(dst)); v != nil {
			d.Delete(it)
		}
		h.journal(fmt.Sprintf("C%d|%s|%s", db, dst, src))
	})
}

func (h *harness) write(db int, key string, fn func(s *shard.Shard)) {
	c := &command{keys: []shard.KeyLock{{DB: db, Key: key, Excl: true}}, fn: fn, h: h}
	if !h.sh.Idle() && !h.sh.Available(c.keys) {
		h.parked++
		h.sh.Park(c)
		return
	}
	fn(h.sh)
}

func (h *harness) journal(e string) {
	switch {
	case h.sl == nil:
	case !h.sl.Done():
		h.sl.Journal(JournalEntry{Data: []byte(e)})
	default:
		h.after = rdb.AppendChunk(h.after, rdb.OpJournal, JournalStream, []byte(e))
	}
}

func (h *harness) set(db int, key, val string) {
	h.write(db, key, func(s *shard.Shard) {
		s.DBs[db].Set([]byte(key), shard.NewString([]byte(val)), false)
		h.journal(fmt.Sprintf("S%d|%s|%s", db, key, val))
	})
}

func (h *harness) del(db int, key string) {
	h.write(db, key, func(s *shard.Shard) {
		if it, v := s.DBs[db].Find([]byte(key)); v != nil {
			s.DBs[db].Delete(it)
			h.journal(fmt.Sprintf("D%d|%s", db, key))
		}
	})
}

// setPX sets key with a TTL of ms milliseconds (journaled absolute).
func (h *harness) setPX(db int, key, val string, ms int64) {
	h.write(db, key, func(s *shard.Shard) {
		d := s.DBs[db]
		d.Set([]byte(key), shard.NewString([]byte(val)), false)
		it, _ := d.Find([]byte(key))
		d.SetExpire(it, s.Now()+ms)
		h.journal(fmt.Sprintf("S%d|%s|%s", db, key, val))
	})
}

// expire runs the active expiry sweep and journals each expiry as a DEL
// after it applied, as the journal does.
func (h *harness) expire() {
	var keys []keyRef
	rec := &expiryCollector{keys: &keys}
	h.sh.AddExpiryHook(rec)
	h.sh.Exec(shard.Func(func(s *shard.Shard) {
		for _, d := range s.DBs {
			d.ExpireStep(1000)
		}
	}))
	h.sh.RemoveExpiryHook(rec)
	for _, k := range keys {
		e := fmt.Sprintf("D%d|%s", k.db, k.key)
		switch {
		case h.sl == nil:
		case !h.sl.Done():
			h.sl.Journal(JournalEntry{Data: []byte(e), DB: k.db, Expired: k.key, Expiry: true})
		default:
			h.after = rdb.AppendChunk(h.after, rdb.OpJournal, JournalStream, []byte(e))
		}
	}
}

type expiryCollector struct{ keys *[]keyRef }

func (c *expiryCollector) OnExpire(db *shard.DB, it shard.Iterator, key string) {
	*c.keys = append(*c.keys, keyRef{db.Index, key})
}

func (h *harness) flush(db int) {
	h.sh.DBs[db].Flush()
	h.journal(fmt.Sprintf("F%d", db))
}

// dataset is the shard's content, "db/key" → value.
func (h *harness) dataset() map[string]string {
	m := map[string]string{}
	for i, db := range h.sh.DBs {
		var c uint64
		for {
			c = db.Table.Traverse(c, func(it shard.Iterator) {
				m[strconv.Itoa(i)+"/"+db.Table.Key(it)] = string(db.Table.Value(it).Str())
			})
			if c == 0 {
				break
			}
		}
	}
	return m
}

// streamCheck reads a tagged output: the baseline records, the journal,
// and the ordering invariant (K's complete baseline before any journal
// entry of K). It replays baseline and journal in stream order.
type streamCheck struct {
	baseline map[string]string // what the baseline holds, "db/key"
	dups     []string
	replay   map[string]string
	// per key: the stream positions of baseline items (start, end) and
	// of journal entries
	items   map[string][][2]int
	sets    map[string][][2]int // set records, as items
	entries map[string][]int
	big     int // items that came in more than one piece
}

type recordSink struct {
	rdb.NopHandler
	db   int
	keys []string
	vals []string
	sets []string // keys of set records
}

func (r *recordSink) Begin(key []byte, t rdb.Type, sizeHint int, m rdb.Meta) error {
	if t == rdb.TypeSet {
		r.sets = append(r.sets, strconv.Itoa(r.db)+"/"+string(key))
	}
	return nil
}

func (r *recordSink) SelectDB(db uint64) error { r.db = int(db); return nil }
func (r *recordSink) String(key, val []byte, m rdb.Meta) error {
	r.keys = append(r.keys, strconv.Itoa(r.db)+"/"+string(key))
	r.vals = append(r.vals, string(val))
	return nil
}

func checkStream(t *testing.T, data []byte) *streamCheck {
	t.Helper()
	sc := &streamCheck{baseline: map[string]string{}, replay: map[string]string{},
		items: map[string][][2]int{}, sets: map[string][][2]int{}, entries: map[string][]int{}}
	cr := rdb.NewChunkReader(bytes.NewReader(data))
	pending := map[uint32][]byte{}
	startAt := map[uint32]int{}
	pieces := map[uint32]int{}
	for pos := 0; ; pos++ {
		ch, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chunk %d: %v", pos, err)
		}
		switch ch.Op {
		case rdb.OpChunk, rdb.OpChunkEnd:
			if _, ok := startAt[ch.Stream]; !ok {
				startAt[ch.Stream] = pos
			}
			pending[ch.Stream] = append(pending[ch.Stream], ch.Payload...)
			pieces[ch.Stream]++
			if ch.Op == rdb.OpChunk {
				continue
			}
			sink := &recordSink{}
			if err := rdb.NewDecoder(bytes.NewReader(pending[ch.Stream])).DecodeFragment(sink); err != nil {
				t.Fatalf("chunk %d (stream %d): %v", pos, ch.Stream, err)
			}
			if pieces[ch.Stream] > 1 {
				sc.big++
			}
			for i, k := range sink.keys {
				if _, ok := sc.baseline[k]; ok {
					sc.dups = append(sc.dups, k)
				}
				sc.baseline[k] = sink.vals[i]
				sc.replay[k] = sink.vals[i]
				sc.items[k] = append(sc.items[k], [2]int{startAt[ch.Stream], pos})
			}
			for _, k := range sink.sets {
				sc.sets[k] = append(sc.sets[k], [2]int{startAt[ch.Stream], pos})
			}
			delete(pending, ch.Stream)
			delete(startAt, ch.Stream)
			delete(pieces, ch.Stream)
		case rdb.OpJournal:
			e := string(ch.Payload)
			f := strings.SplitN(e[1:], "|", 3)
			db := f[0]
			switch e[0] {
			case 'S':
				k := db + "/" + f[1]
				sc.entries[k] = append(sc.entries[k], pos)
				sc.replay[k] = f[2]
			case 'I': // INCR
				k := db + "/" + f[1]
				sc.entries[k] = append(sc.entries[k], pos)
				n, _ := strconv.Atoi(sc.replay[k])
				sc.replay[k] = strconv.Itoa(n + 1)
			case 'A': // a set created (replay tracks strings only)
				k := db + "/" + f[1]
				sc.entries[k] = append(sc.entries[k], pos)
			case 'D':
				k := db + "/" + f[1]
				sc.entries[k] = append(sc.entries[k], pos)
				delete(sc.replay, k)
			case 'R', 'C':
				from, to := db+"/"+f[1], db+"/"+f[2]
				if e[0] == 'C' {
					from, to = to, from // C<db>|dst|src
				}
				sc.entries[from] = append(sc.entries[from], pos)
				sc.entries[to] = append(sc.entries[to], pos)
				v, ok := sc.replay[from]
				switch {
				case ok:
					sc.replay[to] = v
				case e[0] == 'C':
					delete(sc.replay, to)
				}
				if ok && e[0] == 'R' && from != to { // RENAME k k changes nothing
					delete(sc.replay, from)
				}
			case 'F':
				for k := range sc.replay {
					if strings.HasPrefix(k, db+"/") {
						sc.entries[k] = append(sc.entries[k], pos)
						delete(sc.replay, k)
					}
				}
			}
		case rdb.OpFullSyncCut:
		default:
			t.Fatalf("chunk %d: unexpected opcode %#x", pos, ch.Op)
		}
	}
	if len(pending) > 0 {
		t.Fatalf("%d items incomplete at the end", len(pending))
	}
	return sc
}

// ordered reports the first key whose journal entry precedes or splits
// its baseline.
func (sc *streamCheck) ordered() error {
	for k, es := range sc.entries {
		for _, it := range sc.items[k] {
			for _, e := range es {
				if e < it[1] && e > it[0]-1 {
					return fmt.Errorf("%s: journal entry at chunk %d splits its baseline (chunks %d..%d)", k, e, it[0], it[1])
				}
				if e < it[0] {
					return fmt.Errorf("%s: journal entry at chunk %d precedes its baseline (chunks %d..%d)", k, e, it[0], it[1])
				}
			}
		}
	}
	return nil
}

func diff(got, want map[string]string) string {
	var out []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			out = append(out, fmt.Sprintf("%s: got %.20q (present %v), want %.20q", k, g, ok, v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, k+": unexpected")
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d differences", len(out)))
	}
	return strings.Join(out, "\n")
}

func bigValue(rng *rand.Rand, tag string) string {
	return tag + strings.Repeat("x", 8<<10+rng.IntN(40<<10))
}

// TestStreamRandomizedExpiry adds keys with millisecond TTLs that the
// active sweep expires while the walk runs (stash unloads move items; the
// expiry DELs may be deferred). Replay must equal the final dataset.
func TestStreamRandomizedExpiry(t *testing.T) {
	eachModeAndSeed(t, 100, func(t *testing.T, mode Mode, seed, _ uint64) {
		runStreamOpt(t, mode, seed, true)
	})
}

// eachModeAndSeed runs fn in both modes for four seeds from base+1 (or
// $DFLY_TEST_SEED), as subtests; i is the seed's number, 1 to 4.
func eachModeAndSeed(t *testing.T, base uint64, fn func(t *testing.T, mode Mode, seed, i uint64)) {
	for _, mode := range []Mode{PIT, NonPIT} {
		for i := uint64(1); i <= 4; i++ {
			seed := testSeed(t, base+i)
			t.Run(fmt.Sprintf("mode%d/seed%d", mode, seed), func(t *testing.T) {
				t.Logf("seed %d (DFLY_TEST_SEED reproduces)", seed)
				fn(t, mode, seed, i)
			})
		}
	}
}

func testSeed(t *testing.T, def uint64) uint64 {
	if s := os.Getenv("DFLY_TEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err == nil {
			return n
		}
	}
	return def
}

// TestStreamRandomized runs a random workload of small and big values,
// deletes, inserts that split segments, renames and stores from other
// keys (Capture), and a flush, between the steps of
// a tagged snapshot that carries the journal. In every mode the replay of
// baseline then journal must equal the final dataset; in PIT mode the
// baseline must also equal the dataset at the cut, every key once, and
// the ordering invariant must hold for every key.
func TestStreamRandomized(t *testing.T) {
	eachModeAndSeed(t, 0, func(t *testing.T, mode Mode, seed, _ uint64) { runStream(t, mode, seed) })
}

// TestStreamRandomizedDeferred is TestStreamRandomized as a replication
// flow runs it: string values deferred (Options.Defer), and beside it,
// on the same shard, another Slice: an older one for the first seed (an
// abandoned full sync still walking), a newer one for the third (a second
// replica's full sync, a BGSAVE: its walk may overtake this one's, and
// its stamps must not pass for this one's captures). Even seeds expire
// keys.
func TestStreamRandomizedDeferred(t *testing.T) {
	eachModeAndSeed(t, 200, func(t *testing.T, mode Mode, seed, i uint64) {
		runStreamWith(t, mode, seed, i%2 == 0, func(h *harness) {
			h.deferred, h.others, h.othersAfter = true, int(i%2), i == 3
		})
	})
}

func runStream(t *testing.T, mode Mode, seed uint64) {
	runStreamOpt(t, mode, seed, false)
}

func runStreamOpt(t *testing.T, mode Mode, seed uint64, expiring bool) {
	runStreamWith(t, mode, seed, expiring, func(*harness) {})
}

func runStreamWith(t *testing.T, mode Mode, seed uint64, expiring bool, setup func(h *harness)) {
	rng := rand.New(rand.NewPCG(seed, 7))
	h := newHarness(t, 2)
	setup(h)
	stepOnePosition(t)
	for db := 0; db < 2; db++ {
		for i := 0; i < 3000; i++ {
			v := fmt.Sprintf("v0-%d-%d", db, i)
			if i%97 == 0 {
				v = bigValue(rng, v)
			}
			h.sh.DBs[db].Set([]byte(fmt.Sprintf("k%d", i)), shard.NewString([]byte(v)), false)
		}
	}
	atCut := h.dataset()
	h.start(Options{Mode: mode, Tagged: true, FullSyncCut: true})
	next := 0
	flushed := false
	for steps := 0; !h.sl.Done(); steps++ {
		if !h.step() {
			time.Sleep(time.Millisecond)
			continue
		}
		if steps == 400 && !flushed && rng.IntN(2) == 0 {
			h.flush(1)
			flushed = true
		}
		if expiring && steps%7 == 0 {
			h.expire()
		}
		for j := 0; j < 3; j++ {
			db := rng.IntN(2)
			k := fmt.Sprintf("k%d", rng.IntN(3000))
			if expiring && rng.IntN(8) == 0 {
				h.setPX(db, fmt.Sprintf("t%d", rng.IntN(500)), "short", 1+int64(rng.IntN(3)))
				continue
			}
			switch r := rng.IntN(12); {
			case r >= 10:
				// Commands that read or move one key into another.
				other := fmt.Sprintf("k%d", rng.IntN(3000))
				if r == 10 {
					h.rename(db, k, other)
				} else {
					h.store(db, k, other)
				}
			case r < 2:
				h.del(db, k)
			case r < 4:
				h.set(db, fmt.Sprintf("new%d", next), "late")
				next++
			case r < 5:
				h.set(db, k, bigValue(rng, "changed"))
			default:
				h.set(db, k, fmt.Sprintf("changed%d", steps))
			}
		}
	}
	h.finish()
	if h.parked != 0 {
		t.Fatalf("%d writers still parked after the snapshot", h.parked)
	}
	if !h.sh.Idle() {
		t.Fatal("the snapshot left key locks or its gate behind")
	}
	sc := checkStream(t, h.data)
	if sc.big == 0 {
		t.Fatal("no big value went out in pieces")
	}
	if d := diff(sc.replay, h.dataset()); d != "" {
		t.Fatalf("replay of baseline and journal differs from the dataset:\n%s", d)
	}
	if mode == PIT {
		if len(sc.dups) > 0 {
			t.Fatalf("keys written twice: %v", sc.dups[:min(5, len(sc.dups))])
		}
		if d := diff(sc.baseline, atCut); d != "" {
			t.Fatalf("baseline differs from the dataset at the cut:\n%s", d)
		}
		if err := sc.ordered(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d inserts, %d big items, %d parked writers in total", next, sc.big, ReadStats().ParkedMutations)
}
