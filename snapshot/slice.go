package snapshot

import (
	"time"
	"unsafe"

	"github.com/dfly/dfly/dash"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// EncodeFunc writes one key as RDB records (expireAt 0 = no TTL).
type EncodeFunc func(e *rdb.Encoder, key []byte, v *shard.Value, expireAt int64)

// Chunk is a piece of a shard's output: whole records, starting with a
// SELECTDB. Last marks the shard's final chunk.
type Chunk struct {
	Shard int
	Data  []byte
	Last  bool
	Err   error
}

const (
	// chunkSize is how much a Slice buffers before handing a chunk out.
	chunkSize = 64 << 10
)

// stepBudget bounds one traversal step, after which the shard serves
// commands again (DESIGN §8.7). A variable so tests can step one bucket
// position at a time.
var stepBudget = 100 * time.Microsecond

// Slice is one shard's point-in-time serialization.
type Slice struct {
	sh      *shard.Shard
	version uint64
	cutMs   int64 // keys expired at the cut are left out
	encode  EncodeFunc
	enc     *rdb.Encoder
	curDB   int // database of the records in enc; -1: the next record needs SELECTDB
	out     chan<- Chunk
	free    <-chan []byte // consumed chunk buffers to write into again
	pending []Chunk       // chunks the full channel did not take yet

	db      int
	cursor  dash.Cursor
	done    bool
	scratch []dash.Cursor
	// Keys counts the keys written.
	Keys uint64
}

// Start takes the shard's cut and registers the change hooks; it must run
// on the shard's goroutine while the caller holds every shard (the cut is
// global). The walk then proceeds in steps posted to the shard.
// The consumer may hand written chunks' buffers back on free (nil: none),
// which keeps a save from churning a chunk-sized buffer per chunk.
func Start(sh *shard.Shard, encode EncodeFunc, out chan<- Chunk, free <-chan []byte) *Slice {
	sl := &Slice{sh: sh, version: sh.CutVersion(), cutMs: sh.Now(), encode: encode,
		enc: rdb.NewEncoder(nil), curDB: -1, out: out, free: free}
	sh.AddHook(sl)
	sh.AddExpiryHook(sl)
	sh.Send(sl)
	return sl
}

// serializeBucket writes bucket b of db if it still holds its contents at
// the cut, then marks it written.
func (sl *Slice) serializeBucket(db *shard.DB, b dash.Cursor) {
	t := db.Table
	if t.Version(b) >= sl.version {
		return
	}
	t.ForEach(b, func(it dash.Iterator) {
		var at int64
		if v, ok := db.ExpireAt(it); ok {
			if v <= sl.cutMs {
				return
			}
			at = v
		}
		if sl.curDB != db.Index {
			sl.enc.SelectDB(uint64(db.Index))
			sl.curDB = db.Index
		}
		k := t.Key(it) // the encoder copies the key: a view of it is enough
		sl.encode(sl.enc, unsafe.Slice(unsafe.StringData(k), len(k)), t.Value(it), at)
		sl.Keys++
	})
	t.SetVersion(b, sl.version)
}

func (sl *Slice) serializeAll(buckets []dash.Cursor, db *shard.DB) {
	for _, b := range buckets {
		sl.serializeBucket(db, b)
	}
}

// PreUpdate serializes the bucket of an item about to change.
func (sl *Slice) PreUpdate(db *shard.DB, it shard.Iterator) {
	sl.serializeBucket(db, db.Table.BucketOf(it))
}

// PreDelete serializes the buckets an erase may change.
func (sl *Slice) PreDelete(db *shard.DB, it shard.Iterator) {
	sl.scratch = db.Table.EraseChanges(sl.scratch[:0], it)
	sl.serializeAll(sl.scratch, db)
}

// OnExpire: an expiry erases like a delete.
func (sl *Slice) OnExpire(db *shard.DB, it shard.Iterator, key string) { sl.PreDelete(db, it) }

// PreInsert serializes every bucket the insert may change, until the set is
// stable (serializing moves nothing, so one pass settles it).
func (sl *Slice) PreInsert(db *shard.DB, key string) {
	sl.scratch = db.Table.InsertChanges(sl.scratch[:0], key)
	sl.serializeAll(sl.scratch, db)
}

// PreFlush writes what remains of db before it is emptied.
func (sl *Slice) PreFlush(db *shard.DB) {
	var c dash.Cursor
	for {
		c = db.Table.TraverseBuckets(c, func(b dash.Cursor) { sl.serializeBucket(db, b) })
		if c == 0 {
			return
		}
	}
}

// cut moves the buffered records into a chunk; the next record starts a
// new one with its SELECTDB.
func (sl *Slice) cut(last bool) {
	if sl.enc.Len() > 0 || last {
		var next []byte
		select {
		case next = <-sl.free:
		default:
		}
		sl.pending = append(sl.pending, Chunk{Shard: sl.sh.ID, Data: sl.enc.SwapBytes(next), Last: last, Err: sl.enc.Err()})
		sl.curDB = -1
	}
}

// push hands pending chunks to the consumer without blocking; it reports
// whether the channel took them all.
func (sl *Slice) push() bool {
	for len(sl.pending) > 0 {
		select {
		case sl.out <- sl.pending[0]:
			sl.pending[0] = Chunk{}
			sl.pending = sl.pending[1:]
		default:
			return false
		}
	}
	return true
}

// Run is one traversal step on the shard's goroutine.
func (sl *Slice) Run(s *shard.Shard) {
	if sl.done {
		return
	}
	if !sl.push() {
		sl.later(s) // backpressure: the consumer is behind
		return
	}
	start := time.Now()
	for sl.db < len(s.DBs) {
		db := s.DBs[sl.db]
		sl.cursor = db.Table.TraverseBuckets(sl.cursor, func(b dash.Cursor) { sl.serializeBucket(db, b) })
		if sl.cursor == 0 {
			sl.db++
		}
		if sl.enc.Len() >= chunkSize {
			sl.cut(false)
			if !sl.push() {
				sl.later(s)
				return
			}
		}
		if time.Since(start) >= stepBudget {
			s.Send(sl)
			return
		}
	}
	// Walk done: the hooks can go; the last chunk closes the stream.
	s.RemoveHook(sl)
	s.RemoveExpiryHook(sl)
	sl.done = true
	sl.cut(true)
	if !sl.push() {
		sl.drainLater(s)
	}
}

// later posts the next step after a pause, so a full consumer is not
// polled in a tight loop.
func (sl *Slice) later(s *shard.Shard) {
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
