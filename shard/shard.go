package shard

import (
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/dash"
	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/tracking"
)

// Runnable is a message for a shard: it runs on the shard goroutine.
type Runnable interface {
	Run(s *Shard)
}

// Func adapts a function to Runnable, for coordination paths where a
// closure per message is affordable.
type Func func(s *Shard)

func (f Func) Run(s *Shard) { f(s) }

// ChangeHook is told about every mutation of a DB before it happens, on the
// shard goroutine (docs/DESIGN.md §4: OnDbChange). A hook must not mutate the DB
// (it may give a value an equal copy of its bytes: snapshot copy-on-write).
type ChangeHook interface {
	// PreUpdate: the value at it is about to change in place, or to
	// leave the DB for another key, with its bytes (DB.Take).
	PreUpdate(db *DB, it Iterator)
	// PreDelete: the entry at it is about to be erased (which may also
	// move a stash item into its slot: see dash's EraseChanges).
	PreDelete(db *DB, it Iterator)
	// PreInsert: key is about to be inserted.
	PreInsert(db *DB, key string)
	// PreFlush: every key of db is about to be dropped. The current
	// tables are then replaced, never changed again: a hook may keep them.
	PreFlush(db *DB)
}

// MoveHook is told about items a table mutation moved between buckets
// (dash's OnMove), after the mutation; non-PIT snapshots use it (OnMoved).
type MoveHook interface {
	OnMoved(db *DB, moves []dash.Move)
}

// Gate is consulted before a command that writes key runs (the key-lock
// check of every path: a connection's batch, a transaction, a script). It
// may take shared key locks (Acquire) to hold the writer back: a snapshot
// pins a value it is still writing, or delays writers while its output is
// full (docs/DESIGN.md §4). It must not mutate the DB.
type Gate interface {
	Admit(db *DB, key string)
	// Capture runs before a multi-key write (see Shard.Capture) with its
	// keys on this shard, read and written.
	Capture(keys []KeyLock)
}

// ExpiryHook is told about deletions that bypass the change hooks (expiry,
// eviction: evict.go); the snapshot defers them, the journal records DELs.
type ExpiryHook interface {
	OnExpire(db *DB, it Iterator, key string)
}

// Owing is an expiry hook that would have work to do (and memory to hold)
// if the entry at it went now: a snapshot that has not covered its
// bucket. Eviction prefers entries no hook owes.
type Owing interface {
	Owes(db *DB, it Iterator) bool
}

// Stats are counters owned by the shard goroutine; read them through a
// message to the shard.
type Stats struct {
	Commands uint64
	// Reads counts the read-only commands run, a script's included (not
	// the script itself): CLIENT TRACKING tracks a script's keys once it
	// ran a read, as Redis 7.0.
	Reads       uint64
	Writes      uint64
	ExpiredKeys uint64
	EvictedKeys uint64
	// SketchBytes: allkeys-tinylfu's sketch (evict.Sketch), a gauge.
	SketchBytes uint64
	Hits        uint64
	Misses      uint64
}

// Shard is one shared-nothing partition of the keyspace.
type Shard struct {
	ID    int
	DBs   []*DB
	Stats Stats
	Locks locks
	// Journal records the shard's writes while replication listens (see
	// package journal); nil or inactive otherwise.
	Journal *journal.Journal

	inbox       chan Runnable
	post        func(Runnable)
	yield       func(Runnable)
	hooks       []ChangeHook
	expiryHooks []ExpiryHook
	moveHooks   []MoveHook
	gates       []Gate
	version     uint64
	now         int64 // unix ms, refreshed per message
	epoch       int64 // of the access clock: IdleHorizon before New
	quit        chan struct{}
	done        chan struct{}
	started     bool // Start ran (Stop waits for the goroutine only then)
	waking      bool // wakeWaiters is resuming waiters (Release defers to it)
	block       blockState
	watch       watchState
	tracking    tracking.Keys
	quiet       int // Quiet's depth
	// tier and noLoad: tiered storage, nil when off (tier.go).
	tier   Tier
	noLoad bool
	// defragDue: a DB allocated chunks its defragmentation pass has not
	// paid for (strs.go); depth counts nested Execs, paid at depth 0.
	defragDue bool
	depth     int
	// lent: the shard is lent to a borrower; deferred: the messages
	// that came meanwhile (lend.go).
	lent     bool
	deferred []Runnable
	// recall asks the borrower for the shard back (AttachRecall);
	// recalled: it was asked since the last Lend.
	recall   func()
	recalled bool

	// Replica mode (issue 8, server/repl_replica.go): a replica never
	// expires keys itself; its master's DELs delete them. With ReplicaMode
	// the active sweep is off and Find hides a logically expired key from
	// readers without deleting it, except while MasterApply is set: the
	// master's command stream sees every key, as in Redis.
	ReplicaMode bool
	MasterApply bool
	// Paused (CLIENT PAUSE, server/pause.go): no expiry either, as in
	// ReplicaMode, until the pause ends.
	Paused bool
	// ExpiryHorizon, when set, bounds what the active sweep expires: only
	// keys that expired before it (unix ms). The server gives the start of
	// the oldest running script, which sees its keys as they were then
	// (SetNow): Redis expires nothing while a script runs.
	ExpiryHorizon func() int64
	// NoActiveExpiry (DEBUG SET-ACTIVE-EXPIRE 0): the active sweep is off;
	// a read still deletes the expired key it finds, as in Redis.
	NoActiveExpiry bool
	// Notify publishes keyspace notifications (package notify); nil in a
	// shard without a server.
	Notify *notify.Notifier
	// loading: DB.Load is adding keys, which notify no "new" (Redis's
	// loads do not).
	loading bool
	// reading: the running command reads its keys (ReadMisses), so a
	// Find that misses publishes "keymiss".
	reading bool
	// ExpireCycle, when set, is told each active-expiry step's time (the
	// latency monitor's expire-cycle event).
	ExpireCycle func(time.Duration)
	// Publish, when set, runs on every tick after the sweeps: the server
	// copies what readers on other goroutines (a metrics scrape) may see of
	// the shard without stopping it.
	Publish func(*Shard)
	// Evict holds maxmemory-policy and its parameters (package evict),
	// shared by every shard; nil: noeviction and LRU stamps.
	Evict *evict.Settings
	// pool: the eviction pool's candidates, this shard's keys (evict.go).
	pool evict.Pool
	// evicting: a RequestEviction's pass runs or is queued.
	evicting atomic.Bool
	// spareOwed: the eviction pass skips entries an expiry hook owes (Owing).
	spareOwed bool
	// sketch, rejected, pressed: allkeys-tinylfu's request counts, the
	// keys written that its admission turned away, and when memory was
	// last over maxmemory (evict.go).
	sketch   evict.Sketch
	rejected []evict.Candidate
	pressed  int64
	// packedDead: PackedDead's figure (evict.go).
	packedDead atomic.Int64
}

// NoExpiry reports whether the shard leaves logically expired keys in
// place, hidden from readers (ReplicaMode or Paused).
func (s *Shard) NoExpiry() bool { return s.ReplicaMode || s.Paused }

// InboxSize bounds each shard's inbox; senders block when it is full, which
// is the backpressure a flood of pipelined commands meets.
const InboxSize = 4096

// New makes a shard with ndb databases; Start launches its goroutine.
func New(id, ndb int) *Shard {
	s := &Shard{ID: id, inbox: make(chan Runnable, InboxSize), quit: make(chan struct{}), done: make(chan struct{})}
	s.now = time.Now().UnixMilli()
	s.epoch = s.now - IdleHorizon*1000
	s.DBs = make([]*DB, ndb)
	for i := range s.DBs {
		s.DBs[i] = newDB(s, i)
	}
	return s
}

// Attach makes post the shard's executor instead of a goroutine of its
// own: post must run each Runnable, in order, through Exec on one
// goroutine that then owns the shard (the server uses the event loop the
// shard is pinned to). Call it before Start.
func (s *Shard) Attach(post func(Runnable)) { s.post = post }

// AttachYield sets how an attached shard defers yielded work (Yield).
func (s *Shard) AttachYield(fn func(Runnable)) { s.yield = fn }

// Yield queues r, the next step of cooperative work (a snapshot), to run
// after the executor has served the I/O already waiting, so a chain of
// steps never starves clients. Only the owning goroutine may call it.
func (s *Shard) Yield(r Runnable) {
	if s.yield != nil {
		s.yield(r)
		return
	}
	s.Send(r)
}

// Send queues r for the shard's goroutine. Safe from any goroutine except
// the owning one, which runs work directly through Exec.
func (s *Shard) Send(r Runnable) {
	if s.post != nil {
		s.post(r)
		return
	}
	s.inbox <- r
}

// Exec runs r now; only the shard's owning goroutine may call it.
func (s *Shard) Exec(r Runnable) {
	if s.lent {
		s.deferred = append(s.deferred, r) // lend.go
		s.Recall()
		return
	}
	s.exec(r)
}

func (s *Shard) exec(r Runnable) {
	s.now = time.Now().UnixMilli()
	s.depth++
	r.Run(s)
	s.depth--
	s.serveReady()
	if s.depth == 0 {
		s.tracking.EndStep() // the step's BCAST invalidations
		if s.defragDue {
			s.payDefrag()
		}
	}
}

// payDefrag runs the defragmentation the DBs' allocations charged, between
// messages: no DB method is then half done (strs.go's accounting).
func (s *Shard) payDefrag() {
	s.defragDue = false
	for _, db := range s.DBs {
		if db.payDefrag() {
			s.defragDue = true // the rest after the next message
		}
	}
}

// Now is the shard's clock in unix ms, fixed for the duration of a message
// so that one command sees one time.
func (s *Shard) Now() int64 { return s.now }

// SetNow sets the clock for the rest of the current message: a script's
// calls see the time it started, so a key it read does not expire under
// it (Redis's script time snapshot).
func (s *Shard) SetNow(ms int64) { s.now = ms }

// IdleHorizon is how far back, in seconds, the access clock reaches before
// the shard started: RESTORE ... IDLETIME sets idle times up to it (about
// 194 days, Redis's 24-bit LRU clock).
const IdleHorizon = 1 << 24

func (s *Shard) clockSeconds() uint32 { return uint32((s.now - s.epoch) / 1000) }

// IdleSeconds converts an access stamp to seconds idle.
func (s *Shard) IdleSeconds(v *Value) int64 {
	return int64(s.clockSeconds()) - int64(v.Access)
}

func (s *Shard) nextVersion() uint64 {
	s.version++
	return s.version
}

// AddHook registers a change hook; called on the shard goroutine.
func (s *Shard) AddHook(h ChangeHook) { s.hooks = append(s.hooks, h) }

// RemoveHook unregisters h; called on the shard goroutine.
func (s *Shard) RemoveHook(h ChangeHook) { s.hooks = remove(s.hooks, h) }

// AddExpiryHook registers an expiry hook; called on the shard goroutine.
func (s *Shard) AddExpiryHook(h ExpiryHook) { s.expiryHooks = append(s.expiryHooks, h) }

// RemoveExpiryHook unregisters h; called on the shard goroutine.
func (s *Shard) RemoveExpiryHook(h ExpiryHook) { s.expiryHooks = remove(s.expiryHooks, h) }

// AddMoveHook registers a move hook; called on the shard goroutine.
func (s *Shard) AddMoveHook(h MoveHook) { s.moveHooks = append(s.moveHooks, h) }

// RemoveMoveHook unregisters h; called on the shard goroutine.
func (s *Shard) RemoveMoveHook(h MoveHook) { s.moveHooks = remove(s.moveHooks, h) }

// AddGate registers a gate; called on the shard goroutine.
func (s *Shard) AddGate(g Gate) { s.gates = append(s.gates, g) }

// RemoveGate unregisters g; called on the shard goroutine.
func (s *Shard) RemoveGate(g Gate) { s.gates = remove(s.gates, g) }

func remove[T comparable](xs []T, x T) []T {
	for i, y := range xs {
		if y == x {
			return append(xs[:i], xs[i+1:]...)
		}
	}
	return xs
}

// CutVersion takes a version for a snapshot's cut: every bucket changed
// before it has a lower version, every change after it stamps a higher one.
func (s *Shard) CutVersion() uint64 { return s.nextVersion() }

type tick struct{}

func (tick) Run(s *Shard) {
	if s.sketching() {
		s.sketch.Ensure(s.keys())
		s.Stats.SketchBytes = uint64(s.sketch.Bytes())
	}
	s.expireStep()
	s.defragStep()
	s.notePackedDead()
	if s.Publish != nil {
		s.Publish(s)
	}
}

var tickMsg Runnable = tick{}

// expireBudget bounds one active-expiry step (docs/DESIGN.md §8.7).
const expireBudget = time.Millisecond

func (s *Shard) expireStep() {
	if s.NoExpiry() || s.NoActiveExpiry {
		return // issue 8: a replica waits for its master's DELs; a pause
	}
	start := time.Now()
	defer func() {
		if s.ExpireCycle != nil {
			s.ExpireCycle(time.Since(start))
		}
	}()
	for _, db := range s.DBs {
		for db.ExpireStep(64) > 16 && time.Since(start) < expireBudget {
		}
		if time.Since(start) >= expireBudget {
			return
		}
	}
}

// defragBudget bounds one step of the chunk defragmentation (strs.go):
// with a tick each 100 ms, at most 1% of the shard's time.
const defragBudget = time.Millisecond

func (s *Shard) defragStep() {
	start := time.Now()
	for _, db := range s.DBs {
		for db.DefragStep(256) {
			if time.Since(start) >= defragBudget {
				return
			}
		}
	}
}

// Start runs the shard goroutine (unless an executor is attached) and its
// expiry ticker.
func (s *Shard) Start() {
	s.started = true
	if s.post == nil {
		go s.loop()
	} else {
		close(s.done)
	}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if s.post != nil {
					s.post(tickMsg)
					continue
				}
				select {
				case s.inbox <- tickMsg:
				default: // a busy shard skips a sweep rather than queue ticks
				}
			case <-s.quit:
				return
			}
		}
	}()
}

// Stop ends the shard goroutine after the messages already queued.
func (s *Shard) Stop() {
	if !s.started {
		return // a server that failed before its shards ran (say, at bind)
	}
	close(s.quit)
	if s.post == nil {
		s.inbox <- Func(func(*Shard) {})
	}
	<-s.done
}

func (s *Shard) loop() {
	defer close(s.done)
	for {
		select {
		case r := <-s.inbox:
			s.now = time.Now().UnixMilli()
			s.depth++
			r.Run(s)
			s.depth--
			s.serveReady()
			if s.depth == 0 {
				s.tracking.EndStep()
				if s.defragDue {
					s.payDefrag()
				}
			}
		case <-s.quit:
			// Drain what was queued before Stop.
			for {
				select {
				case r := <-s.inbox:
					s.now = time.Now().UnixMilli()
					r.Run(s)
				default:
					return
				}
			}
		}
	}
}

// Idle reports that no key lock is held or awaited and no gate is
// registered: commands may run without checking their keys.
func (s *Shard) Idle() bool { return s.Locks.active == 0 && len(s.gates) == 0 }

// Available reports whether a command needing keys may run now. When the
// lock table is idle and no gate is registered this is two comparisons.
// Gates see the written keys first, and may lock them.
func (s *Shard) Available(keys []KeyLock) bool {
	if len(s.gates) > 0 {
		for _, k := range keys {
			if k.Excl && k.DB < len(s.DBs) {
				for _, g := range s.gates {
					g.Admit(s.DBs[k.DB], k.Key)
				}
			}
		}
	}
	if s.Locks.active == 0 {
		return true
	}
	for _, k := range keys {
		if !s.Locks.available(k.DB, k.Key, k.Excl) {
			return false
		}
	}
	return true
}

// Capture tells the gates that a command with more than one key, counted
// over every shard it touches (a transaction's or a script's whole key
// set), that writes one of them, is about to run with keys on this shard,
// read and written. A snapshot streaming with its journal writes their
// baselines now, so that none follows the command's journal entry
// (package snapshot: Capture).
// Every path that runs such a command calls it once the keys are
// available (Available, or resumed from Park) and before it takes them:
// no other transaction then holds one of them exclusively. With no gate
// it costs one comparison.
func (s *Shard) Capture(keys []KeyLock) {
	for _, g := range s.gates {
		g.Capture(keys)
	}
}

// ExclLocked reports whether a transaction holds key exclusively: one
// that may have applied writes to it that are not journaled yet (what the
// snapshot's walk and captures wait for, package snapshot). A shared hold
// of the whole shard (AcquireShared) does not count: it writes nothing.
func (s *Shard) ExclLocked(db int, key string) bool {
	if s.Locks.active == 0 {
		return false
	}
	st := s.Locks.state(db, key)
	return st != nil && st.excl
}

// Park queues w until its keys are available; w.Resume runs then.
func (s *Shard) Park(w Waiter) { s.Locks.park(w) }

// TryLock takes w's keys now if they are available, else parks w; w.Resume
// runs when it gets them (and must then call Capture if multi, and
// Acquire). multi: w's command has more than one key and writes one (see
// Capture).
func (s *Shard) TryLock(w Waiter, multi bool) bool {
	keys, all := w.LockKeys()
	if all {
		if s.Locks.active == 0 {
			if multi {
				s.Capture(keys)
			}
			s.Locks.acquire(nil, true)
			return true
		}
		s.Locks.park(w)
		return false
	}
	if s.Available(keys) {
		if multi {
			s.Capture(keys)
		}
		s.Locks.acquire(keys, false)
		return true
	}
	s.Locks.park(w)
	return false
}

// Acquire takes keys; the caller checked (or was resumed) that they are free.
func (s *Shard) Acquire(keys []KeyLock, all bool) { s.Locks.acquire(keys, all) }

// TryLockShared holds every key of the shard shared for w if nothing
// conflicts now (SharedAvailable), else parks w; w.Resume runs when it may
// (and must then call AcquireShared). It is the lock of a transaction
// reading many keys of the shard (package tx): one counter instead of a
// lock state per key, and no writer of the shard runs until ReleaseShared.
// multi and keys are as for TryLock: the keys are shown to the gates.
func (s *Shard) TryLockShared(w Waiter, keys []KeyLock, multi bool) bool {
	if s.Locks.sharedAvailable() {
		if multi {
			s.Capture(keys)
		}
		s.Locks.acquireShared()
		return true
	}
	s.Locks.parkShared(w)
	return false
}

// SharedAvailable reports whether TryLockShared would take the shard now.
func (s *Shard) SharedAvailable() bool { return s.Locks.sharedAvailable() }

// AcquireShared holds every key of the shard shared; the caller checked
// (or was resumed) that it may.
func (s *Shard) AcquireShared() { s.Locks.acquireShared() }

// ReleaseShared ends a shared hold of the shard and resumes the waiters
// that can now run. It changed no key, so it signals none; blocked
// clients whose keys became ready meanwhile are served now.
func (s *Shard) ReleaseShared() {
	s.Locks.releaseShared()
	if s.waking {
		return // see Release
	}
	s.wakeWaiters()
	s.serveReady()
}

// Release gives keys back and resumes parked waiters that can now run.
func (s *Shard) Release(keys []KeyLock, all bool) {
	s.Locks.release(keys, all)
	for _, k := range keys {
		s.signal(k.DB, k.Key) // a key changed under the lock may serve clients now
	}
	if s.waking {
		// A waiter resumed by wakeWaiters gave locks back (a lazy
		// transaction refusing its lock step). Resuming others here would
		// let one take keys that a waiter the running loop already picked
		// (and reserved them for) is about to take; the loop looks at the
		// queue again after its list instead.
		return
	}
	s.wakeWaiters()
	s.serveReady()
}

// wakeWaiters resumes ready waiters until none is ready. It loops because a
// resumed batch takes no lock, so a waiter it was reserved against may now
// run too, and because a resumed waiter may release locks (see Release).
func (s *Shard) wakeWaiters() {
	s.waking = true
	defer func() { s.waking = false }()
	for {
		ws := s.Locks.ready()
		if len(ws) == 0 {
			return
		}
		for _, w := range ws {
			w.Resume(s)
		}
	}
}
