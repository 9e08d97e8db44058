// Package lock is the state machine of dfly's fenced locks (LOCK.*,
// README "Locks"): one named lock's holders, mode, lease deadlines,
// lock-delay, FIFO wait queue and generation, and the sequencers that name
// a grant. It is plain code driven by method calls with the time passed in
// (a Clock the caller injects: the master's monotonic clock in the server,
// a fake one in tests); it owns no goroutine, no I/O, no key and no shard.
// The server keeps one *Lock per lock key in that key's shard and calls it
// on the shard's goroutine only; a multi-name acquire checks every name
// (CanGrant) and then grants every name (Grant), as Table does.
//
// Vocabulary: a grant gives an owner the lock in a Mode with a lease; the
// holder renews it (re-acquire by the same owner, idempotent: same
// generation) or releases it; a lease that runs out expires the holder and
// starts the lock-delay the holder asked for, during which nobody is
// granted the lock. A request that cannot be granted may wait in the
// lock's queue (Enqueue) and is granted only at its turn.
//
// Invariants:
//   - Generations of one Lock never go backwards: every grant takes a
//     generation above every generation the lock handed out before, and
//     above the epoch's base (Generation's high 24 bits are the epoch, the
//     low 40 a counter), so a grant made after an epoch rose (a promotion)
//     outranks every grant of an earlier epoch. Renewal keeps the
//     generation.
//   - At most one holder in Exclusive mode; Shared holders never coexist
//     with an Exclusive one.
//   - FIFO: a request is granted only when it is compatible with the
//     holders and every request queued before it is Shared and it is
//     Shared too (so shared requests behind a queued exclusive one wait,
//     and writers are not starved). A new request counts as queued last.
//   - A lease that has run out is never renewed: Renew answers ErrNotHeld
//     and the caller must acquire again (a new generation, after any
//     lock-delay). An explicit release starts no lock-delay.
//   - The lock-delay is capped at MaxDelay.
//   - Expire runs before every other method, so an expired holder is
//     never reported as holding.
package lock
