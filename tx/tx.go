package tx

import (
	"sort"

	"github.com/dfly/dfly/shard"
)

// Tx is one multi-shard operation. It is used by a single goroutine.
type Tx struct {
	shards []*shard.Shard
	parts  []*part
	done   chan struct{}
	locked bool
	// nested: an enclosing transaction (EXEC, a script) already holds every
	// lock this one needs; Lock takes nothing and Finish releases nothing.
	nested bool
	// local: the caller runs on this shard's goroutine (see Local);
	// sameOwner tells which other shards that goroutine owns too.
	local     *shard.Shard
	sameOwner func(a, b int) bool
}

// Nested starts a transaction inside one that holds all the locks, so
// commands written against the Tx API run unchanged within EXEC.
func Nested(shards []*shard.Shard) *Tx {
	t := New(shards)
	t.nested = true
	return t
}

// Local is Nested for code already running on shard s's goroutine (a
// script confined to one shard): steps on s run inline instead of as
// messages, which would wait for the very goroutine that sends them.
func Local(shards []*shard.Shard, s *shard.Shard, sameOwner func(a, b int) bool) *Tx {
	t := Nested(shards)
	t.local = s
	t.sameOwner = sameOwner
	return t
}

// inline reports whether work for shard sid must run in place: it is the
// local shard or one owned by the same goroutine.
func (t *Tx) inline(sid int) bool {
	return t.local != nil && (t.local.ID == sid || t.sameOwner(t.local.ID, sid))
}

type part struct {
	tx   *Tx
	sh   *shard.Shard
	keys []shard.KeyLock
	all  bool
	fn   func(*shard.Shard)
	step stepKind
	// granted: a stepTryLock took the keys.
	granted bool
}

type stepKind uint8

const (
	stepLock stepKind = iota
	stepTryLock
	stepRun
	stepRunRelease
	stepRelease
)

// New starts a transaction over the server's shards.
func New(shards []*shard.Shard) *Tx {
	return &Tx{shards: shards, done: make(chan struct{}, len(shards))}
}

func (t *Tx) part(sid int) *part {
	for _, p := range t.parts {
		if p.sh.ID == sid {
			return p
		}
	}
	p := &part{tx: t, sh: t.shards[sid]}
	t.parts = append(t.parts, p)
	return p
}

// Add declares a key the transaction reads (excl=false) or writes. A key
// declared twice is locked once, exclusively if either declaration was.
func (t *Tx) Add(sid, db int, key string, excl bool) {
	p := t.part(sid)
	for i := range p.keys {
		if p.keys[i].DB == db && p.keys[i].Key == key {
			p.keys[i].Excl = p.keys[i].Excl || excl
			return
		}
	}
	p.keys = append(p.keys, shard.KeyLock{DB: db, Key: key, Excl: excl})
}

// AddShard declares the whole shard (FLUSHALL, a snapshot's cut).
func (t *Tx) AddShard(sid int) { t.part(sid).all = true }

// AddAllShards declares every shard whole.
func (t *Tx) AddAllShards() {
	for i := range t.shards {
		t.AddShard(i)
	}
}

// Shards are the ids of the involved shards, ascending after Lock.
func (t *Tx) Shards() []int {
	ids := make([]int, len(t.parts))
	for i, p := range t.parts {
		ids[i] = p.sh.ID
	}
	return ids
}

// LockKeys and Resume make a part a shard.Waiter while it waits for locks.
func (p *part) LockKeys() ([]shard.KeyLock, bool) { return p.keys, p.all }

func (p *part) Resume(s *shard.Shard) {
	s.Acquire(p.keys, p.all)
	p.tx.done <- struct{}{}
}

func (p *part) Run(s *shard.Shard) {
	switch p.step {
	case stepLock:
		if s.TryLock(p) {
			p.tx.done <- struct{}{}
		}
		return
	case stepTryLock:
		if s.Available(p.keys) && (!p.all || s.Locks.Idle()) {
			s.Acquire(p.keys, p.all)
			p.granted = true
		}
	case stepRun:
		p.fn(s)
	case stepRunRelease:
		p.fn(s)
		s.Release(p.keys, p.all)
	case stepRelease:
		s.Release(p.keys, p.all)
	}
	p.tx.done <- struct{}{}
}

// Lock takes every declared lock, shard by shard in ascending id. It
// blocks until all are held.
func (t *Tx) Lock() {
	if t.nested {
		t.locked = true
		return
	}
	sort.Slice(t.parts, func(i, j int) bool { return t.parts[i].sh.ID < t.parts[j].sh.ID })
	if len(t.parts) > 1 && t.tryLockAll() {
		t.locked = true
		return
	}
	for _, p := range t.parts {
		p.step = stepLock
		p.sh.Send(p)
		<-t.done
	}
	t.locked = true
}

// tryLockAll asks every shard at once to take its keys if they are free
// right now, without waiting. When all grant, the transaction holds its
// locks after one parallel round trip instead of one per shard; otherwise
// it gives back what it got and Lock falls back to the ordered
// acquisition. No shard ever waits while the transaction holds another's
// locks here, so this cannot deadlock either.
func (t *Tx) tryLockAll() bool {
	for _, p := range t.parts {
		p.step, p.granted = stepTryLock, false
		p.sh.Send(p)
	}
	all := true
	for range t.parts {
		<-t.done
	}
	for _, p := range t.parts {
		all = all && p.granted
	}
	if all {
		return true
	}
	n := 0
	for _, p := range t.parts {
		if p.granted {
			p.step = stepRelease
			p.sh.Send(p)
			n++
		}
	}
	for ; n > 0; n-- {
		<-t.done
	}
	return false
}

// Run runs fn on shard sid, holding the transaction's locks, and waits.
func (t *Tx) Run(sid int, fn func(*shard.Shard)) {
	if t.inline(sid) {
		fn(t.shards[sid])
		return
	}
	p := t.part(sid)
	p.step, p.fn = stepRun, fn
	p.sh.Send(p)
	<-t.done
}

// RunAll runs fn on every involved shard in parallel and waits for all.
func (t *Tx) RunAll(fn func(*shard.Shard)) { t.runAll(stepRun, fn) }

// Finish runs fn on every involved shard in parallel, each releasing its
// locks right after its part, and waits. fn may be nil.
func (t *Tx) Finish(fn func(*shard.Shard)) {
	if t.nested {
		if fn != nil {
			t.runAll(stepRun, fn)
		}
		t.locked = false
		return
	}
	if fn == nil {
		t.runAll(stepRelease, nil)
	} else {
		t.runAll(stepRunRelease, fn)
	}
	t.locked = false
}

func (t *Tx) runAll(step stepKind, fn func(*shard.Shard)) {
	if t.local != nil {
		// Nested, so no step releases anything: run every part as a Run.
		for _, p := range t.parts {
			t.Run(p.sh.ID, fn)
		}
		return
	}
	for _, p := range t.parts {
		p.step, p.fn = step, fn
		p.sh.Send(p)
	}
	for range t.parts {
		<-t.done
	}
}
