package server

// Persistence in Redis's RDB format: SAVE, BGSAVE, LASTSAVE, DEBUG RELOAD,
// loading at start-up, and the state INFO persistence reports. The value
// encoding and decoding shared with DUMP/RESTORE is in persist_value.go.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// persistState is the server's save bookkeeping.
type persistState struct {
	// mu serializes saves (SAVE, BGSAVE, DEBUG RELOAD).
	mu         sync.Mutex
	bgsave     atomic.Bool
	lastSave   atomic.Int64 // unix seconds of the last successful save
	lastFailed atomic.Bool
	loading    atomic.Bool
	// writesAtSave is the shards' write count at the last save, for
	// rdb_changes_since_last_save (approximate: CONFIG RESETSTAT resets it).
	writesAtSave atomic.Uint64
	prog         loadProgress // the running load, for INFO (persist_schedule.go)
	// scheduled: BGSAVE SCHEDULE arrived while a save ran; the next one
	// starts when it ends.
	scheduled      atomic.Bool
	saves          atomic.Int64 // successful saves since start (rdb_saves)
	lastBgsaveSecs atomic.Int64 // duration of the last BGSAVE, -1: none yet
	// slices are the running BGSAVE's snapshots, by shard (INFO reads
	// their key counts on the shards' goroutines).
	slicesMu sync.Mutex
	slices   []*snapshot.Slice
}

func (p *persistState) setSlices(sl []*snapshot.Slice) {
	p.slicesMu.Lock()
	p.slices = sl
	p.slicesMu.Unlock()
}

// slice is shard sid's running snapshot, or nil.
func (p *persistState) slice(sid int) *snapshot.Slice {
	p.slicesMu.Lock()
	defer p.slicesMu.Unlock()
	if sid < len(p.slices) {
		return p.slices[sid]
	}
	return nil
}

func init() { addFamily("server", persistCommands) }

func persistCommands() []*Command {
	return []*Command{
		{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoMulti, Multi: cmdSave},
		{Name: "bgsave", Arity: -1, Flags: FlagAdmin | FlagNoScript, Multi: cmdBgsave},
		{Name: "lastsave", Arity: 1, Flags: FlagFast | FlagLoading | FlagStale, Multi: cmdLastSave},
		{Name: "dump", Arity: 2, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdDump},
		{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdRestore},
		// RESTORE-ASKING is RESTORE that a cluster's MIGRATE sends.
		{Name: "restore-asking", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagAsking, FirstKey: 1, LastKey: 1, Step: 1,
			Shard: cmdRestore},
		{Name: "migrate", Arity: -6, Flags: FlagWrite | FlagNoScript, FirstKey: 3, LastKey: 3, Step: 1,
			KeyPositions: migrateKeyPositions, Multi: cmdMigrate},
	}
}

// rdbPath is where SAVE writes and start-up loads.
func (s *Server) rdbPath() string {
	s.cfg.mu.RLock()
	defer s.cfg.mu.RUnlock()
	return filepath.Join(s.cfg.Dir, s.cfg.DBFilename)
}

func cmdSave(x *Coord) {
	if x.Srv.persist.bgsave.Load() {
		x.W.Error("ERR Background save already in progress")
		return
	}
	var err error
	if x.Srv.tiered != nil {
		err = x.Srv.saveAtCut()
	} else {
		err = x.Srv.save(x.Tx())
	}
	if err != nil {
		x.W.Error("ERR")
		return
	}
	x.W.SimpleString("OK")
}

// saveAtCut is SAVE with tiered storage: BGSAVE's path, waited for, so
// offloaded values are read asynchronously while their buckets wait
// (tierLoader) instead of blocking the shard goroutine (tierView, save's
// path). The file holds the dataset at the cut, taken when SAVE runs;
// commands of other clients are served meanwhile.
func (s *Server) saveAtCut() error {
	p := &s.persist
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.dbFormat() == "dfly" {
		done := make(chan error, 1)
		s.bgsaveDfly(func(err error) { done <- err })
		return <-done
	}
	chunks, free, writes := s.snapshotCut()
	err := s.writeSnapshotStream(chunks, free, writes)
	p.setSlices(nil)
	return err
}

// SaveBeforeShutdown writes the final snapshot (SHUTDOWN SAVE, or SHUTDOWN
// and SIGTERM with save points configured), after a BGSAVE running now,
// as Redis does, and logs what happened.
func (s *Server) SaveBeforeShutdown() error {
	s.log.Noticef("Saving the final RDB snapshot before exiting.")
	if err := s.saveAtCut(); err != nil {
		s.log.Warnf("Error trying to save the DB, can't exit: %v", err)
		return err
	}
	s.log.Noticef("DB saved on disk")
	return nil
}

// cmdBgsave saves in the background. In the RDB format it takes the
// point-in-time cut before replying and lets the shards serialize while
// they serve (persist_snapshot.go); the dfly format still saves under a
// lock on every shard, on a goroutine.
func cmdBgsave(x *Coord) {
	if len(x.Args) > 2 || (len(x.Args) == 2 && !strings.EqualFold(string(x.Args[1]), "schedule")) {
		x.W.Error(errSyntax)
		return
	}
	p := &x.Srv.persist
	if !p.bgsave.CompareAndSwap(false, true) {
		if len(x.Args) == 2 {
			p.scheduled.Store(true)
			x.W.SimpleString("Background saving scheduled")
			return
		}
		x.W.Error("ERR Background save already in progress")
		return
	}
	x.Srv.bgsave()
	x.W.SimpleString("Background saving started")
}

// bgsaveEnded records a finished BGSAVE and starts the scheduled one.
func (s *Server) bgsaveEnded(start time.Time, err error) {
	p := &s.persist
	p.lastBgsaveSecs.Store(int64(time.Since(start).Round(time.Second) / time.Second))
	if err == nil {
		p.saves.Add(1)
	}
	if p.scheduled.CompareAndSwap(true, false) {
		s.log.Noticef("Starting the scheduled BGSAVE")
		s.bgsave() // persist.bgsave is still set: it passes on to this one
		return
	}
	p.bgsave.Store(false)
}

// bgsave runs a background save; the caller has set persist.bgsave, which
// is cleared when the save ends. The point-in-time cut is taken before
// bgsave returns.
func (s *Server) bgsave() {
	p := &s.persist
	start := time.Now()
	p.mu.Lock() // no SAVE or DEBUG RELOAD while the snapshot runs
	// No collection starts while the save runs (its writers' Ps would
	// mark too); the one owed runs after it (see HoldCollections).
	release := snapshot.HoldCollections()
	if s.dbFormat() == "dfly" {
		s.bgsaveDfly(func(err error) {
			p.mu.Unlock()
			release()
			s.bgsaveEnded(start, err)
		})
		return
	}
	chunks, free, writes := s.snapshotCut()
	go func() {
		defer snapshot.BackgroundThread()() // the file writer yields to the shards
		err := s.writeSnapshotStream(chunks, free, writes)
		s.persist.setSlices(nil)
		p.mu.Unlock()
		release()
		s.bgsaveEnded(start, err)
	}()
}

func cmdLastSave(x *Coord) { x.W.Int(x.Srv.persist.lastSave.Load()) }

// save writes the whole dataset to the RDB file under t, a transaction
// that locks every shard, so no multi-shard command is half-visible in
// the file. It replaces the file only once the new one is complete.
func (s *Server) save(t *tx.Tx) error {
	s.persist.mu.Lock()
	defer s.persist.mu.Unlock()
	t.AddAllShards()
	t.Lock()
	if s.dbFormat() == "dfly" {
		return s.saveDfly(t) // finishes t once the shards are encoded
	}
	snap := s.serialize(t)
	t.Finish(nil)
	return s.writeSnapshot(snap)
}

// shardSnapshot is one shard's records, per database.
type shardSnapshot struct {
	// funcs (shard 0's): the function libraries at the cut (cutFunctions).
	funcs   []byte
	dbs     [][]byte
	keys    []uint64
	expires []uint64
	writes  uint64
	err     error
}

// serialize encodes every shard's databases, the shards in parallel.
func (s *Server) serialize(t *tx.Tx) []shardSnapshot {
	snap := make([]shardSnapshot, len(s.shards))
	t.RunAll(func(sh *shard.Shard) { snap[sh.ID] = serializeShard(sh) })
	snap[0].funcs = s.cutFunctions()
	return snap
}

func serializeShard(sh *shard.Shard) shardSnapshot {
	w := newShardEncoder(sh)
	w.view = func(v *shard.Value) *shard.Value { return tierView(sh, w.e, v) }
	for w.bucket() {
	}
	return w.ss
}

// shardEncoder encodes a shard's databases a bucket at a time.
type shardEncoder struct {
	sh     *shard.Shard
	ss     shardSnapshot
	e      *rdb.Encoder
	now    int64
	db     int    // the database being encoded
	cursor uint64 // its next bucket
	// view is v with its bytes in memory (offloaded strings).
	view func(v *shard.Value) *shard.Value
}

func newShardEncoder(sh *shard.Shard) *shardEncoder {
	return &shardEncoder{sh: sh, e: rdb.NewEncoder(nil), now: sh.Now(),
		ss: shardSnapshot{dbs: make([][]byte, len(sh.DBs)), keys: make([]uint64, len(sh.DBs)),
			expires: make([]uint64, len(sh.DBs)), writes: sh.Stats.Writes}}
}

// current is the database whose bucket comes next, nil when all are done
// (or encoding failed).
func (w *shardEncoder) current() *shard.DB {
	for w.ss.err == nil && w.db < len(w.sh.DBs) {
		if db := w.sh.DBs[w.db]; db.Len() > 0 {
			return db
		}
		w.db++
	}
	return nil
}

// bucket encodes the next bucket; false when there was none left.
func (w *shardEncoder) bucket() bool {
	db := w.current()
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
		rdbvalue.Encode(w.e, []byte(db.Table.Key(it)), w.view(db.Table.Value(it)), m)
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
func (s *Server) writeSnapshot(snap []shardSnapshot) (err error) {
	start := time.Now()
	path := s.rdbPath()
	defer func() {
		s.persist.lastFailed.Store(err != nil)
		if err != nil {
			s.log.Warnf("Failed saving the DB to %s: %v", path, err)
			return
		}
		s.persist.lastSave.Store(time.Now().Unix())
		s.log.Noticef("DB saved on disk in %.3f seconds", time.Since(start).Seconds())
	}()
	writes, err := s.writeSnapshotFile(path, snap)
	if err == nil {
		s.persist.writesAtSave.Store(writes)
	}
	return err
}

// writeSnapshotFile writes shards' serialized databases as one RDB file at
// path, through a temporary file renamed when complete.
func (s *Server) writeSnapshotFile(path string, snap []shardSnapshot) (writes uint64, err error) {
	for _, ss := range snap {
		if ss.err != nil {
			return 0, ss.err
		}
		writes += ss.writes
	}
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-%d.rdb", os.Getpid()))
	f, err := os.Create(tmp)
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
	e.StandardAUX(RedisVersion, 0)
	put(e.TakeBytes())
	put(snap[0].funcs)
	for db := 0; db < len(s.shards[0].DBs); db++ {
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
	err = replaceWithTemp(f, tmp, path, w.Flush())
	f = nil // closed
	if err != nil {
		return 0, err
	}
	return writes, nil
}

// replaceWithTemp completes a file written at tmp: unless an earlier step
// failed (err), its data goes to disk (fsync) and it replaces path
// (rename), so that path holds the old file or the whole new one; on any
// failure tmp goes. f is closed either way.
func replaceWithTemp(f *os.File, tmp, path string, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// LoadOnStart loads the RDB file, when there is one, before the server
// serves: nothing else touches the shards yet, so one worker goroutine per
// shard applies the decoded batches. A file that does not load completely
// is an error (the caller exits rather than serve part of the data).
func (s *Server) LoadOnStart() error {
	s.persist.lastSave.Store(time.Now().Unix())
	defer pauseGC()()
	path := s.rdbPath()
	if s.useDflyFiles(path) {
		return s.loadDflyOnStart()
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("can't open the RDB file %s: %w", path, err)
	}
	defer f.Close()
	s.log.Noticef("Loading RDB...")
	start := time.Now()
	dispatch, wait, free := s.startLoadWorkers()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	endLoad := s.beginLoad(size, time.Second)
	l := s.newLoader(dispatch)
	l.Free = free
	l.LimitReserve(size)
	err = l.Load(&countingReader{r: f, n: &s.persist.prog.loaded})
	wait()
	endLoad()
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	s.loadDone(l.Keys(), start)
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

// startLoadWorkers starts one goroutine per shard applying decoded
// batches before the server serves; dispatch may be called from several
// goroutines, wait closes the queues and waits for the workers. Applied
// batches are offered back on free, emptied, for a loader to reuse.
func (s *Server) startLoadWorkers() (dispatch func(sid int, items []rdbvalue.Item), wait func(), free chan []rdbvalue.Item) {
	queues := make([]chan []rdbvalue.Item, len(s.shards))
	free = make(chan []rdbvalue.Item, 8*len(s.shards))
	var wg sync.WaitGroup
	for i, sh := range s.shards {
		q := make(chan []rdbvalue.Item, 4)
		queues[i] = q
		wg.Add(1)
		go func() {
			defer wg.Done()
			for items := range q {
				sh.Exec(shard.Func(func(sh *shard.Shard) { rdbvalue.Apply(sh, items) }))
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
func (s *Server) loadDone(keys int, start time.Time) {
	var writes uint64
	for _, sh := range s.shards { // idle until Serve; the workers are done
		writes += sh.Stats.Writes
	}
	s.persist.writesAtSave.Store(writes)
	s.log.Noticef("DB loaded from disk: %d keys in %.3f seconds", keys, time.Since(start).Seconds())
}

// debugReload is DEBUG RELOAD: save, then empty every database and load
// the file, all under one lock on every shard so no client sees the
// dataset half-loaded.
func debugReload(x *Coord) {
	s := x.Srv
	s.persist.mu.Lock()
	defer s.persist.mu.Unlock()
	t := x.Tx()
	t.AddAllShards()
	t.Lock()
	var snap []shardSnapshot
	if s.tiered != nil && x.local == nil {
		snap = s.serializeAsync(t) // offloaded strings read without blocking a shard (tiered.go)
	} else {
		snap = s.serialize(t)
	}
	err := s.writeSnapshot(snap)
	if err != nil {
		t.Finish(nil)
		x.W.Error("ERR Error trying to save the DB: " + err.Error())
		return
	}
	t.RunAll(func(sh *shard.Shard) {
		for _, db := range sh.DBs {
			db.Flush()
		}
	})
	err = s.reloadLocked(t)
	var writes atomic.Uint64
	t.Finish(func(sh *shard.Shard) { writes.Add(sh.Stats.Writes) })
	if err == nil {
		s.persist.writesAtSave.Store(writes.Load()) // the reload's own inserts are no changes
	}
	if err != nil {
		s.log.Warnf("DEBUG RELOAD: %v", err)
		x.W.Error("ERR Error trying to load the RDB dump: " + err.Error())
		return
	}
	x.W.SimpleString("OK")
}

// reloadLocked loads the RDB file while t holds every shard.
func (s *Server) reloadLocked(t *tx.Tx) error {
	f, err := os.Open(s.rdbPath())
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	defer s.beginLoad(size, 0)()
	l := s.newLoader(func(sid int, items []rdbvalue.Item) {
		t.Run(sid, func(sh *shard.Shard) { rdbvalue.Apply(sh, items) })
	})
	l.LimitReserve(size)
	return l.Load(&countingReader{r: f, n: &s.persist.prog.loaded})
}

// persistInfo writes INFO's persistence fields; writes is the shards'
// current write count.
func persistInfo(s *Server, writes, saveKeys uint64, field func(k string, v any)) {
	p := &s.persist
	loadingInfo(s, field)
	field("async_loading", 0)
	changes := int64(writes) - int64(p.writesAtSave.Load())
	if changes < 0 {
		changes = 0
	}
	field("rdb_changes_since_last_save", changes)
	field("rdb_bgsave_in_progress", boolInt(p.bgsave.Load()))
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

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newLoader is a Loader of this server's shards: keys routed by ShardOf,
// function libraries loaded (one that does not load is reported and
// skipped: the keys matter more).
func (s *Server) newLoader(dispatch func(sid int, items []rdbvalue.Item)) *rdbvalue.Loader {
	l := rdbvalue.NewLoader(len(s.shards), len(s.shards[0].DBs), s.ShardOf, dispatch)
	l.OnFunction = func(code []byte) {
		if err := s.loadFunctionLibrary(code); err != nil {
			s.log.Warnf("Skipping a function library of the snapshot: %v", err)
		}
	}
	return l
}
