package lock

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"
)

// Mode is how a lock is held.
type Mode uint8

const (
	Exclusive Mode = iota
	Shared
)

func (m Mode) String() string {
	if m == Shared {
		return "shared"
	}
	return "exclusive"
}

// ParseMode reads "exclusive" or "shared" (any case).
func ParseMode(s string) (Mode, bool) {
	switch strings.ToLower(s) {
	case "exclusive":
		return Exclusive, true
	case "shared":
		return Shared, true
	}
	return Exclusive, false
}

// MaxDelay caps the lock-delay a request may ask for.
const MaxDelay = 60 * time.Second

// Clock is the time the state machine runs on: monotonic, as an offset
// from an origin the caller picks.
type Clock interface{ Now() time.Duration }

// Generation numbers grants: the epoch in the high 24 bits, a counter in
// the low 40. Compared as integers, a later epoch always wins.
type Generation uint64

const counterBits = 40

// EpochBase is the smallest generation of an epoch.
func EpochBase(epoch uint32) Generation { return Generation(uint64(epoch) << counterBits) }

// Epoch is the epoch the generation was granted in.
func (g Generation) Epoch() uint32 { return uint32(uint64(g) >> counterBits) }

// Counter is the generation's position within its epoch.
func (g Generation) Counter() uint64 { return uint64(g) & (1<<counterBits - 1) }

// Errors of the state machine; the server maps them to replies.
var (
	ErrNotHeld   = errors.New("lock is not held by this owner (released, or its lease ran out)")
	ErrWrongMode = errors.New("lock is held by this owner in the other mode")
)

// Holder is one owner's grant.
type Holder struct {
	Owner    string
	Gen      Generation
	Deadline time.Duration // the lease runs out at Deadline
	Delay    time.Duration // lock-delay started if the lease runs out
}

// Waiter is a queued request.
type Waiter struct {
	ID    uint64
	Owner string
	Mode  Mode
}

// Lock is one named lock.
type Lock struct {
	Mode    Mode
	Holders []Holder
	// Gen is the last generation handed out; never decreases.
	Gen Generation
	// DelayUntil: no grant before it (lock-delay after an expiry).
	DelayUntil time.Duration
	Waiters    []Waiter
}

// Outcome says what a request got.
type Outcome uint8

const (
	Granted Outcome = iota // a new grant
	Renewed                // the owner held it already: lease extended, same generation
	Busy                   // held in a conflicting mode, or others are queued first
	Delayed                // free, but in its lock-delay
)

// Request asks for a lock.
type Request struct {
	Owner string
	Mode  Mode
	Lease time.Duration
	Delay time.Duration // capped at MaxDelay
	// Waiter is the request's queue id when it waits in the queue (0: a new
	// request, which counts as queued last).
	Waiter uint64
}

// Expire drops the holders whose lease ran out by now, starting their
// lock-delays; it returns how many expired.
func (l *Lock) Expire(now time.Duration) int {
	n := 0
	kept := l.Holders[:0]
	for _, h := range l.Holders {
		if h.Deadline > now {
			kept = append(kept, h)
			continue
		}
		n++
		if until := h.Deadline + h.Delay; until > l.DelayUntil {
			l.DelayUntil = until
		}
	}
	for i := len(kept); i < len(l.Holders); i++ {
		l.Holders[i] = Holder{}
	}
	l.Holders = kept
	return n
}

// Holding is the owner's grant, if it holds the lock.
func (l *Lock) Holding(owner string) (Holder, bool) {
	for _, h := range l.Holders {
		if h.Owner == owner {
			return h, true
		}
	}
	return Holder{}, false
}

// CanGrant says what Grant would do with r at now without changing
// anything but expiries.
func (l *Lock) CanGrant(r Request, now time.Duration) (Outcome, error) {
	l.Expire(now)
	if _, ok := l.Holding(r.Owner); ok {
		if l.Mode != r.Mode {
			return Busy, ErrWrongMode
		}
		return Renewed, nil
	}
	if !l.turn(r) {
		return Busy, nil
	}
	if len(l.Holders) > 0 && (l.Mode == Exclusive || r.Mode == Exclusive) {
		return Busy, nil
	}
	if l.DelayUntil > now {
		return Delayed, nil
	}
	return Granted, nil
}

// turn: every waiter queued before r is Shared and r is Shared too (or r
// is first).
func (l *Lock) turn(r Request) bool {
	for _, w := range l.Waiters {
		if w.ID == r.Waiter && r.Waiter != 0 {
			return true
		}
		if w.Mode == Exclusive || r.Mode == Exclusive {
			return false
		}
	}
	return true
}

// Grant grants or renews r if CanGrant allows it, taking a generation above
// l.Gen and above the epoch's base. A granted waiter leaves the queue.
func (l *Lock) Grant(r Request, epoch uint32, now time.Duration) (Holder, Outcome, error) {
	out, err := l.CanGrant(r, now)
	if err != nil || (out != Granted && out != Renewed) {
		return Holder{}, out, err
	}
	delay := min(max(r.Delay, 0), MaxDelay)
	if out == Renewed {
		for i := range l.Holders {
			if l.Holders[i].Owner == r.Owner {
				l.Holders[i].Deadline = now + r.Lease
				l.Holders[i].Delay = delay
				l.Dequeue(r.Waiter)
				return l.Holders[i], Renewed, nil
			}
		}
	}
	gen := max(l.Gen+1, EpochBase(epoch)+1)
	l.Gen = gen
	l.Mode = r.Mode
	h := Holder{Owner: r.Owner, Gen: gen, Deadline: now + r.Lease, Delay: delay}
	l.Holders = append(l.Holders, h)
	l.Dequeue(r.Waiter)
	return h, Granted, nil
}

// Renew extends the owner's lease; ErrNotHeld when it holds nothing (its
// lease ran out, or it released): renewal never grants.
func (l *Lock) Renew(owner string, lease time.Duration, now time.Duration) (Holder, error) {
	l.Expire(now)
	for i := range l.Holders {
		if l.Holders[i].Owner == owner {
			l.Holders[i].Deadline = now + lease
			return l.Holders[i], nil
		}
	}
	return Holder{}, ErrNotHeld
}

// Release frees the owner's grant at once, without lock-delay.
func (l *Lock) Release(owner string, now time.Duration) error {
	l.Expire(now)
	for i, h := range l.Holders {
		if h.Owner == owner {
			l.Holders = append(l.Holders[:i], l.Holders[i+1:]...)
			return nil
		}
	}
	return ErrNotHeld
}

// Current reports whether gen names a grant still held at now. It changes
// nothing (a replica, which never expires a lock itself, asks it too).
func (l *Lock) Current(gen Generation, now time.Duration) bool {
	for _, h := range l.Holders {
		if h.Gen == gen && h.Deadline > now {
			return true
		}
	}
	return false
}

// Enqueue puts a waiter at the tail of the queue.
func (l *Lock) Enqueue(w Waiter) { l.Waiters = append(l.Waiters, w) }

// Dequeue removes a waiter (granted, timed out or disconnected); it reports
// whether it was queued.
func (l *Lock) Dequeue(id uint64) bool {
	if id == 0 {
		return false
	}
	for i, w := range l.Waiters {
		if w.ID == id {
			l.Waiters = append(l.Waiters[:i], l.Waiters[i+1:]...)
			return true
		}
	}
	return false
}

// Idle: no holder, no waiter and no lock-delay left, so only Gen matters.
func (l *Lock) Idle(now time.Duration) bool {
	l.Expire(now)
	return len(l.Holders) == 0 && len(l.Waiters) == 0 && l.DelayUntil <= now
}

// NextChange is when the lock next changes by itself (a lease running out,
// a lock-delay ending), or 0 when nothing is pending.
func (l *Lock) NextChange(now time.Duration) time.Duration {
	var next time.Duration
	for _, h := range l.Holders {
		if next == 0 || h.Deadline < next {
			next = h.Deadline
		}
	}
	if l.DelayUntil > now && (next == 0 || l.DelayUntil < next) {
		next = l.DelayUntil
	}
	return next
}

// Sequencer names one grant: lock name, mode and generation.
type Sequencer struct {
	Name string
	Mode Mode
	Gen  Generation
}

// CurrentSequencer reports whether s names a grant of l held at now.
func (l *Lock) CurrentSequencer(s Sequencer, now time.Duration) bool {
	return l.Current(s.Gen, now) && l.Mode == s.Mode
}

// Stats are the server's lock figures (INFO locks).
var Stats struct {
	Grants, Renewals, Releases, Expiries, Delayed, FenceRejected atomic.Uint64
	Waiters                                                      atomic.Int64
}
