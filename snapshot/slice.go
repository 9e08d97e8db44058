package snapshot

import (
	"errors"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dfly/dfly/dash"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// EncodeFunc writes one key as RDB records (expireAt 0 = no TTL). For a
// big value it should write in parts (the encoder then flushes at its
// flush size), e.g. a string with BeginString/StringPart.
type EncodeFunc func(e *rdb.Encoder, key []byte, v *shard.Value, expireAt int64)

// Mode is how a snapshot treats changes made while it runs.
type Mode uint8

const (
	// PIT: the output is exactly the dataset at the cut; every bucket a
	// mutation may touch is serialized first (OnDbChange).
	PIT Mode = iota
	// NonPIT (replication only): mutations serialize nothing; the walk
	// writes every bucket it visits, OnMoved catches items that jump
	// behind it, and the journal fills in the rest.
	NonPIT
)

// State is a bucket's place in the per-snapshot state machine (docs/DESIGN.md §4).
// Only Serializing and DelayedPending buckets are tracked; NotVisited and
// Covered are told apart by the bucket's version (PIT) or the walk's
// position (non-PIT).
type State uint8

const (
	NotVisited State = iota
	// Serializing: the bucket's big values are still being written in
	// chunks across steps; writers of its keys wait (parked).
	Serializing
	// DelayedPending: iteration is done but values are still being read
	// (tiered storage); writers of its keys wait.
	DelayedPending
	// Covered: the bucket's baseline is fully emitted.
	Covered
)

func (s State) String() string {
	return [...]string{"NotVisited", "Serializing", "DelayedPending", "Covered"}[s]
}

// Stream ids of a tagged output.
const (
	JournalStream = 0 // journal entries (rdb.OpJournal)
	MainStream    = 1 // the walk's small records, each chunk a whole item
	firstBucket   = 2 // then one per bucket with big values
)

// Chunk is a piece of a shard's output. Untagged, it is plain RDB
// records; tagged, it is framed chunks (rdb.AppendChunk). Last marks the
// shard's final chunk.
type Chunk struct {
	Shard int
	Data  []byte
	Last  bool
	// Err (on the Last chunk): the output is incomplete, records after
	// the failure are missing; a consumer must not use it as whole (a
	// replication flow must not end its full sync with it).
	Err error
	// Open (untagged only): the chunk ends inside a big value; the
	// consumer must take this shard's next chunk before any other shard's.
	Open bool
	// deferred: records whose string values Data does not hold yet
	// (Options.Defer); a Materializer completes Data.
	deferred *deferred
	size     int // bytes counted against the Slice's pending output
	refs     int // of which bytes of referenced values (Options.Defer)
	held     int // memory it holds: its buffer's capacity, deferred records, the values they reference (Held)
}

// JournalEntry is one encoded journal entry offered to a snapshot that
// streams with its journal. Expired names the key when the entry is the
// DEL of an expiry (or eviction), which a busy bucket defers.
type JournalEntry struct {
	Data    []byte
	DB      int
	Expired string
	Expiry  bool
}

// Loader reads a value that is not in memory (tiered storage). It reports
// false when v is in memory; otherwise it calls done on the shard
// goroutine with the value's bytes, later.
type Loader func(v *shard.Value, done func(shard.Value, error)) bool

// Options configure a Slice.
type Options struct {
	Mode Mode
	// Tagged frames the output as tagged chunks so big values, bucket
	// streams and the journal interleave (dfly files, replication).
	// Untagged output is a plain RDB record stream for Redis.
	Tagged bool
	// MaxChunk bounds one piece of a big value (default 64 KiB).
	MaxChunk int
	Encode   EncodeFunc
	Out      chan<- Chunk
	// Free hands back consumed chunk buffers to write into again (nil: none).
	Free chan []byte
	// Journal: the output carries the shard's journal (a replication
	// flow): entries arrive through Slice.Journal.
	Journal bool
	// FullSyncCut ends the output with an OpFullSyncCut marker (tagged).
	FullSyncCut bool
	// Load reads values that are not in memory (nil: all are).
	Load Loader
	// NoLZF writes strings without LZF: the consumer compresses whole
	// chunks off the shard (dfly files), so the shard does less work.
	NoLZF bool
	// Defer hands small string values out by reference (deferred.go):
	// the consumer must pass every chunk through a Materializer (or read
	// Materialized) before it uses Data.
	Defer bool
	// Sizes announces each database's key count at the cut (RESIZEDB)
	// before its first record, so a loader makes room for the keys
	// before they come (a replication flow; an RDB file announces the
	// totals of all shards itself).
	Sizes bool
}

const (
	// chunkSize is how much output a Slice gathers before handing a chunk out.
	chunkSize = 64 << 10
	// DefaultMaxChunk is --serialization_max_chunk_size's default.
	DefaultMaxChunk = 64 << 10
	// walkPending: the walk pauses once this much output waits beyond the
	// consumer's channel, so the room up to maxPending is left to the
	// change hooks and a writer is delayed only when the consumer falls
	// behind the writes themselves, not behind the walk.
	walkPending = chunkSize
	// maxRetained: old values kept alive for deferred records (replaced,
	// copied or deleted while referenced, Options.Defer) before writers
	// are held back. A reference costs memory only then, so this bounds
	// the extra memory of a Defer snapshot, not its output.
	maxRetained = 16 << 20
	// maxBusy bounds the buckets the walk leaves Serializing at once.
	maxBusy = 4
)

// maxPending is the output a Slice holds beyond its consumer's channel
// before writers that need a baseline are parked (backpressure, Admit);
// they resume once it is below resumePending. A variable so a test can
// fill it with less data.
//
// It was 4 MiB, and a replication flow sharing a CPU with the event loop
// (tests/bench/repl.sh, pinned: master, its flow and the load on one CPU)
// fell that far behind the copy-on-write output of a full sync under the
// SET load in most runs: every client was parked at once (INFO
// snapshot_congested_mutations 38-97 per sync) until half of it drained,
// a stop of 50-70 ms in the replies (repl.sh TIMELINE) that alone set the
// sync's p99. With 32 MiB none was parked in three runs, whose most output
// held (snapshot_max_pending_bytes) was 1.9, 3.9 and 9.4 MB. Redis's
// equivalent, the fork's copy-on-write, is bounded only by the dataset.
var maxPending = 32 << 20

// resumePending: parked writers resume below it. Each resumed writer adds
// a bucket's records or so, so a little room is enough to keep them from
// being parked again at once; draining half of maxPending first was a
// stop of tens of milliseconds for every one of them.
func resumePending() int { return maxPending - maxPending/8 }

// stepBudget bounds one step, after which the shard serves commands again
// (docs/DESIGN.md §8.7). A variable so tests can step one bucket position at a
// time; SetStepBudget (--snapshot_step) sets it.
var stepBudget = 100 * time.Microsecond

// SetStepBudget sets the work per step; call it before any snapshot runs.
func SetStepBudget(d time.Duration) { stepBudget = d }

type keyRef struct {
	db  int
	key string
}

type bucketRef struct {
	db int
	b  dash.Cursor
}

// item is a captured value that is written apart from the walk's main
// stream: too big for one chunk, or still being loaded.
type item struct {
	db       int
	key      string
	v        shard.Value
	expireAt int64
	loading  bool
	started  bool // pieces of it were emitted
	bk       *bucket
	// The coroutine that encodes the value a chunk at a time.
	next  func() ([]byte, bool)
	stop  func()
	w     *yieldWriter
	first []byte // the piece pulled when the value was found big, not yet emitted
}

// bucket is a captured bucket that is not Covered yet.
type bucket struct {
	db       int
	state    State
	stream   uint32
	items    []*item // items[0] is the one being written
	loads    int     // values still being read
	keys     []keyRef
	pins     []shard.KeyLock
	deferred [][]byte // journal DELs of expiries, emitted when Covered
}

type dbState struct {
	// flushed: the database was flushed after the cut; the live tables
	// are none of this snapshot's business.
	flushed bool
	// The tables at the flush, still to be walked (PIT).
	table  *dash.Table[shard.Value]
	expire *dash.Table[int64]
	// keys, expires: the database's size at the cut, announced before
	// its first record when Options.Sizes is set (then announced is).
	keys, expires int
	announced     bool
}

// Slice is one shard's snapshot: a cooperative task on the shard's
// goroutine, plus the hooks that keep its output exact.
type Slice struct {
	sh      *shard.Shard
	opt     Options
	version uint64
	cutMs   int64 // PIT: keys expired at the cut are left out

	main   *rdb.Encoder
	mainDB int // database of the records in main; -1: next needs SELECTDB
	wire   []byte
	spare  [][]byte
	// Options.Defer: references of the main stream's string values, and
	// the deferred cuts of main the wire owes its next chunk.
	mainSpare         []byte      // main's other buffer while a cut waits (deferMain)
	batches           chan *batch // pools of batches (deferred.go)
	smallBatches      chan *batch
	splices           []splice
	spliceBytes       int
	wireDeferred      []deferredMain
	wireDeferredBytes int           // with the values
	wireDeferredRefs  int           // the values
	outstanding       atomic.Int64  // deferred cuts not yet materialized
	seq               uint64        // deferred cuts made
	materialized      atomic.Uint64 // the last deferred cut materialized (they go in order)
	retainQ           []retention
	retained          int
	timing            bool       // a hook's captures are being timed
	hookTimer         stallTimer // since the first of them
	// Output the consumer's channel did not take yet.
	pending      []Chunk
	pendingBytes int
	// pendingRefs: bytes of values the pending output references
	// (Options.Defer): they pace the walk with the other output, but hold
	// writers back only once replaced (retained, deferred.go).
	pendingRefs int
	// pendingHeld: the pending chunks' held, the memory behind
	// pendingBytes (a chunk of a few DELs still has a chunk-sized buffer).
	pendingHeld int
	// noted: what this Slice last added to the process's held bytes (Held).
	noted int
	// tid: the thread the shard's goroutine is locked to while the Slice
	// runs (lockLoop), or -1; it times stretches (startStall).
	tid int
	// lastCommands: the shard's command count at the last step (budget).
	lastCommands uint64
	// stepEnd: when the last step ended (budget).
	stepEnd time.Time

	dbs      []dbState
	db       int
	cursor   dash.Cursor
	walkDone bool
	done     bool
	posted   bool

	busy       []*bucket
	byKey      map[keyRef]*bucket
	nextStream uint32
	// open is the item partly emitted to an untagged output: nothing else
	// may be emitted until it ends.
	open        *item
	congestion  []shard.KeyLock // writers held back while the output is full
	unpins      []shard.KeyLock // released at the next step (not inside a hook)
	holdJournal bool
	held        [][]byte
	scratch     []dash.Cursor
	scratchBusy []*bucket
	err         error
	inRun       bool // in a step: the step's own timer covers the work

	// capturing: Capture is writing buckets; non-PIT leaves out keys that
	// are busy or held exclusively (see skip).
	capturing bool
	captures  []bucketRef
	// moved: keys OnMoved saw jump behind the walk, for the next step.
	moved []keyRef
	// pit: the shard's PIT Slices, this one among them (olderFirst).
	pit *pitGroup

	// Keys counts the keys written.
	Keys uint64
	// buckets counts the buckets captured; reported of them: what Run
	// added to the process's counter (one atomic add per step).
	buckets, reported int64
}

// Start takes the shard's cut and registers the hooks; it must run on the
// shard's goroutine while the caller holds every shard (the cut is
// global). The walk then proceeds in steps posted to the shard.
func Start(sh *shard.Shard, opt Options) *Slice {
	if opt.MaxChunk <= 0 {
		opt.MaxChunk = DefaultMaxChunk
	}
	sl := &Slice{sh: sh, opt: opt, version: sh.CutVersion(), cutMs: sh.Now(),
		main: rdb.NewEncoder(nil), mainDB: -1, dbs: make([]dbState, len(sh.DBs)),
		byKey: map[keyRef]*bucket{}, nextStream: firstBucket}
	sl.main.SetCompression(!opt.NoLZF)
	if opt.Defer {
		sl.batches, sl.smallBatches = make(chan *batch, bigBatches), make(chan *batch, smallBatches)
	}
	// The consumer checksums what it writes; a checksum of the chunks
	// here would only spend the shard's time (it was a third of a save's
	// CPU on the loops).
	sl.main.SetChecksum(false)
	if opt.Sizes {
		for i, db := range sh.DBs {
			sl.dbs[i].keys, sl.dbs[i].expires = db.Len(), db.Expire.Len()
		}
	}
	sh.AddHook(sl)
	sh.AddExpiryHook(sl)
	sh.AddGate(sl)
	if opt.Mode == NonPIT {
		sh.AddMoveHook(sl)
	} else {
		g, _ := pitGroups.LoadOrStore(sh, &pitGroup{})
		sl.pit = g.(*pitGroup)
		sl.pit.slices = append(sl.pit.slices, sl) // versions ascend
	}
	sl.tid = lockLoop() // background.go
	stats.started.Add(1)
	sl.post()
	return sl
}

// Done reports whether the walk and every bucket are finished.
func (sl *Slice) Done() bool { return sl.done }

// KeyState is the state of the bucket key was captured with, or of its
// bucket now when it is not tracked.
func (sl *Slice) KeyState(db int, key string) State {
	if bk := sl.byKey[keyRef{db, key}]; bk != nil {
		return bk.state
	}
	it := sl.sh.DBs[db].Table.Find(key)
	if !it.Valid() {
		return NotVisited
	}
	if sl.visited(db, sl.sh.DBs[db].Table.BucketOf(it)) {
		return Covered
	}
	return NotVisited
}

// visited: the bucket's baseline has been captured (PIT: its version;
// non-PIT: the walk passed it).
func (sl *Slice) visited(db int, b dash.Cursor) bool {
	if sl.opt.Mode == PIT {
		return sl.sh.DBs[db].Table.Version(b) >= sl.version
	}
	return sl.passed(db, b)
}

// passed reports whether the walk is past bucket b of db (IsPositionSerialized).
func (sl *Slice) passed(db int, b dash.Cursor) bool {
	if db != sl.db {
		return db < sl.db || sl.walkDone
	}
	if sl.walkDone {
		return true
	}
	if sl.cursor == 0 {
		return false // not started in this db
	}
	return sl.sh.DBs[db].Table.Visited(b, sl.cursor)
}

func (sl *Slice) tables(db int) (*dash.Table[shard.Value], *dash.Table[int64]) {
	if d := &sl.dbs[db]; d.table != nil {
		return d.table, d.expire
	}
	d := sl.sh.DBs[db]
	return d.Table, d.Expire
}

func expireAt(t *dash.Table[shard.Value], exp *dash.Table[int64], it dash.Iterator) (int64, bool) {
	if !t.Value(it).HasExpire {
		return 0, false
	}
	eit := exp.Find(t.Key(it))
	if !eit.Valid() {
		return 0, false
	}
	return *exp.Value(eit), true
}

// mayBeBig: values worth encoding apart, in case they exceed a chunk.
func (sl *Slice) mayBeBig(v *shard.Value) bool {
	if v.Type == shard.TypeString {
		return len(v.Str()) > sl.opt.MaxChunk/2
	}
	if l, ok := v.Obj().(interface{ Len() int }); ok {
		return l.Len() > 128
	}
	return true
}

// serializeBucket captures bucket b of db if its baseline is still due:
// small values are encoded into the main stream now; big ones (and values
// being loaded) make the bucket Serializing, pin their keys and are
// written a chunk per step. PIT stamps the bucket, so it is captured once.
func (sl *Slice) serializeBucket(db int, t *dash.Table[shard.Value], exp *dash.Table[int64], b dash.Cursor) {
	if sl.opt.Mode == PIT {
		if t.Version(b) >= sl.version {
			return
		}
		if len(sl.pit.slices) > 1 {
			sl.olderFirst(db, t, b)
		}
		t.SetVersion(b, sl.version)
	}
	sl.buckets++
	sl.startHookTiming()
	var bk *bucket
	now := sl.captureNow()
	t.ForEach(b, func(it dash.Iterator) { sl.captureItem(db, t, exp, it, now, &bk) })
	if bk != nil {
		t.ForEach(b, func(it dash.Iterator) {
			if key := t.Key(it); !sl.skip(db, key) {
				bk.keys = append(bk.keys, keyRef{db, key})
			}
		})
		sl.track(bk)
	}
}

// pitGroup is a shard's running PIT Slices, oldest (lowest version)
// first; only the shard's goroutine touches it.
type pitGroup struct{ slices []*Slice }

// pitGroups maps a shard to its pitGroup.
var pitGroups sync.Map

// olderFirst (PIT) has every older PIT Slice of the shard that walks t
// capture bucket b before this one stamps it. A stamp is a version, and
// a newer Slice's is higher than an older one's: the older Slice would
// take b for captured by itself and skip it (two replicas' full syncs, or
// a BGSAVE and a full sync, whose walks run at their consumers' paces).
// Oldest first, so each sees b unstamped by any newer one. Change hooks
// need none of this: they run in registration order, oldest first.
func (sl *Slice) olderFirst(db int, t *dash.Table[shard.Value], b dash.Cursor) {
	for _, o := range sl.pit.slices {
		if o == sl {
			return
		}
		if ot, oexp := o.tables(db); !o.done && ot == t && (!o.dbs[db].flushed || o.dbs[db].table != nil) && t.Version(b) < o.version {
			o.serializeBucket(db, t, oexp, b)
			o.endTiming()
		}
	}
}

// startHookTiming times a hook's captures as one stretch (endTiming): the
// thread clock is a system call, and an insert may capture a whole
// segment. A step's own timer covers the captures it makes.
func (sl *Slice) startHookTiming() {
	if !sl.inRun && !sl.timing {
		sl.timing, sl.hookTimer = true, startStall(sl.tid)
	}
}

// captureNow is the time keys expired by are left out: the cut's (PIT) or
// now (non-PIT, whose baseline is the dataset as the walk finds it).
func (sl *Slice) captureNow() int64 {
	if sl.opt.Mode == NonPIT {
		return sl.sh.Now()
	}
	return sl.cutMs
}

// captureItem writes one item of a bucket being captured: a small value
// into the main stream now, a big one (or one being read) as an item of
// *bk, made when the first such item comes.
func (sl *Slice) captureItem(db int, t *dash.Table[shard.Value], exp *dash.Table[int64], it dash.Iterator, now int64, bk **bucket) {
	at, has := expireAt(t, exp, it)
	if has && at <= now {
		return
	}
	key := t.Key(it)
	if sl.skip(db, key) {
		return
	}
	v := t.Value(it)
	if emptyCollection(v) {
		// Only a command half way through has one (SADD inserts its new
		// set, then fills it), and only a non-PIT capture that a move
		// made in the middle of it could find one: the command's entry
		// creates the key. Encoding it would fail the main stream.
		return
	}
	sl.Keys++
	var x *item
	if sl.opt.Load != nil {
		x = sl.startLoad(db, key, v, at)
	}
	if x == nil {
		if !sl.mayBeBig(v) {
			sl.encodeSmall(db, key, v, at)
			return
		}
		if x = sl.startBig(db, key, *v, at); x == nil {
			return // it fit in one piece: written with the small ones
		}
	}
	if *bk == nil {
		*bk = &bucket{db: db, state: Serializing}
	}
	(*bk).items = append((*bk).items, x)
	if x.loading {
		(*bk).loads++
	}
}

// emptyCollection: a value of a type Redis never keeps empty (a stream
// may be), empty.
func emptyCollection(v *shard.Value) bool {
	switch v.Type {
	case shard.TypeList, shard.TypeSet, shard.TypeZSet, shard.TypeHash:
		l, ok := v.Obj().(interface{ Len() int })
		return ok && l.Len() == 0
	}
	return false
}

// skip (non-PIT Capture) leaves out of a bucket a key that is being
// written already (its earlier capture is still in pieces) or held
// exclusively by a transaction: that one may have applied writes it has
// not journaled yet, which a baseline taken now would hold, and the
// replica would then apply them twice. The walk, which has not passed the
// bucket, writes such a key after the commit (inFlight). Elsewhere only
// a value still in pieces is left out: non-PIT may capture its bucket
// again (Capture, then the walk); PIT captures a bucket once, so never
// meets one.
func (sl *Slice) skip(db int, key string) bool {
	if sl.capturing {
		return sl.byKey[keyRef{db, key}] != nil || sl.sh.ExclLocked(db, key)
	}
	return len(sl.byKey) > 0 && sl.writing(db, key)
}

// writing reports whether key's value is being written in pieces (an item
// of its busy bucket): pinned since its capture, so unchanged, and a
// second copy would only compete with the first.
func (sl *Slice) writing(db int, key string) bool {
	bk := sl.byKey[keyRef{db, key}]
	if bk == nil {
		return false
	}
	for _, x := range bk.items {
		if x.key == key && x.db == db {
			return true
		}
	}
	return false
}

// endTiming ends the stretch of a hook's captures (serializeBucket).
func (sl *Slice) endTiming() {
	if sl.timing {
		sl.timing = false
		sl.hookTimer.done()
	}
}

// track makes bk a busy bucket: its own stream, its keys pinned (writers
// of a value not fully written wait) and indexed for deferred deletions.
func (sl *Slice) track(bk *bucket) {
	bk.stream = sl.nextStream
	sl.nextStream++
	for _, k := range bk.keys {
		sl.byKey[k] = bk
	}
	for _, x := range bk.items {
		x.bk = bk
		bk.pins = append(bk.pins, shard.KeyLock{DB: x.db, Key: x.key})
	}
	sl.sh.Acquire(bk.pins, false)
	bk.updateState()
	sl.busy = append(sl.busy, bk)
	stats.bucketsSerializing.Add(1)
}

func (sl *Slice) encodeSmall(db int, key string, v *shard.Value, at int64) {
	sl.selectMain(db)
	// The encoder copies the key: a view of it is enough.
	kb := unsafe.Slice(unsafe.StringData(key), len(key))
	if sl.opt.Defer && v.Type == shard.TypeString && !v.IsExternal() {
		sl.deferString(kb, v, at)
	} else {
		sl.opt.Encode(sl.main, kb, v, at)
	}
	sl.maybeCutMain()
}

// selectMain makes the main stream's next records belong to db.
func (sl *Slice) selectMain(db int) {
	if sl.mainDB != db {
		sl.main.SelectDB(uint64(db))
		sl.mainDB = db
		if d := &sl.dbs[db]; sl.opt.Sizes && !d.announced {
			d.announced = true
			sl.main.ResizeDB(uint64(d.keys), uint64(d.expires))
		}
	}
}

func (sl *Slice) maybeCutMain() {
	if sl.main.Len()+sl.spliceBytes >= chunkSize {
		sl.cutMain()
	}
}

// yieldWriter hands an encoder's flushes to the puller of its coroutine.
type yieldWriter struct {
	yield func([]byte) bool
	last  bool
}

var errStopped = errors.New("snapshot: stopped")

func (w *yieldWriter) Write(p []byte) (int, error) {
	if !w.yield(p) {
		return 0, errStopped
	}
	return len(p), nil
}

// startBig begins encoding a value in a coroutine that stops at every
// MaxChunk bytes. If the whole value fits in the first piece it is
// written into the main stream and startBig returns nil.
func (sl *Slice) startBig(db int, key string, v shard.Value, at int64) *item {
	x := &item{db: db, key: key, v: v, expireAt: at, w: &yieldWriter{}}
	enc := sl.opt.Encode
	max := sl.opt.MaxChunk
	x.next, x.stop = iter.Pull(func(yield func([]byte) bool) {
		x.w.yield = yield
		e := rdb.NewEncoder(x.w)
		e.SetFlushSize(max)
		e.SetCompression(!sl.opt.NoLZF)
		e.SetChecksum(false)
		enc(e, unsafe.Slice(unsafe.StringData(key), len(key)), &x.v, at)
		if e.Err() != nil && e.Err() != errStopped {
			sl.fail(e.Err())
		}
		x.w.last = true
		yield(e.TakeBytes())
	})
	b, _ := x.next()
	if x.w.last {
		x.stop()
		sl.selectMain(db)
		sl.main.Raw(b)
		sl.maybeCutMain()
		return nil
	}
	x.first = append([]byte(nil), b...)
	return x
}

// startLoad begins reading a value that is not in memory.
func (sl *Slice) startLoad(db int, key string, v *shard.Value, at int64) *item {
	x := &item{db: db, key: key, v: *v, expireAt: at, loading: true}
	if !sl.opt.Load(v, func(nv shard.Value, err error) { sl.loaded(x, nv, err) }) {
		return nil
	}
	stats.delayedLoads.Add(1)
	return x
}

// loaded runs on the shard goroutine when a value's read returns.
func (sl *Slice) loaded(x *item, v shard.Value, err error) {
	if err != nil {
		sl.fail(err)
	}
	x.v, x.loading = v, false
	if bk := x.bk; bk != nil {
		bk.loads--
		bk.updateState()
	}
	sl.post()
}

func (sl *Slice) fail(err error) {
	if sl.err == nil {
		sl.err = err
	}
}

// cutMain moves the main stream's records to the wire: tagged, as one
// whole item; untagged, as they are, unless a big value is half written.
func (sl *Slice) cutMain() {
	if sl.main.Len() == 0 || (!sl.opt.Tagged && sl.open != nil) {
		return
	}
	if len(sl.splices) > 0 {
		sl.deferMain()
		sl.mainDB = -1
		sl.cutWire(false)
		return
	}
	b := sl.main.SwapBytes(sl.spareBuf())
	if sl.opt.Tagged {
		sl.wire = rdb.AppendChunk(sl.wire, rdb.OpChunkEnd, MainStream, b)
		sl.spare = append(sl.spare, b[:0])
	} else if len(sl.wire) == 0 {
		sl.spare = append(sl.spare, sl.wire[:0])
		sl.wire = b
	} else {
		sl.wire = append(sl.wire, b...)
		sl.spare = append(sl.spare, b[:0])
	}
	sl.mainDB = -1
	sl.cutWire(false)
}

func (sl *Slice) spareBuf() []byte {
	if n := len(sl.spare); n > 0 {
		b := sl.spare[n-1]
		sl.spare = sl.spare[:n-1]
		return b
	}
	select {
	case b := <-sl.opt.Free:
		return b[:0]
	default:
	}
	return make([]byte, 0, chunkSize+chunkSize/4)
}

// takeWire completes c with the wire's bytes and deferred cuts, counted
// as pending output.
func (sl *Slice) takeWire(c Chunk) Chunk {
	c.size = len(sl.wire) + sl.wireDeferredBytes
	if len(sl.wire) > 0 {
		// A chunk of deferred cuts alone leaves the wire's buffer here:
		// its Data is the Materializer's.
		c.Data, sl.wire = sl.wire, nil
	}
	c.refs = sl.wireDeferredRefs
	if len(sl.wireDeferred) > 0 {
		c.deferred = &deferred{mains: sl.wireDeferred, tagged: sl.opt.Tagged, outstanding: &sl.outstanding,
			materialized: &sl.materialized}
		sl.wireDeferred, sl.wireDeferredBytes, sl.wireDeferredRefs = nil, 0, 0
	}
	sl.pendingBytes += c.size - c.refs
	sl.pendingRefs += c.refs
	c.held = cap(c.Data) + c.size - len(c.Data)
	sl.pendingHeld += c.held
	raise(&stats.maxPending, int64(sl.pendingBytes))
	sl.noteHeld()
	return c
}

// cutWire hands the wire bytes out as a chunk once there are enough.
func (sl *Slice) cutWire(force bool) {
	size := len(sl.wire) + sl.wireDeferredBytes
	if size == 0 || (!force && size < chunkSize) {
		return
	}
	sl.pending = append(sl.pending, sl.takeWire(Chunk{Shard: sl.sh.ID, Open: !sl.opt.Tagged && sl.open != nil}))
	if sl.wire == nil {
		sl.wire = sl.spareBuf()
	}
}

// emitPiece writes one piece of a big value.
func (sl *Slice) emitPiece(bk *bucket, x *item, b []byte, last bool) {
	if !x.started {
		// Each item starts with its database: items of streams interleave.
		x.started = true
		e := rdb.NewEncoder(nil)
		e.SelectDB(uint64(x.db))
		b = append(e.TakeBytes(), b...)
	}
	if sl.opt.Tagged {
		op := rdb.OpChunk
		if last {
			op = rdb.OpChunkEnd
		}
		sl.wire = rdb.AppendChunk(sl.wire, op, bk.stream, b)
	} else {
		sl.wire = append(sl.wire, b...)
		sl.open = x
		if last {
			sl.open = nil
		}
	}
	stats.bigChunks.Add(1)
	sl.cutWire(false)
}

// progress writes the next piece of bk's current item; it reports false
// when bk cannot progress now (a load pending, or another item owns an
// untagged output).
func (sl *Slice) progress(bk *bucket) bool {
	if len(bk.items) == 0 {
		return false
	}
	if !bk.items[0].started {
		// Items of a stream go one after the other; any not being read
		// may go next.
		for i, y := range bk.items {
			if !y.loading {
				bk.items[0], bk.items[i] = y, bk.items[0]
				break
			}
		}
	}
	x := bk.items[0]
	if x.loading {
		return false
	}
	if !sl.opt.Tagged && sl.open != nil && sl.open != x {
		return false
	}
	if x.next == nil { // a loaded value: encode it now
		v := x.v
		if !sl.mayBeBig(&v) {
			sl.encodeSmall(x.db, x.key, &v, x.expireAt)
			sl.itemDone(bk)
			return true
		}
		y := sl.startBig(x.db, x.key, v, x.expireAt)
		if y == nil {
			sl.itemDone(bk)
			return true
		}
		y.bk = bk
		bk.items[0], x = y, y
	}
	var b []byte
	if x.first != nil {
		b, x.first = x.first, nil
	} else {
		b, _ = x.next()
	}
	last := x.w.last
	sl.emitPiece(bk, x, b, last)
	if last {
		x.stop()
		sl.itemDone(bk)
	}
	return true
}

func (sl *Slice) itemDone(bk *bucket) {
	bk.items[0] = nil
	bk.items = bk.items[1:]
	if len(bk.items) == 0 && bk.loads == 0 {
		sl.cover(bk)
	} else {
		bk.updateState()
	}
}

// updateState: DelayedPending while only values being read remain.
func (bk *bucket) updateState() {
	if bk.state == Covered {
		return
	}
	if bk.loads > 0 && bk.loads == len(bk.items) {
		bk.state = DelayedPending
	} else {
		bk.state = Serializing
	}
}

// cover makes bk Covered: its keys are unpinned at the next step (never
// inside a hook: releasing runs parked commands) and its deferred
// deletions go out as journal DELs, after its baseline.
func (sl *Slice) cover(bk *bucket) {
	bk.state = Covered
	for i, b := range sl.busy {
		if b == bk {
			sl.busy = append(sl.busy[:i], sl.busy[i+1:]...)
			break
		}
	}
	for _, k := range bk.keys {
		if sl.byKey[k] == bk {
			delete(sl.byKey, k)
		}
	}
	sl.unpins = append(sl.unpins, bk.pins...)
	for _, e := range bk.deferred {
		sl.journal(e)
	}
	stats.bucketsSerializing.Add(-1)
	sl.post()
}

// drain writes all of bk now: a mutation reached a value that is not
// fully written (only when no gate parked it first). Untagged, the items
// of earlier buckets go first (only one may be open).
func (sl *Slice) drain(bk *bucket) {
	if !sl.inRun {
		defer startStall(sl.tid).done()
	}
	stats.drains.Add(1)
	for bk.state != Covered {
		head := bk
		if !sl.opt.Tagged && sl.open != nil {
			head = sl.open.bk
		}
		if len(head.items) > 0 && head.items[0].loading {
			break // a load in flight cannot be hurried; the writer was gated
		}
		if !sl.progress(head) {
			break
		}
	}
}

// finishKey completes the baseline of key before a mutation of it.
func (sl *Slice) finishKey(db int, key string) {
	bk := sl.byKey[keyRef{db, key}]
	if bk == nil {
		return
	}
	for _, x := range bk.items {
		if x.key == key && x.db == db {
			sl.drain(bk)
			return
		}
	}
}

// journal emits one journal entry after every baseline emitted so far
// (tagged output only: a plain RDB stream has no journal).
func (sl *Slice) journal(data []byte) {
	if !sl.opt.Tagged {
		return
	}
	if sl.holdJournal {
		sl.held = append(sl.held, append([]byte(nil), data...))
		return
	}
	sl.cutMain()
	sl.wire = rdb.AppendChunk(sl.wire, rdb.OpJournal, JournalStream, data)
	sl.cutWire(false)
}

// Journal offers one journal entry of the shard, on its goroutine, while
// the snapshot runs (tagged output only); it copies what it keeps of
// e.Data. An expiry's DEL of a key whose
// value is still being written in pieces goes to its bucket's deferred
// deletion queue: the bucket emits it when Covered. (A command's DEL of
// such a key cannot come: the writer was parked, or finished the value
// first.)
func (sl *Slice) Journal(e JournalEntry) {
	if sl.done {
		return
	}
	if e.Expiry && sl.writing(e.DB, e.Expired) {
		// Only a value still in pieces waits: a smaller key of a busy
		// bucket was written whole at its capture, and its DEL held back
		// could follow a write that created the key again.
		bk := sl.byKey[keyRef{e.DB, e.Expired}]
		bk.deferred = append(bk.deferred, append([]byte(nil), e.Data...))
		stats.deferredDeletions.Add(1)
		return
	}
	if len(sl.busy) > 0 {
		stats.journalWhileSerializing.Add(1)
	}
	sl.journal(e.Data)
}

// PreUpdate (OnDbChange): PIT serializes the item's bucket; in both modes
// a value still being written is completed before it changes.
func (sl *Slice) PreUpdate(db *shard.DB, it shard.Iterator) {
	defer sl.endTiming()
	if sl.dbs[db.Index].flushed {
		return
	}
	if sl.opt.Mode == PIT {
		sl.serializeBucket(db.Index, db.Table, db.Expire, db.Table.BucketOf(it))
	}
	sl.finishKey(db.Index, db.Table.Key(it))
	sl.cow(db.Table.Value(it)) // after the capture above, which may reference it
}

// PreDelete: PIT serializes the buckets an erase may change; a value
// still being written is completed before its DEL.
func (sl *Slice) PreDelete(db *shard.DB, it shard.Iterator) {
	defer sl.endTiming()
	if sl.dbs[db.Index].flushed {
		return
	}
	sl.serializeErase(db, it)
	sl.finishKey(db.Index, db.Table.Key(it))
	sl.dropped(db.Table.Value(it))
}

// serializeErase (PIT) captures the buckets an erase of it may change.
func (sl *Slice) serializeErase(db *shard.DB, it shard.Iterator) {
	if sl.opt.Mode == PIT {
		sl.scratch = db.Table.EraseChanges(sl.scratch[:0], it)
		for _, b := range sl.scratch {
			sl.serializeBucket(db.Index, db.Table, db.Expire, b)
		}
	}
}

// PreInsert: PIT serializes every bucket the insert may change, a whole
// segment before a split included (dash's InsertChanges).
func (sl *Slice) PreInsert(db *shard.DB, key string) {
	defer sl.endTiming()
	if sl.opt.Mode != PIT || sl.dbs[db.Index].flushed {
		return
	}
	sl.scratch = db.Table.InsertChanges(sl.scratch[:0], key)
	for _, b := range sl.scratch {
		sl.serializeBucket(db.Index, db.Table, db.Expire, b)
	}
}

// BlocksSwap: the walk's state is per database index, so SWAPDB waits
// for it to end (shard.SwapDBs).
func (sl *Slice) BlocksSwap() bool { return true }

// PreFlush keeps the tables being flushed: PIT walks what is left of them
// (they are nobody else's now), and with a journal its entries wait until
// the baseline is complete: the flush must not reach the consumer before
// records of the keys it drops. Non-PIT abandons them, and may not hold
// the journal: its captures go on taking values as they are now, so an
// entry held past a capture that already holds its write would be
// applied twice (a RENAME after the baseline of its target's new value).
// It finishes the db's values still in pieces instead, before the flush's
// entry (finishFlushed).
func (sl *Slice) PreFlush(db *shard.DB) {
	d := &sl.dbs[db.Index]
	if d.flushed {
		return
	}
	d.flushed = true
	if sl.opt.Mode == NonPIT {
		sl.finishFlushed(db.Index)
		if !sl.walkDone && db.Index == sl.db {
			sl.db++
			sl.cursor = 0
		}
		return
	}
	if sl.opt.Journal {
		sl.holdJournal = true
	}
	if sl.walkDone || db.Index < sl.db {
		return
	}
	d.table, d.expire = db.Table, db.Expire
}

// finishFlushed (non-PIT PreFlush) completes the busy buckets of db now,
// so none of their pieces follows the flush's entry (the replica would
// keep that key). A value still being read has sent nothing yet: it goes
// with the db.
func (sl *Slice) finishFlushed(db int) {
	for _, bk := range slices.Clone(sl.busy) { // cover removes from busy
		if bk.db != db {
			continue
		}
		items := bk.items[:0]
		for _, x := range bk.items {
			if x.loading && !x.started {
				x.bk = nil // loaded will not count it
				bk.loads--
				continue
			}
			items = append(items, x)
		}
		clear(bk.items[len(items):])
		bk.items = items
		if len(bk.items) == 0 {
			sl.cover(bk)
			continue
		}
		bk.updateState()
		sl.drain(bk)
	}
}

// OnExpire: an expiry erases like a delete, but may not wait: the journal
// DEL of a value still in pieces is deferred until its bucket is Covered
// (Journal).
func (sl *Slice) OnExpire(db *shard.DB, it shard.Iterator, key string) {
	defer sl.endTiming()
	if sl.dbs[db.Index].flushed {
		return
	}
	sl.serializeErase(db, it)
	if !sl.opt.Journal && sl.byKey[keyRef{db.Index, key}] != nil {
		stats.deferredDeletions.Add(1) // nothing to emit: a file has no journal
	}
}

// Owes (shard.Owing): a PIT snapshot still owes the baseline of a
// bucket an erase at it may change, so evicting it now writes those
// buckets out first and keeps their values alive until the consumer
// takes them: eviction prefers keys it does not owe.
func (sl *Slice) Owes(db *shard.DB, it shard.Iterator) bool {
	if sl.opt.Mode != PIT || sl.dbs[db.Index].flushed {
		return false
	}
	sl.scratch = db.Table.EraseChanges(sl.scratch[:0], it)
	for _, b := range sl.scratch {
		if !sl.visited(db.Index, b) {
			return true
		}
	}
	return false
}

// OnMoved (non-PIT): an item moved from a position the walk has not
// reached to one it has passed would be missed; it is written at the
// next step (writeMoved). Not now: a move happens inside a command, whose
// keys may be half way (SADD's new set is empty until filled) or hold
// writes their journal entry does not yet precede (an INCR's new key
// already holds 1): written now, the replica would get the key before the
// entry and apply the entry twice. Remembered by key, as the item may
// move again before the step.
func (sl *Slice) OnMoved(db *shard.DB, moves []dash.Move) {
	if sl.dbs[db.Index].flushed || db.Index != sl.db || sl.walkDone || sl.cursor == 0 {
		return
	}
	t := db.Table
	for _, m := range moves {
		if t.Visited(m.To, sl.cursor) && !t.Visited(m.From, sl.cursor) {
			stats.movedSaved.Add(1)
			sl.moved = append(sl.moved, keyRef{db.Index, t.Key(t.At(m.To, m.ToSlot))})
		}
	}
	if len(sl.moved) > 0 {
		sl.post()
	}
}

// writeMoved (a step) writes the keys OnMoved remembered. One deleted
// meanwhile needs nothing (its DEL is in the journal); one already being
// written (a busy bucket's) has its baseline; one a transaction holds
// exclusively may hold writes not journaled yet and waits for the commit,
// like the walk (inFlight). It reports whether any has to wait.
func (sl *Slice) writeMoved() bool {
	if len(sl.moved) == 0 {
		return false
	}
	keep := sl.moved[:0]
	now := sl.captureNow()
	for _, k := range sl.moved {
		d := sl.sh.DBs[k.db]
		if sl.dbs[k.db].flushed || sl.byKey[k] != nil {
			continue
		}
		it := d.Table.Find(k.key)
		if !it.Valid() {
			continue
		}
		if sl.sh.ExclLocked(k.db, k.key) {
			keep = append(keep, k)
			continue
		}
		var bk *bucket
		sl.captureItem(k.db, d.Table, d.Expire, it, now, &bk)
		if bk != nil {
			bk.keys = append(bk.keys, k)
			sl.track(bk)
		}
	}
	clear(sl.moved[len(keep):])
	sl.moved = keep
	return len(keep) > 0
}

// Admit (the shard's gate) runs before a command that writes key. A value
// being written pins its key, which parks the writer; so does a PIT
// baseline still due while the output is full (backpressure). A big value
// about to be changed is captured here, so the writer waits for its
// pieces instead of the shard stalling on them.
func (sl *Slice) Admit(db *shard.DB, key string) {
	defer sl.endTiming()
	if sl.done || sl.dbs[db.Index].flushed {
		return
	}
	k := keyRef{db.Index, key}
	if bk := sl.byKey[k]; bk != nil {
		for _, x := range bk.items {
			if x.key == key {
				stats.parked.Add(1)
				return // pinned
			}
		}
	}
	if sl.opt.Mode != PIT {
		return
	}
	it := db.Table.Find(key)
	congested := sl.pendingBytes >= maxPending || sl.retainedNow() >= maxRetained
	if it.Valid() {
		b := db.Table.BucketOf(it)
		if db.Table.Version(b) >= sl.version {
			return
		}
		if congested {
			sl.congest(db.Index, key)
			return
		}
		if v := db.Table.Value(it); sl.mayBeBig(v) || sl.opt.Load != nil {
			sl.serializeBucket(db.Index, db.Table, db.Expire, b)
			if sl.byKey[k] != nil {
				stats.parked.Add(1)
			}
		}
		return
	}
	if congested {
		sl.scratch = db.Table.InsertChanges(sl.scratch[:0], key)
		for _, b := range sl.scratch {
			if db.Table.Version(b) < sl.version {
				sl.congest(db.Index, key)
				return
			}
		}
	}
}

// Capture (the shard's gate) runs before a command with more than one
// key — counted over all its shards; a transaction's or script's whole
// key set — that writes one runs with keys on this shard, read and
// written; none of them is held exclusively by another transaction
// (shard.Capture). The rule it keeps, with a journal in the output (a
// replication flow): every key such a command reads or moves has its
// complete baseline in the stream before the command's journal entry. A
// single-key command needs nothing (nor does one that writes nothing: it
// has no entry): whatever its entry does to a key the replica lacks, the
// key's baseline, written later by the walk, replaces. But RENAME a b
// with a's bucket not walked yet and b's walked would reach the replica
// before a exists there, and b would never be sent again; so would
// SUNIONSTORE, SMOVE, LMOVE, COPY, MOVE, an EXEC or a script reading one
// key and writing another.
//
// So every bucket holding one of keys whose baseline is still due is
// written now: PIT, a bucket below the snapshot version (stamped, the walk
// skips it); non-PIT, a bucket the walk has not passed (written again when
// it gets there; keys of other transactions in flight are left to the
// walk: see skip). And a value still being written in pieces is finished
// (drain), as a reader's journal entry must not overtake it either.
func (sl *Slice) Capture(keys []shard.KeyLock) {
	defer sl.endTiming()
	if sl.done || !sl.opt.Journal {
		return
	}
	caps := sl.captures[:0]
	for _, k := range keys {
		if k.DB >= len(sl.dbs) || sl.dbs[k.DB].flushed || sl.byKey[keyRef{k.DB, k.Key}] != nil {
			continue
		}
		t := sl.sh.DBs[k.DB].Table
		it := t.Find(k.Key)
		if !it.Valid() {
			continue
		}
		r := bucketRef{k.DB, t.BucketOf(it)}
		if sl.visited(r.db, r.b) || slices.Contains(caps, r) {
			continue
		}
		caps = append(caps, r)
	}
	sl.capturing = sl.opt.Mode == NonPIT
	for _, r := range caps {
		db := sl.sh.DBs[r.db]
		sl.serializeBucket(r.db, db.Table, db.Expire, r.b)
		stats.captured.Add(1)
	}
	sl.capturing = false
	sl.captures = caps[:0]
	for _, k := range keys {
		if k.DB < len(sl.dbs) {
			sl.finishKey(k.DB, k.Key)
		}
	}
}

func (sl *Slice) congest(db int, key string) {
	kl := shard.KeyLock{DB: db, Key: key}
	sl.sh.Acquire([]shard.KeyLock{kl}, false)
	sl.congestion = append(sl.congestion, kl)
	stats.parked.Add(1)
	stats.congested.Add(1)
}

// push hands pending chunks to the consumer without blocking; it reports
// whether the channel took them all.
func (sl *Slice) push() bool {
	for len(sl.pending) > 0 {
		select {
		case sl.opt.Out <- sl.pending[0]:
			sl.pendingBytes -= sl.pending[0].size - sl.pending[0].refs
			sl.pendingRefs -= sl.pending[0].refs
			sl.pendingHeld -= sl.pending[0].held
			sl.pending[0] = Chunk{}
			sl.pending = sl.pending[1:]
		default:
			sl.noteHeld()
			return false
		}
	}
	sl.noteHeld()
	return true
}

// held: the output every Slice holds beyond its consumer's channel and
// the old values kept alive for its deferred records (Held).
var held atomic.Int64

// Held is the memory the process's snapshots hold for their consumers
// (a replica's baseline and the writes journaled behind it, a BGSAVE's
// file): output their channels did not take yet and old values kept
// alive for it. Eviction does not count it as the dataset's, as Redis
// counts neither its replicas' output buffers (mem_not_counted_for_evict)
// nor a fork's copy-on-write.
func Held() int64 { return held.Load() }

// noteHeld publishes the Slice's part of Held; once it is done and its
// output all taken, none (values its consumer has not materialized yet
// count as the dataset's from then on).
func (sl *Slice) noteHeld() {
	n := sl.pendingHeld + sl.retained
	if sl.done && len(sl.pending) == 0 {
		n = 0
	}
	if n != sl.noted {
		held.Add(int64(n - sl.noted))
		sl.noted = n
	}
}

// post schedules the next step after the shard's pending I/O (Yield).
func (sl *Slice) post() {
	if !sl.posted && !sl.done {
		sl.posted = true
		sl.sh.Yield(sl)
	}
}

// release unpins keys of Covered buckets and, once the output drained,
// the writers held back for it.
func (sl *Slice) release(s *shard.Shard) {
	if len(sl.unpins) > 0 {
		u := sl.unpins
		sl.unpins = nil
		s.Release(u, false)
	}
	if len(sl.congestion) > 0 && sl.pendingBytes < resumePending() && sl.retainedNow() < maxRetained/2 {
		c := sl.congestion
		sl.congestion = nil
		s.Release(c, false)
	}
}

// Run is one step on the shard's goroutine: big values a piece at a time,
// then the walk, within the step budget and while the consumer keeps up.
func (sl *Slice) Run(s *shard.Shard) {
	sl.posted = false
	if sl.done {
		return
	}
	defer sl.reportBuckets()
	sl.push()
	// Resuming the writers held back runs their commands here: command
	// work, not the snapshot's, so it is outside the stall measured.
	sl.release(s)
	start := time.Now()
	budget := sl.budget(s, start)
	defer func() { sl.stepEnd = time.Now() }()
	defer startStall(sl.tid).done()
	sl.inRun = true
	defer func() { sl.inRun = false }()
	if sl.pendingBytes+sl.pendingRefs >= walkPending {
		sl.later(s) // backpressure: the consumer is behind
		return
	}
	// The walk (or a moved key) waits for a transaction's commit.
	waiting := sl.writeMoved()
	for {
		progressed := false
		busy := append(sl.scratchBusy[:0], sl.busy...) // progress may cover (remove) buckets
		for _, bk := range busy {
			if sl.progress(bk) {
				progressed = true
			}
			if !sl.opt.Tagged {
				break // one open item at a time
			}
		}
		if !sl.walkDone && len(sl.busy) < maxBusy && (sl.opt.Tagged || sl.open == nil) {
			if sl.walkStep(s) {
				progressed = true
			} else {
				waiting = true
			}
		}
		clear(busy)
		sl.scratchBusy = busy[:0]
		sl.push()
		if sl.pendingBytes+sl.pendingRefs >= walkPending {
			sl.later(s)
			return
		}
		if !progressed {
			break
		}
		if time.Since(start) >= budget {
			sl.post()
			return
		}
	}
	if sl.walkDone && len(sl.busy) == 0 && len(sl.moved) == 0 {
		sl.finish(s)
		return
	}
	if waiting {
		sl.later(s)
		return
	}
	if len(sl.busy) > 0 {
		// Waiting for loads (DelayedPending): they post a step when done.
		for _, bk := range sl.busy {
			if bk.loads == 0 || len(bk.items) > bk.loads {
				sl.post()
				break
			}
		}
	}
}

// reportBuckets adds the buckets captured since the last report to the
// process's counter.
func (sl *Slice) reportBuckets() {
	stats.bucketsSerialized.Add(sl.buckets - sl.reported)
	sl.reported = sl.buckets
}

// budget is this step's time: stepBudget while the shard is otherwise
// idle; when it ran commands since the last step, a quarter of the time
// the loop spent elsewhere since then (at least a quarter of stepBudget or
// busyStepMin, at most maxBusyStep), so a saturated event loop gives the
// snapshot about a fifth of its time and clients' latency pays little for
// a save. A step runs once per round of the loop's I/O, and a round that
// serves many clients is long: a fixed 25 µs step gave the walk 1-2% of
// the loop (500 steps a second under tests/bench/repl.sh's 50 clients),
// the baseline then came mostly from the writers' change hooks, and a
// full sync of 1M keys took 6-12 s where it takes 3 s at a fifth.
func (sl *Slice) budget(s *shard.Shard, now time.Time) time.Duration {
	if sl.lastCommands == s.Stats.Commands {
		return stepBudget
	}
	sl.lastCommands = s.Stats.Commands
	floor := max(stepBudget/4, min(stepBudget, busyStepMin))
	if sl.stepEnd.IsZero() {
		return floor
	}
	return max(floor, min(now.Sub(sl.stepEnd)/4, maxBusyStep))
}

// maxBusyStep bounds a step while clients are active: what one round of
// the loop may add to their latency.
const maxBusyStep = 500 * time.Microsecond

// busyStepMin is the shortest step while clients are active.
const busyStepMin = 10 * time.Microsecond

// walkStep visits one bucket position of the current database.
// It reports false when it had to wait (non-PIT: see inFlight).
func (sl *Slice) walkStep(s *shard.Shard) bool {
	for sl.db < len(s.DBs) {
		d := &sl.dbs[sl.db]
		t, exp := sl.tables(sl.db)
		if d.flushed && d.table == nil {
			sl.db++
			sl.cursor = 0
			continue
		}
		db := sl.db
		wait := false
		next := t.TraverseBuckets(sl.cursor, func(b dash.Cursor) {
			if sl.opt.Mode == NonPIT && d.table == nil && sl.inFlight(s, db, t, b) {
				wait = true
				return
			}
			sl.serializeBucket(db, t, exp, b)
		})
		if wait {
			return false // the same bucket again next step
		}
		sl.cursor = next
		if sl.cursor == 0 {
			if d.table != nil {
				d.table, d.expire = nil, nil // walked: the flushed tables can go
			}
			sl.db++
		}
		return true
	}
	sl.walkDone = true
	sl.cutMain()
	return true
}

// inFlight (non-PIT) reports whether a key of bucket b is held by a
// transaction, which applies its writes in one step and journals them in a
// later one: a baseline taken in between would hold a write whose journal
// entry then follows it, and the replica would apply it twice. The walk
// waits for the commit instead (PIT has no such window: its baseline is
// the value before the write).
func (sl *Slice) inFlight(s *shard.Shard, db int, t *dash.Table[shard.Value], b dash.Cursor) bool {
	if s.Locks.Idle() {
		return false
	}
	held := false
	t.ForEach(b, func(it dash.Iterator) {
		if !held && s.ExclLocked(db, t.Key(it)) {
			held = true
		}
	})
	return held
}

func (sl *Slice) finish(s *shard.Shard) {
	sl.cutMain()
	for _, h := range sl.held {
		sl.wire = rdb.AppendChunk(sl.wire, rdb.OpJournal, JournalStream, h)
		sl.cutWire(false)
	}
	sl.held, sl.holdJournal = nil, false
	if sl.opt.FullSyncCut && sl.opt.Tagged {
		sl.wire = rdb.AppendChunk(sl.wire, rdb.OpFullSyncCut, JournalStream, nil)
	}
	s.RemoveHook(sl)
	sl.keepCOW(s)
	s.RemoveExpiryHook(sl)
	s.RemoveGate(sl)
	if sl.opt.Mode == NonPIT {
		s.RemoveMoveHook(sl)
	} else {
		if i := slices.Index(sl.pit.slices, sl); i >= 0 {
			sl.pit.slices = slices.Delete(sl.pit.slices, i, i+1)
		}
		if len(sl.pit.slices) == 0 {
			pitGroups.Delete(s) // Start makes it again (on this goroutine too)
		}
	}
	sl.done = true
	unlockLoop() // locked in Start
	sl.release(s)
	if len(sl.congestion) > 0 {
		s.Release(sl.congestion, false)
		sl.congestion = nil
	}
	sl.pending = append(sl.pending, sl.takeWire(Chunk{Shard: s.ID, Last: true, Err: sl.errOr()}))
	sl.wire = nil
	stats.finished.Add(1)
	if !sl.push() {
		sl.drainLater(s)
	}
}

func (sl *Slice) errOr() error {
	if sl.err != nil {
		return sl.err
	}
	return sl.main.Err()
}

// later posts the next step after a pause, so a full consumer is not
// polled in a tight loop.
func (sl *Slice) later(s *shard.Shard) {
	if sl.posted {
		return
	}
	sl.posted = true
	time.AfterFunc(time.Millisecond, func() { s.Send(sl) })
}

// drainLater keeps offering the final chunks until the consumer takes them.
func (sl *Slice) drainLater(s *shard.Shard) {
	time.AfterFunc(time.Millisecond, func() {
		s.Send(shard.Func(func(s *shard.Shard) {
			if !sl.push() {
				sl.drainLater(s)
			}
		}))
	})
}
