package shard

// KeyLock names one key a command or transaction reads (shared) or writes
// (exclusive) in database DB.
type KeyLock struct {
	DB   int
	Key  string
	Excl bool
}

// Waiter is work parked on the lock table: a batch of commands that found
// a key busy, or a transaction waiting to take its locks. Keys must stay the
// same while the waiter is parked.
type Waiter interface {
	// LockKeys are the keys the waiter needs; All means the whole shard.
	LockKeys() (keys []KeyLock, all bool)
	// Resume runs on the shard goroutine once the keys are available.
	Resume(s *Shard)
}

type lockState struct {
	shared int32
	excl   bool
	// parked counts waiters in the queue that need this key: while it is
	// non-zero, newcomers queue behind them (FIFO per key).
	parked int32
	// resv is the ready pass (locks.pass) in which an earlier waiter of
	// the queue reserved this key, so that later ones wait behind it.
	resv uint64
}

// queued is a parked waiter with its keys and their lock states, looked
// up once when it parks: a state stays in the table while its parked
// count is non-zero, so ready passes read them without a map look-up.
type queued struct {
	w      Waiter
	keys   []KeyLock
	states []*lockState // states[i] is keys[i]'s
	all    bool
	// shared: the waiter wants every key of the shard shared (parkShared);
	// it has no states.
	shared bool
}

// locks is the shard's key-lock table. Locks are held by multi-shard
// transactions between their lock and unlock steps; single-shard commands
// run to completion on the shard goroutine, so they only check.
//
// Deadlock freedom: a transaction takes its shards' locks one shard at a
// time in ascending shard order, and all of one shard's keys at once; it
// never waits for a lock of a lower shard while holding a higher one. So
// the waits-for graph follows shard order and has no cycle. The server's
// hop groups (server/multi_hop.go) take keys out of that order, but only
// when they are free (Available, then Acquire), and never wait for any
// lock while they hold one: they add no edge to the graph.
//
// A shard-wide shared hold (allShared, AcquireShared) is a shared lock of
// every key of the shard at once, for a transaction reading many of them:
// it costs a counter instead of a map entry per key. It conflicts with
// every exclusive key lock (exclKeys counts those held) and with the
// exclusive hold of the whole shard, as a shared lock of each key would.
type locks struct {
	dbs       []map[string]*lockState
	allHeld   bool
	allShared int32
	exclKeys  int
	// allParked counts parked waiters that want the whole shard, shared
	// or exclusively: newcomers queue behind them.
	allParked int32
	// active is held key locks plus parked waiters: zero means every key is
	// free, the fast path that skips all map look-ups.
	active int
	queue  []queued
	// pass numbers the ready passes (lockState.resv).
	pass uint64
	// free: lockStates of keys no longer locked, reused so that taking a
	// lock allocates nothing once the table has warmed up.
	free []*lockState
}

// maxFreeStates bounds free.
const maxFreeStates = 1024

// newState is a zero lockState.
func (l *locks) newState() *lockState {
	if n := len(l.free); n > 0 {
		st := l.free[n-1]
		l.free = l.free[:n-1]
		return st
	}
	return &lockState{}
}

func (l *locks) table(db int) map[string]*lockState {
	for len(l.dbs) <= db {
		l.dbs = append(l.dbs, nil)
	}
	m := l.dbs[db]
	if m == nil {
		m = make(map[string]*lockState)
		l.dbs[db] = m
	}
	return m
}

func (l *locks) state(db int, key string) *lockState {
	if db >= len(l.dbs) || l.dbs[db] == nil {
		return nil
	}
	return l.dbs[db][key]
}

// Idle reports that no lock is held and nothing is parked.
func (l *locks) Idle() bool { return l.active == 0 }

// available reports whether key can be taken now by a newcomer, which must
// queue behind parked waiters of the same key.
func (l *locks) available(db int, key string, excl bool) bool {
	if l.allHeld || l.allParked > 0 {
		return false
	}
	if excl && l.allShared > 0 {
		return false
	}
	st := l.state(db, key)
	if st == nil {
		return true
	}
	return !st.excl && !(excl && st.shared > 0) && st.parked == 0
}

// sharedAvailable reports whether a newcomer may hold every key of the
// shard shared now: no exclusive holder, and no parked waiter at all (the
// waiters behind a shared hold are writers, which readers arriving one
// after another would otherwise starve).
func (l *locks) sharedAvailable() bool {
	return !l.allHeld && l.exclKeys == 0 && len(l.queue) == 0
}

// heldConflict reports whether key conflicts with a held lock (parked
// waiters ignored).
func (l *locks) heldConflict(db int, key string, excl bool) bool {
	if l.allHeld || excl && l.allShared > 0 {
		return true
	}
	st := l.state(db, key)
	return st != nil && (st.excl || (excl && st.shared > 0))
}

func (l *locks) acquire(keys []KeyLock, all bool) {
	if all {
		l.allHeld = true
		l.active++
		return
	}
	for _, k := range keys {
		m := l.table(k.DB)
		st := m[k.Key]
		if st == nil {
			st = l.newState()
			m[k.Key] = st
		}
		if k.Excl {
			st.excl = true
			l.exclKeys++
		} else {
			st.shared++
		}
		l.active++
	}
}

func (l *locks) release(keys []KeyLock, all bool) {
	if all {
		l.allHeld = false
		l.active--
		return
	}
	for _, k := range keys {
		st := l.state(k.DB, k.Key)
		if st == nil {
			panic("shard: release of a key lock that is not held")
		}
		if k.Excl {
			st.excl = false
			l.exclKeys--
		} else {
			st.shared--
		}
		l.active--
		l.gc(k.DB, k.Key, st)
	}
}

func (l *locks) acquireShared() {
	l.allShared++
	l.active++
}

func (l *locks) releaseShared() {
	if l.allShared == 0 {
		panic("shard: release of a shared hold of the shard that is not held")
	}
	l.allShared--
	l.active--
}

func (l *locks) gc(db int, key string, st *lockState) {
	if !st.excl && st.shared == 0 && st.parked == 0 {
		// No caller keeps st past this call: each looks states up anew.
		delete(l.dbs[db], key)
		if len(l.free) < maxFreeStates {
			l.free = append(l.free, st)
		}
	}
}

// parkShared queues w to hold every key of the shard shared: it needs no
// per-key state, and blocks later waiters as a whole-shard waiter does.
func (l *locks) parkShared(w Waiter) {
	l.allParked++
	l.active++
	l.queue = append(l.queue, queued{w: w, shared: true})
}

func (l *locks) park(w Waiter) {
	keys, all := w.LockKeys()
	if all {
		l.allParked++
	}
	states := make([]*lockState, len(keys))
	for i, k := range keys {
		m := l.table(k.DB)
		st := m[k.Key]
		if st == nil {
			st = l.newState()
			m[k.Key] = st
		}
		st.parked++
		states[i] = st
	}
	l.active++
	l.queue = append(l.queue, queued{w: w, keys: keys, states: states, all: all})
}

func (l *locks) unpark(q *queued) {
	if q.all || q.shared {
		l.allParked--
	}
	for i, st := range q.states {
		st.parked--
		l.gc(q.keys[i].DB, q.keys[i].Key, st)
	}
	l.active--
}

// ready removes and returns the parked waiters that may run now, in queue
// order. A waiter is blocked by held locks and by earlier waiters that stay
// blocked or run now and need one of its keys (or the whole shard).
//
// Its cost is what a release pays while waiters are parked, so it touches
// no map: each waiter's lock states were looked up when it parked, and an
// earlier waiter's reservation of a key is the key's state stamped with
// this pass's number. The last waiter reserves nothing (nobody follows).
func (l *locks) ready() []Waiter {
	if len(l.queue) == 0 {
		return nil
	}
	l.pass++
	pass := l.pass
	var out []Waiter
	reservedAny := false
	allReserved := false
	heldAny := l.allHeld
	rest := l.queue[:0]
	var run []queued
	for i := range l.queue {
		q := l.queue[i]
		ok := !heldAny && !allReserved
		switch {
		case !ok:
		case q.all:
			ok = l.active-len(l.queue) == 0 && !reservedAny
		case q.shared:
			ok = l.exclKeys == 0 && !reservedAny
		default:
			for j, st := range q.states {
				excl := q.keys[j].Excl
				if st.excl || excl && (st.shared > 0 || l.allShared > 0) || st.resv == pass {
					ok = false
					break
				}
			}
		}
		if ok {
			out = append(out, q.w)
			run = append(run, q)
		} else {
			rest = append(rest, q)
		}
		// A runnable waiter that will take locks, and a blocked one,
		// block later waiters on the same keys; they are re-checked on
		// the next release.
		if q.all || q.shared {
			allReserved = true
		}
		if i < len(l.queue)-1 {
			for _, st := range q.states {
				st.resv = pass
			}
			reservedAny = reservedAny || len(q.states) > 0
		}
	}
	for i := len(rest); i < len(l.queue); i++ {
		l.queue[i] = queued{}
	}
	l.queue = rest
	for i := range run {
		l.unpark(&run[i])
	}
	return out
}
