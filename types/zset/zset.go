package zset

import (
	"encoding/binary"
	"math"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/dfly/dfly/types/hash"
)

// The listpack limits, zset-max-listpack-entries and
// zset-max-listpack-value (CONFIG SET), read on every insertion; Redis's
// defaults.
var maxListpackEntries, maxListpackValue = newLimit(128), newLimit(64)

func newLimit(n int64) *atomic.Int64 {
	var a atomic.Int64
	a.Store(n)
	return &a
}

// MaxListpackEntries is the most members a listpack set holds.
func MaxListpackEntries() int64 { return maxListpackEntries.Load() }

// MaxListpackValue is the longest member a listpack set holds.
func MaxListpackValue() int64 { return maxListpackValue.Load() }

// SetMaxListpackEntries changes MaxListpackEntries for later insertions.
func SetMaxListpackEntries(n int64) { maxListpackEntries.Store(n) }

// SetMaxListpackValue changes MaxListpackValue for later insertions.
func SetMaxListpackValue(n int64) { maxListpackValue.Store(n) }

// Set is a sorted set. The zero value is not usable; see New.
type Set struct {
	small []entry // listpack form, sorted; unused when tree != nil
	tree  *tree
	// dict maps a member to its score (8 bytes, dictScore): a hash.Map,
	// whose Scan cursor is Redis's dictScan one (ZSCAN).
	dict *hash.Map
}

// New makes an empty set in the listpack form.
func New() *Set { return &Set{} }

// NewSkiplist makes an empty set in the skiplist form.
func NewSkiplist() *Set {
	return &Set{tree: newTree(), dict: &hash.Map{}}
}

// Bytes estimates the memory the set holds. The listpack form is counted
// whole; the skiplist form (a tree of entries and a dict by member) from
// the average member length of samples members spread over the ranks, all
// of them when samples <= 0, as Redis's MEMORY USAGE samples.
func (s *Set) Bytes(samples int) int {
	const entryBytes = 24     // member header and score
	const dictEntryBytes = 21 // a hash.Map slot (at 3/4 load), lengths, score
	if s.tree == nil {
		n := entryBytes*cap(s.small) + 24
		for _, e := range s.small {
			n += len(e.member)
		}
		return n
	}
	n := s.Len()
	if samples <= 0 || samples > n {
		samples = n
	}
	if samples == 0 {
		return 64
	}
	var sum int
	for i := range samples {
		m, _ := s.At(i * n / samples)
		sum += len(m)
	}
	return n*(entryBytes+dictEntryBytes) + 2*sum*n/samples + 64 // the tree's members and the dict's
}

// Len is the number of members.
func (s *Set) Len() int {
	if s.tree != nil {
		return s.tree.len()
	}
	return len(s.small)
}

// Encoding is the OBJECT ENCODING name of the form in use.
func (s *Set) Encoding() string {
	if s.tree != nil {
		return "skiplist"
	}
	return "listpack"
}

// Clone is a deep copy (shard.Cloner).
func (s *Set) Clone() any {
	c := &Set{}
	if s.tree == nil {
		c.small = append(make([]entry, 0, len(s.small)), s.small...)
		return c
	}
	c.tree = &tree{root: s.tree.root.clone()}
	c.dict = s.dict.Clone()
	return c
}

func (s *Set) smallIndex(member []byte) int {
	for i := range s.small {
		if s.small[i].member == string(member) {
			return i
		}
	}
	return -1
}

// Score is member's score; ok=false when it is not in the set.
func (s *Set) Score(member []byte) (score float64, ok bool) {
	if s.tree != nil {
		return s.dictScore(member)
	}
	if i := s.smallIndex(member); i >= 0 {
		return s.small[i].score, true
	}
	return 0, false
}

// Add sets member's score, inserting it when absent. It reports whether
// the member is new.
func (s *Set) Add(member []byte, score float64) (added bool) {
	if s.tree != nil {
		if old, ok := s.dictScore(member); ok {
			if old != score {
				m := s.memberString(member)
				s.tree.remove(&entry{m, old})
				s.tree.insert(entry{m, score})
				s.dictSet(member, score)
			}
			return false
		}
		s.dictSet(member, score)
		s.tree.insert(entry{string(member), score})
		return true
	}
	if i := s.smallIndex(member); i >= 0 {
		if s.small[i].score != score {
			e := s.small[i]
			s.small = append(s.small[:i], s.small[i+1:]...)
			e.score = score
			s.smallInsert(e)
		}
		return false
	}
	if int64(len(s.small)+1) > maxListpackEntries.Load() || int64(len(member)) > maxListpackValue.Load() {
		s.convert()
		return s.Add(member, score)
	}
	s.smallInsert(entry{string(member), score})
	return true
}

// memberString returns the set's own copy of member (present in dict), so
// re-inserting it does not allocate.
func (s *Set) memberString(member []byte) string {
	// The map's copy moves as its pages are compacted: find the tree's.
	score, _ := s.dictScore(member)
	r := s.tree.countBelow(func(e *entry) bool { return less(e, &entry{unsafeString(member), score}) })
	return s.tree.at(r).member
}

// dictScore is member's score in the skiplist form's dict.
func (s *Set) dictScore(member []byte) (float64, bool) {
	v, ok := s.dict.Get(member)
	if !ok {
		return 0, false
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v)), true
}

// dictSet sets member's score in the dict (in place when present).
func (s *Set) dictSet(member []byte, score float64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(score))
	s.dict.Set(member, b[:])
}

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (s *Set) smallInsert(e entry) {
	if e.score == 0 {
		// A listpack stores integral scores as integers: -0 reads back 0.
		e.score = 0
	}
	pos := sort.Search(len(s.small), func(k int) bool { return less(&e, &s.small[k]) })
	s.small = append(s.small, entry{})
	copy(s.small[pos+1:], s.small[pos:])
	s.small[pos] = e
}

// ToSkiplist switches a listpack set to the skiplist form for good, as
// Redis 7.0's SORT does to the sorted set it reads (OBJECT ENCODING then
// says skiplist). The members and scores stay the same.
func (s *Set) ToSkiplist() {
	if s.tree == nil {
		s.convert()
	}
}

// convert switches to the skiplist form.
func (s *Set) convert() {
	small := s.small
	s.small, s.tree, s.dict = nil, newTree(), &hash.Map{}
	for _, e := range small {
		s.tree.insert(e)
		s.dictSet(unsafeBytes(e.member), e.score)
	}
}

// Remove deletes member; it reports whether it was present.
func (s *Set) Remove(member []byte) bool {
	if s.tree != nil {
		score, ok := s.dictScore(member)
		if !ok {
			return false
		}
		s.tree.remove(&entry{unsafeString(member), score})
		s.dict.Delete(member)
		return true
	}
	i := s.smallIndex(member)
	if i < 0 {
		return false
	}
	copy(s.small[i:], s.small[i+1:])
	s.small[len(s.small)-1] = entry{}
	s.small = s.small[:len(s.small)-1]
	return true
}

// Rank is member's 0-based rank in ascending order, with its score.
func (s *Set) Rank(member []byte) (rank int, score float64, ok bool) {
	score, ok = s.Score(member)
	if !ok {
		return 0, 0, false
	}
	key := entry{unsafeString(member), score}
	return s.countBelow(func(e *entry) bool { return less(e, &key) }), score, true
}

func (s *Set) countBelow(pred func(e *entry) bool) int {
	if s.tree != nil {
		return s.tree.countBelow(pred)
	}
	return sort.Search(len(s.small), func(k int) bool { return !pred(&s.small[k]) })
}

// At is the member of rank r (0 ≤ r < Len) with its score.
func (s *Set) At(r int) (member string, score float64) {
	var e *entry
	if s.tree != nil {
		e = s.tree.at(r)
	} else {
		e = &s.small[r]
	}
	return e.member, e.score
}

// Ascend calls fn on members from rank from upwards until fn returns false
// or the set ends.
func (s *Set) Ascend(from int, fn func(member string, score float64) bool) {
	if from < 0 || from >= s.Len() {
		return
	}
	if s.tree != nil {
		s.tree.root.ascend(from, func(e *entry) bool { return fn(e.member, e.score) })
		return
	}
	for i := from; i < len(s.small); i++ {
		if !fn(s.small[i].member, s.small[i].score) {
			return
		}
	}
}

// Descend calls fn on members from rank from downwards until fn returns
// false or rank 0 is done.
func (s *Set) Descend(from int, fn func(member string, score float64) bool) {
	if from < 0 || from >= s.Len() {
		return
	}
	if s.tree != nil {
		s.tree.root.descend(from, func(e *entry) bool { return fn(e.member, e.score) })
		return
	}
	for i := from; i >= 0; i-- {
		if !fn(s.small[i].member, s.small[i].score) {
			return
		}
	}
}

// RemoveRange deletes the members of ranks start..end inclusive (clamped by
// the caller) and returns how many it deleted.
func (s *Set) RemoveRange(start, end int) int {
	if start > end {
		return 0
	}
	n := end - start + 1
	if s.tree == nil {
		s.small = append(s.small[:start], s.small[end+1:]...)
		clear(s.small[len(s.small):cap(s.small)])
		return n
	}
	for i := 0; i < n; i++ {
		e := *s.tree.at(start)
		s.tree.remove(&e)
		s.dict.Delete(unsafeBytes(e.member))
	}
	return n
}

// Shrink switches a skiplist set back to the listpack form when it fits
// (Redis's zsetConvertToListpackIfNeeded, used by the STORE commands).
func (s *Set) Shrink() {
	if s.tree == nil || int64(s.Len()) > maxListpackEntries.Load() {
		return
	}
	small := make([]entry, 0, s.Len())
	fits := true
	s.tree.root.ascend(0, func(e *entry) bool {
		if int64(len(e.member)) > maxListpackValue.Load() {
			fits = false
			return false
		}
		small = append(small, *e)
		return true
	})
	if fits {
		for i := range small {
			if small[i].score == 0 {
				small[i].score = 0 // see smallInsert
			}
		}
		s.small, s.tree, s.dict = small, nil, nil
	}
}

// ScoreRange is a closed, open or half-open interval of scores.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// Empty reports whether no score can be inside r.
func (r ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// ScoreSpan is the rank interval [start, end) of the members inside r.
func (s *Set) ScoreSpan(r ScoreRange) (start, end int) {
	start = s.countBelow(func(e *entry) bool {
		return e.score < r.Min || (r.MinEx && e.score == r.Min)
	})
	end = s.countBelow(func(e *entry) bool {
		return e.score < r.Max || (!r.MaxEx && e.score == r.Max)
	})
	return start, max(start, end)
}

// LexBound is one end of a lexicographic range: -inf, +inf, or a member
// included or excluded.
type LexBound struct {
	Value   string
	Inf     int // -1: "-", +1: "+", 0: Value
	Exclude bool
}

// LexRange is a range of members, meaningful when all scores are equal.
type LexRange struct{ Min, Max LexBound }

// Empty reports whether no member can be inside r.
func (r LexRange) Empty() bool {
	if r.Min.Inf == 1 || r.Max.Inf == -1 {
		return true
	}
	if r.Min.Inf != 0 || r.Max.Inf != 0 {
		return false
	}
	return r.Min.Value > r.Max.Value || (r.Min.Value == r.Max.Value && (r.Min.Exclude || r.Max.Exclude))
}

// belowMin reports whether m sorts before the range's minimum.
func (r LexRange) belowMin(m string) bool {
	switch r.Min.Inf {
	case -1:
		return false
	case 1:
		return true
	}
	return m < r.Min.Value || (r.Min.Exclude && m == r.Min.Value)
}

// upToMax reports whether m sorts at or before the range's maximum.
func (r LexRange) upToMax(m string) bool {
	switch r.Max.Inf {
	case -1:
		return false
	case 1:
		return true
	}
	return m < r.Max.Value || (!r.Max.Exclude && m == r.Max.Value)
}

// LexSpan is the rank interval [start, end) of the members inside r,
// walked from the low end (rev: from the high end, as ZREVRANGEBYLEX).
//
// A lexicographic range is only defined when all scores are equal, and
// then it is a binary search. With mixed scores Redis still answers: it
// walks the members in score order from one end to the first inside the
// range and on while they stay inside. Walking the same way, we give the
// answers a small (listpack) sorted set gives in Redis.
func (s *Set) LexSpan(r LexRange, rev bool) (start, end int) {
	n := s.Len()
	if n == 0 {
		return 0, 0
	}
	first, lo := s.At(0)
	last, hi := s.At(n - 1)
	if lo == hi {
		start = s.countBelow(func(e *entry) bool { return r.belowMin(e.member) })
		end = s.countBelow(func(e *entry) bool { return r.upToMax(e.member) })
		return start, max(start, end)
	}
	if !r.upToMax(first) || r.belowMin(last) {
		return 0, 0
	}
	// From the first member on the range's side of its near end, on while
	// members stay on the near side of its far end (Redis checks only
	// that end once it has started).
	if rev {
		end = n
		s.Descend(n-1, func(m string, _ float64) bool {
			if r.upToMax(m) {
				return false
			}
			end--
			return true
		})
		start = end
		s.Descend(end-1, func(m string, _ float64) bool {
			if r.belowMin(m) {
				return false
			}
			start--
			return true
		})
		return start, end
	}
	s.Ascend(0, func(m string, _ float64) bool {
		if !r.belowMin(m) {
			return false
		}
		start++
		return true
	})
	end = start
	s.Ascend(start, func(m string, _ float64) bool {
		if !r.upToMax(m) {
			return false
		}
		end++
		return true
	})
	return start, end
}

// Scan is one ZSCAN step: the skiplist form visits one bucket of its dict
// from cursor and returns the next (hash.Map.Scan: Redis's dictScan
// cursor, so a member present from the first call to the last is visited
// at least once however the set changes in between); the listpack form
// visits every member and returns 0, as Redis. fn must not mutate the set.
func (s *Set) Scan(cursor uint64, fn func(member []byte, score float64)) uint64 {
	if s.tree == nil {
		for _, e := range s.small {
			fn(unsafeBytes(e.member), e.score)
		}
		return 0
	}
	return s.dict.Scan(cursor, func(f, v []byte) {
		fn(f, math.Float64frombits(binary.LittleEndian.Uint64(v)))
	})
}

// Cursor is a position for Walk: after the member with this score.
type Cursor struct {
	Score  float64
	Member string
	Valid  bool // false: from the start
}

// Walk visits at most n members in ascending order starting after c, and
// returns the position to resume from (done when the set is exhausted).
// Positions are (score, member) keys, so a walk resumed after the set
// changed neither repeats nor skips the members that stayed.
func (s *Set) Walk(c Cursor, n int, fn func(member string, score float64)) (next Cursor, done bool) {
	from := 0
	if c.Valid {
		key := entry{c.Member, c.Score}
		from = s.countBelow(func(e *entry) bool { return !less(&key, e) })
	}
	seen := 0
	s.Ascend(from, func(m string, sc float64) bool {
		fn(m, sc)
		seen++
		next = Cursor{Score: sc, Member: m, Valid: true}
		return seen < n
	})
	if from+seen >= s.Len() {
		return next, true
	}
	next.Member = string([]byte(next.Member)) // outlives later mutations
	return next, false
}
