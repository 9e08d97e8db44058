package dash

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

var seed = maphash.MakeSeed()

// Hash is the table's hash of key. Its top bits pick the segment, bits
// 8..39 the home bucket, the low 8 bits the fingerprint.
func Hash(key string) uint64 { return maphash.String(seed, key) }

// maxDepth bounds the global depth so a segment id fits the cursor's width.
const maxDepth = cursorWidth - 8

// Table is an extendible hash table of segments. It is not safe for
// concurrent use: one goroutine (the shard) owns it.
type Table[V any] struct {
	dir   []*segment[V] // 2^depth entries; a segment of local depth L fills 2^(depth-L) consecutive ones
	segs  []*segment[V] // every segment, by id (Iterator.seg)
	depth uint8         // global depth
	size  int

	onMove    func([]Move)
	moves     []Move
	moveSegs  []uint32 // segments that received a move in the current batch
	moveChain bool     // a move in the batch may continue an earlier one
}

// Iterator names one occupied slot. It is a small pointer-free value, valid
// until the next Insert, Erase, Delete or Clear of its table.
type Iterator struct {
	seg   uint32
	bid   uint8
	slot  uint8
	valid bool
}

// Valid reports whether it names an item (false for a failed Find and for
// the zero Iterator).
func (it Iterator) Valid() bool { return it.valid }

// New returns an empty table.
func New[V any]() *Table[V] {
	t := &Table[V]{}
	t.Clear()
	return t
}

// Len is the number of items.
func (t *Table[V]) Len() int { return t.size }

// Depth is the global depth: the directory has 2^Depth entries.
func (t *Table[V]) Depth() uint8 { return t.depth }

// Segments is the number of segments.
func (t *Table[V]) Segments() int { return len(t.segs) }

func (t *Table[V]) newSegment(depth uint8, base Cursor) *segment[V] {
	s := &segment[V]{depth: depth, base: base, id: uint32(len(t.segs))}
	t.segs = append(t.segs, s)
	return s
}

// Clear removes every item and returns the table to one empty segment.
// Strings returned by Key stay valid.
func (t *Table[V]) Clear() {
	t.segs = nil
	t.depth = 0
	t.size = 0
	t.dir = []*segment[V]{t.newSegment(0, 0)}
}

func (t *Table[V]) segmentOf(h uint64) *segment[V] {
	// A shift by 64 (depth 0) yields 0 in Go.
	return t.dir[h>>(64-t.depth)]
}

// Find returns the item with key, or an invalid Iterator.
func (t *Table[V]) Find(key string) Iterator {
	h := Hash(key)
	s := t.segmentOf(h)
	bid, slot, ok := s.find(s.arena, h, key)
	return Iterator{seg: s.id, bid: bid, slot: slot, valid: ok}
}

// Key is the item's key. The string aliases the table's key arena, whose
// bytes are never rewritten, so it stays valid (and unchanged) for as long
// as the caller keeps it, even after the item is erased.
func (t *Table[V]) Key(it Iterator) string {
	s := t.segs[it.seg]
	return s.key(s.b[it.bid].off[it.slot])
}

// Value points at the item's value; valid until the next Insert, Erase,
// Delete or Clear.
func (t *Table[V]) Value(it Iterator) *V {
	return &t.segs[it.seg].vals[int(it.bid)*slotsPerBucket+int(it.slot)]
}

// Insert adds key with value v and stamps every bucket it changes with
// version. If key is present it returns its item with inserted=false and
// changes nothing. The key's bytes are copied, so key may alias a buffer the
// caller reuses.
func (t *Table[V]) Insert(key string, v V, version uint64) (it Iterator, inserted bool) {
	h := Hash(key)
	s := t.segmentOf(h)
	if bid, slot, ok := s.find(s.arena, h, key); ok {
		return Iterator{seg: s.id, bid: bid, slot: slot, valid: true}, false
	}
	for {
		p := s.plan(h)
		if p.kind == planSplit {
			t.split(s)
			s = t.segmentOf(h)
			continue
		}
		switch p.kind {
		case planDisplace:
			t.moveItem(s, p.from, p.slot, s, p.to, p.toSlot, p.toProbe)
			s.b[p.to].stamp(version)
		case planStash:
			home := homeBucket(h)
			s.stashHome[p.bid-regularBuckets][p.slot] = home
			s.b[home].overflow[p.bid-regularBuckets]++
		}
		s.place(p.bid, p.slot, uint8(h), s.appendKey(key), p.probe)
		s.vals[int(p.bid)*slotsPerBucket+int(p.slot)] = v
		s.b[p.bid].stamp(version)
		t.size++
		t.flushMoves()
		return Iterator{seg: s.id, bid: p.bid, slot: p.slot, valid: true}, true
	}
}

// stamp raises the bucket's version to v. Versions never go down (except on
// Clear), so a bucket that looks serialized to a snapshot stays so.
func (b *bucket) stamp(v uint64) {
	if v > b.version {
		b.version = v
	}
}

// Bump records an in-place update of the item's value: its bucket's version
// is raised to version.
func (t *Table[V]) Bump(it Iterator, version uint64) {
	t.segs[it.seg].b[it.bid].stamp(version)
}

// Erase removes the item. If it freed a regular slot and a stash item may
// live there, one stash item moves in (reported as a move); the destination
// bucket takes the max of both buckets' versions.
func (t *Table[V]) Erase(it Iterator) {
	s := t.segs[it.seg]
	off := s.b[it.bid].off[it.slot]
	s.clearSlot(it.bid, it.slot)
	t.size--
	if it.bid < regularBuckets {
		if k, slot, ok := s.unloadCandidate(it.bid); ok {
			home := s.stashHome[k-regularBuckets][slot]
			t.moveItem(s, k, slot, s, it.bid, it.slot, home != it.bid)
		}
	}
	s.dropKey(off)
	t.flushMoves()
}

// Delete removes key and reports whether it was present.
func (t *Table[V]) Delete(key string) bool {
	it := t.Find(key)
	if !it.valid {
		return false
	}
	t.Erase(it)
	return true
}

// moveItem moves the item at (src, sb, ss) to the free slot (dst, db, ds),
// raising the destination's version to the source's, and reports the move.
// The key bytes move too when the segments differ.
func (t *Table[V]) moveItem(src *segment[V], sb, ss uint8, dst *segment[V], db, ds uint8, probe bool) {
	b := &src.b[sb]
	off := b.off[ss]
	fp := b.fp[ss]
	var home uint8
	if sb >= regularBuckets {
		home = src.stashHome[sb-regularBuckets][ss]
	}
	si := int(sb)*slotsPerBucket + int(ss)
	v := src.vals[si]
	src.clearSlot(sb, ss)
	if dst != src {
		key := src.key(off)
		src.garbage += src.keySize(off)
		off = dst.appendKey(key)
	}
	dst.place(db, ds, fp, off, probe)
	dst.vals[int(db)*slotsPerBucket+int(ds)] = v
	if db >= regularBuckets {
		dst.stashHome[db-regularBuckets][ds] = home
		dst.b[home].overflow[db-regularBuckets]++
	}
	dst.b[db].stamp(b.version)
	if t.onMove != nil {
		t.recordMove(src, sb, ss, dst, db, ds)
	}
}

// split divides s in two: the items whose next hash bit is 1 move to a new
// segment, each to the same bucket and slot it had, so placement always
// succeeds and a move changes only the segment part of the position. Each
// new bucket starts with the version of the old bucket at its index, which
// is the max over its only possible source. The old segment keeps its
// cursor base, so bucket identities in the lower half survive.
func (t *Table[V]) split(s *segment[V]) {
	if s.depth >= maxDepth {
		panic("dash: segment split beyond maximum depth")
	}
	if s.depth == t.depth {
		dir := make([]*segment[V], 2*len(t.dir))
		for i := range dir {
			dir[i] = t.dir[i>>1]
		}
		t.dir = dir
		t.depth++
	}
	old := s.depth
	s.depth++
	n := t.newSegment(s.depth, s.base|Cursor(1)<<(cursorWidth-s.depth))
	shift := 63 - old
	var move [bucketsPerSeg]uint16 // slots whose item goes to n
	moved := 0
	for bi := range s.b {
		b := &s.b[bi]
		n.b[bi].version = b.version
		for m := b.busy; m != 0; m &= m - 1 {
			i := bits.TrailingZeros16(m)
			if Hash(s.key(b.off[i]))>>shift&1 == 1 {
				move[bi] |= 1 << i
				moved += s.keySize(b.off[i])
			}
		}
	}
	n.arena = make([]byte, 0, moved+moved/4+64)
	for bi := range s.b {
		b := &s.b[bi]
		for m := move[bi]; m != 0; m &= m - 1 {
			i := uint8(bits.TrailingZeros16(m))
			t.moveItem(s, uint8(bi), i, n, uint8(bi), i, b.probe&(1<<i) != 0)
		}
	}
	// Both halves now have room: bring stash items home so probes rarely
	// need the stash.
	t.unloadStash(s)
	t.unloadStash(n)
	if s.garbage > 0 {
		s.compact(0)
	}
	start := int(s.base >> (cursorWidth - t.depth))
	span := 1 << (t.depth - old)
	for i := start + span/2; i < start+span; i++ {
		t.dir[i] = n
	}
}

// reserveFill is the items per segment Reserve plans for: 70% of its
// slots. Segments of uniformly hashed keys split at about 85-95% fill, and
// a segment's share of n keys varies by its square root (24 at 588).
const reserveFill = slotsPerSeg * 7 / 10

// MaxReserve bounds what Reserve prepares for: the count comes from
// outside (an RDB file's RESIZEDB), and 1<<22 items is 8192 segments,
// about 200 MiB of empty structure.
const MaxReserve = 1 << 22

// Reserve prepares the table for n items in all (at most MaxReserve): it
// splits segments until there are enough for n at reserveFill, and has
// each segment's key arena grow in one step to what its share of n needs
// (estimated from the keys it holds when it first grows). Inserting n
// uniformly hashed keys into an empty table then splits nothing and
// copies each segment's keys about once, where growing splits every
// segment about log2(n/500) times, moving half its items each time, and
// compacts its arena at every 25% of growth. On a table holding items
// it does now the splits that Inserts would do later, reporting the
// moves (OnMove) like theirs; it never lowers a version.
func (t *Table[V]) Reserve(n int) {
	n = min(n, MaxReserve)
	d := uint8(0)
	for n>>d > reserveFill {
		d++
	}
	for i := 0; i < len(t.segs); i++ { // split appends the new halves
		for t.segs[i].depth < d {
			t.split(t.segs[i])
		}
	}
	t.flushMoves()
	per := n >> d
	for _, s := range t.segs {
		if s.depth == d && s.count < per {
			s.hint = per
		}
	}
}

// unloadStash moves every stash item of s that fits into its home bucket
// or its neighbour there, reporting the moves.
func (t *Table[V]) unloadStash(s *segment[V]) {
	for k := uint8(0); k < stashBuckets; k++ {
		sb := regularBuckets + k
		for m := s.b[sb].busy; m != 0; m &= m - 1 {
			i := uint8(bits.TrailingZeros16(m))
			home := s.stashHome[k][i]
			if f := s.b[home].free(); f != 0 {
				t.moveItem(s, sb, i, s, home, uint8(bits.TrailingZeros16(f)), false)
			} else if nb := nextBucket(home); s.b[nb].free() != 0 {
				t.moveItem(s, sb, i, s, nb, uint8(bits.TrailingZeros16(s.b[nb].free())), true)
			}
		}
	}
}

// Random returns some item chosen from r, or an invalid Iterator when the
// table is empty.
func (t *Table[V]) Random(r uint64) Iterator {
	if t.size == 0 {
		return Iterator{}
	}
	n := uint64(len(t.segs))
	first := r % n
	start := int((r >> 32) % slotsPerSeg)
	for j := uint64(0); j <= n; j++ {
		s := t.segs[(first+j)%n]
		if s.count == 0 {
			continue
		}
		for k := 0; k < slotsPerSeg; k++ {
			p := (start + k) % slotsPerSeg
			bid, slot := uint8(p/slotsPerBucket), uint8(p%slotsPerBucket)
			if s.b[bid].busy&(1<<slot) != 0 {
				return Iterator{seg: s.id, bid: bid, slot: slot, valid: true}
			}
		}
	}
	return Iterator{}
}

// MemUsage approximates the bytes the table's structure holds: segments,
// key arenas, directory. Values' own out-of-line memory is not counted.
func (t *Table[V]) MemUsage() int {
	n := len(t.segs) * int(unsafe.Sizeof(segment[V]{}))
	for _, s := range t.segs {
		n += cap(s.arena)
	}
	n += (cap(t.dir) + cap(t.segs)) * int(unsafe.Sizeof(uintptr(0)))
	n += cap(t.moves) * int(unsafe.Sizeof(Move{}))
	return n
}
