package tx

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tracking"
)

// lastID numbers transactions (journal TxIDs).
var lastID atomic.Uint64

// NewID is a fresh transaction id, for transactions run outside a Tx (a
// single-shard EXEC or script journaled as one part).
func NewID() uint64 { return lastID.Add(1) }

// commitMu serializes the journal commits of multi-shard transactions, so
// that the parts of two transactions are in the same relative order on
// every shard they share (package journal's invariant). Only transactions
// that wrote while the journal records take it.
var commitMu sync.Mutex

// Recorder journals a coordinator's own command for a transaction (a
// multi-shard command whose shard steps are plain functions): Commit runs
// on the coordinator after every step and before the locks are released;
// wrote tells whether any step wrote. It calls Tx.Record to journal.
type Recorder interface {
	JournalCommit(t *Tx, wrote bool)
}

// Tx is one multi-shard operation. It is used by a single goroutine.
type Tx struct {
	shards []*shard.Shard
	// writer: the tracking client whose command the steps run (SetWriter).
	writer *tracking.Client
	// reads: the steps run a read command (SetReads).
	reads  bool
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
	// lazy: locks are taken shard by shard as Run first needs each (see
	// LockLazily); held tells which parts hold theirs.
	lazy bool
	// multi: more than one key over all parts, one written; each shard's
	// gates see its keys before they are taken (shard.Capture). Set by
	// Lock.
	multi bool

	// Journaling (package journal), decided once the locks are held.
	// parent: the enclosing transaction of a nested one, which owns the
	// parts the journal records into.
	parent *Tx
	rec    bool
	id     uint64
	writes atomic.Int32 // shard steps that wrote
	seq    atomic.Uint32
	// writesAtStart: the root's writes when a nested transaction began.
	writesAtStart int32
	recorder      Recorder

	// pool holds every part made for the transaction, used counts those in
	// use (Recycle); unacked counts release steps finishLazy did not wait
	// for.
	pool    []*part
	used    int
	unacked int
}

// Nested starts a transaction inside one that holds all the locks, so
// commands written against the Tx API run unchanged within EXEC.
func Nested(shards []*shard.Shard) *Tx {
	t := New(shards)
	t.nested = true
	return t
}

// NestedIn is Nested inside parent: shard steps run as parent's, so the
// journal records them in parent's parts (parent nil: Nested).
func NestedIn(shards []*shard.Shard, parent *Tx) *Tx {
	t := Nested(shards)
	if parent != nil {
		t.parent = parent.root()
		t.rec = t.parent.rec
		t.writesAtStart = t.parent.writes.Load()
	}
	return t
}

func (t *Tx) root() *Tx {
	for t.parent != nil {
		t = t.parent
	}
	return t
}

// SetRecorder makes r journal the transaction's command at commit.
func (t *Tx) SetRecorder(r Recorder) { t.recorder = r }

// Recording reports whether the transaction's writes are journaled; known
// once Lock returned.
func (t *Tx) Recording() bool { return t.rec }

// Record journals a command of the coordinator as part of the
// transaction, after the commands already recorded. Call it only between
// steps (from a Recorder, or after a nested command returned).
func (t *Tx) Record(db int, args [][]byte) {
	if t.local != nil {
		// Running on the local shard: its journal routes the record into
		// the part entered for the script.
		if j := t.local.Journal; j.Active() {
			j.Record(db, args)
		}
		return
	}
	r := t.root()
	if !r.rec || len(r.parts) == 0 {
		return
	}
	p := r.parts[0]
	if p.jp == nil {
		p.jp = journal.NewPart(&r.seq)
	}
	p.jp.Add(db, args)
	r.writes.Add(1)
}

// Local is Nested for code already running on shard s's goroutine (a
// script confined to one shard): steps on s run inline instead of as
// messages, which would wait for the very goroutine that sends them.
func Local(shards []*shard.Shard, s *shard.Shard, sameOwner func(a, b int) bool) *Tx {
	t := Nested(shards)
	t.local = s
	t.sameOwner = sameOwner
	if s.Journal.Active() {
		t.writesAtStart = int32(s.Stats.Writes - s.Stats.ExpiredKeys)
	}
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
	// shared: the part reads many keys and writes none, so it holds every
	// key of the shard shared (shard.AcquireShared) instead of each;
	// keys may then name a key more than once (Add stops deduplicating).
	shared bool
	fn     func(*shard.Shard)
	step   stepKind
	// granted: a stepTryLock took the keys.
	granted bool
	// held: a lazy transaction holds this part's locks; refused: a lazy
	// lock step found the journal recording and gave the locks back.
	held, refused bool
	// jp buffers the journal entries of the steps run on this shard.
	jp *journal.Part
	// index finds a declared key's position in keys once there are many
	// (Add): a command naming k keys (an MSET of 500k pairs) declared them
	// in O(k²) comparisons.
	index map[keyRef]int
	// holding: the shard holds this part's locks (set and cleared on the
	// shard's goroutine, read by the coordinator after a done signal), so
	// that Abort releases exactly what is held.
	holding bool
	// panicked: the step's function panicked on the shard (see call).
	panicked *StepPanic
}

// StepPanic is a panic of a step's function on a shard's goroutine, raised
// again on the coordinator's (Tx.rethrow) once the step's signal is in:
// the shard goes on serving, and the coordinator's recovery (Abort) gives
// the transaction's locks back.
type StepPanic struct {
	Shard int
	Value any
	Stack []byte
}

func (e *StepPanic) Error() string { return fmt.Sprintf("shard %d: %v", e.Shard, e.Value) }

// SetWriter names the tracking client whose command t's steps run, for
// CLIENT TRACKING's NOLOOP (shard.SetWriter); nil for none.
func (t *Tx) SetWriter(c *tracking.Client) { t.writer = c }

// SetReads says t's steps run a read command, whose misses publish
// "keymiss" (shard.ReadMisses).
func (t *Tx) SetReads(on bool) { t.reads = on }

// withReads is fn run as t's read command, for a step that runs outside
// t's parts (inline, or in the enclosing transaction's).
func (t *Tx) withReads(fn func(*shard.Shard)) func(*shard.Shard) {
	if !t.reads || fn == nil {
		return fn
	}
	return func(s *shard.Shard) {
		defer s.ReadMisses(s.ReadMisses(true))
		fn(s)
	}
}

// call runs the step's function on s, recovering a panic into p.panicked.
func (p *part) call(s *shard.Shard) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked = &StepPanic{Shard: s.ID, Value: r, Stack: debug.Stack()}
		}
	}()
	s.SetWriter(p.tx.writer)
	defer s.SetWriter(nil)
	defer s.ReadMisses(s.ReadMisses(p.tx.reads))
	p.fn(s)
}

// acquired and released keep holding in step with the shard's locks.
func (p *part) acquired(s *shard.Shard) {
	if p.shared {
		s.AcquireShared()
	} else {
		s.Acquire(p.keys, p.all)
	}
	p.holding = true
}

func (p *part) released(s *shard.Shard) {
	if p.shared {
		s.ReleaseShared()
	} else {
		s.Release(p.keys, p.all)
	}
	p.holding = false
}

type stepKind uint8

const (
	stepLock    stepKind = iota
	stepLockRun          // a lazy transaction's first step on a shard
	stepTryLock
	stepRun
	stepRunRelease
	stepRelease
	stepCommitRelease
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
	var p *part
	if t.used < len(t.pool) {
		p = t.pool[t.used]
		*p = part{tx: t, sh: t.shards[sid], keys: p.keys[:0]}
	} else {
		p = &part{tx: t, sh: t.shards[sid]}
		t.pool = append(t.pool, p)
	}
	t.used++
	t.parts = append(t.parts, p)
	return p
}

// Recycle returns t, a finished transaction that its owner no longer
// uses, ready to start over the same shards as New would, reusing its
// memory, so that a caller running one transaction after another (a
// script interpreter) allocates none. It first waits for the release
// steps Finish sent without waiting (finishLazy): once their signals are
// in, no shard refers to t's parts. t nil, nested or still locked: New.
func Recycle(t *Tx, shards []*shard.Shard) *Tx {
	if t == nil || t.nested || t.locked || len(t.shards) != len(shards) {
		return New(shards)
	}
	for ; t.unacked > 0; t.unacked-- {
		<-t.done
	}
	*t = Tx{shards: shards, done: t.done, parts: t.parts[:0], pool: t.pool}
	return t
}

// Add declares a key the transaction reads (excl=false) or writes. A key
// declared twice is locked once, exclusively if either declaration was.
// A nested transaction locks nothing (its enclosing one holds every key):
// Add only involves the key's shard.
//
// A part that reads indexFrom keys of its shard and writes none holds the
// whole shard shared instead (part.shared): a reader of every account (a
// MULTI of 2,000 keys, issue 40) spent more on a map of its keys and a
// lock state per key than on reading them. Its later reads are appended
// as they come; a write declared after them makes it lock key by key
// again (narrow).
func (t *Tx) Add(sid, db int, key string, excl bool) {
	p := t.part(sid)
	if t.nested {
		return
	}
	if p.shared {
		if !excl {
			p.keys = append(p.keys, shard.KeyLock{DB: db, Key: key})
			return
		}
		p.narrow()
	}
	if p.index != nil {
		if i, ok := p.index[keyRef{db, key}]; ok {
			p.keys[i].Excl = p.keys[i].Excl || excl
			return
		}
		p.index[keyRef{db, key}] = len(p.keys)
		p.keys = append(p.keys, shard.KeyLock{DB: db, Key: key, Excl: excl})
		return
	}
	for i := range p.keys {
		if p.keys[i].DB == db && p.keys[i].Key == key {
			p.keys[i].Excl = p.keys[i].Excl || excl
			return
		}
	}
	p.keys = append(p.keys, shard.KeyLock{DB: db, Key: key, Excl: excl})
	if len(p.keys) == indexFrom {
		if !p.all && !slices.ContainsFunc(p.keys, func(k shard.KeyLock) bool { return k.Excl }) {
			p.shared = true
			return
		}
		p.index = make(map[keyRef]int, 2*indexFrom)
		for i, k := range p.keys {
			p.index[keyRef{k.DB, k.Key}] = i
		}
	}
}

// narrow makes a shared part lock its keys one by one again: it drops the
// keys declared twice and indexes the rest, copied (AddBytes may have
// left them in the command's arguments; the lock table keeps them).
func (p *part) narrow() {
	p.shared = false
	keys := p.keys
	p.keys = keys[:0]
	p.index = make(map[keyRef]int, 2*len(keys))
	for _, k := range keys {
		if _, ok := p.index[keyRef{k.DB, k.Key}]; !ok {
			k.Key = strings.Clone(k.Key)
			p.index[keyRef{k.DB, k.Key}] = len(p.keys)
			p.keys = append(p.keys, k)
		}
	}
}

// AddBytes is Add of a key still in the command's arguments, which stay
// unchanged until the transaction's locks are taken. It is copied only
// when the lock table may keep it: not by a nested transaction (a command
// inside EXEC or a script), nor by a part holding its shard shared, which
// reads its keys only in the lock step (shard.Capture) and copies them if
// it narrows. So the whole-bank readers of issue 40 (a MULTI of 20 MGETs
// of 100 keys) declare their keys without an allocation each.
func (t *Tx) AddBytes(sid, db int, key []byte, excl bool) {
	p := t.part(sid)
	if t.nested {
		return
	}
	if p.shared && !excl {
		p.keys = append(p.keys, shard.KeyLock{DB: db, Key: unsafe.String(unsafe.SliceData(key), len(key))})
		return
	}
	t.Add(sid, db, string(key), excl)
}

// indexFrom is the number of a part's keys from which Add looks them up
// in a map instead of comparing with each: below it a scan is cheaper and
// allocates nothing.
const indexFrom = 64

type keyRef struct {
	db  int
	key string
}

// AddShard declares the whole shard (FLUSHALL, a snapshot's cut).
func (t *Tx) AddShard(sid int) {
	p := t.part(sid)
	if p.shared {
		p.narrow()
	}
	p.all = true
}

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
	if p.tx.multi {
		s.Capture(p.keys)
	}
	p.acquired(s)
	if p.tx.lazy {
		p.lazyLocked(s)
	}
	p.tx.done <- struct{}{}
}

// lazyLocked follows a lazy transaction's lock step once the keys are
// held. A transaction is lazy only if no journal recorded when it began;
// recording starts only in a step holding every shard, which cannot run
// while this transaction holds some shard's keys, so only the first lock
// step can find it started. It then gives the locks back (Run locks
// eagerly instead, which journals); otherwise the step runs its function.
func (p *part) lazyLocked(s *shard.Shard) {
	if s.Journal.Active() {
		p.released(s)
		p.refused = true
		return
	}
	if p.step == stepLockRun {
		p.call(s)
	}
}

func (p *part) Run(s *shard.Shard) {
	switch p.step {
	case stepLock, stepLockRun:
		var locked bool
		if p.shared {
			locked = s.TryLockShared(p, p.keys, p.tx.multi)
		} else {
			locked = s.TryLock(p, p.tx.multi)
		}
		if locked {
			p.holding = true
			if p.tx.lazy {
				p.lazyLocked(s)
			}
			p.tx.done <- struct{}{}
		}
		return
	case stepTryLock:
		var free bool
		switch {
		case p.shared:
			free = s.SharedAvailable()
		case p.all:
			free = s.Available(p.keys) && s.Locks.Idle()
		default:
			free = s.Available(p.keys)
		}
		if free {
			if p.tx.multi {
				s.Capture(p.keys)
			}
			p.acquired(s)
			p.granted = true
		}
	case stepRun:
		if p.tx.rec {
			p.runRecorded(s)
		} else {
			p.call(s)
		}
	case stepCommitRelease:
		j := s.Journal
		if j.Active() {
			if p.jp == nil {
				p.jp = journal.NewPart(nil)
			}
			j.Commit(p.jp, p.tx.id, p.tx.shardSet())
		}
		p.released(s)
	case stepRunRelease:
		p.call(s)
		p.released(s)
	case stepRelease:
		p.released(s)
	}
	p.tx.done <- struct{}{}
}

// runRecorded is a step while the journal records: the shard's commands
// journal into the part, and a step that wrote is counted.
func (p *part) runRecorded(s *shard.Shard) {
	j := s.Journal
	if p.jp == nil {
		p.jp = journal.NewPart(&p.tx.seq)
	}
	prev := j.Enter(p.jp)
	before := s.Stats.Writes - s.Stats.ExpiredKeys
	p.call(s)
	j.Leave(prev)
	if s.Stats.Writes-s.Stats.ExpiredKeys != before {
		p.tx.writes.Add(1)
	}
}

// shardSet is the ascending ids of the transaction's shards.
func (t *Tx) shardSet() []uint16 {
	ids := make([]uint16, len(t.parts))
	for i, p := range t.parts {
		ids[i] = uint16(p.sh.ID)
	}
	slices.Sort(ids)
	return ids
}

// Lock takes every declared lock, shard by shard in ascending id. It
// blocks until all are held.
func (t *Tx) Lock() {
	defer t.startJournal()
	if t.nested {
		t.locked = true
		return
	}
	t.countKeys()
	t.sortParts()
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

// LockLazily is Lock for a transaction whose steps run one at a time
// through Run (a script's calls): each shard's locks are taken by the
// first step that needs them, in the same message as the step, so a
// transaction whose calls visit its shards in ascending order pays no
// lock round trip. Before a step on shard s, every involved shard below s
// is locked (waiting if need be), so locks are still taken in ascending
// shard order and never waited for while a higher shard's are held: no
// deadlock. Nothing is released before Finish (two-phase locking), and
// what a step changes stays invisible to others until then, so the
// transaction is as atomic as with Lock. While a journal records it is
// Lock.
func (t *Tx) LockLazily() {
	if t.nested || len(t.parts) < 2 {
		t.Lock()
		return
	}
	for _, p := range t.parts {
		if p.sh.Journal.Active() {
			t.Lock()
			return
		}
	}
	t.sortParts()
	t.countKeys()
	t.lazy, t.locked = true, true
}

// sortParts orders the parts by ascending shard id (the lock order). An
// insertion sort: a transaction has a few parts, and sort.Slice allocates.
func (t *Tx) sortParts() {
	for i := 1; i < len(t.parts); i++ {
		for j := i; j > 0 && t.parts[j].sh.ID < t.parts[j-1].sh.ID; j-- {
			t.parts[j], t.parts[j-1] = t.parts[j-1], t.parts[j]
		}
	}
}

// countKeys sets multi. A command or transaction with more than one key
// may read or move one key into another, so a snapshot streaming with its
// journal must see every key before any is taken (see shard.Capture); a
// single key needs nothing, nor does one that writes no key (it journals
// nothing).
func (t *Tx) countKeys() {
	n, writes := 0, false
	for _, p := range t.parts {
		n += len(p.keys)
		for _, k := range p.keys {
			writes = writes || k.Excl
		}
	}
	t.multi = n > 1 && writes
}

// lockBelow takes, in ascending order, the locks of every part below
// shard sid that does not hold them yet. It reports false when a lock
// step was refused (see lazyLocked).
func (t *Tx) lockBelow(sid int) bool {
	for {
		var next *part
		for _, p := range t.parts {
			if !p.held && p.sh.ID < sid && (next == nil || p.sh.ID < next.sh.ID) {
				next = p
			}
		}
		if next == nil {
			return true
		}
		next.step = stepLock
		next.sh.Send(next)
		<-t.done
		if next.refused {
			return false
		}
		next.held = true
	}
}

// runLazy is Run of a lazy transaction.
func (t *Tx) runLazy(sid int, fn func(*shard.Shard)) {
	if t.lockBelow(sid) {
		p := t.part(sid)
		if p.held {
			p.step = stepRun
		} else {
			p.step = stepLockRun
		}
		p.fn = fn
		p.sh.Send(p)
		<-t.done
		if !p.refused {
			p.held = true
			t.rethrow()
			return
		}
	}
	// The journal started before this transaction held anything (see
	// lazyLocked): lock eagerly, which journals, and run the step.
	t.relock()
	t.Run(sid, fn)
}

// lockRest ends the lazy mode: every lock is held after it.
func (t *Tx) lockRest() {
	if t.lockBelow(len(t.shards)) {
		t.lazy = false
		return
	}
	t.relock()
}

// relock takes the locks eagerly after a lazy lock step was refused, which
// can happen only before any step ran (see lazyLocked).
func (t *Tx) relock() {
	t.release(func(p *part) bool { return p.held })
	for _, p := range t.parts {
		p.held, p.refused = false, false
	}
	t.lazy, t.locked = false, false
	t.Lock()
}

// startJournal decides, with the locks held, whether the transaction is
// journaled: recording starts and stops only in steps that hold every
// shard, so it cannot change while the locks are held.
func (t *Tx) startJournal() {
	if t.parent != nil || t.local != nil {
		return
	}
	// Every shard of the transaction has passed the step that started (or
	// stopped) recording, since it holds their locks.
	for _, p := range t.parts {
		if p.sh.Journal.Active() {
			t.rec = true
			break
		}
	}
	if t.rec {
		t.id = NewID()
	}
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
	t.release(func(p *part) bool { return p.granted })
	return false
}

// release gives back the locks of the parts that hold them, and waits.
func (t *Tx) release(holds func(p *part) bool) {
	n := 0
	for _, p := range t.parts {
		if holds(p) {
			p.step = stepRelease
			p.sh.Send(p)
			n++
		}
	}
	for ; n > 0; n-- {
		<-t.done
	}
}

// Run runs fn on shard sid, holding the transaction's locks, and waits.
func (t *Tx) Run(sid int, fn func(*shard.Shard)) {
	if t.parent != nil && t.local == nil {
		t.parent.Run(sid, t.withReads(fn))
		return
	}
	if t.inline(sid) {
		t.withReads(fn)(t.shards[sid])
		return
	}
	if t.lazy {
		t.runLazy(sid, fn)
		return
	}
	p := t.part(sid)
	p.step, p.fn = stepRun, fn
	p.sh.Send(p)
	<-t.done
	t.rethrow()
}

// RunAll runs fn on every involved shard in parallel and waits for all.
func (t *Tx) RunAll(fn func(*shard.Shard)) {
	if t.lazy {
		t.lockRest()
	}
	t.runAll(stepRun, fn)
}

// Finish runs fn on every involved shard in parallel, each releasing its
// locks right after its part, and waits. fn may be nil.
func (t *Tx) Finish(fn func(*shard.Shard)) {
	if t.nested {
		if fn != nil {
			t.runAll(stepRun, fn)
		}
		switch {
		case t.recorder == nil:
		case t.parent != nil:
			t.recorder.JournalCommit(t, t.parent.writes.Load() != t.writesAtStart)
		case t.local != nil && t.local.Journal.Active():
			s := t.local
			t.recorder.JournalCommit(t, int32(s.Stats.Writes-s.Stats.ExpiredKeys) != t.writesAtStart)
		}
		t.locked = false
		return
	}
	if t.rec {
		t.finishRecorded(fn)
		return
	}
	if t.lazy {
		t.finishLazy(fn)
		return
	}
	if fn == nil {
		t.runAll(stepRelease, nil)
	} else {
		t.runAll(stepRunRelease, fn)
	}
	t.locked = false
}

// finishRecorded is Finish while the journal records: the steps run, the
// recorder journals the coordinator's command, then every shard commits
// its part and releases — under commitMu, so that commits of transactions
// sharing shards are in one order on all of them.
func (t *Tx) finishRecorded(fn func(*shard.Shard)) {
	if fn != nil {
		t.runAll(stepRun, fn)
	}
	if t.recorder != nil {
		t.recorder.JournalCommit(t, t.writes.Load() > 0)
	}
	if !t.journaled() {
		t.runAll(stepRelease, nil)
		t.locked = false
		return
	}
	commitMu.Lock()
	t.runAll(stepCommitRelease, nil)
	commitMu.Unlock()
	t.locked = false
}

// journaled reports whether any part holds journal entries: the
// transaction's commands, and also what its steps applied without writing
// for it, such as the DEL of a key a step found expired (shard's expiry
// hook). Whether the transaction wrote decides only whether the
// coordinator's command is journaled; every entry a part holds is
// committed, whichever way the transaction ends (Finish or Abort), or a
// replica keeps a key its master no longer has. Read between steps, once
// their signals are in.
func (t *Tx) journaled() bool {
	if t.writes.Load() > 0 {
		return true
	}
	for _, p := range t.parts {
		if p.jp != nil && p.jp.Len() > 0 {
			return true
		}
	}
	return false
}

// finishLazy is Finish of a lazy transaction. Without a last step it
// releases the held locks without waiting: the transaction is complete
// once its steps have run, and whoever touches its keys next finds them
// locked until the release arrives, so nothing can see it unfinished.
func (t *Tx) finishLazy(fn func(*shard.Shard)) {
	if fn != nil {
		t.lockRest()
		t.Finish(fn)
		return
	}
	t.locked = false
	for _, p := range t.parts {
		if p.held {
			p.step, p.held = stepRelease, false
			p.sh.Send(p) // its done signal lands in the buffer of done
			t.unacked++
		}
	}
}

func (t *Tx) runAll(step stepKind, fn func(*shard.Shard)) {
	if t.parent != nil && t.local == nil {
		t.parent.runNested(t.parts, t.withReads(fn))
		return
	}
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
	t.rethrow()
}

// runNested runs fn on the shards of a nested transaction's parts as steps
// of t, its enclosing one, which holds their locks: all at once, as a
// RunAll of t would (a MULTI of MGETs over two shards waited for each
// shard in turn, each MGET, while holding every key: issue 40's readers).
// A lazy or local t runs them one by one through Run, which locks or runs
// inline as t needs.
func (t *Tx) runNested(parts []*part, fn func(*shard.Shard)) {
	if t.lazy || t.local != nil {
		for _, p := range parts {
			t.Run(p.sh.ID, fn)
		}
		return
	}
	for _, np := range parts {
		p := t.part(np.sh.ID)
		p.step, p.fn = stepRun, fn
		p.sh.Send(p)
	}
	for range parts {
		<-t.done
	}
	t.rethrow()
}

// rethrow raises, on the coordinator, the panic of a step's function on a
// shard (StepPanic), once every signal of the step is in.
func (t *Tx) rethrow() {
	for _, p := range t.parts {
		if sp := p.panicked; sp != nil {
			for _, q := range t.parts {
				q.panicked = nil
			}
			panic(sp)
		}
	}
}

// Abort gives back every lock the transaction holds, running nothing
// more: the recovery of a coordinator whose command panicked (on its own
// goroutine, or in a step: StepPanic). What the steps recorded into the
// journal parts (commands of an EXEC or a script, expiries) is committed
// as for Finish; the coordinator's own command is not journaled, so
// writes its steps made directly stay unjournaled: Abort reports them
// (the caller logs it, as a replica may miss them). Nested transactions
// hold no locks. Abort of a finished transaction does nothing.
func (t *Tx) Abort() (unjournaled bool) {
	if t.nested {
		return false
	}
	for ; t.unacked > 0; t.unacked-- {
		<-t.done
	}
	for _, p := range t.parts {
		p.panicked = nil
	}
	if t.rec && t.locked && t.journaled() {
		// A recording transaction took every lock before its first step
		// (Lock), so every part holds its locks here.
		commitMu.Lock()
		t.runAll(stepCommitRelease, nil)
		commitMu.Unlock()
		unjournaled = t.recorder != nil && t.writes.Load() > 0
	} else {
		t.release(func(p *part) bool { return p.holding })
	}
	for _, p := range t.parts {
		p.held, p.panicked = false, nil
	}
	t.locked, t.lazy = false, false
	return unjournaled
}
