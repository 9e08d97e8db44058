package lock

import (
	"errors"
	"testing"
	"time"
)

const sec = time.Second

func req(owner string, m Mode, lease time.Duration) Request {
	return Request{Owner: owner, Mode: m, Lease: lease}
}

func mustGrant(t *testing.T, l *Lock, r Request, epoch uint32, now time.Duration, want Outcome) Holder {
	t.Helper()
	h, out, err := l.Grant(r, epoch, now)
	if err != nil || out != want {
		t.Fatalf("Grant(%+v) at %v = %v, %v; want %v", r, now, out, err, want)
	}
	return h
}

func TestGrantRenewRelease(t *testing.T) {
	var l Lock
	h := mustGrant(t, &l, req("a", Exclusive, 10*sec), 0, 0, Granted)
	if h.Gen != 1 {
		t.Fatalf("first generation %d, want 1", h.Gen)
	}
	mustGrant(t, &l, req("b", Exclusive, 10*sec), 0, sec, Busy)
	// Re-acquire by the holder renews: same generation, new deadline.
	h2 := mustGrant(t, &l, req("a", Exclusive, 10*sec), 0, 5*sec, Renewed)
	if h2.Gen != h.Gen || h2.Deadline != 15*sec {
		t.Fatalf("renewal %+v, want gen %d deadline 15s", h2, h.Gen)
	}
	if _, _, err := l.Grant(req("a", Shared, sec), 0, 6*sec); !errors.Is(err, ErrWrongMode) {
		t.Fatalf("holder asking the other mode: %v", err)
	}
	if err := l.Release("b", 6*sec); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release by a non-holder: %v", err)
	}
	if err := l.Release("a", 6*sec); err != nil {
		t.Fatal(err)
	}
	if l.Current(h.Gen, 6*sec) {
		t.Fatal("released grant still current")
	}
	// An explicit release starts no lock-delay.
	h3 := mustGrant(t, &l, req("b", Exclusive, sec), 0, 6*sec, Granted)
	if h3.Gen != 2 {
		t.Fatalf("generation %d after release, want 2", h3.Gen)
	}
}

func TestRenewAfterExpiryFails(t *testing.T) {
	var l Lock
	mustGrant(t, &l, req("a", Exclusive, 2*sec), 0, 0, Granted)
	if _, err := l.Renew("a", 2*sec, sec); err != nil {
		t.Fatalf("renew within the lease: %v", err)
	}
	// Lease now ends at 3s; at 3s it has run out.
	if _, err := l.Renew("a", 2*sec, 3*sec); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("renew after the lease ran out: %v, want ErrNotHeld", err)
	}
	if len(l.Holders) != 0 {
		t.Fatal("a failed renewal granted the lock")
	}
}

func TestExpiryStartsLockDelay(t *testing.T) {
	var l Lock
	r := req("a", Exclusive, 2*sec)
	r.Delay = 5 * sec
	h := mustGrant(t, &l, r, 0, 0, Granted)
	if !l.Current(h.Gen, sec) {
		t.Fatal("sequencer not current within the lease")
	}
	if l.Current(h.Gen, 2*sec) {
		t.Fatal("sequencer current after the lease")
	}
	// Free since 2s, delayed until 7s.
	mustGrant(t, &l, req("b", Exclusive, sec), 0, 3*sec, Delayed)
	mustGrant(t, &l, req("a", Exclusive, sec), 0, 6*sec+999*time.Millisecond, Delayed)
	if got := l.NextChange(3 * sec); got != 7*sec {
		t.Fatalf("next change %v, want 7s", got)
	}
	h2 := mustGrant(t, &l, req("b", Exclusive, sec), 0, 7*sec, Granted)
	if h2.Gen <= h.Gen {
		t.Fatalf("generation went from %d to %d", h.Gen, h2.Gen)
	}
}

func TestDelayCapped(t *testing.T) {
	var l Lock
	r := req("a", Exclusive, sec)
	r.Delay = time.Hour
	h := mustGrant(t, &l, r, 0, 0, Granted)
	if h.Delay != MaxDelay {
		t.Fatalf("delay %v, want the cap %v", h.Delay, MaxDelay)
	}
	mustGrant(t, &l, req("b", Exclusive, sec), 0, sec+MaxDelay-1, Delayed)
	mustGrant(t, &l, req("b", Exclusive, sec), 0, sec+MaxDelay, Granted)
}

func TestSharedHolders(t *testing.T) {
	var l Lock
	a := mustGrant(t, &l, req("a", Shared, 10*sec), 0, 0, Granted)
	b := mustGrant(t, &l, req("b", Shared, 5*sec), 0, sec, Granted)
	if a.Gen == b.Gen {
		t.Fatal("two grants share a generation")
	}
	mustGrant(t, &l, req("w", Exclusive, sec), 0, 2*sec, Busy)
	// b's lease runs out at 6s, a still holds: exclusive still busy.
	if l.Current(b.Gen, 6*sec) || !l.Current(a.Gen, 6*sec) {
		t.Fatal("shared leases not independent")
	}
	mustGrant(t, &l, req("w", Exclusive, sec), 0, 6*sec, Busy)
	if err := l.Release("a", 7*sec); err != nil {
		t.Fatal(err)
	}
	w := mustGrant(t, &l, req("w", Exclusive, sec), 0, 7*sec, Granted)
	mustGrant(t, &l, req("c", Shared, sec), 0, 7*sec, Busy)
	if w.Gen <= b.Gen {
		t.Fatal("generation went backwards")
	}
}

// A shared request behind a queued exclusive one waits, though the lock is
// held shared: writers are not starved.
func TestSharedBehindQueuedExclusiveWaits(t *testing.T) {
	var l Lock
	mustGrant(t, &l, req("r1", Shared, 10*sec), 0, 0, Granted)
	if out, _ := l.CanGrant(req("w", Exclusive, sec), sec); out != Busy {
		t.Fatalf("exclusive over a shared holder: %v", out)
	}
	l.Enqueue(Waiter{ID: 1, Owner: "w", Mode: Exclusive})
	mustGrant(t, &l, req("r2", Shared, sec), 0, sec, Busy)
	l.Enqueue(Waiter{ID: 2, Owner: "r2", Mode: Shared})
	l.Enqueue(Waiter{ID: 3, Owner: "r3", Mode: Shared})
	if err := l.Release("r1", 2*sec); err != nil {
		t.Fatal(err)
	}
	// Free now; the shared waiters are behind the exclusive one.
	r2 := Request{Owner: "r2", Mode: Shared, Lease: sec, Waiter: 2}
	mustGrant(t, &l, r2, 0, 2*sec, Busy)
	// A new exclusive request queues last: not granted either.
	mustGrant(t, &l, req("x", Exclusive, sec), 0, 2*sec, Busy)
	w := Request{Owner: "w", Mode: Exclusive, Lease: sec, Waiter: 1}
	mustGrant(t, &l, w, 0, 2*sec, Granted)
	if len(l.Waiters) != 2 {
		t.Fatalf("granted waiter still queued: %+v", l.Waiters)
	}
	if err := l.Release("w", 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Both shared waiters are granted together, in either order.
	r3 := Request{Owner: "r3", Mode: Shared, Lease: sec, Waiter: 3}
	mustGrant(t, &l, r3, 0, 2500*time.Millisecond, Granted)
	mustGrant(t, &l, r2, 0, 2500*time.Millisecond, Granted)
	if len(l.Holders) != 2 || len(l.Waiters) != 0 {
		t.Fatalf("holders %+v waiters %+v", l.Holders, l.Waiters)
	}
}

// A waiter that leaves (timeout, disconnect) lets the next one through.
func TestWaiterLeaving(t *testing.T) {
	var l Lock
	mustGrant(t, &l, req("a", Exclusive, 10*sec), 0, 0, Granted)
	l.Enqueue(Waiter{ID: 1, Owner: "b", Mode: Exclusive})
	l.Enqueue(Waiter{ID: 2, Owner: "c", Mode: Exclusive})
	if err := l.Release("a", sec); err != nil {
		t.Fatal(err)
	}
	c := Request{Owner: "c", Mode: Exclusive, Lease: sec, Waiter: 2}
	mustGrant(t, &l, c, 0, sec, Busy)
	if !l.Dequeue(1) || l.Dequeue(1) {
		t.Fatal("Dequeue of the first waiter")
	}
	mustGrant(t, &l, c, 0, sec, Granted)
	if !l.Idle(3*sec) || len(l.Waiters) != 0 {
		t.Fatal("lock not idle after the last lease ran out")
	}
}

// Generations never go backwards, and a higher epoch outranks every
// generation of a lower one.
func TestEpochOutranks(t *testing.T) {
	var l Lock
	var last Generation
	for i := range 5 {
		h := mustGrant(t, &l, req("a", Exclusive, sec), 0, time.Duration(i)*2*sec, Granted)
		if h.Gen <= last {
			t.Fatalf("generation %d after %d", h.Gen, last)
		}
		last = h.Gen
	}
	h := mustGrant(t, &l, req("a", Exclusive, sec), 3, 20*sec, Granted)
	if h.Gen.Epoch() != 3 || h.Gen.Counter() != 1 || h.Gen <= last {
		t.Fatalf("after the epoch rose: %d (epoch %d counter %d)", h.Gen, h.Gen.Epoch(), h.Gen.Counter())
	}
	// A lock that has seen a higher epoch than the caller's keeps going up.
	h2 := mustGrant(t, &l, req("a", Exclusive, sec), 1, 30*sec, Granted)
	if h2.Gen != h.Gen+1 {
		t.Fatalf("generation %d after %d under a lower epoch", h2.Gen, h.Gen)
	}
}

func TestMultiNameAllOrNothing(t *testing.T) {
	c := &FakeClock{}
	tb := NewTable(c)
	if _, out, _, _ := tb.Acquire([]string{"b"}, req("x", Exclusive, 10*sec)); out != Granted {
		t.Fatal(out)
	}
	hs, out, at, _ := tb.Acquire([]string{"c", "a", "b", "a"}, req("y", Exclusive, 10*sec))
	if out != Busy || at != "b" || hs != nil {
		t.Fatalf("multi-name over a held name: %v at %q", out, at)
	}
	if len(tb.Lock("a").Holders) != 0 || len(tb.Lock("c").Holders) != 0 {
		t.Fatal("a refused multi-name acquire kept some names")
	}
	c.Advance(10 * sec) // x's lease runs out, no delay
	hs, out, _, _ = tb.Acquire([]string{"c", "a", "b", "a"}, req("y", Exclusive, 10*sec))
	if out != Granted || len(hs) != 3 {
		t.Fatalf("multi-name: %v %+v", out, hs)
	}
	// Holding all of them, asking again renews all of them.
	c.Advance(sec)
	if _, out, _, _ = tb.Acquire([]string{"a", "b", "c"}, req("y", Exclusive, 10*sec)); out != Renewed {
		t.Fatalf("re-acquire of all: %v", out)
	}
	// Overlapping sets in opposite orders: the second waits at the first
	// held name in sorted order and holds nothing meanwhile.
	_, out, at, _ = tb.Acquire([]string{"d", "c"}, req("z", Exclusive, 10*sec))
	if out != Busy || at != "c" || len(tb.Lock("d").Holders) != 0 {
		t.Fatalf("overlap: %v at %q", out, at)
	}
}

func TestMultiNameDelayed(t *testing.T) {
	c := &FakeClock{}
	tb := NewTable(c)
	r := req("x", Exclusive, sec)
	r.Delay = 3 * sec
	tb.Acquire([]string{"b"}, r)
	c.Advance(2 * sec)
	if _, out, at, _ := tb.Acquire([]string{"a", "b"}, req("y", Exclusive, sec)); out != Delayed || at != "b" {
		t.Fatalf("%v at %q", out, at)
	}
	c.Advance(2 * sec)
	if _, out, _, _ := tb.Acquire([]string{"a", "b"}, req("y", Exclusive, sec)); out != Granted {
		t.Fatal(out)
	}
}

func TestSequencer(t *testing.T) {
	var l Lock
	h := mustGrant(t, &l, req("a", Exclusive, sec), 0, 0, Granted)
	if !l.CurrentSequencer(Sequencer{Name: "n", Mode: Exclusive, Gen: h.Gen}, 0) {
		t.Fatal("current sequencer refused")
	}
	if l.CurrentSequencer(Sequencer{Name: "n", Mode: Shared, Gen: h.Gen}, 0) {
		t.Fatal("sequencer of the wrong mode accepted")
	}
	if l.CurrentSequencer(Sequencer{Name: "n", Mode: Exclusive, Gen: h.Gen}, sec) {
		t.Fatal("sequencer current when its lease ran out")
	}
}
