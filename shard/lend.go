package shard

// Lending a shard to another goroutine (server/borrow.go: a script whose
// keys live on shards of several event loops runs on one of them, which
// borrows the others' shards instead of hopping to them call by call).
//
// Invariant: between Lend and Return exactly one goroutine, the borrower,
// touches the shard's state, and only through ExecBorrowed. The owner
// goroutine goes on serving its other work meanwhile, but every message
// it would run on the shard (Exec) is deferred, in order, until Return.
// Both the owner and the borrower must reach the shard only through Exec
// (or ExecBorrowed) for this to hold; code on the owner that looks at a
// shard's state directly (a hop group's lock tries) checks Lent first.
// Lend and Return run on the owner; the hand-over in each direction is a
// channel or inbox message, which orders the two goroutines' accesses.

// Lend hands the shard to a borrower until Return. Only the owning
// goroutine may call it, outside any Exec of the shard.
func (s *Shard) Lend() { s.lent, s.recalled = true, false }

// AttachRecall sets what Recall does: ask the borrower to return the
// shard. A borrower may keep a lent shard after its run (server/borrow.go:
// kept shards) until asked, so the owner asks whenever it needs the shard
// back: a message deferred, a run of its own waiting for it.
func (s *Shard) AttachRecall(fn func()) { s.recall = fn }

// Recall asks the borrower of the lent shard to return it, once a lend.
// Only the owning goroutine may call it; a shard not lent ignores it.
func (s *Shard) Recall() {
	if s.lent && !s.recalled && s.recall != nil {
		s.recalled = true
		s.recall()
	}
}

// Lent reports whether the shard is lent out. Only the owning goroutine
// may call it (the borrower knows).
func (s *Shard) Lent() bool { return s.lent }

// Return takes the shard back from its borrower and runs the messages
// deferred meanwhile, in the order they came. Only the owning goroutine
// may call it, after the borrower's last access was ordered before this
// call (the message that carried the return).
func (s *Shard) Return() {
	s.lent = false
	q := s.deferred
	s.deferred = nil
	for i, r := range q {
		s.Exec(r)
		q[i] = nil
	}
	if s.deferred == nil {
		s.deferred = q[:0]
	}
}

// ExecBorrowed is Exec for the borrower of a lent shard.
func (s *Shard) ExecBorrowed(r Runnable) { s.exec(r) }

// Lendable reports whether the shard may be lent now to a run with keys:
// not lent already, the keys free (Available), and nothing registered
// that would run on the borrower (a snapshot's hooks and gates, a
// recording journal, tiered storage). Locks other transactions hold on
// other keys stay held; their steps wait, deferred, until Return. Only the
// owning goroutine may call it.
func (s *Shard) Lendable(keys []KeyLock) bool { return !s.lent && s.lendable(keys) }

// StillLendable is Lendable for the borrower of a lent shard, which holds
// it across runs (server/borrow.go): whether another run with keys may
// use it as the lender's check would have let it. Only the borrower may
// call it.
func (s *Shard) StillLendable(keys []KeyLock) bool { return s.lendable(keys) }

func (s *Shard) lendable(keys []KeyLock) bool {
	return len(s.gates) == 0 && len(s.hooks) == 0 &&
		len(s.expiryHooks) == 0 && len(s.moveHooks) == 0 &&
		(s.Journal == nil || !s.Journal.Active()) && s.tier == nil && s.Available(keys)
}
