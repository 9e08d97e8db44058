package tx

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/shard"
)

func startShards(t *testing.T, n int) []*shard.Shard {
	shards := make([]*shard.Shard, n)
	for i := range shards {
		shards[i] = shard.New(i, 1)
		shards[i].Start()
	}
	t.Cleanup(func() {
		for _, s := range shards {
			s.Stop()
		}
	})
	return shards
}

func readInt(db *shard.DB, key string) int {
	_, v := db.Find([]byte(key))
	if v == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(v.Str()))
	return n
}

func writeInt(db *shard.DB, key string, n int) {
	db.Set([]byte(key), shard.NewString([]byte(strconv.Itoa(n))), false)
}

// TestBankInvariant moves amounts between accounts on random shards while
// readers sum every account under shared locks: the sum never changes, and
// the whole run finishes (no deadlock) despite transactions that lock
// overlapping keys on several shards in every order of declaration, half
// of the transfers locking lazily (LockLazily). With 300 accounts a
// reader's part reads more than indexFrom keys of each shard and holds the
// shard shared (part.shared) while the transfers lock key by key.
func TestBankInvariant(t *testing.T) {
	for _, n := range []int{12, 300} {
		t.Run(strconv.Itoa(n)+"-accounts", func(t *testing.T) { bankInvariant(t, n) })
	}
}

func bankInvariant(t *testing.T, nAccounts int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const nShards, start = 3, 100
	shards := startShards(t, nShards)
	owner := func(acct int) int { return acct % nShards }
	key := func(acct int) string { return "acct:" + strconv.Itoa(acct) }
	for a := 0; a < nAccounts; a++ {
		a := a
		done := make(chan struct{})
		shards[owner(a)].Send(shard.Func(func(s *shard.Shard) { writeInt(s.DBs[0], key(a), start); close(done) }))
		<-done
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var transfers, sums atomic.Int64
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			var prev *Tx
			for !stop.Load() {
				from, to := rng.IntN(nAccounts), rng.IntN(nAccounts)
				if from == to {
					continue
				}
				amount := rng.IntN(10)
				t := Recycle(prev, shards) // each transfer reuses the last one's
				prev = t
				t.Add(owner(to), 0, key(to), true)
				t.Add(owner(from), 0, key(from), true)
				if w%2 == 1 {
					t.LockLazily() // locks come with the steps, in shard order
				} else {
					t.Lock()
				}
				var bal int
				t.Run(owner(from), func(s *shard.Shard) { bal = readInt(s.DBs[0], key(from)) })
				if bal < amount {
					t.Finish(nil)
					continue
				}
				t.Run(owner(from), func(s *shard.Shard) { writeInt(s.DBs[0], key(from), bal-amount) })
				t.Run(owner(to), func(s *shard.Shard) {
					db := s.DBs[0]
					writeInt(db, key(to), readInt(db, key(to))+amount)
				})
				t.Finish(nil)
				transfers.Add(1)
			}
		}(w)
	}
	errs := make(chan string, 10)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				t := New(shards)
				for a := nAccounts - 1; a >= 0; a-- {
					t.Add(owner(a), 0, key(a), false)
				}
				t.Lock()
				var parts [nShards]int
				t.Finish(func(s *shard.Shard) {
					for a := 0; a < nAccounts; a++ {
						if owner(a) == s.ID {
							parts[s.ID] += readInt(s.DBs[0], key(a))
						}
					}
				})
				sum := 0
				for _, p := range parts {
					sum += p
				}
				if sum != nAccounts*start {
					select {
					case errs <- "sum " + strconv.Itoa(sum):
					default:
					}
				}
				sums.Add(1)
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatalf("seed %d: transactions did not finish: deadlock", seed)
	}
	close(errs)
	for e := range errs {
		t.Fatalf("seed %d: a reader saw a partial transfer: %s, want %d", seed, e, nAccounts*start)
	}
	if transfers.Load() == 0 || sums.Load() == 0 {
		t.Fatalf("no progress: %d transfers, %d sums", transfers.Load(), sums.Load())
	}
	t.Logf("%d transfers, %d consistent sums", transfers.Load(), sums.Load())
}

// TestLazyLocksInShardOrder: a lazy transaction's step on a shard runs
// with the locks of every involved lower shard already held, and those of
// higher shards not yet; Finish gives everything back.
func TestLazyLocksInShardOrder(t *testing.T) {
	shards := startShards(t, 3)
	locked := func(sid int, key string) bool {
		var held bool
		done := make(chan struct{})
		shards[sid].Send(shard.Func(func(s *shard.Shard) { held = s.ExclLocked(0, key); close(done) }))
		<-done
		return held
	}
	x := New(shards)
	x.Add(2, 0, "c", true)
	x.Add(0, 0, "a", true)
	x.Add(1, 0, "b", true)
	x.LockLazily()
	if locked(0, "a") || locked(1, "b") || locked(2, "c") {
		t.Fatal("LockLazily took a lock before any step")
	}
	var sawA, sawB, sawC bool
	x.Run(1, func(s *shard.Shard) { sawB = s.ExclLocked(0, "b") })
	if !sawB || !locked(0, "a") || locked(2, "c") {
		t.Fatalf("step on shard 1: own lock %v, shard 0 locked %v, shard 2 locked %v; want true, true, false",
			sawB, locked(0, "a"), locked(2, "c"))
	}
	x.Run(0, func(s *shard.Shard) { sawA = s.ExclLocked(0, "a") })
	x.Run(2, func(s *shard.Shard) { sawC = s.ExclLocked(0, "c") })
	if !sawA || !sawC {
		t.Fatalf("steps ran without their locks: shard 0 %v, shard 2 %v", sawA, sawC)
	}
	x.Finish(nil)
	// The releases are in the shards' queues ahead of these checks.
	for sid, key := range []string{"a", "b", "c"} {
		if locked(sid, key) {
			t.Fatalf("%s still locked on shard %d after Finish", key, sid)
		}
	}
}

// TestLazyWaitsForHolder: a lazy step on a key another transaction holds
// runs only once that transaction finished.
func TestLazyWaitsForHolder(t *testing.T) {
	shards := startShards(t, 2)
	holder := New(shards)
	holder.Add(1, 0, "k", true)
	holder.Add(0, 0, "j", true)
	holder.Lock()
	x := New(shards)
	x.Add(0, 0, "other", true)
	x.Add(1, 0, "k", true)
	x.LockLazily()
	ran := make(chan int, 1)
	go func() {
		x.Run(1, func(s *shard.Shard) { ran <- readInt(s.DBs[0], "k") })
		x.Finish(nil)
	}()
	holder.Run(1, func(s *shard.Shard) { writeInt(s.DBs[0], "k", 7) })
	select {
	case <-ran:
		t.Fatal("the lazy step ran while another transaction held its key")
	default:
	}
	holder.Finish(nil)
	if v := <-ran; v != 7 {
		t.Fatalf("the lazy step read %d, want the holder's 7", v)
	}
}

// captureGate records the keys shown to Capture, and whether any of them
// was already held exclusively (taken before it was shown: too late for a
// snapshot to write its baseline safely).
type captureGate struct {
	s    *shard.Shard
	keys []string
	held bool
}

func (g *captureGate) Admit(*shard.DB, string) {}

func (g *captureGate) Capture(keys []shard.KeyLock) {
	for _, k := range keys {
		g.keys = append(g.keys, k.Key)
		g.held = g.held || g.s.ExclLocked(k.DB, k.Key)
	}
}

// A transaction with more than one key shows each shard its keys, read and
// written, before it takes them: whether it locks at once (one round or
// shard by shard), or parks behind a holder and is resumed. One with a
// single key, or writing none, shows nothing.
func TestCaptureBeforeLock(t *testing.T) {
	shards := startShards(t, 2)
	gates := make([]*captureGate, len(shards))
	for i, s := range shards {
		gates[i] = &captureGate{s: s}
		run(s, func(s *shard.Shard) { s.AddGate(gates[i]) })
	}
	seen := func() (out [2][]string, held bool) {
		for i, s := range shards {
			run(s, func(*shard.Shard) {
				out[i], gates[i].keys = gates[i].keys, nil
				held = held || gates[i].held
			})
		}
		return out, held
	}

	one := New(shards)
	one.Add(0, 0, "a", true)
	one.Lock()
	one.Finish(nil)
	if got, _ := seen(); len(got[0])+len(got[1]) != 0 {
		t.Fatalf("a single-key transaction was captured: %v", got)
	}
	reads := New(shards) // journals nothing
	reads.Add(0, 0, "a", false)
	reads.Add(1, 0, "b", false)
	reads.Lock()
	reads.Finish(nil)
	if got, _ := seen(); len(got[0])+len(got[1]) != 0 {
		t.Fatalf("a read-only transaction was captured: %v", got)
	}

	two := New(shards) // tryLockAll: both shards in one round
	two.Add(0, 0, "src", false)
	two.Add(1, 0, "dst", true)
	two.Lock()
	two.Finish(nil)
	got, held := seen()
	if len(got[0]) != 1 || got[0][0] != "src" || len(got[1]) != 1 || got[1][0] != "dst" || held {
		t.Fatalf("shards saw %v (held %v), want [src] [dst] before locking", got, held)
	}

	// A holder of dst: the transaction parks on shard 1, then resumes.
	holder := []shard.KeyLock{{DB: 0, Key: "dst", Excl: true}}
	run(shards[1], func(s *shard.Shard) { s.Acquire(holder, false) })
	done := make(chan struct{})
	go func() {
		tr := New(shards)
		tr.Add(0, 0, "src", true)
		tr.Add(1, 0, "dst", true)
		tr.Lock()
		tr.Finish(nil)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	if got, _ := seen(); len(got[1]) != 0 {
		t.Fatalf("shard 1 captured %v while another transaction held dst", got[1])
	}
	run(shards[1], func(s *shard.Shard) { s.Release(holder, false) })
	<-done
	got, held = seen()
	if len(got[1]) == 0 || got[1][len(got[1])-1] != "dst" || held {
		t.Fatalf("the resumed transaction showed shard 1 %v (held %v), want dst before locking", got[1], held)
	}
}

// run runs fn on s and waits.
func run(s *shard.Shard, fn func(*shard.Shard)) {
	done := make(chan struct{})
	s.Send(shard.Func(func(s *shard.Shard) { fn(s); close(done) }))
	<-done
}

// TestAbortAfterStepPanic: a step's function that panics on a shard does
// not end the shard's goroutine; the panic is raised again on the
// coordinator (StepPanic) once the step is over, and Abort gives back
// exactly the locks still held, whichever step panicked: a Run, a lazy
// transaction's lock-and-run, a Finish that releases as it runs, or the
// coordinator itself between steps. After each, a second transaction
// locks the same keys and the shards still serve.
func TestAbortAfterStepPanic(t *testing.T) {
	shards := startShards(t, 3)
	boom := func(s *shard.Shard) { panic("boom on " + strconv.Itoa(s.ID)) }
	noop := func(*shard.Shard) {}
	declare := func(x *Tx) {
		x.Add(2, 0, "c", true)
		x.Add(0, 0, "a", true)
		x.Add(1, 0, "b", false)
	}
	cases := []struct {
		name string
		run  func(x *Tx)
		step bool // the panic is a StepPanic
	}{
		{"run", func(x *Tx) { x.Lock(); x.Run(1, noop); x.Run(2, boom) }, true},
		{"run all", func(x *Tx) { x.Lock(); x.RunAll(boom) }, true},
		{"lazy first step", func(x *Tx) { x.LockLazily(); x.Run(1, boom) }, true},
		{"lazy later step", func(x *Tx) { x.LockLazily(); x.Run(0, noop); x.Run(2, boom) }, true},
		{"finish", func(x *Tx) { x.Lock(); x.Finish(boom) }, true},
		{"lazy finish", func(x *Tx) { x.LockLazily(); x.Run(2, noop); x.Finish(boom) }, true},
		{"coordinator", func(x *Tx) { x.Lock(); x.Run(0, noop); panic("coordinator boom") }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := New(shards)
			declare(x)
			func() {
				defer func() {
					r := recover()
					sp, isStep := r.(*StepPanic)
					if r == nil || isStep != tc.step {
						t.Fatalf("recovered %#v, want a step panic: %v", r, tc.step)
					}
					if isStep && (sp.Value == nil || len(sp.Stack) == 0) {
						t.Fatalf("step panic without value or stack: %+v", sp)
					}
					x.Abort()
				}()
				tc.run(x)
			}()
			// Every lock is free again: a transaction taking them all
			// exclusively finishes, and each shard is idle after it.
			done := make(chan struct{})
			go func() {
				y := New(shards)
				y.Add(0, 0, "a", true)
				y.Add(1, 0, "b", true)
				y.Add(2, 0, "c", true)
				y.Lock()
				y.Finish(func(s *shard.Shard) { writeInt(s.DBs[0], "after", s.ID) })
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the keys stayed locked after Abort")
			}
			for _, s := range shards {
				idle := make(chan bool)
				s.Send(shard.Func(func(s *shard.Shard) { idle <- s.Locks.Idle() && readInt(s.DBs[0], "after") == s.ID }))
				if !<-idle {
					t.Fatalf("shard %d: locks held or the later write missing", s.ID)
				}
			}
			x.Abort() // a second Abort does nothing
		})
	}
}

// TestJournalKeepsExpiriesOfTxThatWroteNothing: a step of a recording
// transaction that finds a key expired deletes it, and the shard
// (shard.DB.deleteExpired) records the DEL into the transaction's part.
// The transaction writes nothing else (a RENAME of what turned out to be no key), yet its parts
// are committed, whether it ends with Finish or Abort: a replica must
// delete the key too (issue 36, where they were thrown away).
func TestJournalKeepsExpiriesOfTxThatWroteNothing(t *testing.T) {
	for _, end := range []string{"finish", "abort"} {
		t.Run(end, func(t *testing.T) {
			shards := startShards(t, 2)
			var mu sync.Mutex
			got := map[int][]string{}
			for _, s := range shards {
				s.Journal = journal.New(s.ID, journal.Config{})
				run(s, func(s *shard.Shard) {
					s.Journal.Subscribe(func(e *journal.Entry) {
						mu.Lock()
						defer mu.Unlock()
						line := e.Op.String()
						for _, a := range e.Args {
							line += " " + string(a)
						}
						got[s.ID] = append(got[s.ID], line)
					})
					writeInt(s.DBs[0], "k", 1)
					it, _ := s.DBs[0].Find([]byte("k"))
					s.DBs[0].SetExpire(it, time.Now().Add(-time.Second).UnixMilli())
				})
			}
			x := New(shards)
			x.Add(0, 0, "k", false)
			x.Add(1, 0, "k", true)
			x.Lock()
			x.Run(0, func(s *shard.Shard) {
				if _, v := s.DBs[0].Find([]byte("k")); v != nil {
					t.Errorf("k found after its TTL passed")
				}
			})
			if end == "finish" {
				x.Finish(nil)
			} else if x.Abort() {
				t.Error("Abort reports unjournaled writes of a transaction without a recorder")
			}
			run(shards[0], func(*shard.Shard) {})
			run(shards[1], func(*shard.Shard) {})
			mu.Lock()
			defer mu.Unlock()
			if want := "[MULTI DEL k EXEC]"; fmt.Sprint(got[0]) != want {
				t.Errorf("shard 0 journal %v, want %s", got[0], want)
			}
			if want := "[EXEC]"; fmt.Sprint(got[1]) != want {
				t.Errorf("shard 1 journal %v, want %s", got[1], want)
			}
		})
	}
}

// TestAddDeduplicatesManyKeys: past indexFrom keys a part finds declared
// keys through its index; a key declared again is locked once, exclusively
// if either declaration was, as below it.
func TestAddDeduplicatesManyKeys(t *testing.T) {
	shards := startShards(t, 2)
	x := New(shards)
	const n = 3 * indexFrom
	for i := 0; i < n; i++ {
		x.Add(0, 0, "k"+strconv.Itoa(i), false)
	}
	for i := 0; i < n; i += 2 {
		x.Add(0, 0, "k"+strconv.Itoa(i), true)
		x.Add(0, 1, "k"+strconv.Itoa(i), false) // another database: another key
	}
	keys := x.part(0).keys
	if len(keys) != n+n/2 {
		t.Fatalf("%d keys declared, want %d", len(keys), n+n/2)
	}
	for i, k := range keys[:n] {
		if want := i%2 == 0; k.Excl != want || k.Key != "k"+strconv.Itoa(i) {
			t.Fatalf("key %d: %+v, exclusive want %v", i, k, want)
		}
	}
	x.Lock()
	x.Finish(nil)
}

// BenchmarkAddKeys: declaring the keys of an MSET of b.N pairs on one
// shard; per key, the cost must not grow with b.N.
func BenchmarkAddKeys(b *testing.B) {
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i)
	}
	x := New([]*shard.Shard{shard.New(0, 1)})
	b.ResetTimer()
	for _, k := range keys {
		x.Add(0, 0, k, true)
	}
}

// TestNestedStepsRunTogether: a nested transaction's step over two shards
// (an MGET over shards inside EXEC) runs on both at once, as its
// enclosing transaction's RunAll would, not one shard after the other
// while every lock is held: each shard's part here waits for the other's
// to have started, which never happens when they run in turn.
func TestNestedStepsRunTogether(t *testing.T) {
	shards := startShards(t, 2)
	outer := New(shards)
	outer.Add(0, 0, "a", false)
	outer.Add(1, 0, "b", false)
	outer.Lock()
	inner := NestedIn(shards, outer)
	inner.AddBytes(0, 0, []byte("a"), false)
	inner.AddBytes(1, 0, []byte("b"), false)
	inner.Lock()
	var started [2]chan struct{}
	for i := range started {
		started[i] = make(chan struct{})
	}
	var timedOut atomic.Bool
	inner.Finish(func(s *shard.Shard) {
		close(started[s.ID])
		select {
		case <-started[1-s.ID]:
		case <-time.After(5 * time.Second):
			timedOut.Store(true)
		}
	})
	outer.Finish(nil)
	if timedOut.Load() {
		t.Fatal("the nested step ran on one shard after the other")
	}
}

// TestManyReadsHoldShardShared: a part reading indexFrom keys or more of
// its shard holds it shared, with no lock state per key: the shard's
// writers wait, even of keys it does not read, and its readers pass. A write declared later on the same shard
// brings back one lock per key, each key once.
func TestManyReadsHoldShardShared(t *testing.T) {
	shards := startShards(t, 2)
	x := New(shards)
	for i := 0; i < 2*indexFrom; i++ {
		x.Add(0, 0, "r"+strconv.Itoa(i), false)
		x.Add(0, 0, "r"+strconv.Itoa(i), false)
	}
	x.Add(1, 0, "other", false)
	x.Lock()
	var writerFree, readerFree bool
	done := make(chan struct{})
	shards[0].Send(shard.Func(func(s *shard.Shard) {
		writerFree = s.Available([]shard.KeyLock{{Key: "undeclared", Excl: true}})
		readerFree = s.Available([]shard.KeyLock{{Key: "r1"}})
		close(done)
	}))
	<-done
	x.Finish(nil)
	if writerFree || !readerFree {
		t.Fatalf("writer free %v (want false), reader free %v (want true)", writerFree, readerFree)
	}

	y := New(shards)
	for i := 0; i < 2*indexFrom; i++ {
		y.Add(0, 0, "r"+strconv.Itoa(i), false)
		y.Add(0, 0, "r"+strconv.Itoa(i), false)
	}
	y.Add(0, 0, "r3", true)
	p := y.part(0)
	if p.shared || len(p.keys) != 2*indexFrom || !p.keys[3].Excl {
		t.Fatalf("after a write: shared %v, %d keys (want %d), r3 exclusive %v",
			p.shared, len(p.keys), 2*indexFrom, p.keys[3].Excl)
	}
	y.Lock()
	y.Finish(nil)
}

// TestSharedPartDeclaresWithoutCopies: a part holding its shard shared
// keeps the keys AddBytes declares in the command's arguments, no
// allocation per key; when a write makes it narrow, it copies them, so the
// lock table never holds a key whose bytes the connection may reuse.
func TestSharedPartDeclaresWithoutCopies(t *testing.T) {
	shards := startShards(t, 1)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte("acct:" + strconv.Itoa(i))
	}
	var x *Tx
	if n := testing.AllocsPerRun(10, func() {
		x = Recycle(x, shards)
		for _, k := range keys {
			x.AddBytes(0, 0, k, false)
		}
	}); n > float64(indexFrom) {
		t.Fatalf("%v allocations declaring %d keys read", n, len(keys))
	}
	x.AddBytes(0, 0, []byte("w"), true)
	for _, k := range keys {
		k[0] = 'X'
	}
	p := x.part(0)
	if p.shared || p.keys[7].Key != "acct:7" {
		t.Fatalf("after a write: shared %v, key 7 %q (want a copy, \"acct:7\")", p.shared, p.keys[7].Key)
	}
}
