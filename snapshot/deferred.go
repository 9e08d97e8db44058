package snapshot

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// Deferred string values (Options.Defer). Copying and compressing values
// was most of a save's work on the shard: a 1 KiB value costs a walk of
// its cache lines and an LZF pass, and that CPU time on the event loop's
// thread is what the kernel charges the loop for, so clients waited
// behind the scheduler, not behind the steps. With Defer the walk writes
// a string record up to its value (the key, the expiry) and keeps a
// reference to the value's bytes; the consumer encodes the values
// (Materializer), on its own thread.
//
// Invariant (copy-on-write): bytes a deferred record references are never
// changed. Every in-place change of a value goes through DB.Mutate, whose
// PreUpdate hook gives the value a fresh copy first when its bytes were
// handed out (Value.Share) and a deferred record of this Slice is
// outstanding (Slice.cow), and so does DB.Take before a value leaves for
// another key, maybe on another shard, whose hooks know nothing of this
// Slice; replacing, deleting,
// expiring or offloading a value leaves the old bytes alone, and the
// reference keeps them alive for the collector. A record is outstanding
// from its capture until a Materializer has encoded its batch, which may
// be after the walk ended and the Slice removed its hooks: a cowHook
// stays until then (keepCOW). Replacing a value's bytes by an equal copy
// is the one change a hook makes to a DB; no reader can tell.

// splice is a string value whose encoding belongs at off in its batch.
type splice struct {
	off int
	val []byte
}

// deferredMain is a cut of the main stream whose string values are still
// references: its records belong at pos of the chunk's Data.
type deferredMain struct {
	seq uint64
	pos int
	*batch
}

// batch is a deferred cut's records and references. The Materializer
// hands batches back to their pool (home) for the next cuts: per cut, a
// new one would be garbage the size of a save's keys, which the heap
// grows by before the collector runs.
//
// Cuts come in two sizes, so batches come from two pools (Slice.batches,
// Slice.smallBatches). While a flow streams its journal, every write
// between two walk steps cuts the main stream (the entry must follow the
// records before it), so most cuts hold a bucket or two; the walk's cuts
// hold a chunk's worth. One pool of 256 batches fell short of the small
// cuts outstanding at once (thousands, under repl.sh's SET load), and a
// batch made anew grew its arrays from nothing: during a full sync of 1M
// keys that was 45 MB of garbage in 2 s (a heap profile of the master),
// most of what brought a garbage collection, and its stall, into the
// sync. Now a batch's arrays are made at its first cut's size rounded up
// to a power of two and grow only for a larger cut, rarely; the pools hold
// no more batches than were outstanding at once, so the memory of
// outstanding cuts stays near their records' (a fixed size for small
// batches would have cost up to 1.5 KB per cut behind a slow consumer).
type batch struct {
	main    []byte
	splices []splice
	home    chan *batch
}

const (
	// smallCutKeys, smallCutBytes: the largest cut a small batch takes.
	smallCutKeys  = 16
	smallCutBytes = 1 << 10
	// smallBatches, bigBatches: the pools' sizes.
	smallBatches = 8192
	bigBatches   = 256
)

// deferred is what a chunk still owes its Data.
type deferred struct {
	mains        []deferredMain
	tagged       bool
	outstanding  *atomic.Int64
	materialized *atomic.Uint64
}

// retention: bytes of old values that deferred cuts up to seq keep alive.
type retention struct {
	seq   uint64
	bytes int
}

// retain counts n bytes of an old value kept alive by the deferred
// records made so far (the current cut's too): released once the last of
// them is materialized.
func (sl *Slice) retain(n int) {
	seq := sl.seq
	if len(sl.splices) > 0 {
		seq++ // the cut being gathered
	}
	if q := len(sl.retainQ); q > 0 && sl.retainQ[q-1].seq == seq {
		sl.retainQ[q-1].bytes += n
	} else {
		sl.retainQ = append(sl.retainQ, retention{seq, n})
	}
	sl.retained += n
	sl.noteHeld()
}

// retainedNow is the memory old values still take for deferred records.
func (sl *Slice) retainedNow() int {
	done := sl.materialized.Load()
	i := 0
	for ; i < len(sl.retainQ) && sl.retainQ[i].seq <= done; i++ {
		sl.retained -= sl.retainQ[i].bytes
	}
	if i > 0 {
		sl.retainQ = append(sl.retainQ[:0], sl.retainQ[i:]...)
		sl.noteHeld()
	}
	return sl.retained
}

// referencing reports whether deferred records may reference values.
func (sl *Slice) referencing() bool {
	return sl.opt.Defer && (len(sl.splices) > 0 || sl.outstanding.Load() > 0)
}

// deferString writes a string record whose value is encoded later.
func (sl *Slice) deferString(key []byte, v *shard.Value, at int64) {
	if !sl.main.StringHeader(key, rdb.Meta{ExpireAt: at}) {
		return
	}
	s := v.Str()
	v.Share() // cow copies it before an in-place change
	sl.splices = append(sl.splices, splice{off: sl.main.Len(), val: s})
	sl.spliceBytes += len(s)
}

// deferMain moves the main stream's records, with their references, to
// the wire's position.
func (sl *Slice) deferMain() {
	// The records without their values are a few dozen bytes per key: a
	// copy of that size, not the encoder's chunk-sized buffer, waits for
	// the consumer (thousands of cuts may wait while hooks capture).
	buf := sl.main.SwapBytes(sl.mainSpare)
	pool := sl.batches
	if len(sl.splices) <= smallCutKeys && len(buf) <= smallCutBytes {
		pool = sl.smallBatches
	}
	var bt *batch
	select {
	case bt = <-pool:
	default:
		bt = &batch{home: pool, // sized to the cut (see batch)
			main:    make([]byte, 0, 1<<bits.Len(uint(max(len(buf), 32)-1))),
			splices: make([]splice, 0, 1<<bits.Len(uint(max(len(sl.splices), 1)-1)))}
	}
	bt.main = append(bt.main[:0], buf...)
	sl.mainSpare = buf[:0]
	bt.splices = append(bt.splices[:0], sl.splices...)
	clear(sl.splices) // the batch holds the references now
	sl.splices = sl.splices[:0]
	sl.outstanding.Add(1)
	sl.seq++
	sl.wireDeferred = append(sl.wireDeferred, deferredMain{seq: sl.seq, pos: len(sl.wire), batch: bt})
	sl.wireDeferredBytes += len(bt.main) + sl.spliceBytes
	sl.wireDeferredRefs += sl.spliceBytes
	sl.spliceBytes = 0
}

// cow (PreUpdate) gives a string value about to change in place its own
// bytes while a deferred record may still reference the old ones. A
// packed value (shard/strs.go) needs none: its shared bytes are never
// edited in place (DB.SetBytes checks Shared; Mutate moves it out first).
func (sl *Slice) cow(v *shard.Value) {
	if v.Type != shard.TypeString || v.IsExternal() || !v.Shared() || v.Packed() || !sl.referencing() {
		return
	}
	old, enc := v.Str(), v.Encoding()
	v.SetStr(append(make([]byte, 0, cap(old)), old...))
	v.SetEncoding(enc) // an equal copy: OBJECT ENCODING says what it said
	sl.retain(cap(old))
	stats.deferredCopies.Add(1)
}

// dropped (PreDelete) counts a deleted string value as retained: a
// deferred record may reference it (over-counted when none does).
func (sl *Slice) dropped(v *shard.Value) {
	if v.Type == shard.TypeString && !v.IsExternal() && sl.referencing() {
		sl.retain(cap(v.Str()))
	}
}

// Materializer encodes the deferred records of chunks (Options.Defer).
// One belongs to one consumer goroutine.
type Materializer struct {
	enc   *rdb.Encoder
	out   []byte
	spare []byte // the encoder's other buffer
	// free: buffers the consumer is done with (the Slice's Options.Free).
	// A complete chunk is as big as the values it holds, so its buffer
	// comes from there when one is back: a new one per chunk would be a
	// save's worth of garbage, which the heap grows by before a GC.
	free chan []byte
	// touched keeps the loads of Materialize's first pass.
	touched byte
}

// NewMaterializer encodes values with LZF when compress is set (the
// Slice's NoLZF unset); it takes buffers from free (nil: none).
func NewMaterializer(compress bool, free chan []byte) *Materializer {
	e := rdb.NewEncoder(nil)
	e.SetCompression(compress)
	e.SetChecksum(false)
	return &Materializer{enc: e, free: free}
}

// Materialize makes c.Data the complete output: the deferred records
// encoded at their positions. A chunk without them is left as it is.
func (m *Materializer) Materialize(c *Chunk) {
	d := c.deferred
	if d == nil {
		return
	}
	c.deferred = nil
	out := m.out[:0] // the buffer of the last chunk's wire
	if cap(out) == 0 {
		select {
		case b := <-m.free:
			out = b[:0]
		default:
			out = make([]byte, 0, chunkSize+chunkSize/4)
		}
	}
	prev := 0
	for _, dm := range d.mains {
		out = append(out, c.Data[prev:dm.pos]...)
		prev = dm.pos
		// Read a byte at both ends of every value first: the values lie
		// all over the heap (the walk visits keys in hash order), and
		// these loads, independent of each other, wait for memory
		// together, where the copies below would wait for one value
		// after another.
		var touch byte
		for _, s := range dm.splices {
			if n := len(s.val); n > 0 {
				touch += s.val[0] ^ s.val[n-1]
			}
		}
		m.touched += touch
		at := 0
		for _, s := range dm.splices {
			m.enc.Raw(dm.main[at:s.off])
			m.enc.StringValue(s.val)
			at = s.off
		}
		m.enc.Raw(dm.main[at:])
		recs := m.enc.SwapBytes(m.spare)
		if d.tagged {
			out = rdb.AppendChunk(out, rdb.OpChunkEnd, MainStream, recs)
		} else {
			out = append(out, recs...)
		}
		m.spare = recs[:0]
		clear(dm.splices) // the values may go
		dm.splices = dm.splices[:0]
		select {
		case dm.home <- dm.batch:
		default:
		}
		d.materialized.Store(dm.seq)
		d.outstanding.Add(-1)
	}
	out = append(out, c.Data[prev:]...)
	m.out, c.Data = c.Data[:0], out
}

// Complete forwards a Slice's chunks from in to out, their deferred
// records encoded, on a goroutine of its own that runs at a lower
// priority than the shards (BackgroundThread): the encoding competes with
// the event loops for the CPU, and losing to them is what keeps clients'
// latency during a save. It also gives the CPU back every SectionYield of
// its work (Pacer), as a flow does: without, a turn of it held a loop on
// its CPU for a whole scheduler slice. Measured (SET p99 during / before,
// save or link-up time): tests/bench/bgsave-p99.sh, unpinned, 1M 1 KiB
// values, three rounds each, alternating: 3.43 2.45 2.35 2.20 2.35 2.43x
// in 2.2-2.6 s before, 2.46 1.79 2.27x in 3.0-3.2 s with the pacer (Redis
// 1.93 2.04x in 4.6 s); tests/bench/repl.sh dfly>redis (a Redis replica:
// its RDB goes through here): 3.00 3.34 3.27 3.20 3.27 4.00x, link up
// 0.53-0.83x Redis's, before, 2.40 2.50 2.00 2.00 2.50 2.29x, 0.80-1.16x
// (median 0.86x), with (redis>redis 1.40-3.00x). It ends after the Last
// chunk.
func Complete(in <-chan Chunk, out chan<- Chunk, compress bool, free chan []byte) {
	complete(in, out, compress, free, BackgroundNice)
}

func complete(in <-chan Chunk, out chan<- Chunk, compress bool, free chan []byte, nice int) {
	go func() {
		done, _, _ := backgroundThread(nice)
		defer done()
		m := NewMaterializer(compress, free)
		var pace Pacer
		for {
			c := <-in
			m.Materialize(&c)
			pace.Step()
			out <- c
			if c.Last {
				return
			}
		}
	}()
}

// Deferred starts a Slice with Options.Defer whose complete chunks arrive
// on opt.Out: the Slice writes to a channel of its own, and Complete
// encodes the values between the two.
func Deferred(sh *shard.Shard, opt Options) *Slice {
	out := opt.Out
	in := make(chan Chunk, cap(out))
	opt.Out, opt.Defer = in, true
	nice := BackgroundNice
	if opt.Journal { // a replication flow's baseline (SectionNice)
		nice = SectionNice
	}
	complete(in, out, !opt.NoLZF, opt.Free, nice)
	return Start(sh, opt)
}

// DeferredSelf starts a Slice with Options.Defer whose chunks arrive on
// opt.Out with their deferred records still to encode: the consumer runs
// them through a Materializer of its own, in order, before it uses them
// (a replication flow, whose writer is a background thread already: a
// thread of its own for the encoding too adds a processor and a hand-off
// per chunk to the master's scheduling while it syncs). Measured with
// tests/bench/repl.sh, dfly>dfly, alternating, three runs each on a busy
// machine: link up in 2.54-3.01 s against 3.31-3.63 s with the extra
// thread, master CPU during the sync 2.31-2.82 s against 3.13-3.39 s,
// SETs during the sync 33-35k/s against 29-31k/s.
func DeferredSelf(sh *shard.Shard, opt Options) *Slice {
	opt.Defer = true
	return Start(sh, opt)
}

// cowHook keeps copy-on-write after the Slice finished and removed its
// hooks, until the last deferred cut is materialized: the consumer may
// still be encoding values the walk referenced.
type cowHook struct{ sl *Slice }

func (h cowHook) PreUpdate(db *shard.DB, it shard.Iterator) { h.sl.cow(db.Table.Value(it)) }
func (cowHook) PreDelete(*shard.DB, shard.Iterator)         {}
func (cowHook) PreInsert(*shard.DB, string)                 {}
func (cowHook) PreFlush(*shard.DB)                          {}

// keepCOW (finish) registers the cowHook while deferred cuts are
// outstanding and removes it once none is, checking every millisecond.
func (sl *Slice) keepCOW(s *shard.Shard) {
	if !sl.opt.Defer || sl.outstanding.Load() == 0 {
		return
	}
	h := cowHook{sl}
	s.AddHook(h)
	var check func()
	check = func() {
		time.AfterFunc(time.Millisecond, func() {
			s.Send(shard.Func(func(s *shard.Shard) {
				if sl.outstanding.Load() > 0 {
					check()
					return
				}
				s.RemoveHook(h)
			}))
		})
	}
	check()
}
