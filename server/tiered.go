package server

// Tiered storage (issue #9, docs/DESIGN.md §7): with --tiered_prefix, each shard
// keeps large string values in a backing file (package tiered) when memory
// runs short, and reads them back without blocking the shard.
//
//   - Offloading: a ticker samples the heap every 10 ms; while the live
//     heap is above (1 - tiered_offload_threshold) × maxmemory, or the
//     heap's spans in use (live data, garbage and the holes offloaded
//     values leave) above maxmemory (always, when maxmemory is 0), each
//     shard runs a bounded step (~0.5 ms CPU, 1 MiB) that walks its
//     tables and stashes strings of at least tiered_min_value_size bytes
//     (keys with a TTL under a minute are skipped) into a write job. A
//     string over 1 MiB (tierBigValue) is written a part per step instead,
//     one such value at a time (tierBig), so no step copies more than
//     about 1 MiB; the value is marked (shard.Value.Mark) and becomes
//     external only if nothing changed it before its last part was
//     written. The live heap is the one at the last GC minus the
//     bytes offloaded since. With tiering the GC runs at GOGC 100 and a
//     memory limit of 2 × maxmemory (cmd/dfly); free heap is returned to
//     the OS after offloading. Values are not promoted back into memory
//     by reads, so once offloaded they stay so until written. When
//     the write completes, each value still holding the bytes written
//     becomes external (shard.Value.SetExternal) and its memory goes to
//     the GC; a value changed meanwhile keeps its new bytes and the space
//     is freed. A failed write (ENOSPC, EIO, the file size limit) frees
//     the space and leaves every value in memory; it is logged and counted
//     and offloading pauses for a second. The backing file is truncated
//     when its tail is free (tiered.Store); offloading waits for that.
//   - Loading: before a connection's batch runs a command on a shard
//     (shardBatch.exec), tierBefore looks its keys up; when one is
//     external and the command reads string bytes, it issues the reads
//     (for the next commands of the batch too), parks the batch and
//     resumes it when the last read is back (posted to the shard by
//     shard.Send). A read-only command then runs on the bytes in place and
//     the value becomes external again afterwards (GET does not undo the
//     offloading); any other command keeps the value in memory and frees
//     its space, with a copy of the bytes (shared with other readers),
//     but for a value over 1 MiB: that one is read by a private read of
//     the batch (tiered.Store.ReadPrivate) whose bytes become the value,
//     so no step copies a big value (nor allocates its buffer: the I/O
//     pool does). Commands that need no bytes (SET, DEL, EXISTS, TTL,
//     EXPIRE, STRLEN ...) run on the external value as it is.
//   - Ordering: a read pins its segment (tiered.Store), and the batch
//     retains the segments it read until it resumed, so space is reused
//     only after the reads and their users are done; a resumed batch looks
//     every key up again, so a write or delete that ran while it waited is
//     seen (a value no longer at the segment read is read anew).
//   - A multi-shard command (coordinator) first has the offloaded values
//     of its keys loaded into memory by their shards, asynchronously, and
//     waits for that on its own goroutine (tierPreload, tierPins); the
//     keys stay pinned, never offloaded again, until the command is done
//     (pin). For EXEC the keys are those of the queued commands, for a
//     script its declared keys (the only ones it may touch); their nested
//     commands then find every value in memory, and those that read no
//     bytes run with Find's loading off (runQueued). A read that fails
//     fails the command (command.ErrTierRead), as in a batch, instead of leaving
//     the value to Find's blocking load. A script or EXEC confined to one
//     shard runs inside a batch, which loads all its keys first
//     (tierBefore); a script the batch hands to a coordinator
//     (script.Run.Demote, the inline budget) has them loaded and pinned
//     again there (Coord.runMulti), as they may be offloaded meanwhile.
//   - SORT reads offloaded BY/GET pattern values asynchronously between
//     its steps, on a coordinator that waits for them (family/sort.go). SORT
//     itself always takes a coordinator; a script that may call it does
//     too, with tiering, instead of running on a shard's goroutine, which
//     cannot wait: confined to a shard, inside an EXEC on one shard, or in
//     a step of a coordinator's EXEC (evalCoordinate). A script may call
//     SORT when its text names it (script.MentionsSort) or when a command
//     it calls is not named by a literal (script.Script.MaySort:
//     redis.call(ARGV[1], ...), an alias of redis.call, _G ...). Should a
//     script still reach SORT inline (a construct that check missed),
//     that call sends its later runs to a coordinator (scriptCall.Call), and
//     an offloaded pattern value stops the script if it has not written
//     yet, to run again on a coordinator (script.Run.Demote).
//   - A replica applying its master's single-shard commands loads the
//     values a command reads first, parking its apply batch (applyLoad);
//     its multi-shard commands and transactions are preloaded and pinned
//     like a coordinator's, the applier's goroutine waiting
//     (replApplier.tierPreload). A failed read is tried again later
//     (tierRetry), the apply waiting: the master's command cannot fail.
//     Commands that read no bytes run with Find's loading off.
//   - DB.Find's blocking load (tiered_sync_loads) is left to no command
//     path: only to the inline SORT that the script check above would
//     have missed, when it meets an offloaded pattern value after its
//     script has written, or inside an EXEC (which cannot hand the
//     script to a coordinator), at most once per script.
//   - Snapshots: BGSAVE and SAVE (both formats) and full syncs read
//     offloaded strings asynchronously through the snapshot's Loader
//     (tierLoader; the bucket waits DelayedPending). DEBUG RELOAD, which
//     saves and loads under one lock of every shard, reads them ahead in
//     rounds its coordinator waits for (serializeAsync). One debugging
//     aid reads them synchronously on the shard goroutine (tierView):
//     --debug_snapshot_reference, the dataset at a BGSAVE's cut, copied
//     within the cut's step (to check the snapshot against), so it must
//     be read at that instant; waiting for reads would let commands
//     change the dataset first.

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tiered"
)

const (
	tierStepBudget  = 500 * time.Microsecond
	tierStepBytes   = 1 << 20
	tierMaxWrites   = 4 // write jobs in flight per shard
	tierMinTTL      = 60 * 1000
	tierPrefetchCmd = 64 // commands of a batch whose reads are issued together
	tierErrBackoff  = time.Second
	// tierBigValue: a bigger string is written a part of this size per
	// step (tierBig) and loaded back without a copy (private reads), so
	// no step copies more than this much of one value.
	tierBigValue = tierStepBytes
	// tierBigParts: parts of a big value in flight at once; tierMinPart:
	// the smallest part but the last.
	tierBigParts = 2
	tierMinPart  = 64 << 10
)

// tieredState is the server's tiered storage, nil when off.
type tieredState struct {
	pool   *tiered.Pool
	shards []*tierShard
	paths  []string
	// offloadedSinceGC: heap bytes released by offloading since the last
	// GC cycle (still counted by the heap until the GC runs).
	offloadedSinceGC atomic.Int64
	lastLog          atomic.Int64 // unix seconds of the last error logged
}

// tierShard is one shard's tiered storage; everything but the atomics is
// owned by the shard goroutine.
type tierShard struct {
	srv   *Server
	sh    *shard.Shard
	store *tiered.Store
	// ready holds bytes read for batches, by offset, while those batches
	// resume; failed marks segments whose read failed.
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
	big         *tierBig         // the big value being written in parts
	later       []tiered.Segment // space of flushed values, freed after the snapshot
	hasLater    atomic.Bool
	stashed     map[tierKey]struct{}
	// pins: keys whose values a coordinated command (tierPreload) loaded
	// and reads later, by number of such commands; unpins counts their
	// ends (a change for the idle walk).
	pins    map[tierKey]int
	unpins  uint64
	backoff time.Time
	budget  atomic.Int64
	queued  atomic.Bool
	// counters
	entries     int64 // values now external
	bytes       int64 // their lengths
	loads       uint64
	syncLoads   uint64
	serialReads uint64 // reads by serializers (tierView, tierLoader)
	serialSync  uint64 // of which blocking (tierView)
	readServes  uint64 // read-only commands served from a read, value left offloaded
	stepNanos   int64  // the longest offload step
}

type tierKey struct {
	db  int
	key string
}

// openTierFile opens a backing file; tests replace it to inject errors.
var openTierFile = func(path string) (tiered.File, error) { return tiered.OpenFile(path) }

// tierFunc runs a tiered callback on its shard.
type tierFunc func()

func (f tierFunc) Run(*shard.Shard) { f() }

// setupTiered opens a backing file per shard (PREFIX-NNNN) and installs
// the stores. A failure is logged and leaves tiering off.
func (s *Server) setupTiered() {
	prefix := s.cfg.TieredPrefix
	if prefix == "" {
		return
	}
	ts := &tieredState{pool: tiered.NewPool(4)}
	for i, sh := range s.shards {
		path := fmt.Sprintf("%s-%04d", prefix, i)
		f, err := openTierFile(path)
		if err != nil {
			s.log.Warnf("tiered storage disabled: %v", err)
			for _, t := range ts.shards {
				t.store.Close()
			}
			for _, p := range ts.paths {
				os.Remove(p)
			}
			ts.pool.Close()
			return
		}
		t := &tierShard{srv: s, sh: sh, ready: map[int64][]byte{}, failed: map[int64]bool{},
			stashed: map[tierKey]struct{}{}, pins: map[tierKey]int{}}
		sh := sh
		t.store = tiered.NewStore(f, ts.pool, func(fn func()) { sh.Send(tierFunc(fn)) }, s.cfg.TieredMaxFileSize)
		ts.shards = append(ts.shards, t)
		ts.paths = append(ts.paths, path)
	}
	for i, sh := range s.shards {
		sh.SetTier(ts.shards[i])
	}
	s.tiered = ts
	s.log.Noticef("tiered storage on %s-NNNN, values of %d bytes and more", prefix, s.cfg.TieredMinValueSize)
}

// startTiered runs the offload ticker once the shards are attached to
// their loops; it closes and removes the files when the server stops.
func (s *Server) startTiered() {
	ts := s.tiered
	if ts == nil {
		return
	}
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		// The live heap at the last GC, less what offloading released since:
		// heap objects would count garbage and offload far too much.
		samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"},
			{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"}}
		var lastGC uint64
		var lastFree time.Time
		for {
			select {
			case <-s.done:
				for _, p := range ts.paths {
					os.Remove(p) // the open files stay usable until closed
				}
				ts.pool.Close()
				for _, t := range ts.shards {
					t.store.Close()
				}
				return
			case <-tick.C:
			}
			budget := int64(1) << 62 // maxmemory 0: offload every eligible value
			if max := s.maxMemory(); max > 0 {
				metrics.Read(samples)
				if gc := samples[1].Value.Uint64(); gc != lastGC {
					lastGC = gc
					ts.offloadedSinceGC.Store(0)
				}
				since := ts.offloadedSinceGC.Load()
				used := int64(samples[0].Value.Uint64()) - since
				target := int64(float64(max) * (1 - s.cfg.TieredOffloadThreshold))
				over := used - target
				// The heap's spans in use (objects and the holes between
				// them) stay under maxmemory too: values offloaded at random
				// leave most spans partly used, so the live heap alone lets
				// resident memory exceed maxmemory; offloading more frees
				// whole spans.
				inuse := int64(samples[3].Value.Uint64()+samples[4].Value.Uint64()) - since
				if inuse-max > over {
					over = inuse - max
				}
				budget = 0
				if over > 0 {
					budget = over/int64(len(ts.shards)) + 1
				}
				// Offloading is for resident memory: when an eighth of
				// maxmemory is free heap not yet returned to the OS, return
				// it (a GC of the small live heap, on this goroutine), at
				// most every 5 s; the runtime's own scavenger is paced to
				// 1% of a CPU and lags behind offloading.
				if free := int64(samples[2].Value.Uint64()); free > max/8 && time.Since(lastFree) > 5*time.Second {
					lastFree = time.Now()
					debug.FreeOSMemory()
				}
			}
			for _, t := range ts.shards {
				t.budget.Store(budget)
				if (budget > 0 || t.hasLater.Load()) && !t.queued.Swap(true) {
					t.sh.Send(t)
				}
			}
		}
	}()
}

func (s *Server) maxMemory() int64 {
	s.cfg.Mu.RLock()
	defer s.cfg.Mu.RUnlock()
	return s.cfg.MaxMemory
}

func segOf(v *shard.Value) tiered.Segment {
	off, n := v.External()
	return tiered.Segment{Off: off, Len: n}
}

// Free implements shard.Tier.
func (t *tierShard) Free(v *shard.Value) {
	t.entries--
	t.bytes -= int64(v.StrLen())
	t.store.Free(segOf(v))
}

// FreeLater implements shard.Tier: the space is freed by the first offload
// step that finds no snapshot running.
func (t *tierShard) FreeLater(v *shard.Value) {
	t.entries--
	t.bytes -= int64(v.StrLen())
	t.later = append(t.later, segOf(v))
	t.hasLater.Store(true)
}

// freeLater frees what FreeLater deferred, once no snapshot runs.
func (t *tierShard) freeLater(s *shard.Shard) {
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
func (t *tierShard) Read(v *shard.Value, cb func(data []byte, err error)) {
	t.store.Read(segOf(v), cb)
}

// Load implements shard.Tier: DB.Find's blocking fallback.
func (t *tierShard) Load(v *shard.Value) ([]byte, error) {
	t.syncLoads++
	b, err := t.store.ReadSync(segOf(v))
	if err != nil {
		t.logErr(err)
	}
	return b, err
}

func (t *tierShard) logErr(err error) {
	ts := t.srv.tiered
	now := time.Now().Unix()
	if last := ts.lastLog.Load(); now > last && ts.lastLog.CompareAndSwap(last, now) {
		t.srv.log.Warnf("tiered storage, shard %d: %v", t.sh.ID, err)
	}
}

// tierView is v with its bytes in memory: v itself, or for an offloaded
// string a copy read synchronously: a blocking read on the shard
// goroutine, for --debug_snapshot_reference (a debugging aid, taken
// inside the cut's step) and serializeAsync's retry of a failed read.
// SAVE and DEBUG RELOAD take asynchronous paths (saveAtCut,
// serializeAsync). A read error fails e, so no file is written with a
// wrong value.
func tierView(sh *shard.Shard, e *rdb.Encoder, v *shard.Value) *shard.Value {
	if !v.IsExternal() {
		return v
	}
	t, ok := sh.Tier().(*tierShard)
	if !ok {
		return v
	}
	t.serialReads++
	t.serialSync++
	b, err := t.store.ReadSync(segOf(v))
	if err != nil {
		t.logErr(err)
		e.Fail(err)
	}
	c := *v
	c.SetStr(b)
	return &c
}

// tierLoader is the snapshot's Loader (BGSAVE, both formats): an
// offloaded string is read asynchronously while its bucket waits
// (DelayedPending); nil when tiering is off.
func tierLoader(sh *shard.Shard) snapshot.Loader {
	t, ok := sh.Tier().(*tierShard)
	if !ok {
		return nil
	}
	return func(v *shard.Value, done func(shard.Value, error)) bool {
		if !v.IsExternal() {
			return false
		}
		c := *v
		t.serialReads++
		t.Read(v, func(data []byte, err error) {
			if err == nil {
				// Not copied: bytes of a shared read are never modified
				// (tiered.Store.Read; only private reads' bytes are taken
				// over) nor recycled (Recycle takes only bytes that went to
				// a single ReadOwned callback, and this one is not).
				c.SetStr(data)
			} else {
				t.logErr(err)
			}
			done(c, err)
		})
		return true
	}
}

// Run is the offload step (see the file comment).
func (t *tierShard) Run(s *shard.Shard) {
	t.queued.Store(false)
	t.freeLater(s)
	if t.budget.Load() <= 0 {
		return
	}
	if t.writes >= tierMaxWrites || time.Now().Before(t.backoff) {
		return
	}
	if t.idle && t.big == nil {
		if t.changes() == t.idleWrites {
			return
		}
		t.idle = false
	}
	start := time.Now()
	budget := min(t.budget.Load(), tierStepBytes)
	minSize := t.srv.cfg.TieredMinValueSize
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
					if at, ok := db.ExpireAt(it); ok && at-now < tierMinTTL {
						return
					}
				}
				k := tierKey{db.Index, db.Table.Key(it)}
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
					return // see pin
				}
				if v.StrLen() > tierBigValue {
					if t.big != nil {
						t.passSkipped = true // one big value at a time
						return
					}
					k.key = strings.Clone(k.key)
					if err := t.startBig(k, v); err != nil {
						full = err
						t.passSkipped = true
						return
					}
					t.passStaged++
					return
				}
				k.key = strings.Clone(k.key)
				if err := t.store.Stash(db.Index, k.key, v.Str()); err != nil {
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
		if visits++; time.Since(start) > tierStepBudget {
			break
		}
	}
	if t.big != nil && staged < budget {
		staged += t.advanceBig(budget - staged) // started by the walk
	}
	if full != nil && full != tiered.ErrBusy { // busy: the file is being truncated, go on next step
		t.logErr(full)
		t.backoff = time.Now().Add(tierErrBackoff)
	}
	if t.store.Staged() > 0 {
		t.writes++
		t.store.Commit(t.written)
	}
	if d := time.Since(start).Nanoseconds(); d > t.stepNanos {
		t.stepNanos = d
	}
}

// tierBig is a string too big to copy in one step, written a part per
// step (tiered.BigWrite). Its value is marked (shard.Value.Mark) when the
// write starts: while it is still marked and holds the same bytes (ptr,
// length) it has not changed since, so the parts written so far are its
// bytes. Invariant: the value becomes external only if it is unchanged
// and unpinned when the last part is written; otherwise the space is
// given back once no part is in flight (BigWrite.Abort).
type tierBig struct {
	w   *tiered.BigWrite
	k   tierKey
	ptr *byte
}

// startBig reserves space for v at k and marks it; advanceBig writes it.
func (t *tierShard) startBig(k tierKey, v *shard.Value) error {
	w, err := t.store.Reserve(uint32(v.StrLen()))
	if err != nil {
		return err
	}
	v.Mark()
	t.big = &tierBig{w: w, k: k, ptr: unsafe.SliceData(v.Str())}
	t.stashed[k] = struct{}{}
	return nil
}

// bigValue is the value t.big writes, nil when it changed or is gone.
func (t *tierShard) bigValue() *shard.Value {
	b := t.big
	v := t.sh.DBs[b.k.db].Peek(unsafe.Slice(unsafe.StringData(b.k.key), len(b.k.key)))
	if v == nil || v.Type != shard.TypeString || v.IsExternal() || !v.Marked() ||
		v.StrLen() != int(b.w.Seg.Len) || unsafe.SliceData(v.Str()) != b.ptr {
		return nil
	}
	return v
}

// advanceBig hands up to budget bytes of the big value to the writer (at
// most tierBigParts parts in flight), or ends the write when the value
// changed, is pinned or a part failed. It returns the bytes copied.
func (t *tierShard) advanceBig(budget int64) int64 {
	b := t.big
	v := t.bigValue()
	if v == nil || b.w.Err != nil || (len(t.pins) > 0 && t.pins[b.k] > 0) {
		t.endBig(nil)
		return 0
	}
	var copied int64
	for copied < budget && !b.w.Copied() && b.w.Pending() < tierBigParts {
		// A step copies at most budget (below tierBigValue) and a small
		// part past it.
		n := min(b.w.Remaining(), max(budget-copied, tierMinPart))
		off := int64(b.w.Seg.Len) - b.w.Remaining()
		t.writes++
		t.store.WritePart(b.w, v.Str()[off:off+n], func() { t.bigPartDone(b) })
		copied += n
	}
	return copied
}

// bigPartDone runs when a part of b is written: it ends the write once
// every part is, or queues the next step to copy more.
func (t *tierShard) bigPartDone(b *tierBig) {
	t.writes--
	if t.big != b {
		return // ended already
	}
	if b.w.Err != nil {
		t.logErr(b.w.Err)
		t.backoff = time.Now().Add(tierErrBackoff)
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
// external unless pinned since (see pin); otherwise the space is freed.
func (t *tierShard) endBig(v *shard.Value) {
	b := t.big
	t.big = nil
	delete(t.stashed, b.k)
	if v == nil || (len(t.pins) > 0 && t.pins[b.k] > 0) {
		t.store.Abort(b.w)
		return
	}
	t.srv.tiered.offloadedSinceGC.Add(int64(cap(v.Str())))
	t.sh.DBs[b.k.db].Offloaded(v, b.w.Seg.Off, b.w.Seg.Len)
	t.entries++
	t.bytes += int64(b.w.Seg.Len)
}

// changes counts what can make a value worth offloading: writes, and
// values loaded back into memory.
func (t *tierShard) changes() uint64 {
	return t.sh.Stats.Writes + t.loads + t.syncLoads + t.unpins
}

// written switches the values of a finished write job to their segments.
func (t *tierShard) written(entries []tiered.Entry, err error) {
	t.writes--
	if err != nil {
		for _, e := range entries {
			delete(t.stashed, tierKey{e.DB, e.Key})
		}
		t.logErr(err) // the values are still in memory; the store freed the space
		t.backoff = time.Now().Add(tierErrBackoff)
		return
	}
	var released int64
	for _, e := range entries {
		delete(t.stashed, tierKey{e.DB, e.Key})
		v := t.sh.DBs[e.DB].Peek(unsafe.Slice(unsafe.StringData(e.Key), len(e.Key)))
		if v == nil || v.Type != shard.TypeString || v.IsExternal() || !bytes.Equal(v.Str(), e.Data) {
			t.store.Free(e.Seg) // changed or gone meanwhile
			continue
		}
		if len(t.pins) > 0 && t.pins[tierKey{e.DB, e.Key}] > 0 {
			t.store.Free(e.Seg) // pinned since it was stashed: see pin
			continue
		}
		released += int64(cap(v.Str()))
		t.sh.DBs[e.DB].Offloaded(v, e.Seg.Off, e.Seg.Len)
		t.entries++
		t.bytes += int64(e.Seg.Len)
	}
	t.srv.tiered.offloadedSinceGC.Add(released)
}
