package dash

import (
	"fmt"
	"math/bits"
)

// check verifies every structural invariant of t and returns the first
// violation found.
func (t *Table[V]) check() error {
	if len(t.dir) != 1<<t.depth {
		return fmt.Errorf("directory has %d entries at depth %d", len(t.dir), t.depth)
	}
	total := 0
	seen := make(map[string]bool)
	for id, s := range t.segs {
		if s.id != uint32(id) {
			return fmt.Errorf("segment %d has id %d", id, s.id)
		}
		if s.depth > t.depth {
			return fmt.Errorf("segment %d depth %d > global %d", id, s.depth, t.depth)
		}
		start := int(uint64(s.base) >> (cursorWidth - t.depth))
		span := 1 << (t.depth - s.depth)
		if uint64(s.base)&(1<<(cursorWidth-s.depth)-1) != 0 {
			return fmt.Errorf("segment %d base %v not aligned to depth %d", id, s.base, s.depth)
		}
		for i := start; i < start+span; i++ {
			if t.dir[i] != s {
				return fmt.Errorf("dir[%d] is not segment %d (range %d+%d)", i, id, start, span)
			}
		}
		prefix := uint64(s.base) >> (cursorWidth - s.depth)
		var overflow [regularBuckets][stashBuckets]int
		count, live := 0, 0
		for bi := range s.b {
			b := &s.b[bi]
			if b.busy&^fullMask != 0 || b.probe&^b.busy != 0 {
				return fmt.Errorf("seg %d bucket %d: busy %#x probe %#x", id, bi, b.busy, b.probe)
			}
			if bi >= regularBuckets && b.probe != 0 {
				return fmt.Errorf("seg %d stash bucket %d has probe bits", id, bi)
			}
			for m := b.busy; m != 0; m &= m - 1 {
				i := bits.TrailingZeros16(m)
				key := s.key(b.off[i])
				h := Hash(key)
				count++
				live += s.keySize(b.off[i])
				if seen[key] {
					return fmt.Errorf("key %q twice", key)
				}
				seen[key] = true
				if s.depth > 0 && h>>(64-s.depth) != prefix {
					return fmt.Errorf("key %q in segment %d with prefix %#x depth %d", key, id, prefix, s.depth)
				}
				if b.fp[i] != uint8(h) {
					return fmt.Errorf("key %q fingerprint", key)
				}
				home := homeBucket(h)
				switch {
				case bi >= regularBuckets:
					if s.stashHome[bi-regularBuckets][i] != home {
						return fmt.Errorf("key %q stash home %d want %d", key, s.stashHome[bi-regularBuckets][i], home)
					}
					overflow[home][bi-regularBuckets]++
				case b.probe&(1<<i) == 0:
					if uint8(bi) != home {
						return fmt.Errorf("key %q in bucket %d home %d without probe bit", key, bi, home)
					}
				default:
					if uint8(bi) != nextBucket(home) {
						return fmt.Errorf("key %q in bucket %d home %d with probe bit", key, bi, home)
					}
				}
				if it := t.Find(key); !it.valid || it.seg != uint32(id) || it.bid != uint8(bi) || it.slot != uint8(i) {
					return fmt.Errorf("Find(%q) = %+v, stored at seg %d bucket %d slot %d", key, it, id, bi, i)
				}
			}
		}
		for bi := 0; bi < regularBuckets; bi++ {
			for k := 0; k < stashBuckets; k++ {
				if int(s.b[bi].overflow[k]) != overflow[bi][k] {
					return fmt.Errorf("seg %d bucket %d overflow %v want %v", id, bi, s.b[bi].overflow, overflow[bi])
				}
			}
		}
		if count != s.count {
			return fmt.Errorf("seg %d count %d want %d", id, s.count, count)
		}
		if live+s.garbage != len(s.arena) {
			return fmt.Errorf("seg %d arena: live %d + garbage %d != %d", id, live, s.garbage, len(s.arena))
		}
		total += count
	}
	if total != t.size {
		return fmt.Errorf("Len %d, counted %d", t.size, total)
	}
	return nil
}

// contents returns every item's key and value pointer.
func (t *Table[V]) contents() map[string]V {
	m := make(map[string]V, t.size)
	for _, s := range t.segs {
		for bi := range s.b {
			for mm := s.b[bi].busy; mm != 0; mm &= mm - 1 {
				i := bits.TrailingZeros16(mm)
				m[s.key(s.b[bi].off[i])] = s.vals[bi*slotsPerBucket+i]
			}
		}
	}
	return m
}
