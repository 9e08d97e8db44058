package lock

import (
	"slices"
	"time"
)

// Table is a set of named locks on one clock and epoch: the state machine
// a server spreads over its shards (each lock in its key's shard), kept in
// one map here for tests and as the model of a multi-name acquire.
type Table struct {
	Clock Clock
	Epoch uint32
	Locks map[string]*Lock
}

// NewTable is an empty table on clock c.
func NewTable(c Clock) *Table { return &Table{Clock: c, Locks: map[string]*Lock{}} }

// Lock is the named lock, made on first use.
func (t *Table) Lock(name string) *Lock {
	l := t.Locks[name]
	if l == nil {
		l = &Lock{}
		t.Locks[name] = l
	}
	return l
}

// SortNames sorts and deduplicates names: the order a multi-name acquire
// checks and grants them in.
func SortNames(names []string) []string {
	s := slices.Clone(names)
	slices.Sort(s)
	return slices.Compact(s)
}

// Acquire takes every name for r or none: it checks each in sorted order
// and grants only when all can be granted. Otherwise it returns the first
// name (sorted) that could not be granted and why: the one a waiting
// request queues on, holding nothing meanwhile, so multi-name requests
// cannot deadlock.
func (t *Table) Acquire(names []string, r Request) ([]Holder, Outcome, string, error) {
	now := t.Clock.Now()
	sorted := SortNames(names)
	for _, n := range sorted {
		out, err := t.Lock(n).CanGrant(t.requestFor(n, r), now)
		if err != nil || (out != Granted && out != Renewed) {
			return nil, out, n, err
		}
	}
	hs := make([]Holder, len(sorted))
	renewed := true
	for i, n := range sorted {
		h, out, err := t.Lock(n).Grant(t.requestFor(n, r), t.Epoch, now)
		if err != nil {
			panic("lock: grant refused after CanGrant allowed it")
		}
		if out == Granted {
			renewed = false
		}
		hs[i] = h
	}
	if renewed {
		return hs, Renewed, "", nil
	}
	return hs, Granted, "", nil
}

// requestFor: r's waiter id counts only on the lock it is queued on.
func (t *Table) requestFor(name string, r Request) Request {
	if r.Waiter != 0 && !slices.ContainsFunc(t.Lock(name).Waiters, func(w Waiter) bool { return w.ID == r.Waiter }) {
		r.Waiter = 0
	}
	return r
}

// FakeClock is a Clock that moves only when told.
type FakeClock struct{ T time.Duration }

func (c *FakeClock) Now() time.Duration      { return c.T }
func (c *FakeClock) Advance(d time.Duration) { c.T += d }
