package persist

// Persistence in Redis's RDB format: SAVE, BGSAVE, DEBUG RELOAD, loading
// at start-up, and the state INFO persistence reports. Values are encoded
// and decoded by package rdbvalue, as DUMP/RESTORE's are.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/atomicfile"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// rdbPath is where SAVE writes and start-up loads.
func (p *Engine) rdbPath() string {
	st := p.settings()
	return filepath.Join(st.Dir, st.DBFilename)
}

// Save is SAVE: the whole dataset written to the file under t, a
// transaction it locks on every shard; with tiered storage it waits for a
// BGSAVE-style cut instead (saveAtCut).
func (p *Engine) Save(t *tx.Tx) error {
	if p.host.Tiered() {
		return p.saveAtCut()
	}
	return p.save(t)
}

// saveAtCut is SAVE with tiered storage: BGSAVE's path, waited for, so
// offloaded values are read asynchronously while their buckets wait
// (Host.TierLoader) instead of blocking the shard goroutine (Host.TierView,
// save's path). The file holds the dataset at the cut, taken when SAVE
// runs; commands of other clients are served meanwhile.
func (p *Engine) saveAtCut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dbFormat() == "dfly" {
		done := make(chan error, 1)
		p.bgsaveDfly(func(err error) { done <- err })
		return <-done
	}
	chunks, free, writes, cut := p.snapshotCut(nil)
	err := p.writeSnapshotStream(chunks, free, writes, cut)
	p.setSlices(nil)
	return err
}

// SaveBeforeShutdown writes the final snapshot (SHUTDOWN SAVE, or SHUTDOWN
// and SIGTERM with save points configured), after a BGSAVE running now,
// as Redis does, and logs what happened.
func (p *Engine) SaveBeforeShutdown() error {
	if p.Loading() {
		// As Redis: a half-loaded dataset must not replace the file.
		p.log.Warnf("Shutting down while loading: the dataset is not saved.")
		return nil
	}
	p.log.Noticef("Saving the final RDB snapshot before exiting.")
	if err := p.saveAtCut(); err != nil {
		p.log.Warnf("Error trying to save the DB, can't exit: %v", err)
		return err
	}
	p.log.Noticef("DB saved on disk")
	return nil
}

// StartBgsave starts a background save unless one runs; it reports
// whether it started one. In the RDB format it takes the point-in-time cut
// before it returns and lets the shards serialize while they serve
// (bgsave.go); the dfly format's cut is the same, each shard writing its
// own file (dfly_bg.go).
func (p *Engine) StartBgsave() bool {
	if !p.bgsaving.CompareAndSwap(false, true) {
		return false
	}
	p.bgsave()
	return true
}

// bgsaveEnded records a finished BGSAVE and starts the scheduled one.
func (p *Engine) bgsaveEnded(start time.Time, err error) {
	p.lastBgsaveSecs.Store(int64(time.Since(start).Round(time.Second) / time.Second))
	if err == nil {
		p.saves.Add(1)
	}
	if p.scheduled.CompareAndSwap(true, false) {
		p.log.Noticef("Starting the scheduled BGSAVE")
		p.bgsave() // bgsaving is still set: it passes on to this one
		return
	}
	p.bgsaving.Store(false)
}

// bgsave runs a background save; the caller has set bgsaving, which
// is cleared when the save ends. The point-in-time cut is taken before
// bgsave returns.
func (p *Engine) bgsave() {
	start := time.Now()
	p.mu.Lock() // no SAVE or DEBUG RELOAD while the snapshot runs
	// No collection starts while the save runs (its writers' Ps would
	// mark too); the one owed runs after it (see HoldCollections).
	release := reclaim.HoldCollections()
	if p.dbFormat() == "dfly" {
		p.bgsaveDfly(func(err error) {
			p.mu.Unlock()
			release()
			p.bgsaveEnded(start, err)
		})
		return
	}
	chunks, free, writes, cut := p.snapshotCut(nil)
	go func() {
		defer snapshot.BackgroundThread()() // the file writer yields to the shards
		err := p.writeSnapshotStream(chunks, free, writes, cut)
		p.setSlices(nil)
		p.mu.Unlock()
		release()
		p.bgsaveEnded(start, err)
	}()
}

// save writes the whole dataset to the RDB file under t, a transaction
// that locks every shard, so no multi-shard command is half-visible in
// the file. It replaces the file only once the new one is complete.
func (p *Engine) save(t *tx.Tx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.AddAllShards()
	t.Lock()
	if p.dbFormat() == "dfly" {
		return p.saveDfly(t) // finishes t once the shards are encoded
	}
	cut := p.positionCut()
	t.RunAll(cut.Take)
	snap := p.Serialize(t)
	t.Finish(nil)
	pos := cut.End()
	return p.writeSnapshot(snap, &pos)
}

// ShardRecords is one shard's records, per database (ShardEncoder).
type ShardRecords struct {
	// Funcs (shard 0's): the function libraries at the cut.
	Funcs   []byte
	dbs     [][]byte
	keys    []uint64
	expires []uint64
	writes  uint64
	err     error
}

// Serialize encodes every shard's databases, the shards in parallel, while
// t holds every shard.
func (p *Engine) Serialize(t *tx.Tx) []ShardRecords {
	snap := make([]ShardRecords, len(p.shards))
	t.RunAll(func(sh *shard.Shard) { snap[sh.ID] = p.serializeShard(sh) })
	snap[0].Funcs = p.host.Functions()
	return snap
}

// serializeShard encodes sh's databases on its goroutine, reading its
// offloaded strings synchronously.
func (p *Engine) serializeShard(sh *shard.Shard) ShardRecords {
	w := NewShardEncoder(sh, func(e *rdb.Encoder, v *shard.Value) *shard.Value { return p.host.TierView(sh, e, v) })
	for w.Bucket() {
	}
	return w.ss
}

// ShardEncoder encodes a shard's databases a bucket at a time, on the
// shard's goroutine.
type ShardEncoder struct {
	sh     *shard.Shard
	ss     ShardRecords
	e      *rdb.Encoder
	now    int64
	db     int    // the database being encoded
	cursor uint64 // its next bucket
	// view is v with its bytes in memory (offloaded strings); a read
	// error fails e.
	view func(e *rdb.Encoder, v *shard.Value) *shard.Value
}

// NewShardEncoder starts encoding sh, reading values through view.
func NewShardEncoder(sh *shard.Shard, view func(e *rdb.Encoder, v *shard.Value) *shard.Value) *ShardEncoder {
	return &ShardEncoder{sh: sh, e: rdb.NewEncoder(nil), now: sh.Now(), view: view,
		ss: ShardRecords{dbs: make([][]byte, len(sh.DBs)), keys: make([]uint64, len(sh.DBs)),
			expires: make([]uint64, len(sh.DBs)), writes: sh.Stats.Writes}}
}

// Cursor is the position of the next bucket in the Current database.
func (w *ShardEncoder) Cursor() uint64 { return w.cursor }

// Records are the records encoded so far.
func (w *ShardEncoder) Records() ShardRecords { return w.ss }

// Current is the database whose bucket comes next, nil when all are done
// (or encoding failed).
func (w *ShardEncoder) Current() *shard.DB {
	for w.ss.err == nil && w.db < len(w.sh.DBs) {
		if db := w.sh.DBs[w.db]; db.Len() > 0 {
			return db
		}
		w.db++
	}
	return nil
}

// Bucket encodes the next bucket; false when there was none left.
func (w *ShardEncoder) Bucket() bool {
	db := w.Current()
	if db == nil {
		return false
	}
	i := w.db
	w.cursor = db.Table.Traverse(w.cursor, func(it shard.Iterator) {
		var m rdb.Meta
		if at, ok := db.ExpireAt(it); ok {
			if at <= w.now {
				return // logically expired, not yet swept
			}
			m.ExpireAt = at
			w.ss.expires[i]++
		}
		w.ss.keys[i]++
		rdbvalue.Encode(w.e, []byte(db.Table.Key(it)), w.view(w.e, db.Table.Value(it)), m)
	})
	if w.cursor == 0 {
		if err := w.e.Err(); err != nil {
			w.ss.err = err
			return false
		}
		w.ss.dbs[i] = w.e.TakeBytes()
		w.db++
	}
	return true
}

// writeSnapshot writes the file: header, AUX fields, then database by
// database one SELECTDB with every shard's records, EOF and the checksum.
// It writes a temporary file, syncs it and renames it over the old one.
func (p *Engine) writeSnapshot(snap []ShardRecords, pos *replpos.Position) (err error) {
	start := time.Now()
	path := p.rdbPath()
	defer func() {
		p.lastFailed.Store(err != nil)
		if err != nil {
			p.log.Warnf("Failed saving the DB to %s: %v", path, err)
			return
		}
		p.lastSave.Store(time.Now().Unix())
		p.log.Noticef("DB saved on disk in %.3f seconds", time.Since(start).Seconds())
	}()
	writes, err := p.writeSnapshotFile(path, snap, pos)
	if err == nil {
		p.writesAtSave.Store(writes)
	}
	return err
}

// writeSnapshotFile writes shards' serialized databases as one RDB file at
// path, through a temporary file renamed when complete; pos (nil: none)
// is the replication position they hold.
func (p *Engine) writeSnapshotFile(path string, snap []ShardRecords, pos *replpos.Position) (writes uint64, err error) {
	for _, ss := range snap {
		if ss.err != nil {
			return 0, ss.err
		}
		writes += ss.writes
	}
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-%d.rdb", os.Getpid()))
	f, err := atomicfile.Create(tmp)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil && f != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	var crc uint64
	put := func(b []byte) {
		crc = rdb.CRC64(crc, b)
		_, _ = w.Write(b) // the bufio.Writer keeps the first error for Flush
	}
	e := rdb.NewEncoder(nil)
	e.WriteHeader()
	e.StandardAUX(p.version, 0)
	positionAUX(e, pos)
	put(e.TakeBytes())
	put(snap[0].Funcs)
	for db := 0; db < len(p.shards[0].DBs); db++ {
		var keys, expires uint64
		for _, ss := range snap {
			keys += ss.keys[db]
			expires += ss.expires[db]
		}
		if keys == 0 {
			continue
		}
		e.SelectDB(uint64(db))
		e.ResizeDB(keys, expires)
		put(e.TakeBytes())
		for _, ss := range snap {
			put(ss.dbs[db])
		}
	}
	if err := e.Err(); err != nil {
		return 0, err
	}
	put([]byte{0xFF}) // RDB_OPCODE_EOF; the checksum covers it
	var sum [8]byte
	for i := range sum {
		sum[i] = byte(crc >> (8 * i))
	}
	_, _ = w.Write(sum[:])
	err = atomicfile.Commit(f, tmp, path, w.Flush())
	f = nil // closed
	if err != nil {
		return 0, err
	}
	return writes, nil
}

// LoadOnStart loads the RDB file, when there is one: one worker goroutine
// per shard applies the decoded batches (apply). A file that does not load
// completely is an error (the caller exits rather than serve part of the
// data).
func (p *Engine) LoadOnStart() error {
	p.lastSave.Store(time.Now().Unix())
	defer pauseGC()()
	path := p.rdbPath()
	if p.useDflyFiles(path) {
		return p.loadDflyOnStart()
	}
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return p.LoadFile(path)
}

// LoadFile loads the RDB file at path into the shards at start-up (an
// AOF's base too), as LoadOnStart does.
func (p *Engine) LoadFile(path string) error {
	return p.loadFile(path, true)
}

// LoadBase loads an AOF's base: as LoadFile, but the replication position
// the file may name is not the data's (the incremental files go past it).
func (p *Engine) LoadBase(path string) error { return p.loadFile(path, false) }

func (p *Engine) loadFile(path string, position bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("can't open the RDB file %s: %w", path, err)
	}
	defer f.Close()
	p.log.Noticef("Loading RDB...")
	start := time.Now()
	dispatch, wait, free := p.startLoadWorkers()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	endLoad := p.BeginLoad(size, time.Second)
	var pos replpos.Position
	l := p.newLoader(dispatch, &pos)
	l.Free = free
	l.LimitReserve(size)
	err = l.Load(&countingReader{r: f, n: &p.prog.loaded})
	wait()
	endLoad()
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	if position {
		p.loaded.Store(pos.Valid())
	}
	p.loadDone(l.Keys(), start)
	return nil
}

// pauseGC stops the collector for the start-up load, unless GOGC is set,
// and returns what restores it. The heap then only grows: the dataset
// plus the load's garbage (its batches, grown and split tables), less
// than the collector lets it reach at GOGC 200 once it serves, and a
// memory limit (--maxmemory) still triggers collections. Collecting while
// it grows would scan the dataset several times over.
func pauseGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(old) }
}

// LoadWhenServing is the start-up load as Redis's: the server listens
// first and loads after. The dataset counts as loading from now on, so
// every command but those flagged loading gets LOADING (Loading), and the
// file(s) are loaded once ready is closed (the loops serve), each batch
// applied on its shard's loop; end gets the result (not called when done
// closes first).
func (p *Engine) LoadWhenServing(ready, done <-chan struct{}, end func(error)) {
	p.prog.start.Store(time.Now().Unix())
	p.startup.Store(true)
	p.onLoop = true
	go func() {
		select {
		case <-ready:
		case <-done:
			return
		}
		p.mu.Lock() // no DEBUG RELOAD meanwhile
		load := p.LoadOnStart
		if p.StartupLoad != nil {
			load = p.StartupLoad
		}
		err := load()
		if err == nil { // a failed load stays loading until the server exits
			p.startup.Store(false)
		}
		p.mu.Unlock()
		end(err)
	}()
}

// Loading reports whether a load replaces the dataset now (start-up,
// DEBUG RELOAD, a replica's full sync): clients get LOADING.
func (p *Engine) Loading() bool { return p.loading.Load() || p.startup.Load() }

// LoadingAtStart reports whether the start-up load runs: REPLICAOF, which
// may end a replica's full sync (no LOADING then), waits for this one.
func (p *Engine) LoadingAtStart() bool { return p.startup.Load() }

// apply applies a decoded batch to sh: once the server serves (onLoop), on
// sh's loop, waited for; before, on the caller's goroutine.
func (p *Engine) apply(sh *shard.Shard, items []rdbvalue.Item) {
	if !p.onLoop {
		sh.Exec(shard.Func(func(sh *shard.Shard) { rdbvalue.Apply(sh, items) }))
		return
	}
	applied := make(chan struct{})
	sh.Send(shard.Func(func(sh *shard.Shard) { rdbvalue.Apply(sh, items); close(applied) }))
	<-applied
}

// startLoadWorkers starts one goroutine per shard applying decoded
// batches (apply); dispatch may be called from several
// goroutines, wait closes the queues and waits for the workers. Applied
// batches are offered back on free, emptied, for a loader to reuse.
func (p *Engine) startLoadWorkers() (dispatch func(sid int, items []rdbvalue.Item), wait func(), free chan []rdbvalue.Item) {
	queues := make([]chan []rdbvalue.Item, len(p.shards))
	free = make(chan []rdbvalue.Item, 8*len(p.shards))
	var wg sync.WaitGroup
	for i, sh := range p.shards {
		q := make(chan []rdbvalue.Item, 4)
		queues[i] = q
		wg.Add(1)
		go func() {
			defer wg.Done()
			for items := range q {
				p.apply(sh, items)
				rdbvalue.Recycle(free, items)
			}
		}()
	}
	dispatch = func(sid int, items []rdbvalue.Item) { queues[sid] <- items }
	wait = func() {
		for _, q := range queues {
			close(q)
		}
		wg.Wait()
	}
	return dispatch, wait, free
}

// loadDone records a finished start-up load of keys keys.
func (p *Engine) loadDone(keys int, start time.Time) {
	var writes atomic.Uint64
	if p.onLoop {
		p.onEachShard(func(sh *shard.Shard) { writes.Add(sh.Stats.Writes) })
	} else {
		for _, sh := range p.shards { // idle until Serve; the workers are done
			writes.Add(sh.Stats.Writes)
		}
	}
	p.writesAtSave.Store(writes.Load())
	p.loadedWrites.Store(writes.Load())
	p.log.Noticef("DB loaded from disk: %d keys in %.3f seconds", keys, time.Since(start).Seconds())
}

// Reload is DEBUG RELOAD: save, then empty every database and load the
// file, all under one lock on every shard (t's) so no client sees the
// dataset half-loaded. serialize encodes the shards for the save (nil:
// Serialize; the server's tiered storage has its own). It returns the
// save's error or the load's.
func (p *Engine) Reload(t *tx.Tx, serialize func(*tx.Tx) []ShardRecords) (saveErr, loadErr error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.AddAllShards()
	t.Lock()
	if serialize == nil {
		serialize = p.Serialize
	}
	if err := p.writeSnapshot(serialize(t), nil); err != nil {
		t.Finish(nil)
		return err, nil
	}
	t.RunAll(func(sh *shard.Shard) {
		for _, db := range sh.DBs {
			db.Flush()
		}
	})
	err := p.reloadLocked(t)
	var writes atomic.Uint64
	t.Finish(func(sh *shard.Shard) { writes.Add(sh.Stats.Writes) })
	if err == nil {
		p.writesAtSave.Store(writes.Load()) // the reload's own inserts are no changes
	}
	if err != nil {
		p.log.Warnf("DEBUG RELOAD: %v", err)
	}
	return nil, err
}

// reloadLocked loads the RDB file while t holds every shard.
func (p *Engine) reloadLocked(t *tx.Tx) error {
	f, err := os.Open(p.rdbPath())
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	defer p.BeginLoad(size, 0)()
	l := p.NewLoader(func(sid int, items []rdbvalue.Item) {
		t.Run(sid, func(sh *shard.Shard) { rdbvalue.Apply(sh, items) })
	})
	l.LimitReserve(size)
	return l.Load(&countingReader{r: f, n: &p.prog.loaded})
}

// Info writes INFO's persistence fields; writes is the shards' current
// write count, saveKeys the keys the running save has written.
func (p *Engine) Info(writes, saveKeys uint64, field func(k string, v any)) {
	p.loadingInfo(field)
	field("async_loading", 0)
	changes := int64(writes) - int64(p.writesAtSave.Load())
	if changes < 0 {
		changes = 0
	}
	field("rdb_changes_since_last_save", changes)
	bgsaving := 0
	if p.bgsaving.Load() {
		bgsaving = 1
	}
	field("rdb_bgsave_in_progress", bgsaving)
	field("rdb_last_save_time", p.lastSave.Load())
	status := "ok"
	if p.lastFailed.Load() {
		status = "err"
	}
	field("rdb_last_bgsave_status", status)
	field("rdb_last_bgsave_time_sec", p.lastBgsaveSecs.Load())
	field("rdb_saves", p.saves.Load())
	field("current_save_keys_processed", saveKeys)
	st := snapshot.ReadStats()
	field("snapshots_in_progress", st.Started-st.Finished)
	field("snapshot_buckets_serialized", st.BucketsSerialized)
	field("snapshot_buckets_serializing", st.BucketsSerializing)
	field("snapshot_big_value_chunks", st.BigValueChunks)
	field("snapshot_parked_mutations", st.ParkedMutations)
	field("snapshot_congested_mutations", st.CongestedMutations)
	field("snapshot_copied_values", st.DeferredCopies)
	field("snapshot_deferred_deletions", st.DeferredDeletions)
	field("snapshot_journal_while_serializing", st.JournalWhileSerializing)
	field("snapshot_moved_saved", st.MovedSaved)
	field("snapshot_multikey_captures", st.MultiKeyCaptures)
	field("snapshot_inline_drains", st.InlineDrains)
	field("snapshot_max_stall_usec", st.MaxStall.Microseconds())
	field("snapshot_max_stall_wall_usec", st.MaxStallWall.Microseconds())
	field("snapshot_max_pending_bytes", st.MaxPending)
}

// positionAUX writes pos's AUX fields (package replpos).
func positionAUX(e *rdb.Encoder, pos *replpos.Position) {
	for _, f := range pos.Fields() {
		e.AUX(f[0], f[1])
	}
}
