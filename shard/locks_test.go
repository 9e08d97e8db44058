package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// recorder is a Waiter that records when it resumes and, like a
// transaction part, takes its locks on resume when hold is set.
type recorder struct {
	name string
	keys []KeyLock
	all  bool
	hold bool
	log  *[]string
}

func (r *recorder) LockKeys() ([]KeyLock, bool) { return r.keys, r.all }
func (r *recorder) Resume(s *Shard) {
	if r.hold {
		s.Acquire(r.keys, r.all)
	}
	*r.log = append(*r.log, r.name)
}

func excl(keys ...string) []KeyLock {
	var out []KeyLock
	for _, k := range keys {
		out = append(out, KeyLock{Key: k, Excl: true})
	}
	return out
}

func shared(keys ...string) []KeyLock {
	var out []KeyLock
	for _, k := range keys {
		out = append(out, KeyLock{Key: k})
	}
	return out
}

func TestLocksFIFOPerKey(t *testing.T) {
	s := New(0, 1)
	var log []string
	holder := &recorder{name: "holder", keys: excl("a"), hold: true, log: &log}
	if !s.TryLock(holder, false) {
		t.Fatal("free key not granted")
	}
	// w1 waits for a; w2 needs b (free) and a: it must queue behind w1;
	// w3 needs only b: b is wanted by parked w2, so w3 queues too.
	w1 := &recorder{name: "w1", keys: excl("a"), hold: true, log: &log}
	w2 := &recorder{name: "w2", keys: excl("a", "b"), hold: true, log: &log}
	w3 := &recorder{name: "w3", keys: shared("b"), log: &log}
	for _, w := range []*recorder{w1, w2, w3} {
		if s.TryLock(w, false) {
			t.Fatalf("%s granted while a is held", w.name)
		}
	}
	if s.Available(shared("b")) {
		t.Fatal("newcomer on b must queue behind parked waiters on b")
	}
	s.Release(holder.keys, false)
	if fmt.Sprint(log) != "[w1]" {
		t.Fatalf("after holder: %v, want [w1]", log)
	}
	s.Release(w1.keys, false)
	if fmt.Sprint(log) != "[w1 w2]" {
		t.Fatalf("after w1: %v", log)
	}
	s.Release(w2.keys, false)
	if fmt.Sprint(log) != "[w1 w2 w3]" {
		t.Fatalf("after w2: %v", log)
	}
	if !s.Locks.Idle() {
		t.Fatalf("lock table not idle: active=%d", s.Locks.active)
	}
}

func TestLocksSharedReaders(t *testing.T) {
	s := New(0, 1)
	var log []string
	r1 := &recorder{name: "r1", keys: shared("k"), hold: true, log: &log}
	r2 := &recorder{name: "r2", keys: shared("k"), hold: true, log: &log}
	if !s.TryLock(r1, false) || !s.TryLock(r2, false) {
		t.Fatal("shared locks must not conflict")
	}
	w := &recorder{name: "w", keys: excl("k"), hold: true, log: &log}
	if s.TryLock(w, false) {
		t.Fatal("writer granted while readers hold")
	}
	r3 := &recorder{name: "r3", keys: shared("k"), hold: true, log: &log}
	if s.TryLock(r3, false) {
		t.Fatal("reader must queue behind a parked writer")
	}
	s.Release(r1.keys, false)
	if len(log) != 0 {
		t.Fatalf("writer resumed with a reader still holding: %v", log)
	}
	s.Release(r2.keys, false)
	s.Release(w.keys, false)
	if fmt.Sprint(log) != "[w r3]" {
		t.Fatalf("order %v, want [w r3]", log)
	}
}

func TestLocksWholeShard(t *testing.T) {
	s := New(0, 1)
	var log []string
	k := &recorder{name: "k", keys: excl("x"), hold: true, log: &log}
	s.TryLock(k, false)
	all := &recorder{name: "all", all: true, hold: true, log: &log}
	if s.TryLock(all, false) {
		t.Fatal("shard lock granted while a key is held")
	}
	later := &recorder{name: "later", keys: excl("y"), log: &log}
	if s.TryLock(later, false) {
		t.Fatal("a key taken while a shard lock is parked")
	}
	s.Release(k.keys, false)
	if fmt.Sprint(log) != "[all]" {
		t.Fatalf("%v", log)
	}
	s.Release(nil, true)
	if fmt.Sprint(log) != "[all later]" {
		t.Fatalf("%v", log)
	}
}

// TestLocksRandomized drives random holders and waiters and checks the
// lock table's safety (no conflicting holders) and liveness (everything
// parked is eventually resumed once all holders release).
func TestLocksRandomized(t *testing.T) {
	seed := uint64(20261121)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := 0; round < 200; round++ {
		s := New(0, 2)
		var log []string
		var holding []*recorder
		held := map[KeyLock]int{} // Excl=true entry counts writers, false readers
		check := func() {
			for k, n := range held {
				if k.Excl && (n > 1 || held[KeyLock{DB: k.DB, Key: k.Key}] > 0) && n > 0 {
					t.Fatalf("seed %d round %d: conflicting holders on %v", seed, round, k)
				}
			}
		}
		take := func(r *recorder, on bool) {
			d := 1
			if !on {
				d = -1
			}
			for _, k := range r.keys {
				held[KeyLock{DB: k.DB, Key: k.Key, Excl: k.Excl}] += d
			}
		}
		total := 0
		for step := 0; step < 60; step++ {
			if len(holding) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(holding))
				r := holding[i]
				holding = append(holding[:i], holding[i+1:]...)
				take(r, false)
				s.Release(r.keys, false)
				continue
			}
			var keys []KeyLock
			seen := map[string]bool{}
			for n := 1 + rng.IntN(3); n > 0; n-- {
				k := string(rune('a' + rng.IntN(5)))
				if seen[k] {
					continue
				}
				seen[k] = true
				keys = append(keys, KeyLock{DB: rng.IntN(2), Key: k, Excl: rng.IntN(2) == 0})
			}
			total++
			r := &recorder{name: fmt.Sprint(total), keys: keys, hold: true, log: &log}
			w := &resumeHook{recorder: r, onResume: func() { take(r, true); holding = append(holding, r); check() }}
			if s.TryLock(w, false) {
				take(r, true)
				holding = append(holding, r)
				check()
			}
		}
		for len(holding) > 0 {
			r := holding[0]
			holding = holding[1:]
			take(r, false)
			s.Release(r.keys, false)
		}
		if !s.Locks.Idle() || len(s.Locks.queue) != 0 {
			t.Fatalf("seed %d round %d: %d waiters never resumed", seed, round, len(s.Locks.queue))
		}
	}
}

type resumeHook struct {
	*recorder
	onResume func()
}

func (r *resumeHook) Resume(s *Shard) {
	r.recorder.Resume(s)
	r.onResume()
}

// giveBack is a waiter that takes its locks on resume and gives them back
// at once (a lazy transaction refusing its lock step), releasing inside
// the shard's wake-up of waiters.
type giveBack struct{ recorder }

func (g *giveBack) Resume(s *Shard) {
	s.Acquire(g.keys, g.all)
	*g.log = append(*g.log, g.name)
	s.Release(g.keys, g.all)
}

// A waiter that releases locks while waiters are being resumed must not
// let a later waiter take keys that an earlier one, already picked to run,
// is about to take.
func TestReleaseInsideResume(t *testing.T) {
	s := New(0, 1)
	var log []string
	s.Acquire(excl("a", "b"), false)
	w1 := &giveBack{recorder{name: "w1", keys: excl("a"), log: &log}}
	w2 := &recorder{name: "w2", keys: excl("b"), hold: true, log: &log}
	w3 := &recorder{name: "w3", keys: excl("b"), hold: true, log: &log}
	for _, w := range []Waiter{w1, w2, w3} {
		if s.TryLock(w, false) {
			t.Fatal("a waiter got a held key")
		}
	}
	s.Release(excl("a", "b"), false)
	if fmt.Sprint(log) != "[w1 w2]" {
		t.Fatalf("resumed %v, want [w1 w2] (w3 waits for w2's b)", log)
	}
	s.Release(excl("b"), false) // w2 done
	if fmt.Sprint(log) != "[w1 w2 w3]" {
		t.Fatalf("resumed %v after w2 released, want w3 too", log)
	}
	s.Release(excl("b"), false)
	if s.Locks.active != 0 {
		t.Fatalf("%d locks left", s.Locks.active)
	}
}

// TestLockReuseAllocatesNothing: once the table has held keys, taking and
// giving back locks allocates nothing (the states are reused).
func TestLockReuseAllocatesNothing(t *testing.T) {
	s := New(0, 1)
	keys := []KeyLock{{Key: "a", Excl: true}, {Key: "b"}, {Key: "c", Excl: true}}
	s.Acquire(keys, false)
	s.Release(keys, false)
	if n := testing.AllocsPerRun(100, func() {
		s.Acquire(keys, false)
		s.Release(keys, false)
	}); n != 0 {
		t.Errorf("%v allocations per lock and release, want 0", n)
	}
}

// BenchmarkReleaseBehindLargeWaiters: what a writer's release costs while
// large transactions are parked (issue 40's bank: readers locking every
// account in one MULTI, writers moving amounts between two). Two readers of
// 1,000 keys each wait behind a held key; each op is a writer taking and
// releasing two other keys, which checks the parked readers again.
func BenchmarkReleaseBehindLargeWaiters(b *testing.B) {
	s := New(0, 1)
	s.Acquire(excl("held"), false)
	var log []string
	for r := 0; r < 2; r++ {
		keys := shared("held")
		for i := 0; i < 1000; i++ {
			keys = append(keys, KeyLock{Key: fmt.Sprintf("acct:%d", i)})
		}
		s.Park(&recorder{name: "reader", keys: keys, log: &log})
	}
	writer := excl("w:1", "w:2")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Acquire(writer, false)
		s.Release(writer, false)
	}
	if len(log) != 0 {
		b.Fatalf("readers ran while their key was held: %v", log)
	}
}

// sharedHolder is a Waiter that holds every key of the shard shared when
// it resumes (a transaction's part reading many keys, package tx).
type sharedHolder struct{ recorder }

func (h *sharedHolder) Resume(s *Shard) {
	s.AcquireShared()
	*h.log = append(*h.log, h.name)
}

// TestLocksSharedShard: a shared hold of the whole shard lets readers of
// any key through and holds back every writer; it waits for exclusive
// holders, and newcomers, readers too, queue behind parked waiters, so
// holds following one another never starve a writer.
func TestLocksSharedShard(t *testing.T) {
	s := New(0, 1)
	var log []string
	s.Acquire(excl("x"), false)
	r1 := &sharedHolder{recorder{name: "r1", log: &log}}
	if s.TryLockShared(r1, nil, false) {
		t.Fatal("shared hold granted while a key is held exclusively")
	}
	if s.Available(shared("y")) {
		t.Fatal("a newcomer must queue behind a parked shared hold")
	}
	s.Release(excl("x"), false)
	if fmt.Sprint(log) != "[r1]" {
		t.Fatalf("resumed %v, want [r1]", log)
	}
	if !s.Available(shared("x", "y")) || s.Available(excl("y")) {
		t.Fatal("under a shared hold: readers must pass, writers wait")
	}
	if len(s.Locks.dbs) > 0 && len(s.Locks.dbs[0]) > 0 {
		t.Fatalf("a shared hold made %d key states", len(s.Locks.dbs[0]))
	}
	r2 := &sharedHolder{recorder{name: "r2", log: &log}}
	if !s.TryLockShared(r2, nil, false) {
		t.Fatal("two shared holds must not conflict")
	}
	w := &recorder{name: "w", keys: excl("y"), hold: true, log: &log}
	if s.TryLock(w, false) {
		t.Fatal("writer granted under a shared hold")
	}
	r3 := &sharedHolder{recorder{name: "r3", log: &log}}
	if s.TryLockShared(r3, nil, false) {
		t.Fatal("a shared hold must queue behind a parked writer")
	}
	s.ReleaseShared()
	if fmt.Sprint(log) != "[r1]" {
		t.Fatalf("resumed %v with r2 still holding", log)
	}
	s.ReleaseShared()
	if fmt.Sprint(log) != "[r1 w]" {
		t.Fatalf("resumed %v, want [r1 w]", log)
	}
	s.Release(w.keys, false)
	if fmt.Sprint(log) != "[r1 w r3]" {
		t.Fatalf("resumed %v, want [r1 w r3]", log)
	}
	s.ReleaseShared()
	if !s.Locks.Idle() {
		t.Fatalf("lock table not idle: active=%d", s.Locks.active)
	}
}
