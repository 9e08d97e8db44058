package dash

import (
	"fmt"
	"math/bits"
)

// cursorWidth is the fixed width of a cursor: bucket id in bits 0..7,
// segment id aligned to the top of bits 8..39.
const cursorWidth = 40

// Cursor is the position of a physical bucket, and the resume point of a
// traversal. A segment of local depth L with prefix p (the top L hash bits
// its items share) has its buckets at p<<(40-L) | bucket. Because the
// segment id sits at the top of a fixed width, a segment keeps its cursors
// when it splits (p<<1 at depth L+1 is the same number) and its new half,
// (p<<1|1)<<(40-L-1), lies inside the old range. Cursor 0 is bucket 0 of the
// first segment: where a traversal starts, and what it returns at the end.
//
// A Cursor is also the bucket's identity, usable as a map key: stable for
// as long as the table is not cleared, across splits too. A split moves
// some items of bucket c into the new half's bucket at the same index (a
// different Cursor), so per-bucket state of a caller must not assume a
// bucket's items stay in it across a split; InsertChanges reports all 60
// buckets of a segment before an insert that splits it.
type Cursor uint64

// Bucket is the bucket index within its segment: 0..55 regular, 56..59 stash.
func (c Cursor) Bucket() uint8 { return uint8(c) }

// Segment is the directory index of the cursor's segment at global depth d.
func (c Cursor) Segment(depth uint8) uint64 { return uint64(c) >> (cursorWidth - depth) }

func (c Cursor) String() string {
	return fmt.Sprintf("%#x/%d", uint64(c)>>8, c.Bucket())
}

func makeCursor(sid uint64, depth uint8, bid uint8) Cursor {
	return Cursor(sid<<(cursorWidth-depth)) | Cursor(bid)
}

// Move is one item's change of position during a mutation, reported to the
// OnMove hook. It holds no pointers.
type Move struct {
	From, To         Cursor
	FromSlot, ToSlot uint8
}

// OnMove sets the hook told about every item that a mutation moves: by
// displacement, stash unload or split. It runs synchronously at the end of
// the Insert or Erase (the table is consistent again, the mutation done),
// once per mutation that moved something, with moves in a slice valid only
// during the call. Each moved item appears once, From its position before
// the mutation, To its position after it; the moves of one report are
// simultaneous (an item may move into a position another item of the same
// report left). The hook must not mutate the table. nil removes it.
func (t *Table[V]) OnMove(fn func(moves []Move)) { t.onMove = fn }

func (t *Table[V]) recordMove(src *segment[V], sb, ss uint8, dst *segment[V], db, ds uint8) {
	from, to := src.base|Cursor(sb), dst.base|Cursor(db)
	for _, id := range t.moveSegs {
		if id != src.id {
			continue
		}
		// The source may be where an earlier move of this report put an
		// item: extend that move instead of reporting a second one.
		for i := len(t.moves) - 1; i >= 0; i-- {
			m := &t.moves[i]
			if m.To == from && m.ToSlot == ss {
				m.To, m.ToSlot = to, ds
				if m.To == m.From && m.ToSlot == m.FromSlot {
					t.moves[i] = t.moves[len(t.moves)-1]
					t.moves = t.moves[:len(t.moves)-1]
				}
				t.noteMoveSeg(dst.id)
				return
			}
		}
		break
	}
	t.moves = append(t.moves, Move{From: from, To: to, FromSlot: ss, ToSlot: ds})
	t.noteMoveSeg(dst.id)
}

func (t *Table[V]) noteMoveSeg(id uint32) {
	for _, x := range t.moveSegs {
		if x == id {
			return
		}
	}
	t.moveSegs = append(t.moveSegs, id)
}

func (t *Table[V]) flushMoves() {
	if len(t.moves) == 0 && len(t.moveSegs) == 0 {
		return
	}
	if t.onMove != nil && len(t.moves) > 0 {
		t.onMove(t.moves)
	}
	t.moves = t.moves[:0]
	t.moveSegs = t.moveSegs[:0]
}

// resolve maps a cursor to its bucket. It panics on a cursor no table
// position has (callers pass cursors the table handed out).
func (t *Table[V]) resolve(c Cursor) (*segment[V], uint8) {
	return t.dir[c.Segment(t.depth)], c.Bucket()
}

// BucketOf is the cursor of the bucket holding it.
func (t *Table[V]) BucketOf(it Iterator) Cursor {
	return t.segs[it.seg].base | Cursor(it.bid)
}

// Slot is it's slot within its bucket.
func (it Iterator) Slot() uint8 { return it.slot }

// Version is the bucket's version: the max of the versions stamped on it by
// inserts, Bump and SetVersion, and of the buckets items moved in from.
func (t *Table[V]) Version(b Cursor) uint64 {
	s, bid := t.resolve(b)
	return s.b[bid].version
}

// SetVersion raises the bucket's version to v (a snapshot marks a bucket
// serialized this way). It never lowers it.
func (t *Table[V]) SetVersion(b Cursor, v uint64) {
	s, bid := t.resolve(b)
	s.b[bid].stamp(v)
}

// Occupied is the bitmap of the bucket's occupied slots.
func (t *Table[V]) Occupied(b Cursor) uint16 {
	s, bid := t.resolve(b)
	return s.b[bid].busy
}

// At is the item in slot of bucket b; invalid when the slot is free.
func (t *Table[V]) At(b Cursor, slot uint8) Iterator {
	s, bid := t.resolve(b)
	return Iterator{seg: s.id, bid: bid, slot: slot, valid: slot < slotsPerBucket && s.b[bid].busy&(1<<slot) != 0}
}

// ForEach calls fn for each occupied slot of bucket b, in slot order. fn
// must not mutate the table.
func (t *Table[V]) ForEach(b Cursor, fn func(it Iterator)) {
	s, bid := t.resolve(b)
	for m := s.b[bid].busy; m != 0; m &= m - 1 {
		fn(Iterator{seg: s.id, bid: bid, slot: uint8(bits.TrailingZeros16(m)), valid: true})
	}
}

// Visited reports whether a bucket traversal whose next cursor is cursor
// has already passed position pos (Dragonfly's IsPositionSerialized):
// bucket id first, then segment id at the current depth. With cursor 0 (a
// traversal not started) nothing is visited; a finished traversal also
// returns 0, so the caller tracks "done" itself.
func (t *Table[V]) Visited(pos, cursor Cursor) bool {
	if pb, cb := pos.Bucket(), cursor.Bucket(); pb != cb {
		return pb < cb
	}
	return pos.Segment(t.depth) < cursor.Segment(t.depth)
}

// TraverseBuckets calls fn with the next non-empty physical bucket at or
// after cursor and returns the cursor to resume from, 0 when done. Order:
// bucket-major (bucket 0 of every segment in directory order, then bucket
// 1, ..., then the stash buckets 56..59), so an item that never moves is
// visited exactly once even as segments split between calls: a split
// segment's new half lies inside its old directory range and keeps the
// bucket index of each moved item. An item moved (and reported to OnMove)
// from an unvisited to a visited position (Visited) is not visited; one
// moved the other way is visited twice. fn must not mutate the table.
func (t *Table[V]) TraverseBuckets(cursor Cursor, fn func(b Cursor)) Cursor {
	bid := cursor.Bucket()
	sid := cursor.Segment(t.depth)
	if bid >= bucketsPerSeg || sid >= uint64(len(t.dir)) {
		return 0
	}
	for {
		s := t.dir[sid]
		fetched := false
		if s.b[bid].busy != 0 {
			fn(s.base | Cursor(bid))
			fetched = true
		}
		sid = t.nextSegment(s)
		if sid >= uint64(len(t.dir)) {
			sid = 0
			bid++
			if bid >= bucketsPerSeg {
				return 0
			}
		}
		if fetched {
			return makeCursor(sid, t.depth, bid)
		}
	}
}

// nextSegment is the directory index after s's range.
func (t *Table[V]) nextSegment(s *segment[V]) uint64 {
	return (uint64(s.base) >> (cursorWidth - t.depth)) + 1<<(t.depth-s.depth)
}

// Traverse is one SCAN step: it calls fn for every item of the next
// non-empty logical bucket (the items whose home bucket is that index, in
// the home bucket, its neighbour or the stash) and returns the cursor to
// resume from; 0 starts and 0 means done. An item's logical bucket is fixed
// by its hash and a split keeps it, so every item present for the whole
// scan is returned at least once (exactly once unless the caller passes a
// cursor the table did not return). fn must not mutate the table.
func (t *Table[V]) Traverse(cursor uint64, fn func(it Iterator)) uint64 {
	c := Cursor(cursor)
	bid := c.Bucket()
	sid := c.Segment(t.depth)
	if bid >= regularBuckets || sid >= uint64(len(t.dir)) || uint64(c)>>cursorWidth != 0 {
		return 0
	}
	for {
		s := t.dir[sid]
		fetched := t.traverseLogical(s, bid, fn)
		sid = t.nextSegment(s)
		if sid >= uint64(len(t.dir)) {
			sid = 0
			bid++
			if bid >= regularBuckets {
				return 0
			}
		}
		if fetched {
			return uint64(makeCursor(sid, t.depth, bid))
		}
	}
}

func (t *Table[V]) traverseLogical(s *segment[V], home uint8, fn func(Iterator)) bool {
	fetched := false
	b := &s.b[home]
	for m := b.busy &^ b.probe; m != 0; m &= m - 1 {
		fn(Iterator{seg: s.id, bid: home, slot: uint8(bits.TrailingZeros16(m)), valid: true})
		fetched = true
	}
	nb := nextBucket(home)
	for m := s.b[nb].probe; m != 0; m &= m - 1 {
		fn(Iterator{seg: s.id, bid: nb, slot: uint8(bits.TrailingZeros16(m)), valid: true})
		fetched = true
	}
	if b.overflow != noOverflow {
		for k := uint8(0); k < stashBuckets; k++ {
			if b.overflow[k] == 0 {
				continue
			}
			for m := s.b[regularBuckets+k].busy; m != 0; m &= m - 1 {
				i := uint8(bits.TrailingZeros16(m))
				if s.stashHome[k][i] == home {
					fn(Iterator{seg: s.id, bid: regularBuckets + k, slot: i, valid: true})
					fetched = true
				}
			}
		}
	}
	return fetched
}

// InsertChanges appends to dst every bucket that Insert(key, ...) would
// change, in the current state: the bucket the key lands in, both buckets
// of a displacement, or all 60 buckets of a segment the insert must split
// (a double split only touches buckets that came from those). Nothing when
// key is present. This is Dragonfly's CVCUponInsert: a PIT snapshot
// serializes the ones it has not yet, then asks again until the answer is
// stable (serializing changes versions only, never placement, so with no
// other mutation in between the second answer equals the first).
func (t *Table[V]) InsertChanges(dst []Cursor, key string) []Cursor {
	h := Hash(key)
	s := t.segmentOf(h)
	if _, _, ok := s.find(s.arena, h, key); ok {
		return dst
	}
	p := s.plan(h)
	switch p.kind {
	case planDirect, planStash:
		dst = append(dst, s.base|Cursor(p.bid))
	case planDisplace:
		dst = append(dst, s.base|Cursor(p.from), s.base|Cursor(p.to))
	default:
		for bid := 0; bid < bucketsPerSeg; bid++ {
			dst = append(dst, s.base|Cursor(bid))
		}
	}
	return dst
}

// EraseChanges appends to dst every bucket that Erase(it) would change:
// it's bucket, and the stash bucket an item would be unloaded from.
func (t *Table[V]) EraseChanges(dst []Cursor, it Iterator) []Cursor {
	s := t.segs[it.seg]
	dst = append(dst, s.base|Cursor(it.bid))
	if it.bid < regularBuckets {
		// Erase frees the slot before it looks for a stash item; the
		// candidate does not depend on that slot.
		if k, _, ok := s.unloadCandidate(it.bid); ok {
			dst = append(dst, s.base|Cursor(k))
		}
	}
	return dst
}
