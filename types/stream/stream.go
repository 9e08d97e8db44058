package stream

import (
	"encoding/binary"
	"errors"
	"sort"
)

// Node limits, Redis's stream-node-max-entries and stream-node-max-bytes
// defaults: approximate trimming (MAXLEN ~) removes whole nodes only, so
// these decide how close to the threshold it gets.
const (
	NodeMaxEntries = 100
	NodeMaxBytes   = 4096
)

// Errors of Stream.NextID.
var (
	ErrIDTooSmall = errors.New("stream: ID is equal or smaller than the stream top item")
	ErrExhausted  = errors.New("stream: the stream has exhausted the last possible ID")
)

// node is a packed run of entries. Entry i's bytes are
// data[ends[i-1]:ends[i]]: a uvarint pair count, then each field and value
// as a uvarint length and the bytes.
type node struct {
	ids  []ID
	ends []uint32
	data []byte
	// deleted counts entries removed from the node since it was created;
	// like the deleted-entries flag count of a Redis listpack, it counts
	// toward the node's fullness.
	deleted int
	// tail is the ID of the last entry appended to the node, deleted or
	// not: a Redis listpack keeps a deleted entry (flagged) until the
	// whole node goes, and approximate MINID trimming compares the
	// threshold with the node's last entry as stored, not its last live
	// one.
	tail ID
}

// newNode makes the node after prev for an entry of about size bytes. A
// stream that filled a node will likely fill the next one alike, so it is
// sized like prev up front instead of growing by doubling.
func newNode(prev *node, size int) *node {
	if prev == nil {
		return &node{data: make([]byte, 0, min(max(size, 256), NodeMaxBytes))}
	}
	entries := len(prev.ids) + prev.deleted
	return &node{
		ids:  make([]ID, 0, entries),
		ends: make([]uint32, 0, entries),
		data: make([]byte, 0, max(size, min(cap(prev.data), NodeMaxBytes))),
	}
}

func (n *node) start(i int) uint32 {
	if i == 0 {
		return 0
	}
	return n.ends[i-1]
}

func (n *node) entry(i int) Entry {
	return Entry{ID: n.ids[i], raw: n.data[n.start(i):n.ends[i]]}
}

func (n *node) first() ID { return n.ids[0] }
func (n *node) last() ID  { return n.ids[len(n.ids)-1] }

// removeRange drops entries [i, j) of the node.
func (n *node) removeRange(i, j int) {
	if i >= j {
		return
	}
	lo, hi := n.start(i), n.ends[j-1]
	shift := hi - lo
	n.data = append(n.data[:lo], n.data[hi:]...)
	for k := j; k < len(n.ends); k++ {
		n.ends[k] -= shift
	}
	n.ends = append(n.ends[:i], n.ends[j:]...)
	n.ids = append(n.ids[:i], n.ids[j:]...)
	n.deleted += j - i
}

func (n *node) clone() *node {
	return &node{
		ids:     append([]ID(nil), n.ids...),
		ends:    append([]uint32(nil), n.ends...),
		data:    append([]byte(nil), n.data...),
		deleted: n.deleted,
		tail:    n.tail,
	}
}

// Entry is a view of one stream entry, valid until the next mutation.
type Entry struct {
	ID  ID
	raw []byte
}

// Pairs is the number of field/value pairs.
func (e Entry) Pairs() int {
	n, _ := binary.Uvarint(e.raw)
	return int(n)
}

// Fields appends the entry's fields and values, alternating, to dst. The
// slices share the stream's memory.
func (e Entry) Fields(dst [][]byte) [][]byte {
	n, k := binary.Uvarint(e.raw)
	b := e.raw[k:]
	for i := uint64(0); i < 2*n; i++ {
		l, k := binary.Uvarint(b)
		b = b[k:]
		dst = append(dst, b[:l:l])
		b = b[l:]
	}
	return dst
}

// Stream is a stream value. The exported fields are the metadata Redis
// keeps (and RDB stores) beside the entries.
type Stream struct {
	nodes  []*node
	length int
	// LastID is the last generated ID (last-generated-id).
	LastID ID
	// MaxDeletedID is the greatest ID removed by XDEL (max-deleted-entry-id).
	MaxDeletedID ID
	// EntriesAdded counts every entry ever added (entries-added).
	EntriesAdded int64
	groups       []*Group
}

// New returns an empty stream.
func New() *Stream { return &Stream{} }

// Encoding is the OBJECT ENCODING name.
func (s *Stream) Encoding() string { return "stream" }

// Bytes estimates the memory the stream holds: its nodes, from samples of
// them spread over the stream (all when samples <= 0), and its consumer
// groups' pending entries.
func (s *Stream) Bytes(samples int) int {
	n := len(s.nodes)
	total := 8*cap(s.nodes) + 96
	if n > 0 {
		if samples <= 0 || samples > n {
			samples = n
		}
		var sum int
		for i := range samples {
			nd := s.nodes[i*n/samples]
			sum += 16*cap(nd.ids) + 4*cap(nd.ends) + cap(nd.data) + 80
		}
		total += sum * n / samples
	}
	for _, g := range s.groups {
		total += 64 + g.PendingLen()*64
	}
	return total
}

// Len is the number of entries.
func (s *Stream) Len() int { return s.length }

// Nodes is the number of packed nodes (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.nodes) }

// FirstID is the first entry's ID, 0-0 when empty (recorded-first-entry-id).
func (s *Stream) FirstID() ID {
	if len(s.nodes) == 0 {
		return ID{}
	}
	return s.nodes[0].first()
}

// LastEntryID is the last entry's ID, 0-0 when empty (Redis's
// streamLastValidID).
func (s *Stream) LastEntryID() ID {
	if len(s.nodes) == 0 {
		return ID{}
	}
	return s.nodes[len(s.nodes)-1].last()
}

// NextID picks the ID of a new entry as XADD does: explicit is the ID
// given (nil for "*"); seqGiven=false is the "ms-*" form.
func (s *Stream) NextID(now int64, explicit *ID, seqGiven bool) (ID, error) {
	if s.LastID == MaxID {
		return ID{}, ErrExhausted
	}
	var id ID
	switch {
	case explicit == nil:
		if ms := uint64(now); ms > s.LastID.Ms {
			id = ID{ms, 0}
		} else {
			id, _ = s.LastID.Next()
		}
	case !seqGiven && explicit.Ms == s.LastID.Ms:
		var ok bool
		if id, ok = s.LastID.Next(); !ok || id.Ms != s.LastID.Ms {
			return ID{}, ErrIDTooSmall
		}
	default:
		id = *explicit
	}
	if id.Compare(s.LastID) <= 0 {
		return ID{}, ErrIDTooSmall
	}
	return id, nil
}

// Append adds an entry with fields (field, value, field, value ...). id
// must be greater than LastID (see NextID).
func (s *Stream) Append(id ID, fields [][]byte) {
	size := binary.MaxVarintLen64
	for _, f := range fields {
		size += len(f) + binary.MaxVarintLen32
	}
	var n, prev *node
	if k := len(s.nodes); k > 0 {
		n, prev = s.nodes[k-1], s.nodes[k-1]
		if len(n.ids)+n.deleted >= NodeMaxEntries || len(n.data)+size > NodeMaxBytes {
			n = nil
		}
	}
	if n == nil {
		n = newNode(prev, size)
		s.nodes = append(s.nodes, n)
	}
	n.data = binary.AppendUvarint(n.data, uint64(len(fields)/2))
	for _, f := range fields {
		n.data = binary.AppendUvarint(n.data, uint64(len(f)))
		n.data = append(n.data, f...)
	}
	n.ids = append(n.ids, id)
	n.ends = append(n.ends, uint32(len(n.data)))
	n.tail = id
	s.length++
	s.LastID = id
	s.EntriesAdded++
}

// seek is the position of the first entry >= id: (len(nodes), 0) when none.
func (s *Stream) seek(id ID) (int, int) {
	ni := sort.Search(len(s.nodes), func(i int) bool { return !s.nodes[i].last().Less(id) })
	if ni == len(s.nodes) {
		return ni, 0
	}
	ids := s.nodes[ni].ids
	return ni, sort.Search(len(ids), func(j int) bool { return !ids[j].Less(id) })
}

// seekBefore is the position of the last entry <= id: ni = -1 when none.
func (s *Stream) seekBefore(id ID) (int, int) {
	ni := sort.Search(len(s.nodes), func(i int) bool { return id.Less(s.nodes[i].first()) }) - 1
	if ni < 0 {
		return -1, 0
	}
	ids := s.nodes[ni].ids
	return ni, sort.Search(len(ids), func(j int) bool { return id.Less(ids[j]) }) - 1
}

// Lookup finds the entry with ID id.
func (s *Stream) Lookup(id ID) (Entry, bool) {
	ni, ei := s.seek(id)
	if ni == len(s.nodes) || s.nodes[ni].ids[ei] != id {
		return Entry{}, false
	}
	return s.nodes[ni].entry(ei), true
}

// Exists reports whether an entry with ID id is present.
func (s *Stream) Exists(id ID) bool {
	_, ok := s.Lookup(id)
	return ok
}

// Delete removes the entry id (XDEL), updating MaxDeletedID.
func (s *Stream) Delete(id ID) bool {
	ni, ei := s.seek(id)
	if ni == len(s.nodes) || s.nodes[ni].ids[ei] != id {
		return false
	}
	n := s.nodes[ni]
	n.removeRange(ei, ei+1)
	if len(n.ids) == 0 {
		s.nodes = append(s.nodes[:ni], s.nodes[ni+1:]...)
	}
	s.length--
	if s.MaxDeletedID.Less(id) {
		s.MaxDeletedID = id
	}
	return true
}

// Iterator walks entries in a closed ID range, forward or backward. A
// mutation of the stream invalidates it.
type Iterator struct {
	s      *Stream
	ni, ei int
	bound  ID // end when forward, start when reverse
	rev    bool
}

// Range iterates the entries with start <= ID <= end; rev walks from end.
func (s *Stream) Range(start, end ID, rev bool) Iterator {
	it := Iterator{s: s, rev: rev}
	if rev {
		it.ni, it.ei = s.seekBefore(end)
		it.bound = start
	} else {
		it.ni, it.ei = s.seek(start)
		it.bound = end
	}
	return it
}

// Next returns the next entry, ok=false past the range.
func (it *Iterator) Next() (Entry, bool) {
	nodes := it.s.nodes
	if it.rev {
		for it.ni >= 0 && it.ei < 0 {
			it.ni--
			if it.ni >= 0 {
				it.ei = len(nodes[it.ni].ids) - 1
			}
		}
		if it.ni < 0 {
			return Entry{}, false
		}
		n := nodes[it.ni]
		if n.ids[it.ei].Less(it.bound) {
			it.ni = -1
			return Entry{}, false
		}
		e := n.entry(it.ei)
		it.ei--
		return e, true
	}
	for it.ni < len(nodes) && it.ei >= len(nodes[it.ni].ids) {
		it.ni++
		it.ei = 0
	}
	if it.ni >= len(nodes) {
		return Entry{}, false
	}
	n := nodes[it.ni]
	if it.bound.Less(n.ids[it.ei]) {
		it.ni = len(nodes)
		return Entry{}, false
	}
	e := n.entry(it.ei)
	it.ei++
	return e, true
}

// Cursor is a resumable position for walking a stream in chunks (the
// snapshot serializes a huge stream piece by piece). It resumes by ID, so
// it stays valid across mutations between chunks. The zero Cursor starts
// at the first entry.
type Cursor struct {
	next ID
	done bool
}

// Done reports that the walk has passed the last entry.
func (c Cursor) Done() bool { return c.done }

// Walk calls fn for up to max entries from c on, in ID order, and returns
// the cursor to continue from.
func (s *Stream) Walk(c Cursor, max int, fn func(Entry)) Cursor {
	if c.done {
		return c
	}
	it := s.Range(c.next, MaxID, false)
	for i := 0; i < max; i++ {
		e, ok := it.Next()
		if !ok {
			return Cursor{done: true}
		}
		fn(e)
		if c.next, ok = e.ID.Next(); !ok {
			return Cursor{done: true}
		}
	}
	if _, ok := it.Next(); !ok {
		return Cursor{done: true}
	}
	return c
}

// TrimStrategy selects how Trim trims.
type TrimStrategy uint8

const (
	TrimNone TrimStrategy = iota
	TrimMaxLen
	TrimMinID
)

// Trim describes a MAXLEN or MINID trim, as XADD and XTRIM take it.
type Trim struct {
	Strategy TrimStrategy
	MaxLen   int64
	MinID    ID
	// Approx (~) removes whole nodes only.
	Approx bool
	// Limit caps the entries removed (0 = no cap); a node that would cross
	// it is left alone.
	Limit int64
}

// Trim removes entries from the head as t says, like Redis's streamTrim,
// and returns how many. It does not touch MaxDeletedID (Redis 7.0 only
// records XDEL there).
// Trims reports whether Trim(t) would delete anything. It is Trim's first
// pass without the deletions: Trim deletes nothing exactly when its first
// node stops it before any removal.
func (s *Stream) Trims(t Trim) bool {
	if t.Strategy == TrimNone || len(s.nodes) == 0 {
		return false
	}
	if t.Strategy == TrimMaxLen && int64(s.length) <= t.MaxLen {
		return false
	}
	n := s.nodes[0]
	if t.Limit > 0 && int64(len(n.ids)) > t.Limit {
		return false
	}
	if t.Strategy == TrimMaxLen {
		if int64(s.length)-int64(len(n.ids)) >= t.MaxLen {
			return true // the whole node goes
		}
		return !t.Approx // over MaxLen: an exact trim removes the first entry
	}
	if n.tail.Less(t.MinID) {
		return true
	}
	return !t.Approx && n.ids[0].Less(t.MinID)
}

func (s *Stream) Trim(t Trim) int64 {
	if t.Strategy == TrimNone {
		return 0
	}
	var deleted int64
	for len(s.nodes) > 0 {
		if t.Strategy == TrimMaxLen && int64(s.length) <= t.MaxLen {
			break
		}
		n := s.nodes[0]
		entries := int64(len(n.ids))
		if t.Limit > 0 && deleted+entries > t.Limit {
			break
		}
		var whole bool
		if t.Strategy == TrimMaxLen {
			whole = int64(s.length)-entries >= t.MaxLen
		} else {
			whole = n.tail.Less(t.MinID)
		}
		if whole {
			s.nodes[0] = nil
			s.nodes = s.nodes[1:]
			s.length -= int(entries)
			deleted += entries
			continue
		}
		if t.Approx {
			break
		}
		k := 0
		for k < len(n.ids) {
			if t.Strategy == TrimMaxLen {
				if int64(s.length-k) <= t.MaxLen {
					break
				}
			} else if !n.ids[k].Less(t.MinID) {
				break
			}
			k++
		}
		n.removeRange(0, k)
		s.length -= k
		deleted += int64(k)
		if len(n.ids) == 0 {
			// Every live entry was below MinID, the node's deleted tail
			// was not. Redis keeps such a node, empty, until a later trim
			// or its last append; it holds nothing a reader sees, so it
			// goes now (the one difference: appends it would have taken
			// start a new node).
			s.nodes[0] = nil
			s.nodes = s.nodes[1:]
		}
		break
	}
	if len(s.nodes) == 0 {
		s.nodes = nil
	}
	return deleted
}

// Clone is a deep copy (COPY).
func (s *Stream) Clone() any {
	c := &Stream{length: s.length, LastID: s.LastID, MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded}
	c.nodes = make([]*node, len(s.nodes))
	for i, n := range s.nodes {
		c.nodes[i] = n.clone()
	}
	c.groups = make([]*Group, len(s.groups))
	for i, g := range s.groups {
		c.groups[i] = g.clone()
	}
	return c
}
