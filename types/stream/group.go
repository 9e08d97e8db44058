package stream

import "sort"

// EntriesReadUnknown is a group's EntriesRead when its read counter is not
// known (Redis's SCG_INVALID_ENTRIES_READ).
const EntriesReadUnknown = -1

// Group is a consumer group.
type Group struct {
	Name   string
	LastID ID // last-delivered-id
	// EntriesRead is the logical read counter (entries-read), or
	// EntriesReadUnknown.
	EntriesRead int64
	pel         []Pending // by ID
	consumers   []*Consumer
}

// Pending is a PEL entry: delivered to Owner, not yet acknowledged.
type Pending struct {
	ID            ID
	DeliveryTime  int64 // unix ms of the last delivery
	DeliveryCount int64
	Owner         *Consumer
}

// Consumer is a group member with its own PEL (the IDs it owns).
type Consumer struct {
	Name     string
	SeenTime int64 // unix ms of the last command that named it
	pel      []ID
}

// Pending is the consumer's PEL, sorted (read only).
func (c *Consumer) Pending() []ID { return c.pel }

func searchIDs(ids []ID, id ID) int {
	return sort.Search(len(ids), func(i int) bool { return !ids[i].Less(id) })
}

func (c *Consumer) add(id ID) {
	i := searchIDs(c.pel, id)
	if i < len(c.pel) && c.pel[i] == id {
		return
	}
	c.pel = append(c.pel, ID{})
	copy(c.pel[i+1:], c.pel[i:])
	c.pel[i] = id
}

func (c *Consumer) remove(id ID) {
	i := searchIDs(c.pel, id)
	if i < len(c.pel) && c.pel[i] == id {
		c.pel = append(c.pel[:i], c.pel[i+1:]...)
	}
}

// Groups are the stream's consumer groups, sorted by name (read only).
func (s *Stream) Groups() []*Group { return s.groups }

func (s *Stream) searchGroup(name []byte) int {
	return sort.Search(len(s.groups), func(i int) bool { return s.groups[i].Name >= string(name) })
}

// Group finds a group by name.
func (s *Stream) Group(name []byte) *Group {
	i := s.searchGroup(name)
	if i < len(s.groups) && s.groups[i].Name == string(name) {
		return s.groups[i]
	}
	return nil
}

// CreateGroup adds a group; ok=false when the name is taken.
func (s *Stream) CreateGroup(name []byte, last ID, entriesRead int64) (*Group, bool) {
	i := s.searchGroup(name)
	if i < len(s.groups) && s.groups[i].Name == string(name) {
		return s.groups[i], false
	}
	g := &Group{Name: string(name), LastID: last, EntriesRead: entriesRead}
	s.groups = append(s.groups, nil)
	copy(s.groups[i+1:], s.groups[i:])
	s.groups[i] = g
	return g, true
}

// DestroyGroup removes a group.
func (s *Stream) DestroyGroup(name []byte) bool {
	i := s.searchGroup(name)
	if i < len(s.groups) && s.groups[i].Name == string(name) {
		s.groups = append(s.groups[:i], s.groups[i+1:]...)
		return true
	}
	return false
}

// Consumers are the group's consumers, sorted by name (read only).
func (g *Group) Consumers() []*Consumer { return g.consumers }

func (g *Group) searchConsumer(name []byte) int {
	return sort.Search(len(g.consumers), func(i int) bool { return g.consumers[i].Name >= string(name) })
}

// Consumer finds a consumer by name.
func (g *Group) Consumer(name []byte) *Consumer {
	i := g.searchConsumer(name)
	if i < len(g.consumers) && g.consumers[i].Name == string(name) {
		return g.consumers[i]
	}
	return nil
}

// CreateConsumer adds a consumer seen at now; created=false (and the
// existing one) when the name is taken.
func (g *Group) CreateConsumer(name []byte, now int64) (c *Consumer, created bool) {
	i := g.searchConsumer(name)
	if i < len(g.consumers) && g.consumers[i].Name == string(name) {
		return g.consumers[i], false
	}
	c = &Consumer{Name: string(name), SeenTime: now}
	g.consumers = append(g.consumers, nil)
	copy(g.consumers[i+1:], g.consumers[i:])
	g.consumers[i] = c
	return c, true
}

// DeleteConsumer removes a consumer and its pending entries from the
// group PEL, returning how many it had.
func (g *Group) DeleteConsumer(name []byte) (pending int, ok bool) {
	i := g.searchConsumer(name)
	if i == len(g.consumers) || g.consumers[i].Name != string(name) {
		return 0, false
	}
	c := g.consumers[i]
	for _, id := range c.pel {
		if j, found := g.FindPending(id); found {
			g.pel = append(g.pel[:j], g.pel[j+1:]...)
		}
	}
	g.consumers = append(g.consumers[:i], g.consumers[i+1:]...)
	return len(c.pel), true
}

// PendingLen is the size of the group PEL.
func (g *Group) PendingLen() int { return len(g.pel) }

// PendingAt is the i-th PEL entry by ID; the pointer is valid until the
// PEL changes.
func (g *Group) PendingAt(i int) *Pending { return &g.pel[i] }

// SeekPending is the index of the first PEL entry with ID >= id.
func (g *Group) SeekPending(id ID) int {
	return sort.Search(len(g.pel), func(i int) bool { return !g.pel[i].ID.Less(id) })
}

// FindPending is the PEL index of id.
func (g *Group) FindPending(id ID) (int, bool) {
	i := g.SeekPending(id)
	return i, i < len(g.pel) && g.pel[i].ID == id
}

// Ack removes id from the PEL and its owner's.
func (g *Group) Ack(id ID) bool {
	i, ok := g.FindPending(id)
	if !ok {
		return false
	}
	g.RemovePendingAt(i)
	return true
}

// RemovePendingAt drops the i-th PEL entry (and its owner's reference).
func (g *Group) RemovePendingAt(i int) {
	p := g.pel[i]
	if p.Owner != nil {
		p.Owner.remove(p.ID)
	}
	g.pel = append(g.pel[:i], g.pel[i+1:]...)
}

// insertPending adds a PEL entry for id, which must be absent, at index i.
func (g *Group) insertPending(i int, p Pending) {
	g.pel = append(g.pel, Pending{})
	copy(g.pel[i+1:], g.pel[i:])
	g.pel[i] = p
	p.Owner.add(p.ID)
}

// Deliver records that id was delivered to c at now (XREADGROUP): a new
// PEL entry, or an existing one handed to c with its count reset to 1.
func (g *Group) Deliver(id ID, c *Consumer, now int64) {
	i, ok := g.FindPending(id)
	if !ok {
		g.insertPending(i, Pending{ID: id, DeliveryTime: now, DeliveryCount: 1, Owner: c})
		return
	}
	p := &g.pel[i]
	g.setOwner(p, c)
	p.DeliveryTime = now
	p.DeliveryCount = 1
}

func (g *Group) setOwner(p *Pending, c *Consumer) {
	if p.Owner == c {
		return
	}
	if p.Owner != nil {
		p.Owner.remove(p.ID)
	}
	p.Owner = c
	c.add(p.ID)
}

// Claim hands the PEL entry at i to c (XCLAIM, XAUTOCLAIM), setting its
// delivery time; retryCount >= 0 sets the delivery count, else incr adds
// one to it.
func (g *Group) Claim(i int, c *Consumer, deliveryTime, retryCount int64, incr bool) {
	p := &g.pel[i]
	g.setOwner(p, c)
	p.DeliveryTime = deliveryTime
	if retryCount >= 0 {
		p.DeliveryCount = retryCount
	} else if incr {
		p.DeliveryCount++
	}
}

// ForcePending creates a PEL entry for id owned by c (XCLAIM FORCE) with
// count 1 delivered at now, and returns its index; id must be absent.
func (g *Group) ForcePending(id ID, c *Consumer, now int64) int {
	i := g.SeekPending(id)
	g.insertPending(i, Pending{ID: id, DeliveryTime: now, DeliveryCount: 1, Owner: c})
	return i
}

// AddPending adds a PEL entry with no owner yet, for an RDB load: the
// loader then hands every such entry to its consumer with Own. false when
// id is already pending.
func (g *Group) AddPending(id ID, deliveryTime, deliveryCount int64) bool {
	i, found := g.FindPending(id)
	if found {
		return false
	}
	g.pel = append(g.pel, Pending{})
	copy(g.pel[i+1:], g.pel[i:])
	g.pel[i] = Pending{ID: id, DeliveryTime: deliveryTime, DeliveryCount: deliveryCount}
	return true
}

// Own gives the ownerless PEL entry id to c (RDB load); false when id is
// not pending or already owned.
func (g *Group) Own(c *Consumer, id ID) bool {
	i, found := g.FindPending(id)
	if !found || g.pel[i].Owner != nil {
		return false
	}
	g.pel[i].Owner = c
	c.add(id)
	return true
}

func (g *Group) clone() *Group {
	c := &Group{Name: g.Name, LastID: g.LastID, EntriesRead: g.EntriesRead}
	c.consumers = make([]*Consumer, len(g.consumers))
	byName := make(map[*Consumer]*Consumer, len(g.consumers))
	for i, old := range g.consumers {
		nc := &Consumer{Name: old.Name, SeenTime: old.SeenTime, pel: append([]ID(nil), old.pel...)}
		c.consumers[i] = nc
		byName[old] = nc
	}
	c.pel = append([]Pending(nil), g.pel...)
	for i := range c.pel {
		c.pel[i].Owner = byName[c.pel[i].Owner]
	}
	return c
}

// RangeHasTombstones reports whether an entry deleted by XDEL may lie in
// [start, end] (end nil = to the end), as Redis's streamRangeHasTombstones.
func (s *Stream) RangeHasTombstones(start ID, end *ID) bool {
	if s.length == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.MaxDeletedID.Less(s.FirstID()) {
		return false
	}
	e := MaxID
	if end != nil {
		e = *end
	}
	return !s.MaxDeletedID.Less(start) && !e.Less(s.MaxDeletedID)
}

// EstimateEntriesRead is the logical read counter of id (how many entries
// were added up to it), or EntriesReadUnknown, as Redis's
// streamEstimateDistanceFromFirstEverEntry.
func (s *Stream) EstimateEntriesRead(id ID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.LastID) < 1 {
		return s.EntriesAdded
	}
	switch id.Compare(s.LastID) {
	case 0:
		return s.EntriesAdded
	case 1:
		return EntriesReadUnknown
	}
	first := s.FirstID()
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(first) {
		switch id.Compare(first) {
		case -1:
			return s.EntriesAdded - int64(s.length)
		case 0:
			return s.EntriesAdded - int64(s.length) + 1
		}
	}
	return EntriesReadUnknown
}

// Lag is the number of entries the group has yet to read, ok=false when it
// cannot be told (XINFO's lag).
func (s *Stream) Lag(g *Group) (int64, bool) {
	if s.EntriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != EntriesReadUnknown && !s.RangeHasTombstones(g.LastID, nil) {
		return s.EntriesAdded - g.EntriesRead, true
	}
	if read := s.EstimateEntriesRead(g.LastID); read != EntriesReadUnknown {
		return s.EntriesAdded - read, true
	}
	return 0, false
}

// Advance moves the group's last delivered ID to id (a newly delivered
// entry greater than it), keeping EntriesRead as Redis does.
func (s *Stream) Advance(g *Group, id ID) {
	if !g.LastID.Less(id) {
		return
	}
	if g.EntriesRead != EntriesReadUnknown && !s.RangeHasTombstones(id, nil) {
		g.EntriesRead++
	} else if s.EntriesAdded != 0 {
		g.EntriesRead = s.EstimateEntriesRead(id)
	}
	g.LastID = id
}
