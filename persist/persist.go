package persist

import (
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

// Host is what persistence needs of the server around it: its settings,
// its function libraries, and its tiered storage's reads.
type Host interface {
	// Settings are the current values of the persistence settings
	// (CONFIG SET may change them between two calls).
	Settings() Settings
	// Functions are the function libraries as RDB FUNCTION2 records; the
	// caller holds shard 0 (every library change holds it).
	Functions() []byte
	// FunctionsAtCut puts the libraries first on shard 0's output of a
	// snapshot (tagged: as a main-stream fragment); it runs at the cut, on
	// sh's goroutine.
	FunctionsAtCut(sh *shard.Shard, out chan<- snapshot.Chunk, tagged bool)
	// LoadFunctions loads a library read from a file, replacing one of
	// its name.
	LoadFunctions(code []byte) error
	// Tiered reports whether tiered storage is on: SAVE then takes
	// BGSAVE's path, so offloaded values are read without blocking a shard.
	Tiered() bool
	// TierView is v with its bytes in memory (an offloaded string read
	// synchronously; a read error fails e).
	TierView(sh *shard.Shard, e *rdb.Encoder, v *shard.Value) *shard.Value
	// TierLoader is a snapshot's Loader of offloaded values, nil without
	// tiered storage.
	TierLoader(sh *shard.Shard) snapshot.Loader
	// PositionCut takes the replication position a file keeps (package
	// replpos), nil for none.
	PositionCut() replpos.Cut
}

// Settings are the configuration persistence reads.
type Settings struct {
	Dir, DBFilename string
	// DBFormat is "rdb" or "dfly" (--dbformat).
	DBFormat string
	// SerializationMaxChunk is --serialization_max_chunk_size.
	SerializationMaxChunk int
	// SnapshotReference is --debug_snapshot_reference: where a BGSAVE
	// also writes the dataset at its cut, taken synchronously.
	SnapshotReference string
	// Save is the save schedule ("save" of CONFIG).
	Save string
}

// Logger is where persistence reports, in Redis's words.
type Logger interface {
	Noticef(format string, args ...any)
	Warnf(format string, args ...any)
}

// Engine saves and loads the shards' data and keeps the bookkeeping
// INFO persistence reports.
type Engine struct {
	shards  []*shard.Shard
	shardOf func(key []byte) int
	host    Host
	log     Logger
	version string // the Redis version the files' AUX fields name

	// mu serializes saves (SAVE, BGSAVE, DEBUG RELOAD).
	mu         sync.Mutex
	bgsaving   atomic.Bool  // a BGSAVE runs
	lastSave   atomic.Int64 // unix seconds of the last successful save
	lastFailed atomic.Bool
	loading    atomic.Bool
	// startup: the start-up load has not finished (LoadWhenServing).
	startup atomic.Bool
	// onLoop: loads apply their batches on the shards' loops (the server
	// serves: LoadWhenServing), not on the loader's goroutine.
	onLoop bool
	// writesAtSave is the shards' write count at the last save, for
	// rdb_changes_since_last_save (approximate: CONFIG RESETSTAT resets it).
	writesAtSave atomic.Uint64
	prog         loadProgress // the running load, for INFO (schedule.go)
	// scheduled: a BGSAVE inside EXEC arrived while a save ran; the next
	// one starts when it ends.
	scheduled      atomic.Bool
	saves          atomic.Int64 // successful saves since start (rdb_saves)
	lastBgsaveSecs atomic.Int64 // duration of the last BGSAVE, -1: none yet
	// slices are the running BGSAVE's snapshots, by shard (INFO reads
	// their key counts on the shards' goroutines).
	slicesMu sync.Mutex
	slices   []*snapshot.Slice
	// loaded is the replication position of the file the start-up load
	// read (LoadedPosition), loadedWrites the shards' write count then.
	loaded       atomic.Pointer[replpos.Position]
	loadedWrites atomic.Uint64
	// StartupLoad, when set, is the start-up load instead of LoadOnStart's
	// (the append-only file's, package aof).
	StartupLoad func() error
}

// LoadedPosition is the replication position the start-up load found in
// the file, as long as the dataset is still the file's (no write since
// the load); empty otherwise. A server that becomes a replica offers it
// to its master: started as one (replicaof), or a master restarted from
// its file that Sentinel turns into one. Not on a shard's goroutine.
func (p *Engine) LoadedPosition() *replpos.Position {
	if pos := p.loaded.Load(); pos != nil {
		var writes atomic.Uint64
		p.onEachShard(func(sh *shard.Shard) { writes.Add(sh.Stats.Writes) })
		if writes.Load() == p.loadedWrites.Load() {
			return pos
		}
		p.loaded.Store(nil) // the data moved on: for good
	}
	return &replpos.Position{}
}

// positionCut is the host's position cut, or one of no position.
func (p *Engine) positionCut() replpos.Cut {
	if c := p.host.PositionCut(); c != nil {
		return c
	}
	return &replpos.Fixed{}
}

// New returns the persistence of shards, whose keys are routed by
// shardOf; version is the Redis version written in the files.
func New(shards []*shard.Shard, shardOf func(key []byte) int, host Host, log Logger, version string) *Engine {
	p := &Engine{shards: shards, shardOf: shardOf, host: host, log: log, version: version}
	p.lastBgsaveSecs.Store(-1)
	return p
}

func (p *Engine) setSlices(sl []*snapshot.Slice) {
	p.slicesMu.Lock()
	p.slices = sl
	p.slicesMu.Unlock()
}

// Slice is shard sid's running BGSAVE snapshot, or nil.
func (p *Engine) Slice(sid int) *snapshot.Slice {
	p.slicesMu.Lock()
	defer p.slicesMu.Unlock()
	if sid < len(p.slices) {
		return p.slices[sid]
	}
	return nil
}

// BgsaveRunning reports whether a BGSAVE runs.
func (p *Engine) BgsaveRunning() bool { return p.bgsaving.Load() }

// ScheduleBgsave has the next BGSAVE start when the running one ends (a
// BGSAVE inside EXEC, as Redis's rdb_bgsave_scheduled).
func (p *Engine) ScheduleBgsave() { p.scheduled.Store(true) }

// LastSave is the unix time of the last successful save (LASTSAVE).
func (p *Engine) LastSave() int64 { return p.lastSave.Load() }

// NewLoader is a Loader of these shards: keys routed by shardOf, function
// libraries loaded (one that does not load is reported and skipped: the
// keys matter more).
func (p *Engine) NewLoader(dispatch func(sid int, items []rdbvalue.Item)) *rdbvalue.Loader {
	return p.newLoader(dispatch, nil)
}

// newLoader is NewLoader that also reads the file's replication position
// into pos, when not nil.
func (p *Engine) newLoader(dispatch func(sid int, items []rdbvalue.Item), pos *replpos.Position) *rdbvalue.Loader {
	l := rdbvalue.NewLoader(len(p.shards), len(p.shards[0].DBs), p.shardOf, dispatch)
	l.OnFunction = func(code []byte) {
		if err := p.host.LoadFunctions(code); err != nil {
			p.log.Warnf("Skipping a function library of the snapshot: %v", err)
		}
	}
	l.OnAUX = func(key, val []byte) {
		if string(key) == "used-mem" { // INFO's loading_rdb_used_mem, as Redis
			n, _ := strconv.ParseInt(string(val), 10, 64)
			p.prog.usedMem.Store(n)
		} else if pos != nil {
			pos.SetField(string(key), string(val))
		}
	}
	return l
}

// Progress counts the bytes r delivers as the running load's progress
// (BeginLoad).
func (p *Engine) Progress(r io.Reader) io.Reader {
	return &countingReader{r: r, n: &p.prog.loaded}
}

// settings is the host's current settings.
func (p *Engine) settings() Settings { return p.host.Settings() }
