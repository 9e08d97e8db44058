package list

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync/atomic"
)

// fill is list-max-listpack-size (CONFIG SET), read on every push: -1..-5
// cap a node at 4..64 KiB, a positive n at n entries (and 8 KiB, Redis's
// safety limit). Lists stay "quicklist" whatever it is, as in Redis 7.0.
var fill = func() *atomic.Int64 {
	var a atomic.Int64
	a.Store(-2)
	return &a
}()

// Fill is list-max-listpack-size.
func Fill() int64 { return fill.Load() }

// SetFill changes list-max-listpack-size for later pushes.
func SetFill(n int64) { fill.Store(n) }

// compressDepth is list-compress-depth: stored for DEBUG OBJECT's
// ql_compressed; dfly compresses no node.
var compressDepth atomic.Int64

// CompressDepth is list-compress-depth.
func CompressDepth() int64 { return compressDepth.Load() }

// SetCompressDepth changes list-compress-depth.
func SetCompressDepth(n int64) { compressDepth.Store(n) }

// ListpackBytes is what the list's nodes take as Redis's listpacks (DEBUG
// OBJECT's ql_uncompressed_size): per node the 6-byte header and the end
// byte, per entry its encoding (an integer's 1 to 9 bytes, a string's
// length header and bytes) and its back-length.
func (l *List) ListpackBytes() int {
	total := 0
	for i := range l.nodes {
		b := l.nodes[i].data()
		total += 7
		for off := 0; off < len(b); {
			var v []byte
			v, off = next(b, off)
			n := lpEntryLen(v)
			total += n + lpBacklen(n)
		}
	}
	return total
}

// lpEntryLen is the listpack encoding's length of v: as an integer when it
// is one (Redis's lpStringToInt64), else as a string.
func lpEntryLen(v []byte) int {
	if n, ok := lpInt(v); ok {
		switch {
		case n >= 0 && n <= 127:
			return 1
		case n >= -4096 && n <= 4095:
			return 2
		case n >= -1<<15 && n < 1<<15:
			return 3
		case n >= -1<<23 && n < 1<<23:
			return 4
		case n >= -1<<31 && n < 1<<31:
			return 5
		}
		return 9
	}
	switch {
	case len(v) < 64:
		return 1 + len(v)
	case len(v) < 4096:
		return 2 + len(v)
	}
	return 5 + len(v)
}

// lpInt parses v as Redis's string2ll does: no sign but '-', no leading
// zeros, no spaces, within int64.
func lpInt(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	if len(v) == 1 && v[0] == '0' {
		return 0, true
	}
	neg, d := v[0] == '-', v
	if neg {
		d = v[1:]
	}
	if len(d) == 0 || d[0] < '1' || d[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' || u > (1<<64-1-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg && u <= 1<<63 {
		return -int64(u-1) - 1, true
	}
	if !neg && u < 1<<63 {
		return int64(u), true
	}
	return 0, false
}

// lpBacklen is the bytes of a listpack entry's back-length for an
// encoding of n bytes.
func lpBacklen(n int) int {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	}
	return 5
}

// nodeLimits are the most bytes and entries a node packs before a new one
// starts.
func nodeLimits() (size, count int) {
	f := fill.Load()
	if f < 0 {
		return 4096 << min(-f-1, 4), 1<<63 - 1
	}
	return 8 << 10, int(max(f, 1))
}

// node is one packed run of entries: buf[s:] holds them; buf[:s] is
// headroom so pushes at the head rarely copy.
type node struct {
	buf []byte
	s   int
	n   int
}

func (nd *node) data() []byte { return nd.buf[nd.s:] }

func (nd *node) set(b []byte) { nd.buf, nd.s = b, 0 }

// List is a Redis list. The zero List is empty.
type List struct {
	nodes []node
	n     int
}

// New returns an empty list.
func New() *List { return &List{} }

// Encoding is the name OBJECT ENCODING reports (Redis 7.0: always quicklist).
func (l *List) Encoding() string { return "quicklist" }

// Len is the number of elements.
func (l *List) Len() int { return l.n }

// NumNodes and Node expose the packed nodes for chunked serialization.
func (l *List) NumNodes() int { return len(l.nodes) }

// Node returns node i's packed bytes and element count (read only).
func (l *List) Node(i int) ([]byte, int) { return l.nodes[i].data(), l.nodes[i].n }

func uvarintLen(n int) int {
	k := 1
	for n >= 0x80 {
		n >>= 7
		k++
	}
	return k
}

func entrySize(n int) int { return 2*uvarintLen(n) + n }

// putEntry writes v's entry into dst, which is exactly entrySize long.
func putEntry(dst, v []byte) {
	k := binary.PutUvarint(dst, uint64(len(v)))
	copy(dst[k:], v)
	t := dst[k+len(v):]
	for i := 0; i < k; i++ {
		t[i] = dst[k-1-i]
	}
}

func appendEntry(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	b = append(b, v...)
	var tmp [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(tmp[:], uint64(len(v)))
	for i := k - 1; i >= 0; i-- {
		b = append(b, tmp[i])
	}
	return b
}

// next decodes the entry at off of b, returning it and the next offset.
func next(b []byte, off int) ([]byte, int) {
	n, k := binary.Uvarint(b[off:])
	s := off + k
	e := s + int(n)
	return b[s:e:e], e + k
}

// prev decodes the entry ending at end, returning it and its start.
func prev(b []byte, end int) ([]byte, int) {
	var n uint64
	var shift uint
	i := end - 1
	for {
		c := b[i]
		n |= uint64(c&0x7f) << shift
		shift += 7
		i--
		if c < 0x80 {
			break
		}
	}
	k := end - 1 - i
	e := i + 1
	s := e - int(n)
	return b[s:e:e], s - k
}

// PushLeft inserts v at the head.
func (l *List) PushLeft(v []byte) {
	size := entrySize(len(v))
	nodeSize, count := nodeLimits()
	if len(l.nodes) == 0 || len(l.nodes[0].data())+size > nodeSize || l.nodes[0].n >= count {
		l.nodes = slices.Insert(l.nodes, 0, node{})
	}
	nd := &l.nodes[0]
	if nd.s < size {
		d := nd.data()
		c := min(max(64, 2*len(d)+size), max(nodeSize, len(d)+size))
		buf := make([]byte, c)
		copy(buf[c-len(d):], d)
		nd.buf, nd.s = buf, c-len(d)
	}
	nd.s -= size
	putEntry(nd.buf[nd.s:nd.s+size], v)
	nd.n++
	l.n++
}

// PushRight inserts v at the tail.
func (l *List) PushRight(v []byte) {
	size := entrySize(len(v))
	last := len(l.nodes) - 1
	nodeSize, count := nodeLimits()
	if last < 0 || len(l.nodes[last].data())+size > nodeSize || l.nodes[last].n >= count {
		l.nodes = append(l.nodes, node{buf: make([]byte, 0, min(nodeSize, max(64, size)))})
		last++
	}
	nd := &l.nodes[last]
	if len(nd.buf)+size > cap(nd.buf) {
		d := nd.data()
		buf := make([]byte, len(d), min(max(2*len(d), len(d)+size), max(nodeSize, len(d)+size)))
		copy(buf, d)
		nd.set(buf)
	}
	nd.buf = appendEntry(nd.buf, v)
	nd.n++
	l.n++
}

// PopLeft removes and returns the head; ok=false when empty. The bytes
// alias the list until its next mutation.
func (l *List) PopLeft() ([]byte, bool) {
	if l.n == 0 {
		return nil, false
	}
	nd := &l.nodes[0]
	v, e := next(nd.data(), 0)
	nd.s += e
	nd.n--
	l.n--
	if nd.n == 0 {
		l.nodes = slices.Delete(l.nodes, 0, 1)
	}
	return v, true
}

// PopRight removes and returns the tail.
func (l *List) PopRight() ([]byte, bool) {
	if l.n == 0 {
		return nil, false
	}
	last := len(l.nodes) - 1
	nd := &l.nodes[last]
	v, s := prev(nd.data(), len(nd.data()))
	nd.buf = nd.buf[:nd.s+s]
	nd.n--
	l.n--
	if nd.n == 0 {
		l.nodes[last] = node{}
		l.nodes = l.nodes[:last]
	}
	return v, true
}

// locate finds element i (0 <= i < Len): its node and byte offset.
func (l *List) locate(i int) (ni, off int) {
	if i < l.n/2 {
		for ni = 0; i >= l.nodes[ni].n; ni++ {
			i -= l.nodes[ni].n
		}
	} else {
		back := l.n - i // 1-based from the tail
		for ni = len(l.nodes) - 1; back > l.nodes[ni].n; ni-- {
			back -= l.nodes[ni].n
		}
		i = l.nodes[ni].n - back
	}
	b := l.nodes[ni].data()
	if i <= l.nodes[ni].n/2 {
		for ; i > 0; i-- {
			_, off = next(b, off)
		}
		return ni, off
	}
	off = len(b)
	for k := l.nodes[ni].n - i; k > 0; k-- {
		_, off = prev(b, off)
	}
	return ni, off
}

// Index returns element i, counting from 0 at the head or -1 at the tail.
func (l *List) Index(i int) ([]byte, bool) {
	if i < 0 {
		i += l.n
	}
	if i < 0 || i >= l.n {
		return nil, false
	}
	ni, off := l.locate(i)
	v, _ := next(l.nodes[ni].data(), off)
	return v, true
}

// Iter is a position in a list that moves both ways; valid until the
// list's next mutation.
type Iter struct {
	l   *List
	ni  int
	off int
	i   int
}

// At returns an iterator at element i (0 <= i < Len).
func (l *List) At(i int) Iter {
	ni, off := l.locate(i)
	return Iter{l: l, ni: ni, off: off, i: i}
}

// Index is the iterator's element index.
func (it *Iter) Index() int { return it.i }

// Valid reports whether the iterator is on an element.
func (it *Iter) Valid() bool { return it.i >= 0 && it.i < it.l.n }

// Value is the element under the iterator.
func (it *Iter) Value() []byte {
	v, _ := next(it.l.nodes[it.ni].data(), it.off)
	return v
}

// Next moves toward the tail.
func (it *Iter) Next() {
	it.i++
	if it.i >= it.l.n {
		return
	}
	_, it.off = next(it.l.nodes[it.ni].data(), it.off)
	if it.off == len(it.l.nodes[it.ni].data()) {
		it.ni++
		it.off = 0
	}
}

// Prev moves toward the head.
func (it *Iter) Prev() {
	it.i--
	if it.i < 0 {
		return
	}
	if it.off == 0 {
		it.ni--
		it.off = len(it.l.nodes[it.ni].data())
	}
	_, it.off = prev(it.l.nodes[it.ni].data(), it.off)
}

// Range calls fn for elements start..stop (inclusive, already clamped to
// 0 <= start <= stop < Len) until it returns false.
func (l *List) Range(start, stop int, fn func(v []byte) bool) {
	if l.n == 0 || start > stop {
		return
	}
	for it := l.At(start); it.i <= stop; it.Next() {
		if !fn(it.Value()) {
			return
		}
	}
}

// splice replaces the entry at off of node ni (whose size is old bytes)
// with e (possibly empty), splitting the node if it grew past the node limits.
func (l *List) splice(ni, off, old int, e []byte, dn int) {
	nd := &l.nodes[ni]
	d := nd.data()
	b := make([]byte, 0, len(d)-old+len(e))
	b = append(b, d[:off]...)
	b = append(b, e...)
	b = append(b, d[off+old:]...)
	nd.set(b)
	nd.n += dn
	l.n += dn
	if nd.n == 0 {
		l.nodes = slices.Delete(l.nodes, ni, ni+1)
		return
	}
	if size, count := nodeLimits(); (len(b) > size || nd.n > count) && nd.n > 1 {
		l.split(ni)
	}
}

// split halves node ni by bytes.
func (l *List) split(ni int) {
	nd := l.nodes[ni]
	d := nd.data()
	off, k := 0, 0
	for off < len(d)/2 && k < nd.n-1 {
		_, off = next(d, off)
		k++
	}
	if k == 0 {
		_, off = next(d, 0)
		k = 1
	}
	left := node{buf: slices.Clone(d[:off]), n: k}
	right := node{buf: slices.Clone(d[off:]), n: nd.n - k}
	l.nodes[ni] = left
	l.nodes = slices.Insert(l.nodes, ni+1, right)
}

// Set replaces element i (0 <= i < Len).
func (l *List) Set(i int, v []byte) {
	ni, off := l.locate(i)
	_, end := next(l.nodes[ni].data(), off)
	l.splice(ni, off, end-off, appendEntry(nil, v), 0)
}

// Insert puts v before (or after) the first element equal to pivot and
// returns the new length, or -1 when pivot is absent.
func (l *List) Insert(pivot, v []byte, after bool) int {
	for ni := range l.nodes {
		b := l.nodes[ni].data()
		for off := 0; off < len(b); {
			e, end := next(b, off)
			if bytes.Equal(e, pivot) {
				at := off
				if after {
					at = end
				}
				l.splice(ni, at, 0, appendEntry(nil, v), 1)
				return l.n
			}
			off = end
		}
	}
	return -1
}

// Remove deletes up to count elements equal to v (count 0: all; negative:
// from the tail) and returns how many it removed.
func (l *List) Remove(count int, v []byte) int {
	limit := count
	if limit < 0 {
		limit = -limit
	}
	if limit == 0 {
		limit = l.n
	}
	removed := 0
	if count >= 0 {
		for ni := 0; ni < len(l.nodes) && removed < limit; {
			before := len(l.nodes)
			removed += l.filterNode(ni, v, limit-removed, false)
			if len(l.nodes) == before {
				ni++
			}
		}
		return removed
	}
	for ni := len(l.nodes) - 1; ni >= 0 && removed < limit; ni-- {
		removed += l.filterNode(ni, v, limit-removed, true)
	}
	return removed
}

// filterNode drops up to limit entries equal to v from node ni (from its
// end when fromTail), deleting the node if it empties.
func (l *List) filterNode(ni int, v []byte, limit int, fromTail bool) int {
	nd := &l.nodes[ni]
	d := nd.data()
	var offs []int // starts of matches, in order
	for off := 0; off < len(d); {
		e, end := next(d, off)
		if bytes.Equal(e, v) {
			offs = append(offs, off)
		}
		off = end
	}
	if len(offs) == 0 {
		return 0
	}
	if len(offs) > limit {
		if fromTail {
			offs = offs[len(offs)-limit:]
		} else {
			offs = offs[:limit]
		}
	}
	b := make([]byte, 0, len(d))
	prevEnd := 0
	for _, off := range offs {
		b = append(b, d[prevEnd:off]...)
		_, prevEnd = next(d, off)
	}
	b = append(b, d[prevEnd:]...)
	nd.set(b)
	nd.n -= len(offs)
	l.n -= len(offs)
	if nd.n == 0 {
		l.nodes = slices.Delete(l.nodes, ni, ni+1)
	}
	return len(offs)
}

// DropLeft removes the first k elements (k <= Len).
func (l *List) DropLeft(k int) {
	for k > 0 && len(l.nodes) > 0 {
		nd := &l.nodes[0]
		if nd.n <= k {
			k -= nd.n
			l.n -= nd.n
			l.nodes = slices.Delete(l.nodes, 0, 1)
			continue
		}
		off := 0
		for j := 0; j < k; j++ {
			_, off = next(nd.data(), off)
		}
		nd.set(slices.Clone(nd.data()[off:]))
		nd.n -= k
		l.n -= k
		return
	}
}

// DropRight removes the last k elements (k <= Len).
func (l *List) DropRight(k int) {
	for k > 0 && len(l.nodes) > 0 {
		last := len(l.nodes) - 1
		nd := &l.nodes[last]
		if nd.n <= k {
			k -= nd.n
			l.n -= nd.n
			l.nodes[last] = node{}
			l.nodes = l.nodes[:last]
			continue
		}
		d := nd.data()
		end := len(d)
		for j := 0; j < k; j++ {
			_, end = prev(d, end)
		}
		nd.buf = nd.buf[:nd.s+end]
		nd.n -= k
		l.n -= k
		return
	}
}

// Clone is a deep copy (shard.Cloner).
func (l *List) Clone() any {
	c := &List{nodes: make([]node, len(l.nodes)), n: l.n}
	for i, nd := range l.nodes {
		c.nodes[i] = node{buf: slices.Clone(nd.data()), n: nd.n}
	}
	return c
}

// Bytes is the memory the representation holds, roughly.
func (l *List) Bytes() int {
	n := 32*cap(l.nodes) + 32
	for _, nd := range l.nodes {
		n += cap(nd.buf)
	}
	return n
}
