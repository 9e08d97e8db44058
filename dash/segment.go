package dash

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
)

const (
	slotsPerBucket = 14
	regularBuckets = 56
	stashBuckets   = 4
	bucketsPerSeg  = regularBuckets + stashBuckets  // 60
	slotsPerSeg    = bucketsPerSeg * slotsPerBucket // 840
	fullMask       = 1<<slotsPerBucket - 1

	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
)

// bucket is the pointer-free metadata of one physical bucket: 88 bytes for
// 14 slots. The slot's value lives in segment.vals, its key bytes in the
// segment's arena at off[slot].
type bucket struct {
	fp   [16]uint8 // low 8 bits of each slot's hash; bytes 14 and 15 are padding for the 2-word SWAR probe
	busy uint16    // bit i: slot i is occupied
	// probe bit i: slot i holds an item whose home is the previous bucket
	// (this bucket is its neighbour). Regular buckets only.
	probe uint16
	// overflow[k] counts items whose home is this (regular) bucket and that
	// live in stash bucket k. A probe looks only at stash buckets it counts.
	overflow [stashBuckets]uint8
	version  uint64
	off      [slotsPerBucket]uint32 // arena offset of the slot's key (uvarint length, then bytes)
}

// segment holds 60 buckets. Field order matters for the GC: the only
// pointer-holding fields (arena, and vals when V has pointers) come first,
// so the collector scans a prefix of the object and stops; the metadata
// after them is never scanned.
type segment[V any] struct {
	// arena holds the key bytes, append-only: a byte below len(arena) is never
	// written again (a compaction copies into a new array). Key returns
	// strings that alias it, which this keeps immutable.
	arena []byte
	vals  [slotsPerSeg]V
	meta
	garbage int    // arena bytes of keys no longer in the segment
	base    Cursor // cursor of bucket 0: prefix << (cursorWidth - depth); unchanged by a split of this segment
	id      uint32 // index in Table.segs
	depth   uint8  // local depth: the segment owns hashes whose top depth bits equal its prefix
	count   int    // occupied slots
	// hint: the items Table.Reserve planned for this segment; while it
	// holds fewer, its arena grows to their estimated size in one step.
	hint int
}

// meta is the pointer-free placement state of a segment. The probe path
// works on it (not on the generic segment) so it compiles to one copy.
type meta struct {
	b [bucketsPerSeg]bucket
	// stashHome[k][i] is the home bucket of the item in stash bucket k, slot i.
	stashHome [stashBuckets][slotsPerBucket]uint8
}

var noOverflow [stashBuckets]uint8

func homeBucket(h uint64) uint8 { return uint8(uint32(h>>8) % regularBuckets) }

func nextBucket(b uint8) uint8 {
	if b == regularBuckets-1 {
		return 0
	}
	return b + 1
}

func prevBucket(b uint8) uint8 {
	if b == 0 {
		return regularBuckets - 1
	}
	return b - 1
}

// matches returns a bitmap of the occupied slots whose fingerprint equals fp.
// It may include a slot whose fingerprint differs (the SWAR zero-byte test
// can flag the byte above a real match); callers compare keys anyway.
func (b *bucket) matches(fp uint8) uint32 {
	pat := uint64(fp) * lsb8
	lo := binary.LittleEndian.Uint64(b.fp[0:8]) ^ pat
	hi := binary.LittleEndian.Uint64(b.fp[8:16]) ^ pat
	lo = (lo - lsb8) &^ lo & msb8
	hi = (hi - lsb8) &^ hi & msb8
	if lo|hi == 0 {
		return 0
	}
	// Gather the high bit of each byte into one bit per slot.
	m := uint32((lo>>7)*0x0102040810204080>>56) | uint32((hi>>7)*0x0102040810204080>>56)<<8
	return m & uint32(b.busy)
}

func (b *bucket) free() uint16 { return ^b.busy & fullMask }

// keySize is the arena footprint of the key at off.
func (s *segment[V]) keySize(off uint32) int {
	n, w := binary.Uvarint(s.arena[off:])
	return w + int(n)
}

func (s *segment[V]) key(off uint32) string {
	a := s.arena[off:]
	n, w := uint64(a[0]), 1
	if n >= 0x80 {
		n, w = binary.Uvarint(a)
	}
	if n == 0 {
		return ""
	}
	return unsafe.String(&a[w], int(n))
}

// keyEqual reports whether the arena holds key at off.
func keyEqual(arena []byte, off uint32, key string) bool {
	a := arena[off:]
	if n := int(a[0]); n < 0x80 {
		return n == len(key) && len(a) > n && string(a[1:1+n]) == key
	}
	n, w := binary.Uvarint(a)
	return int(n) == len(key) && string(a[w:w+int(n)]) == key
}

func (m *meta) lookup(arena []byte, bid uint8, fp uint8, key string) (uint8, bool) {
	b := &m.b[bid]
	for mm := b.matches(fp); mm != 0; mm &= mm - 1 {
		i := bits.TrailingZeros32(mm)
		if i >= slotsPerBucket {
			break
		}
		off := b.off[i]
		if len(key) < 0x80 {
			// One-byte length prefix: equal lengths mean equal first bytes.
			a := arena[off:]
			if len(a) > len(key) && a[0] == byte(len(key)) && string(a[1:1+len(key)]) == key {
				return uint8(i), true
			}
		} else if keyEqual(arena, off, key) {
			return uint8(i), true
		}
	}
	return 0, false
}

// find returns the position of key (hash h) in the segment: its home
// bucket, the neighbour, and the stash when the home bucket has overflowed.
func (m *meta) find(arena []byte, h uint64, key string) (bid, slot uint8, ok bool) {
	home := homeBucket(h)
	fp := uint8(h)
	if slot, ok := m.lookup(arena, home, fp, key); ok {
		return home, slot, true
	}
	nb := nextBucket(home)
	if slot, ok := m.lookup(arena, nb, fp, key); ok {
		return nb, slot, true
	}
	if ov := m.b[home].overflow; ov != noOverflow {
		for k := uint8(0); k < stashBuckets; k++ {
			if ov[k] == 0 {
				continue
			}
			if slot, ok := m.lookup(arena, regularBuckets+k, fp, key); ok {
				return regularBuckets + k, slot, true
			}
		}
	}
	return 0, 0, false
}

// appendKey stores key in the arena and returns its offset.
func (s *segment[V]) appendKey(key string) uint32 {
	need := uvarintLen(len(key)) + len(key)
	if len(s.arena)+need > cap(s.arena) {
		extra := need
		if more := s.hint - s.count - 1; more > 0 {
			// Room for the keys Reserve announced, at the mean size of
			// those here (this one included).
			extra += more * (len(s.arena) - s.garbage + need) / (s.count + 1)
		}
		s.compact(extra)
	}
	off := len(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	s.arena = append(s.arena, key...)
	return uint32(off)
}

func uvarintLen(n int) int {
	return (bits.Len64(uint64(n)|1) + 6) / 7
}

// compact copies the live keys into a new array with room for extra more
// bytes plus growth slack, and drops the garbage. The old array is never
// written again, so strings Key handed out stay valid.
func (s *segment[V]) compact(extra int) {
	live := len(s.arena) - s.garbage
	want := live + extra
	c := want + want/4 + 64
	if c > math.MaxUint32 {
		if want > math.MaxUint32 {
			panic("dash: a segment's keys exceed 4 GiB")
		}
		c = math.MaxUint32
	}
	arena := make([]byte, 0, c)
	for bi := range s.b {
		b := &s.b[bi]
		for m := b.busy; m != 0; m &= m - 1 {
			i := bits.TrailingZeros16(m)
			off := b.off[i]
			n := s.keySize(off)
			b.off[i] = uint32(len(arena))
			arena = append(arena, s.arena[off:int(off)+n]...)
		}
	}
	s.arena = arena
	s.garbage = 0
}

// dropKey accounts the key at off as garbage, compacting when garbage
// dominates so a shrinking segment gives memory back.
func (s *segment[V]) dropKey(off uint32) {
	s.garbage += s.keySize(off)
	if s.garbage > 1024 && s.garbage*2 > len(s.arena) {
		s.compact(0)
	}
}

// place writes an item into a free slot. The caller keeps overflow and
// stashHome in step for stash slots.
func (s *segment[V]) place(bid, slot uint8, fp uint8, off uint32, probe bool) {
	b := &s.b[bid]
	bit := uint16(1) << slot
	b.busy |= bit
	if probe {
		b.probe |= bit
	} else {
		b.probe &^= bit
	}
	b.fp[slot] = fp
	b.off[slot] = off
	s.count++
}

// clearSlot marks a slot free and zeroes its value (so V's pointers, if any,
// are released). It leaves the key bytes to the caller's accounting.
func (s *segment[V]) clearSlot(bid, slot uint8) {
	b := &s.b[bid]
	bit := uint16(1) << slot
	b.busy &^= bit
	b.probe &^= bit
	var zero V
	s.vals[int(bid)*slotsPerBucket+int(slot)] = zero
	if bid >= regularBuckets {
		home := s.stashHome[bid-regularBuckets][slot]
		s.b[home].overflow[bid-regularBuckets]--
	}
	s.count--
}

// plan kinds: where an insert of a new key would go.
const (
	planDirect   = iota // a free slot in the home bucket or the neighbour
	planDisplace        // move one item to free a slot in home or neighbour
	planStash           // a free stash slot
	planSplit           // no room: the segment must split
)

type plan struct {
	kind      uint8
	bid, slot uint8 // the new key's position
	probe     bool  // the new key sits in its neighbour
	// displacement: the item at (from, slot) moves to (to, toSlot), with
	// toProbe its probe bit there
	from, to, toSlot uint8
	toProbe          bool
}

// plan decides where a new key with hash h goes. Insert and InsertChanges
// both use it, so the change hook reports exactly what Insert will touch.
func (s *meta) plan(h uint64) plan {
	home := homeBucket(h)
	nb := nextBucket(home)
	if f := s.b[home].free(); f != 0 {
		return plan{kind: planDirect, bid: home, slot: uint8(bits.TrailingZeros16(f))}
	}
	if f := s.b[nb].free(); f != 0 {
		return plan{kind: planDirect, bid: nb, slot: uint8(bits.TrailingZeros16(f)), probe: true}
	}
	// An item in home that lives there as its neighbour goes back to its own
	// home (the previous bucket).
	pv := prevBucket(home)
	if p := s.b[home].probe; p != 0 {
		if f := s.b[pv].free(); f != 0 {
			slot := uint8(bits.TrailingZeros16(p))
			return plan{kind: planDisplace, bid: home, slot: slot, from: home, to: pv, toSlot: uint8(bits.TrailingZeros16(f))}
		}
	}
	// An item whose home is the neighbour moves on to its own neighbour.
	nn := nextBucket(nb)
	if own := s.b[nb].busy &^ s.b[nb].probe; own != 0 {
		if f := s.b[nn].free(); f != 0 {
			slot := uint8(bits.TrailingZeros16(own))
			return plan{kind: planDisplace, bid: nb, slot: slot, probe: true, from: nb, to: nn, toSlot: uint8(bits.TrailingZeros16(f)), toProbe: true}
		}
	}
	for i := uint8(0); i < stashBuckets; i++ {
		k := regularBuckets + (home+i)%stashBuckets
		if f := s.b[k].free(); f != 0 {
			return plan{kind: planStash, bid: k, slot: uint8(bits.TrailingZeros16(f))}
		}
	}
	return plan{kind: planSplit}
}

// unloadCandidate finds a stash item that may move into regular bucket bid:
// one whose home is bid, or whose home is the previous bucket (bid is its
// neighbour). Erase and EraseChanges both use it.
func (s *meta) unloadCandidate(bid uint8) (k, slot uint8, ok bool) {
	pv := prevBucket(bid)
	if s.b[bid].overflow == noOverflow && s.b[pv].overflow == noOverflow {
		return 0, 0, false
	}
	for k := uint8(0); k < stashBuckets; k++ {
		if s.b[bid].overflow[k] == 0 && s.b[pv].overflow[k] == 0 {
			continue
		}
		b := &s.b[regularBuckets+k]
		for m := b.busy; m != 0; m &= m - 1 {
			i := uint8(bits.TrailingZeros16(m))
			if h := s.stashHome[k][i]; h == bid || h == pv {
				return regularBuckets + k, i, true
			}
		}
	}
	return 0, 0, false
}
