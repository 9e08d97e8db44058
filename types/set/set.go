package set

import (
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/dfly/dfly/types/hash"
	"github.com/dfly/dfly/types/num"
)

// maxIntsetEntries is set-max-intset-entries (CONFIG SET), read on every
// insertion; Redis's default.
var maxIntsetEntries = func() *atomic.Int64 {
	var a atomic.Int64
	a.Store(512)
	return &a
}()

// MaxIntsetEntries is the most members an intset holds.
func MaxIntsetEntries() int64 { return maxIntsetEntries.Load() }

// SetMaxIntsetEntries changes MaxIntsetEntries for later insertions.
func SetMaxIntsetEntries(n int64) { maxIntsetEntries.Store(n) }

// Set is a Redis set.
type Set struct {
	ints []int64   // intset form when m == nil
	m    *hash.Map // hashtable form
}

// New returns an empty set in intset form.
func New() *Set { return &Set{} }

// Encoding is the name OBJECT ENCODING reports.
func (s *Set) Encoding() string {
	if s.m != nil {
		return "hashtable"
	}
	return "intset"
}

// Len is the number of members.
func (s *Set) Len() int {
	if s.m != nil {
		return s.m.Len()
	}
	return len(s.ints)
}

// IsIntset reports the intset form.
func (s *Set) IsIntset() bool { return s.m == nil }

func (s *Set) convert() {
	m := &hash.Map{}
	var buf [24]byte
	for _, v := range s.ints {
		m.Set(strconv.AppendInt(buf[:0], v, 10), nil)
	}
	s.m, s.ints = m, nil
}

// Add inserts member and reports whether it is new.
func (s *Set) Add(member []byte) bool {
	if s.m == nil {
		if v, ok := num.ParseInt(member); ok {
			i, found := slices.BinarySearch(s.ints, v)
			if found {
				return false
			}
			s.ints = slices.Insert(s.ints, i, v)
			if int64(len(s.ints)) > maxIntsetEntries.Load() {
				s.convert()
			}
			return true
		}
		s.convert()
	}
	return s.m.Set(member, nil)
}

// Remove deletes member and reports whether it was present.
func (s *Set) Remove(member []byte) bool {
	if s.m != nil {
		return s.m.Delete(member)
	}
	v, ok := num.ParseInt(member)
	if !ok {
		return false
	}
	i, found := slices.BinarySearch(s.ints, v)
	if found {
		s.ints = slices.Delete(s.ints, i, i+1)
	}
	return found
}

// Contains reports whether member is in the set.
func (s *Set) Contains(member []byte) bool {
	if s.m != nil {
		return s.m.Contains(member)
	}
	v, ok := num.ParseInt(member)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(s.ints, v)
	return found
}

// Range calls fn for every member (intset: ascending) until it returns
// false. fn must not mutate the set; member is valid during the call only.
func (s *Set) Range(fn func(member []byte) bool) {
	if s.m != nil {
		s.m.Range(func(f, _ []byte) bool { return fn(f) })
		return
	}
	var buf [24]byte
	for _, v := range s.ints {
		if !fn(strconv.AppendInt(buf[:0], v, 10)) {
			return
		}
	}
}

// Scan is one SSCAN step (see hash.Map.Scan); an intset returns everything
// at once with next cursor 0, as Redis. It is also the resumable walk a
// snapshot uses for a hashtable set.
func (s *Set) Scan(cursor uint64, fn func(member []byte)) uint64 {
	if s.m != nil {
		return s.m.Scan(cursor, func(f, _ []byte) { fn(f) })
	}
	s.Range(func(m []byte) bool { fn(m); return true })
	return 0
}

// Random appends a member chosen from r to dst; the set must not be empty.
func (s *Set) Random(dst []byte, r uint64) []byte {
	if s.m != nil {
		f, _ := s.m.Random(r)
		return append(dst, f...)
	}
	return strconv.AppendInt(dst, s.ints[r%uint64(len(s.ints))], 10)
}

// Pop removes a member chosen from r and appends it to dst.
func (s *Set) Pop(dst []byte, r uint64) []byte {
	start := len(dst)
	if s.m == nil {
		i := int(r % uint64(len(s.ints)))
		dst = strconv.AppendInt(dst, s.ints[i], 10)
		s.ints = slices.Delete(s.ints, i, i+1)
		return dst
	}
	dst = s.Random(dst, r)
	s.m.Delete(dst[start:])
	return dst
}

// Ints is the intset's members, ascending (nil for a hashtable). Read only.
func (s *Set) Ints() []int64 {
	if s.m != nil {
		return nil
	}
	return s.ints
}

// Clone is a deep copy (shard.Cloner).
func (s *Set) Clone() any {
	if s.m != nil {
		return &Set{m: s.m.Clone()}
	}
	return &Set{ints: slices.Clone(s.ints)}
}

// Bytes is the memory the representation holds, roughly.
func (s *Set) Bytes() int {
	if s.m != nil {
		return s.m.Bytes() + 32
	}
	return 8*cap(s.ints) + 32
}
