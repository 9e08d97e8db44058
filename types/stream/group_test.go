package stream

import (
	"fmt"
	"slices"
	"testing"
)

// checkPEL verifies that the group PEL and the consumers' PELs agree.
func checkPEL(t *testing.T, g *Group, owners map[ID]string) {
	t.Helper()
	if g.PendingLen() != len(owners) {
		t.Fatalf("PEL has %d entries, model %d", g.PendingLen(), len(owners))
	}
	for i := 0; i < g.PendingLen(); i++ {
		p := g.PendingAt(i)
		if i > 0 && !g.PendingAt(i-1).ID.Less(p.ID) {
			t.Fatalf("PEL out of order at %d", i)
		}
		if owners[p.ID] != p.Owner.Name {
			t.Fatalf("%v owned by %q, model %q", p.ID, p.Owner.Name, owners[p.ID])
		}
		if g.Consumer([]byte(p.Owner.Name)) != p.Owner {
			t.Fatalf("%v owned by a consumer not in the group", p.ID)
		}
	}
	n := 0
	for ci, c := range g.Consumers() {
		if ci > 0 && g.Consumers()[ci-1].Name >= c.Name {
			t.Fatalf("consumers out of order")
		}
		if !slices.IsSortedFunc(c.Pending(), ID.Compare) {
			t.Fatalf("consumer %s PEL unsorted", c.Name)
		}
		for _, id := range c.Pending() {
			if owners[id] != c.Name {
				t.Fatalf("consumer %s lists %v owned by %q", c.Name, id, owners[id])
			}
		}
		n += len(c.Pending())
	}
	if n != len(owners) {
		t.Fatalf("consumers list %d entries, PEL %d", n, len(owners))
	}
}

func TestPELModel(t *testing.T) {
	rng := newRand(t)
	s := New()
	for i := 1; i <= 200; i++ {
		s.Append(ID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")})
	}
	g, _ := s.CreateGroup([]byte("g"), ID{}, 0)
	owners := map[ID]string{}
	counts := map[ID]int64{}
	names := []string{"a", "b", "c", "d", "e"}
	consumer := func(now int64) *Consumer {
		c, _ := g.CreateConsumer([]byte(names[rng.Intn(len(names))]), now)
		return c
	}
	for op := int64(0); op < 20000; op++ {
		id := ID{uint64(1 + rng.Intn(220)), 0}
		switch r := rng.Intn(100); {
		case r < 35:
			c := consumer(op)
			g.Deliver(id, c, op)
			owners[id], counts[id] = c.Name, 1
		case r < 55:
			_, want := owners[id]
			if g.Ack(id) != want {
				t.Fatalf("Ack(%v) disagrees with the model", id)
			}
			delete(owners, id)
		case r < 75:
			i, found := g.FindPending(id)
			if _, want := owners[id]; found != want {
				t.Fatalf("FindPending(%v) = %v", id, found)
			}
			c := consumer(op)
			if !found {
				i = g.ForcePending(id, c, op)
				counts[id] = 1
			}
			retry := int64(-1)
			if rng.Intn(3) == 0 {
				retry = rng.Int63n(10)
			}
			g.Claim(i, c, op, retry, true)
			if retry >= 0 {
				counts[id] = retry
			} else {
				counts[id]++
			}
			owners[id] = c.Name
			if p := g.PendingAt(i); p.DeliveryCount != counts[id] || p.DeliveryTime != op {
				t.Fatalf("Claim: count %d time %d, want %d %d", p.DeliveryCount, p.DeliveryTime, counts[id], op)
			}
		case r < 78:
			name := names[rng.Intn(len(names))]
			want := 0
			for _, o := range owners {
				if o == name {
					want++
				}
			}
			n, ok := g.DeleteConsumer([]byte(name))
			if ok && n != want || !ok && want != 0 {
				t.Fatalf("DeleteConsumer(%s) = %d %v, model %d", name, n, ok, want)
			}
			for id, o := range owners {
				if o == name {
					delete(owners, id)
				}
			}
		default:
			i := g.SeekPending(id)
			if i < g.PendingLen() && g.PendingAt(i).ID.Less(id) || i > 0 && !g.PendingAt(i-1).ID.Less(id) {
				t.Fatalf("SeekPending(%v) = %d", id, i)
			}
		}
		if op%500 == 0 {
			checkPEL(t, g, owners)
		}
	}
	checkPEL(t, g, owners)

	// A clone's PEL points at the clone's own consumers.
	cl := s.Clone().(*Stream)
	cg := cl.Group([]byte("g"))
	checkPEL(t, cg, owners)
	for i := 0; i < cg.PendingLen(); i++ {
		if cg.Consumer([]byte(cg.PendingAt(i).Owner.Name)) != cg.PendingAt(i).Owner {
			t.Fatal("clone's PEL owner is not the clone's consumer")
		}
	}
	for _, c := range cg.Consumers() {
		cg.DeleteConsumer([]byte(c.Name))
	}
	checkPEL(t, g, owners)
}

func TestGroups(t *testing.T) {
	s := New()
	for _, n := range []string{"m", "a", "z", "b"} {
		if _, ok := s.CreateGroup([]byte(n), ID{}, EntriesReadUnknown); !ok {
			t.Fatalf("create %s", n)
		}
	}
	if _, ok := s.CreateGroup([]byte("a"), ID{}, 0); ok {
		t.Fatal("duplicate group created")
	}
	var names []string
	for _, g := range s.Groups() {
		names = append(names, g.Name)
	}
	if fmt.Sprint(names) != "[a b m z]" {
		t.Fatalf("groups %v", names)
	}
	if !s.DestroyGroup([]byte("m")) || s.DestroyGroup([]byte("m")) || s.Group([]byte("m")) != nil {
		t.Fatal("DestroyGroup")
	}
}

// Lag and entries-read follow Redis 7.0 (values checked against
// redis-server in tests/testdata/streams.txt).
func TestLag(t *testing.T) {
	s := New()
	for i := 1; i <= 5; i++ {
		s.Append(ID{uint64(i), 0}, nil)
	}
	g, _ := s.CreateGroup([]byte("g"), ID{}, EntriesReadUnknown)
	if lag, ok := s.Lag(g); !ok || lag != 5 {
		t.Fatalf("lag of a new group at 0: %d %v", lag, ok)
	}
	s.Advance(g, ID{1, 0})
	s.Advance(g, ID{2, 0})
	if g.EntriesRead != 2 {
		t.Fatalf("entries read %d", g.EntriesRead)
	}
	s.Delete(ID{4, 0})
	if _, ok := s.Lag(g); ok {
		t.Fatal("lag known across a tombstone")
	}
	s.Advance(g, ID{3, 0})
	s.Advance(g, ID{5, 0})
	if lag, ok := s.Lag(g); !ok || lag != 0 || g.EntriesRead != 5 {
		t.Fatalf("lag at the end: %d %v read %d", lag, ok, g.EntriesRead)
	}
}

// An RDB load builds the PEL ownerless first, then hands entries out.
func TestLoadPEL(t *testing.T) {
	s := New()
	g, _ := s.CreateGroup([]byte("g"), ID{9, 0}, 3)
	for _, ms := range []uint64{5, 1, 3} {
		if !g.AddPending(ID{ms, 0}, int64(ms*100), int64(ms)) {
			t.Fatal("AddPending")
		}
	}
	if g.AddPending(ID{3, 0}, 0, 0) {
		t.Fatal("duplicate AddPending")
	}
	a, _ := g.CreateConsumer([]byte("a"), 7)
	b, _ := g.CreateConsumer([]byte("b"), 8)
	if !g.Own(a, ID{1, 0}) || !g.Own(b, ID{3, 0}) || !g.Own(a, ID{5, 0}) {
		t.Fatal("Own")
	}
	if g.Own(b, ID{5, 0}) || g.Own(b, ID{4, 0}) {
		t.Fatal("Own of an owned or absent entry")
	}
	checkPEL(t, g, map[ID]string{{1, 0}: "a", {3, 0}: "b", {5, 0}: "a"})
	if p := g.PendingAt(2); p.ID != (ID{5, 0}) || p.DeliveryTime != 500 || p.DeliveryCount != 5 {
		t.Fatalf("PEL entry %+v", p)
	}
}
