package hash

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
)

// Map is an open-addressing (linear probing, backward-shift deletion) table
// of byte-string fields and values. Its slots are uint64s that locate an
// entry in a page and carry 28 bits of the field's hash; the entries
// themselves (uvarint field length, field, uvarint value length, value) are
// appended to pages of at most pageSize bytes. Updates and deletions leave
// dead bytes behind; a page more than half dead is evacuated, a bounded
// amount of work. The zero Map is empty and ready to use.
type Map struct {
	slots []uint64
	pages [][]byte
	dead  []uint32 // dead bytes per page
	free  []int32  // released page ids, for reuse
	tail  int32    // page new entries go to; -1 none (zero Map: see tailPage)
	n     int
	// tailSet is false for the zero Map, whose tail field means "none".
	tailSet bool
}

const (
	pageSize = 64 << 10 // an entry never starts beyond this offset
	bigEntry = pageSize / 4
	hashBits = 28
	pageBits = 20
	offBits  = 16
	minSlots = 8
	hashMask = 1<<hashBits - 1
	maxPages = 1<<pageBits - 1
)

var seed = maphash.MakeSeed()

func hashOf(b []byte) uint64 { return maphash.Bytes(seed, b) }

// A slot is [hash low 28 bits][page id + 1: 20 bits][offset: 16 bits]; 0 is empty.
func makeSlot(h uint64, page int32, off int) uint64 {
	return (h&hashMask)<<(pageBits+offBits) | uint64(page+1)<<offBits | uint64(off)
}
func slotPage(s uint64) int32 { return int32(s>>offBits&(1<<pageBits-1)) - 1 }
func slotOff(s uint64) int    { return int(s & (1<<offBits - 1)) }
func slotHash(s uint64) uint64 {
	return s >> (pageBits + offBits)
}

// Len is the number of fields.
func (m *Map) Len() int { return m.n }

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

func entrySize(f, v []byte) int {
	return uvarintLen(len(f)) + len(f) + uvarintLen(len(v)) + len(v)
}

// entryAt decodes the entry at off of page p.
func (m *Map) entryAt(p int32, off int) (f, v []byte, size int) {
	b := m.pages[p][off:]
	fl, n1 := binary.Uvarint(b)
	fe := n1 + int(fl)
	f = b[n1:fe:fe]
	vl, n2 := binary.Uvarint(b[fe:])
	ve := fe + n2 + int(vl)
	v = b[fe+n2 : ve : ve]
	return f, v, ve
}

func (m *Map) entry(s uint64) (f, v []byte, size int) { return m.entryAt(slotPage(s), slotOff(s)) }

func (m *Map) newPage(capacity int) int32 {
	var id int32
	if k := len(m.free); k > 0 {
		id = m.free[k-1]
		m.free = m.free[:k-1]
		m.pages[id] = make([]byte, 0, capacity)
		m.dead[id] = 0
	} else {
		if len(m.pages) >= maxPages {
			panic("hash: map exceeds its page limit")
		}
		id = int32(len(m.pages))
		m.pages = append(m.pages, make([]byte, 0, capacity))
		m.dead = append(m.dead, 0)
	}
	return id
}

func appendEntry(b, f, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	b = append(b, f...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// store appends an entry and returns where it went.
func (m *Map) store(f, v []byte) (int32, int) {
	size := entrySize(f, v)
	if size > bigEntry {
		id := m.newPage(size)
		m.pages[id] = appendEntry(m.pages[id], f, v)
		return id, 0
	}
	if !m.tailSet || len(m.pages[m.tail])+size > pageSize {
		m.tail, m.tailSet = m.newPage(max(64, size)), true
	}
	p := m.pages[m.tail]
	if len(p)+size > cap(p) {
		// Grow by doubling, but never past pageSize, so full pages carry no slack.
		np := make([]byte, len(p), min(pageSize, max(2*cap(p), len(p)+size)))
		copy(np, p)
		p = np
	}
	off := len(p)
	m.pages[m.tail] = appendEntry(p, f, v)
	return m.tail, off
}

// kill accounts size dead bytes in page p, releasing or evacuating the page
// once enough of it is garbage. The entry must no longer be referenced.
func (m *Map) kill(p int32, size int) {
	m.dead[p] += uint32(size)
	live := len(m.pages[p]) - int(m.dead[p])
	switch {
	case live == 0 && m.tailSet && p == m.tail:
		m.pages[p] = m.pages[p][:0]
		m.dead[p] = 0
	case live == 0:
		m.release(p)
	case m.tailSet && p == m.tail:
	case int(m.dead[p])*2 > len(m.pages[p]):
		m.evacuate(p)
	}
}

func (m *Map) release(p int32) {
	m.pages[p] = nil
	m.dead[p] = 0
	m.free = append(m.free, p)
}

// evacuate moves the live entries of page p to the tail and releases p: at
// most pageSize bytes of work.
func (m *Map) evacuate(p int32) {
	page := m.pages[p]
	for off := 0; off < len(page); {
		f, v, size := m.entryAt(p, off)
		h := hashOf(f)
		if i := m.find(f, h); i >= 0 && slotPage(m.slots[i]) == p && slotOff(m.slots[i]) == off {
			np, noff := m.store(f, v)
			m.slots[i] = makeSlot(h, np, noff)
		}
		off += size
	}
	m.release(p)
}

// home is the bucket a slot's entry hashes to in a table of mask+1 slots.
func (m *Map) home(s uint64, mask int) int {
	if mask <= hashMask {
		return int(slotHash(s)) & mask
	}
	f, _, _ := m.entry(s)
	return int(hashOf(f)) & mask
}

// find returns the slot index holding f, or -1.
func (m *Map) find(f []byte, h uint64) int {
	if m.n == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	hb := h & hashMask
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return -1
		}
		if slotHash(s) == hb {
			if ef, _, _ := m.entry(s); bytes.Equal(ef, f) {
				return i
			}
		}
	}
}

// Get returns f's value; it aliases the map until its next mutation.
func (m *Map) Get(f []byte) ([]byte, bool) {
	i := m.find(f, hashOf(f))
	if i < 0 {
		return nil, false
	}
	_, v, _ := m.entry(m.slots[i])
	return v, true
}

// Contains reports whether f is present.
func (m *Map) Contains(f []byte) bool { return m.find(f, hashOf(f)) >= 0 }

// Set stores v under f and reports whether f is new.
func (m *Map) Set(f, v []byte) bool {
	h := hashOf(f)
	if i := m.find(f, h); i >= 0 {
		old := m.slots[i]
		_, ov, size := m.entry(old)
		if len(ov) == len(v) {
			copy(ov, v)
			return false
		}
		p, off := m.store(f, v)
		m.slots[i] = makeSlot(h, p, off)
		m.kill(slotPage(old), size)
		return false
	}
	if (m.n+1)*4 > len(m.slots)*3 {
		m.resize(max(minSlots, 2*len(m.slots)))
	}
	p, off := m.store(f, v)
	mask := len(m.slots) - 1
	i := int(h) & mask
	for m.slots[i] != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = makeSlot(h, p, off)
	m.n++
	return true
}

// Delete removes f and reports whether it was present.
func (m *Map) Delete(f []byte) bool {
	i := m.find(f, hashOf(f))
	if i < 0 {
		return false
	}
	s := m.slots[i]
	_, _, size := m.entry(s)
	m.removeSlot(i)
	m.n--
	m.kill(slotPage(s), size)
	if m.n == 0 {
		*m = Map{}
	} else if len(m.slots) > minSlots && m.n*8 < len(m.slots) {
		m.resize(len(m.slots) / 2)
	}
	return true
}

// removeSlot empties slot i, shifting later members of its cluster back so
// that every entry stays reachable from its home without tombstones.
func (m *Map) removeSlot(i int) {
	mask := len(m.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		s := m.slots[j]
		if s == 0 {
			break
		}
		k := m.home(s, mask)
		// s may fill the hole at i unless its home lies cyclically in (i, j].
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			m.slots[i] = s
			i = j
		}
	}
	m.slots[i] = 0
}

func (m *Map) resize(size int) {
	old := m.slots
	m.slots = make([]uint64, size)
	mask := size - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := m.home(s, mask)
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}

// Range calls fn for every entry until it returns false. fn must not
// mutate the map.
func (m *Map) Range(fn func(f, v []byte) bool) {
	for _, s := range m.slots {
		if s != 0 {
			f, v, _ := m.entry(s)
			if !fn(f, v) {
				return
			}
		}
	}
}

// Scan visits the entries of one home bucket and returns the next cursor,
// 0 when the scan is complete. It is Redis's dictScan cursor (reversed-bit
// increment), so an entry present from the first call to the last is
// visited at least once even if the table grows or shrinks in between. A
// snapshot serializes a huge map a bucket at a time with it. fn must not
// mutate the map.
func (m *Map) Scan(cursor uint64, fn func(f, v []byte)) uint64 {
	if m.n == 0 {
		return 0
	}
	mask := len(m.slots) - 1
	b := int(cursor) & mask
	for i := b; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			break
		}
		if m.home(s, mask) == b {
			f, v, _ := m.entry(s)
			fn(f, v)
		}
	}
	cursor |= ^uint64(mask)
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// Random returns an entry chosen from r (a random number); the map must
// not be empty.
func (m *Map) Random(r uint64) (f, v []byte) {
	mask := len(m.slots) - 1
	for i := int(r) & mask; ; i = (i + 1) & mask {
		if s := m.slots[i]; s != 0 {
			f, v, _ = m.entry(s)
			return f, v
		}
	}
}

// Clone returns a compacted deep copy.
func (m *Map) Clone() *Map {
	c := &Map{}
	c.slots = make([]uint64, len(m.slots))
	for i, s := range m.slots {
		if s == 0 {
			continue
		}
		f, v, _ := m.entry(s)
		p, off := c.store(f, v)
		c.slots[i] = makeSlot(slotHash(s), p, off)
	}
	c.n = m.n
	return c
}

// Bytes is the memory the map holds: slots and page capacity.
func (m *Map) Bytes() int {
	n := 8*cap(m.slots) + 24*cap(m.pages) + 4*cap(m.dead)
	for _, p := range m.pages {
		n += cap(p)
	}
	return n
}
