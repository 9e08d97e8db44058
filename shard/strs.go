package shard

import "unsafe"

// Small string values live packed in 64 KiB chunks, one set of chunks per
// DB (strArena), instead of one heap object each. The reason is the
// garbage collector: it marks every object a pointer reaches, and a
// million values reached in hash order (the table's order, unrelated to
// allocation order) cost a cache miss each. Measured on this machine, a
// mark of 1.2M 100-byte values took 100-120 ms one object each and
// 20 ms packed in chunks; a collection that falls in a full sync took
// 40% of the master's core for half a second (issue 8's p99). Dragonfly
// packs values with mimalloc and defragments its pages the same way:
// a background pass moves values out of sparse pages.
//
// Invariants:
//   - A chunk's bytes are written only by the value they belong to, under
//     the rules of a value's own buffer: DB.SetBytes overwrites them in
//     place (a SET of no more bytes) unless a snapshot may still read them
//     (Value.Shared); any other in-place edit follows DB.Mutate, which
//     first moves the value to a buffer of its own. Bytes a value left
//     (dropped, moved by the defragmentation, replaced by a longer value)
//     are never written again: space is reused only by dropping a whole
//     chunk. So a slice of a packed value taken by a reader that copies
//     no bytes (a snapshot's deferred record, a value on its way to
//     another shard) stays valid, and the GC keeps its chunk alive
//     meanwhile; dropping a chunk here only forgets it.
//   - Every packed value in db's tables is counted once, with the bytes
//     it holds (its length rounded up to 8, held), in the live bytes of
//     the chunk its c field names, and that chunk is
//     db's and holds its bytes (owns). The DB keeps this on every path
//     that stores, replaces or erases a value (Insert, Set, SetBytes,
//     Load, Mutate, erase, Offloaded); Flush starts a new arena. A value
//     from another DB or shard (MOVE, a cross-shard RENAME) is copied in
//     when stored.
//   - Allocations are 8-byte aligned, so two values never share a word
//     (the race detector's granularity, and no torn neighbour).

const (
	strChunkSize = 64 << 10
	// ChunkSize is the size of a chunk a loader fills (DB.ImportChunk).
	ChunkSize = strChunkSize
	// MaxPackedString is the largest string value kept in a chunk; a
	// longer one is one heap object of its own (few of them per byte).
	MaxPackedString = 1024
	// A pass moves the values of chunks less than defragSparse full. It
	// starts when the dead bytes of such chunks (what a pass gives back)
	// reach an eighth of the chunks' bytes and at least defragMinWaste; a
	// chunk that empties after the pass visited its values is left to the
	// next pass, which starts on the same rule, so the arena settles below
	// it once deletes stop.
	defragMinWaste = 256 << 10
	defragSparse   = strChunkSize * 6 / 10
)

type strChunk struct {
	buf        []byte
	used, live int32
}

type strArena struct {
	chunks []strChunk
	free   []uint32 // ids of dropped chunks, for reuse
	cur    int32    // chunk taking allocations, -1 when none
	imp    int32    // chunk a loader is filling (ImportChunk), -1 when none
	// used: bytes handed out (or lost at chunk tails) in the chunks held;
	// live: bytes of the values counted in them.
	used, live int
	// reclaimable: the dead bytes of the sparse chunks (sparseDead), kept
	// by every change of a chunk's live bytes, cur or imp.
	reclaimable int
	// defragging: a pass runs, resuming at cursor.
	defragging bool
	cursor     uint64
	// charged: chunks allocated while a pass runs or should, not yet
	// paid for by the pass (payDefrag); due tells the shard.
	charged int
	debt    int // visits owed (payDefrag)
	due     *bool
	// freed: bytes dropped since the last chunk's worth (drop).
	freed int
	// passes, moves: the pass's work so far (INFO).
	passes, moves int
}

func newStrArena(due *bool) strArena { return strArena{cur: -1, imp: -1, due: due} }

// Packable reports whether a string of n bytes is kept in a DB's chunks.
func Packable(n int) bool { return n > 0 && n <= MaxPackedString }

// alloc returns a chunk value holding a copy of b (Packable(len(b))),
// not yet counted as live.
func (a *strArena) alloc(b []byte) Value {
	n := int32(len(b))
	size := held(uint32(n))
	if a.cur < 0 || a.chunks[a.cur].used+size > strChunkSize {
		a.newChunk()
	}
	c := &a.chunks[a.cur]
	dst := c.buf[c.used : c.used+n : c.used+n]
	copy(dst, b)
	c.used += size
	a.used += int(size)
	return Value{ptr: unsafe.Pointer(unsafe.SliceData(dst)), n: uint32(n), c: uint32(a.cur), Type: TypeString, flags: flagPacked}
}

func (a *strArena) newChunk() {
	if a.defragging || a.wasteful() {
		a.charge()
	}
	if old := a.cur; old >= 0 {
		c := &a.chunks[old]
		a.used += strChunkSize - int(c.used) // the tail is lost
		c.used = strChunkSize
		a.cur = -1
		a.release(old)
		a.reclaimable += a.sparseDead(old) // it counted nothing as cur
	}
	a.cur = a.add(make([]byte, strChunkSize), 0)
}

// add holds buf as a chunk with used bytes handed out, and returns its id.
func (a *strArena) add(buf []byte, used int32) int32 {
	ch := strChunk{buf: buf, used: used}
	a.used += int(used)
	if n := len(a.free); n > 0 {
		id := a.free[n-1]
		a.free = a.free[:n-1]
		a.chunks[id] = ch
		return int32(id)
	}
	a.chunks = append(a.chunks, ch)
	return int32(len(a.chunks) - 1)
}

// owns reports whether v's bytes are in this arena's chunk v.c.
func (a *strArena) owns(v *Value) bool {
	if int(v.c) >= len(a.chunks) {
		return false
	}
	buf := a.chunks[v.c].buf
	if buf == nil {
		return false
	}
	p, base := uintptr(v.ptr), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= base && p < base+strChunkSize
}

// adopt counts v, about to be stored in the DB, as live; a packed v of
// another arena gets a copy in this one first (see the invariants).
func (a *strArena) adopt(v *Value) {
	if v.flags&flagPacked == 0 {
		return
	}
	if !a.owns(v) {
		c := a.alloc(v.Str())
		v.ptr, v.c = c.ptr, c.c
	}
	a.count(v)
}

// count adds the packed v to its chunk's live bytes.
func (a *strArena) count(v *Value) {
	a.reclaimable -= a.sparseDead(int32(v.c))
	a.chunks[v.c].live += held(v.n)
	a.live += int(held(v.n))
	a.reclaimable += a.sparseDead(int32(v.c))
}

// held is the bytes a packed value of n bytes takes in its chunk. Live
// bytes count these, not n: counted by length, a chunk of values of 8
// bytes or less could never be more than 1/8 live, so it always looked
// sparse and wasteful, and the pass moved every such value again and
// again (50M moves in minutes of a MULTI benchmark's 1-byte values, 7% of
// the shard's CPU under the EVAL benchmark that followed).
func held(n uint32) int32 { return int32((n + 7) &^ 7) }

// drop uncounts v, which leaves the DB or stops being packed.
func (a *strArena) drop(v *Value) {
	if v.flags&flagPacked == 0 {
		return
	}
	a.uncount(v)
	// Deletes, expiry and offloading free no chunk by themselves: they
	// charge the pass too, a chunk's worth at a time.
	if a.freed += int(held(v.n)); a.freed >= strChunkSize {
		a.freed = 0
		if a.defragging || a.wasteful() {
			a.charge()
		}
	}
}

// shrink makes the live packed v n bytes long (n <= v.n): an overwrite in
// place; the rest of its bytes are dead.
func (a *strArena) shrink(v *Value, n uint32) {
	d := held(v.n) - held(n)
	v.n = n
	a.reclaimable -= a.sparseDead(int32(v.c))
	a.chunks[v.c].live -= d
	a.live -= int(d)
	a.reclaimable += a.sparseDead(int32(v.c))
}

// uncount is drop without the charge: for the pass's own moves.
func (a *strArena) uncount(v *Value) {
	a.reclaimable -= a.sparseDead(int32(v.c))
	a.chunks[v.c].live -= held(v.n)
	a.live -= int(held(v.n))
	a.release(int32(v.c))
	a.reclaimable += a.sparseDead(int32(v.c))
}

// release forgets chunk id when no counted value is left in it and it
// takes no allocations.
func (a *strArena) release(id int32) {
	c := &a.chunks[id]
	if c.live != 0 || id == a.cur || id == a.imp {
		return
	}
	a.used -= int(c.used)
	*c = strChunk{}
	a.free = append(a.free, uint32(id))
}

// charge records one more chunk's worth allocated or freed while the
// DB's chunks hold enough dead bytes for a pass (payDefrag pays it).
func (a *strArena) charge() {
	a.charged++
	if a.due != nil {
		*a.due = true
	}
}

// wasteful: enough dead bytes in sparse chunks to start a
// defragmentation pass.
func (a *strArena) wasteful() bool {
	return a.reclaimable >= defragMinWaste && a.reclaimable*8 >= a.used
}

// sparseDead returns the dead bytes of chunk id if it is worth emptying
// (a pass moves its values), else 0. The callers that change a chunk's
// live bytes, or make it stop being cur or imp, keep reclaimable the sum
// of it over the chunks: subtract before, add after.
func (a *strArena) sparseDead(id int32) int {
	if id == a.cur || id == a.imp {
		return 0
	}
	c := &a.chunks[id]
	if c.buf == nil || c.used != strChunkSize || c.live >= defragSparse {
		return 0
	}
	return int(c.used - c.live)
}

// sparse: v is packed in a chunk worth emptying.
func (a *strArena) sparse(v *Value) bool {
	return v.flags&flagPacked != 0 && a.sparseDead(int32(v.c)) > 0
}

// move gives the live packed v a copy of its bytes in the current chunk.
// The bytes stay the same, so this is no mutation: no hook, version,
// journal entry or watch sees it, and marks (Mark, Share) stay.
func (a *strArena) move(v *Value) {
	flags := v.flags
	c := a.alloc(v.Str())
	a.uncount(v)
	v.ptr, v.c = c.ptr, c.c
	a.count(v)
	v.flags = flags
}

// NewString makes a string value holding a copy of b, packed in the DB's
// chunks when small: for a value about to be stored in db (Insert, Set)
// on the shard goroutine. SET, SETNX, MSET and DEBUG POPULATE use it; a
// later SET of no more bytes rewrites it in place (SetBytes). Values that
// are edited in place (APPEND, INCR, SETBIT ...) are made as values of
// their own instead: Mutate would move them out of the chunk at once.
func (db *DB) NewString(b []byte) Value {
	if Packable(len(b)) {
		return db.strs.alloc(b)
	}
	return NewString(b)
}

// ImportChunk makes buf, ChunkSize bytes that a loader is filling with
// small string values on its own goroutine (8-byte aligned), a chunk of
// the DB: Load then keeps a value whose bytes lie in it where they are,
// instead of copying them into a chunk of its own (which left the
// loader's blocks as garbage: a third more peak memory for an RDB load).
// The loader writes the chunk only ahead of the items that carry its
// values, and never again after the next ImportChunk.
func (db *DB) ImportChunk(buf []byte) {
	a := &db.strs
	if len(buf) != strChunkSize {
		return
	}
	old := a.imp
	a.imp = a.add(buf, strChunkSize) // what the loader leaves unused is dead
	if old >= 0 {
		a.release(old)
		a.reclaimable += a.sparseDead(old) // it counted nothing as imp
	}
}

// imported reports whether v's bytes lie in the chunk being imported.
func (a *strArena) imported(v *Value) bool {
	if a.imp < 0 {
		return false
	}
	p, base := uintptr(v.ptr), uintptr(unsafe.Pointer(unsafe.SliceData(a.chunks[a.imp].buf)))
	return p >= base && p+uintptr(v.n) <= base+strChunkSize
}

// Offloaded makes the stored v an offloaded string of n bytes at off in
// the backing file (Value.SetExternal), dropping its memory.
func (db *DB) Offloaded(v *Value, off int64, n uint32) {
	db.strs.drop(v)
	v.SetExternal(off, n)
}

// unpack gives the stored v bytes of its own (with spare capacity for
// in-place edits) instead of its chunk's: before an in-place edit.
func (db *DB) unpack(v *Value) {
	if v.flags&flagPacked == 0 {
		return
	}
	db.strs.drop(v)
	enc := v.Encoding()
	v.SetStr(append(make([]byte, 0, v.n+v.n/4+8), v.Str()...))
	v.SetEncoding(enc)
}

// DefragStep runs one bounded step of the DB's defragmentation pass,
// started when the chunks hold enough dead bytes: it visits about
// maxVisits keys and moves the values of sparse chunks into the current
// one, so those chunks empty and are dropped. It reports whether a pass
// is still running.
func (db *DB) DefragStep(maxVisits int) bool {
	a := &db.strs
	if !a.defragging {
		if !a.wasteful() {
			return false
		}
		a.defragging, a.cursor = true, 0
		a.passes++
	}
	visits := 0
	for visits < maxVisits {
		a.cursor = db.Table.Traverse(a.cursor, func(it Iterator) {
			visits++
			if v := db.Table.Value(it); a.sparse(v) {
				a.move(v)
				a.moves++
			}
		})
		if a.cursor == 0 {
			a.defragging = false
			return false
		}
	}
	return true
}

// payDefrag runs the pass for the chunks charged so far. A pass visits
// every key, and it must end before the DB allocates (or frees) another
// half of its chunk bytes, or it would never catch up with a stream of
// writes (the tick's step alone gives it 1% of the shard): that is
// 2 x keys x chunk size / bytes held visits per chunk; with 100-byte
// values about 1300 visits, some 40 us, per 630 values. One call pays at
// most payMax visits, so no message waits long behind it; it reports
// whether debt is left.
func (db *DB) payDefrag() bool {
	a := &db.strs
	if a.charged > 0 {
		a.debt += int(min(int64(a.charged)*2*int64(db.Len())*strChunkSize/int64(max(a.used, 1)), 1<<24))
		a.charged = 0
	}
	n := min(a.debt, payMax)
	a.debt -= n
	if n > 0 && !db.DefragStep(n) {
		a.debt = 0 // the pass ended
	}
	return a.debt > 0
}

// payMax bounds the visits one payDefrag makes (about 100 us).
const payMax = 4096

// PackedStats are the DB's packed strings (INFO memory).
type PackedStats struct {
	// Used: bytes of the chunks held; Live: the bytes the values in them
	// take (their lengths rounded up to 8).
	Used, Live, Chunks int
	// Passes started and values moved by the defragmentation.
	Passes, Moves int
}

// Add adds o's figures to p (several DBs', several shards').
func (p *PackedStats) Add(o PackedStats) {
	p.Used += o.Used
	p.Live += o.Live
	p.Chunks += o.Chunks
	p.Passes += o.Passes
	p.Moves += o.Moves
}

// Packed reports the DB's PackedStats.
func (db *DB) Packed() PackedStats {
	a := &db.strs
	return PackedStats{Used: a.used, Live: a.live, Chunks: len(a.chunks) - len(a.free), Passes: a.passes, Moves: a.moves}
}
