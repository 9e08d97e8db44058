package offload

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
)

const (
	stepBudget = 500 * time.Microsecond
	stepBytes  = 1 << 20
	maxWrites  = 4 // write jobs in flight per shard
	minTTL     = 60 * 1000
	errBackoff = time.Second
	// BigValue: a bigger string is written a part of this size per step
	// (bigOffload) and loaded back without a copy (private reads), so no
	// step copies more than this much of one value.
	BigValue = stepBytes
	// bigParts: parts of a big value in flight at once; minPart: the
	// smallest part but the last.
	bigParts = 2
	minPart  = 64 << 10
)

// Config is what the offloaders take from the server's configuration.
type Config struct {
	Prefix           string  // backing files PREFIX-NNNN
	MinValueSize     int     // strings shorter stay in memory
	OffloadThreshold float64 // offload while the live heap is above (1 - this) × maxmemory
	MaxFileSize      int64   // a backing file's size limit, 0 for none
	// MaxMemory is maxmemory now (CONFIG SET may change it), 0 for none.
	MaxMemory func() int64
	// Warnf logs a failure (at most once a second).
	Warnf func(format string, args ...any)
	// Open opens a backing file; nil: tiered.OpenFile. Tests inject
	// failing files.
	Open func(path string) (tiered.File, error)
}

// Tiering is the tiered storage of every shard: their offloaders, the I/O
// pool they share and the heap-pressure ticker (heap.go).
type Tiering struct {
	cfg    Config
	pool   *tiered.Pool
	shards []*Shard
	paths  []string
	// offloadedSinceGC: heap bytes released by offloading since the last
	// GC cycle (still counted by the heap until the GC runs).
	offloadedSinceGC atomic.Int64
	lastLog          atomic.Int64 // unix seconds of the last error logged
}

// Shard is one shard's offloader and the shard.Tier it installs;
// everything but the atomics is owned by the shard goroutine.
type Shard struct {
	ts    *Tiering
	sh    *shard.Shard
	store *tiered.Store
	// ready holds bytes read for batches, by offset, while those batches
	// resume; failed marks segments whose read failed (load.go).
	ready  map[int64][]byte
	failed map[int64]bool
	// offload walk
	db     int
	cursor uint64
	// passStaged / idle / idleWrites: a whole pass found nothing to stash;
	// the walk sleeps until changes() moves from idleWrites.
	passStaged  int
	passSkipped bool   // the pass skipped a value in flight, pinned or failed to stash
	passChanges uint64 // changes() when the pass started
	idle        bool
	idleWrites  uint64
	writes      int              // jobs in flight
	big         *bigOffload      // the big value being written in parts
	later       []tiered.Segment // space of flushed values, freed after the snapshot
	hasLater    atomic.Bool
	stashed     map[Key]struct{}
	// pins: keys whose values a coordinated command loaded and reads
	// later, by number of such commands (Pin); unpins counts their ends
	// (a change for the idle walk).
	pins    map[Key]int
	unpins  uint64
	backoff time.Time
	budget  atomic.Int64
	queued  atomic.Bool
	// counters (Stats)
	entries     int64 // values now external
	bytes       int64 // their lengths
	loads       uint64
	syncLoads   uint64
	serialReads uint64 // reads by serializers (View, Loader, ReadAhead)
	serialSync  uint64 // of which blocking (View)
	readServes  uint64 // read-only commands served from a read, value left offloaded
	stepNanos   int64  // the longest offload step
}

// Key is a key with its database.
type Key struct {
	DB  int
	Key string
}

// shardFunc runs a callback on its shard.
type shardFunc func()

func (f shardFunc) Run(*shard.Shard) { f() }

// Open opens a backing file per shard (PREFIX-NNNN) and installs the
// offloaders as the shards' Tier. On an error it removes the files it
// opened and returns the error: tiering stays off.
func Open(cfg Config, shards []*shard.Shard) (*Tiering, error) {
	open := cfg.Open
	if open == nil {
		open = func(path string) (tiered.File, error) { return tiered.OpenFile(path) }
	}
	ts := &Tiering{cfg: cfg, pool: tiered.NewPool(4)}
	for i, sh := range shards {
		path := fmt.Sprintf("%s-%04d", cfg.Prefix, i)
		f, err := open(path)
		if err != nil {
			for _, t := range ts.shards {
				t.store.Close()
			}
			for _, p := range ts.paths {
				os.Remove(p)
			}
			ts.pool.Close()
			return nil, err
		}
		t := &Shard{ts: ts, sh: sh, ready: map[int64][]byte{}, failed: map[int64]bool{},
			stashed: map[Key]struct{}{}, pins: map[Key]int{}}
		sh := sh
		t.store = tiered.NewStore(f, ts.pool, func(fn func()) { sh.Send(shardFunc(fn)) }, cfg.MaxFileSize)
		ts.shards = append(ts.shards, t)
		ts.paths = append(ts.paths, path)
	}
	for i, sh := range shards {
		sh.SetTier(ts.shards[i])
	}
	return ts, nil
}

// Shard is shard sid's offloader.
func (ts *Tiering) Shard(sid int) *Shard { return ts.shards[sid] }

// Close removes the files (the open ones stay usable until closed) and
// closes the pool and the stores: Start's ticker does it when it stops;
// without it, the caller does once the shards stopped.
func (ts *Tiering) Close() {
	for _, p := range ts.paths {
		os.Remove(p)
	}
	ts.pool.Close()
	for _, t := range ts.shards {
		t.store.Close()
	}
}

// SegmentOf is the file space of the offloaded value v.
func SegmentOf(v *shard.Value) tiered.Segment {
	off, n := v.External()
	return tiered.Segment{Off: off, Len: n}
}

// Free implements shard.Tier.
func (t *Shard) Free(v *shard.Value) {
	t.entries--
	t.bytes -= int64(v.StrLen())
	t.store.Free(SegmentOf(v))
}

// FreeLater implements shard.Tier: the space is freed by the first offload
// step that finds no snapshot running.
func (t *Shard) FreeLater(v *shard.Value) {
	t.entries--
	t.bytes -= int64(v.StrLen())
	t.later = append(t.later, SegmentOf(v))
	t.hasLater.Store(true)
}

// freeLater frees what FreeLater deferred, once no snapshot runs.
func (t *Shard) freeLater(s *shard.Shard) {
	if len(t.later) == 0 || s.Hooked() {
		return
	}
	for _, g := range t.later {
		t.store.Free(g)
	}
	t.later = nil
	t.hasLater.Store(false)
}

// Read implements shard.Tier: the asynchronous read (snapshot API).
func (t *Shard) Read(v *shard.Value, cb func(data []byte, err error)) {
	t.store.Read(SegmentOf(v), cb)
}

// Load implements shard.Tier: DB.Find's blocking fallback.
func (t *Shard) Load(v *shard.Value) ([]byte, error) {
	t.syncLoads++
	b, err := t.store.ReadSync(SegmentOf(v))
	if err != nil {
		t.logErr(err)
	}
	return b, err
}

func (t *Shard) logErr(err error) {
	ts := t.ts
	now := time.Now().Unix()
	if last := ts.lastLog.Load(); now > last && ts.lastLog.CompareAndSwap(last, now) {
		ts.cfg.Warnf("tiered storage, shard %d: %v", t.sh.ID, err)
	}
}

// Run is the offload step (see doc.go); the ticker (heap.go) queues it.
func (t *Shard) Run(s *shard.Shard) {
	t.queued.Store(false)
	t.freeLater(s)
	if t.budget.Load() <= 0 {
		return
	}
	if t.writes >= maxWrites || time.Now().Before(t.backoff) {
		return
	}
	if t.idle && t.big == nil {
		if t.changes() == t.idleWrites {
			return
		}
		t.idle = false
	}
	start := time.Now()
	budget := min(t.budget.Load(), stepBytes)
	minSize := t.ts.cfg.MinValueSize
	now := s.Now()
	var staged int64
	if t.big != nil {
		staged = t.advanceBig(budget)
	}
	var full error
	visits := 0
	for staged < budget && full == nil {
		if t.db == 0 && t.cursor == 0 {
			t.passChanges = t.changes() // a pass starts
		}
		db := s.DBs[t.db]
		if db.Len() > 0 {
			t.cursor = db.Table.Traverse(t.cursor, func(it shard.Iterator) {
				v := db.Table.Value(it)
				if full != nil || v.Type != shard.TypeString || v.IsExternal() || v.StrLen() < minSize {
					return
				}
				if v.HasExpire {
					if at, ok := db.ExpireAt(it); ok && at-now < minTTL {
						return
					}
				}
				k := Key{db.Index, db.Table.Key(it)}
				// Skipped values keep the pass from going idle: a
				// change that comes back to them (an unpin, a write
				// job finding the value changed) may be counted
				// before the pass ends.
				if _, ok := t.stashed[k]; ok {
					t.passSkipped = true
					return // its write is in flight
				}
				if len(t.pins) > 0 && t.pins[k] > 0 {
					t.passSkipped = true
					return // see Pin
				}
				if v.StrLen() > BigValue {
					if t.big != nil {
						t.passSkipped = true // one big value at a time
						return
					}
					k.Key = strings.Clone(k.Key)
					if err := t.startBig(k, v); err != nil {
						full = err
						t.passSkipped = true
						return
					}
					t.passStaged++
					return
				}
				k.Key = strings.Clone(k.Key)
				if err := t.store.Stash(db.Index, k.Key, v.Str()); err != nil {
					full = err
					t.passSkipped = true // not stashed: see passSkipped above
					return
				}
				t.stashed[k] = struct{}{}
				staged += int64(v.StrLen())
				t.passStaged++
			})
		} else {
			t.cursor = 0
		}
		if t.cursor == 0 {
			t.db++
			if t.db == len(s.DBs) {
				// A whole pass: the next starts in another step, so values
				// whose writes are in flight are not stashed again now.
				t.db = 0
				if t.passStaged == 0 && !t.passSkipped {
					// A pass may span steps: a change between its start
					// and its end may be in a bucket it had passed.
					t.idle, t.idleWrites = true, t.passChanges
				}
				t.passStaged, t.passSkipped = 0, false
				break
			}
		}
		if visits++; time.Since(start) > stepBudget {
			break
		}
	}
	if t.big != nil && staged < budget {
		staged += t.advanceBig(budget - staged) // started by the walk
	}
	if full != nil && full != tiered.ErrBusy { // busy: the file is being truncated, go on next step
		t.logErr(full)
		t.backoff = time.Now().Add(errBackoff)
	}
	if t.store.Staged() > 0 {
		t.writes++
		t.store.Commit(t.written)
	}
	if d := time.Since(start).Nanoseconds(); d > t.stepNanos {
		t.stepNanos = d
	}
}

// bigOffload is a string too big to copy in one step, written a part per
// step (tiered.BigWrite). Its value is marked (shard.Value.Mark) when the
// write starts: while it is still marked and holds the same bytes (ptr,
// length) it has not changed since, so the parts written so far are its
// bytes. Invariant: the value becomes external only if it is unchanged
// and unpinned when the last part is written; otherwise the space is
// given back once no part is in flight (BigWrite.Abort).
type bigOffload struct {
	w   *tiered.BigWrite
	k   Key
	ptr *byte
}

// startBig reserves space for v at k and marks it; advanceBig writes it.
func (t *Shard) startBig(k Key, v *shard.Value) error {
	w, err := t.store.Reserve(uint32(v.StrLen()))
	if err != nil {
		return err
	}
	v.Mark()
	t.big = &bigOffload{w: w, k: k, ptr: unsafe.SliceData(v.Str())}
	t.stashed[k] = struct{}{}
	return nil
}

// bigValue is the value t.big writes, nil when it changed or is gone.
func (t *Shard) bigValue() *shard.Value {
	b := t.big
	v := t.sh.DBs[b.k.DB].Peek(unsafe.Slice(unsafe.StringData(b.k.Key), len(b.k.Key)))
	if v == nil || v.Type != shard.TypeString || v.IsExternal() || !v.Marked() ||
		v.StrLen() != int(b.w.Seg.Len) || unsafe.SliceData(v.Str()) != b.ptr {
		return nil
	}
	return v
}

// advanceBig hands up to budget bytes of the big value to the writer (at
// most bigParts parts in flight), or ends the write when the value
// changed, is pinned or a part failed. It returns the bytes copied.
func (t *Shard) advanceBig(budget int64) int64 {
	b := t.big
	v := t.bigValue()
	if v == nil || b.w.Err != nil || (len(t.pins) > 0 && t.pins[b.k] > 0) {
		t.endBig(nil)
		return 0
	}
	var copied int64
	for copied < budget && !b.w.Copied() && b.w.Pending() < bigParts {
		// A step copies at most budget (below BigValue) and a small
		// part past it.
		n := min(b.w.Remaining(), max(budget-copied, minPart))
		off := int64(b.w.Seg.Len) - b.w.Remaining()
		t.writes++
		t.store.WritePart(b.w, v.Str()[off:off+n], func() { t.bigPartDone(b) })
		copied += n
	}
	return copied
}

// bigPartDone runs when a part of b is written: it ends the write once
// every part is, or queues the next step to copy more.
func (t *Shard) bigPartDone(b *bigOffload) {
	t.writes--
	if t.big != b {
		return // ended already
	}
	if b.w.Err != nil {
		t.logErr(b.w.Err)
		t.backoff = time.Now().Add(errBackoff)
		t.endBig(nil)
		return
	}
	if b.w.Copied() {
		if b.w.Pending() == 0 {
			t.endBig(t.bigValue())
		}
		return
	}
	// More to copy: the next step need not wait for the ticker.
	if t.budget.Load() > 0 && !t.queued.Swap(true) {
		t.sh.Send(t)
	}
}

// endBig ends t.big: v, the value fully written and unchanged, becomes
// external unless pinned since (see Pin); otherwise the space is freed.
func (t *Shard) endBig(v *shard.Value) {
	b := t.big
	t.big = nil
	delete(t.stashed, b.k)
	if v == nil || (len(t.pins) > 0 && t.pins[b.k] > 0) {
		t.store.Abort(b.w)
		return
	}
	t.ts.offloadedSinceGC.Add(int64(cap(v.Str())))
	t.sh.DBs[b.k.DB].Offloaded(v, b.w.Seg.Off, b.w.Seg.Len)
	t.entries++
	t.bytes += int64(b.w.Seg.Len)
}

// changes counts what can make a value worth offloading: writes, and
// values loaded back into memory.
func (t *Shard) changes() uint64 {
	return t.sh.Stats.Writes + t.loads + t.syncLoads + t.unpins
}

// written switches the values of a finished write job to their segments.
func (t *Shard) written(entries []tiered.Entry, err error) {
	t.writes--
	if err != nil {
		for _, e := range entries {
			delete(t.stashed, Key{e.DB, e.Key})
		}
		t.logErr(err) // the values are still in memory; the store freed the space
		t.backoff = time.Now().Add(errBackoff)
		return
	}
	var released int64
	for _, e := range entries {
		delete(t.stashed, Key{e.DB, e.Key})
		v := t.sh.DBs[e.DB].Peek(unsafe.Slice(unsafe.StringData(e.Key), len(e.Key)))
		if v == nil || v.Type != shard.TypeString || v.IsExternal() || !bytes.Equal(v.Str(), e.Data) {
			t.store.Free(e.Seg) // changed or gone meanwhile
			continue
		}
		if len(t.pins) > 0 && t.pins[Key{e.DB, e.Key}] > 0 {
			t.store.Free(e.Seg) // pinned since it was stashed: see Pin
			continue
		}
		released += int64(cap(v.Str()))
		t.sh.DBs[e.DB].Offloaded(v, e.Seg.Off, e.Seg.Len)
		t.entries++
		t.bytes += int64(e.Seg.Len)
	}
	t.ts.offloadedSinceGC.Add(released)
}

// Step runs an offload step now, as if the heap were over its target, the
// walk awake and no error backoff pending: for tests that drive the walk
// by hand (on the shard goroutine).
func (t *Shard) Step(s *shard.Shard) {
	t.backoff, t.idle = time.Time{}, false
	t.budget.Store(1 << 30)
	t.Run(s)
}

// Writes is the number of write jobs in flight.
func (t *Shard) Writes() int { return t.writes }
