package hash

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
)

// The conversion thresholds, hash-max-listpack-entries and
// hash-max-listpack-value (CONFIG SET), read on every write; redis-server
// 7.0's built-in defaults (its shipped redis.conf lowers the entries to
// 128).
var maxListpackEntries, maxListpackValue = newLimit(512), newLimit(64)

func newLimit(n int64) *atomic.Int64 {
	var a atomic.Int64
	a.Store(n)
	return &a
}

// MaxListpackEntries is the most fields a listpack hash holds.
func MaxListpackEntries() int64 { return maxListpackEntries.Load() }

// MaxListpackValue is the longest field or value a listpack hash holds.
func MaxListpackValue() int64 { return maxListpackValue.Load() }

// SetMaxListpackEntries changes MaxListpackEntries for later writes.
func SetMaxListpackEntries(n int64) { maxListpackEntries.Store(n) }

// SetMaxListpackValue changes MaxListpackValue for later writes.
func SetMaxListpackValue(n int64) { maxListpackValue.Store(n) }

// Hash is a Redis hash: a packed listpack while small, a Map beyond.
type Hash struct {
	lp []byte // listpack entries, as Map's page entries, in insertion order
	n  int    // entries in lp
	m  *Map   // non-nil once converted
}

// New returns an empty hash in listpack form.
func New() *Hash { return &Hash{} }

// Encoding is the name OBJECT ENCODING reports.
func (h *Hash) Encoding() string {
	if h.m != nil {
		return "hashtable"
	}
	return "listpack"
}

// Len is the number of fields.
func (h *Hash) Len() int {
	if h.m != nil {
		return h.m.Len()
	}
	return h.n
}

// lpEntry decodes the listpack entry at off.
func lpEntry(b []byte, off int) (f, v []byte, next int) {
	fl, n1 := binary.Uvarint(b[off:])
	fs := off + n1
	fe := fs + int(fl)
	vl, n2 := binary.Uvarint(b[fe:])
	vs := fe + n2
	ve := vs + int(vl)
	return b[fs:fe:fe], b[vs:ve:ve], ve
}

// uvarint is binary.Uvarint with a fast path for one-byte lengths.
func uvarint(b []byte) (int, int) {
	if b[0] < 0x80 {
		return int(b[0]), 1
	}
	v, n := binary.Uvarint(b)
	return int(v), n
}

// lpFind returns the offsets of f's entry and of the next one, or -1.
func (h *Hash) lpFind(f []byte) (start, end int) {
	b := h.lp
	for off := 0; off < len(b); {
		fl, n1 := uvarint(b[off:])
		fs := off + n1
		fe := fs + fl
		vl, n2 := uvarint(b[fe:])
		next := fe + n2 + vl
		if fl == len(f) && string(b[fs:fe]) == string(f) {
			return off, next
		}
		off = next
	}
	return -1, -1
}

// Get returns f's value; it aliases the hash until its next mutation.
func (h *Hash) Get(f []byte) ([]byte, bool) {
	if h.m != nil {
		return h.m.Get(f)
	}
	start, _ := h.lpFind(f)
	if start < 0 {
		return nil, false
	}
	_, v, _ := lpEntry(h.lp, start)
	return v, true
}

// Contains reports whether f is present.
func (h *Hash) Contains(f []byte) bool {
	if h.m != nil {
		return h.m.Contains(f)
	}
	start, _ := h.lpFind(f)
	return start >= 0
}

// Set stores v under f and reports whether f is new. A field or value
// longer than MaxListpackValue, or more entries than MaxListpackEntries
// after the write, converts a listpack hash.
func (h *Hash) Set(f, v []byte) bool {
	if h.m == nil && int64(max(len(f), len(v))) > maxListpackValue.Load() {
		h.convert()
	}
	if h.m != nil {
		return h.m.Set(f, v)
	}
	start, end := h.lpFind(f)
	added := start < 0
	if added {
		h.lp = appendEntry(h.lp, f, v)
		h.n++
	} else if _, ov, _ := lpEntry(h.lp, start); len(ov) == len(v) {
		copy(ov, v)
	} else {
		var buf [128]byte
		e := appendEntry(buf[:0], f, v)
		h.lp = replace(h.lp, start, end, e)
	}
	// An update converts too when the limit was lowered since (as Redis).
	if int64(h.n) > maxListpackEntries.Load() {
		h.convert()
	}
	return added
}

// replace swaps b[start:end] for e.
func replace(b []byte, start, end int, e []byte) []byte {
	d := len(e) - (end - start)
	if d > 0 {
		b = append(b, make([]byte, d)...)
		copy(b[end+d:], b[end:len(b)-d])
	} else if d < 0 {
		copy(b[end+d:], b[end:])
		b = b[:len(b)+d]
	}
	copy(b[start:], e)
	return b
}

func (h *Hash) convert() {
	m := &Map{}
	for off := 0; off < len(h.lp); {
		f, v, next := lpEntry(h.lp, off)
		m.Set(f, v)
		off = next
	}
	h.m, h.lp, h.n = m, nil, 0
}

// Delete removes f and reports whether it was present.
func (h *Hash) Delete(f []byte) bool {
	if h.m != nil {
		return h.m.Delete(f)
	}
	start, end := h.lpFind(f)
	if start < 0 {
		return false
	}
	h.lp = replace(h.lp, start, end, nil)
	h.n--
	return true
}

// Range calls fn for every field (listpack: in insertion order) until it
// returns false. fn must not mutate the hash.
func (h *Hash) Range(fn func(f, v []byte) bool) {
	if h.m != nil {
		h.m.Range(fn)
		return
	}
	for off := 0; off < len(h.lp); {
		f, v, next := lpEntry(h.lp, off)
		if !fn(f, v) {
			return
		}
		off = next
	}
}

// Scan is one HSCAN step from cursor: a listpack returns everything at
// once (cursor 0 next, as Redis), a Map one bucket (see Map.Scan). It is
// also the resumable walk a snapshot uses.
func (h *Hash) Scan(cursor uint64, fn func(f, v []byte)) uint64 {
	if h.m != nil {
		return h.m.Scan(cursor, fn)
	}
	h.Range(func(f, v []byte) bool { fn(f, v); return true })
	return 0
}

// Random returns a field chosen from r; the hash must not be empty.
func (h *Hash) Random(r uint64) (f, v []byte) {
	if h.m != nil {
		return h.m.Random(r)
	}
	i := int(r % uint64(h.n))
	for off := 0; ; i-- {
		f, v, next := lpEntry(h.lp, off)
		if i == 0 {
			return f, v
		}
		off = next
	}
}

// Clone is a deep copy (shard.Cloner).
func (h *Hash) Clone() any {
	if h.m != nil {
		return &Hash{m: h.m.Clone()}
	}
	return &Hash{lp: bytes.Clone(h.lp), n: h.n}
}

// Bytes is the memory the representation holds, roughly.
func (h *Hash) Bytes() int {
	if h.m != nil {
		return h.m.Bytes() + 48
	}
	return cap(h.lp) + 48
}
