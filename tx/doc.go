// Package tx runs operations that span shards atomically: it takes key
// locks on every involved shard, runs steps on the shards while holding
// them, and releases them. Coordinator commands (MSET over shards,
// RENAME, FLUSHALL ...), MULTI/EXEC, Lua scripts on a coordinator,
// blocking commands and a snapshot's cut build on it.
//
// A Tx declares keys (Add: shared for reads, exclusive for writes) or
// whole shards (AddShard), then Lock, Run/RunAll steps, and Finish. Lock
// first asks every shard at once to take its keys if they are free now
// (tryLockAll), and otherwise takes them shard by shard in ascending
// order. LockLazily (scripts) locks each shard with its first step there.
// Nested and NestedIn run commands inside a transaction that already
// holds every lock (EXEC, a script); Local runs them on the shard
// goroutine that owns their shards (a script confined to a shard or
// borrowed loop), steps inline instead of as messages.
//
// Journaling (package journal): when a journal records on one of its
// shards once the locks are held (recording starts and stops only in
// steps holding every shard), a transaction gets an id (NewID), its steps
// record into per-shard parts, a Recorder journals a coordinator's own
// command, and Finish commits every part while releasing the locks.
//
// What it never does: run a coordinator's Tx on a shard goroutine (Lock
// and Run block their caller while shards work; Local is the exception,
// whose steps run inline), or touch shard data outside a step.
//
// Invariants:
//   - Locks are taken one shard at a time in ascending shard id, all of a
//     shard's keys in one step, and never while waiting for a lower shard;
//     so two transactions cannot wait on each other in a cycle (no deadlock).
//     tryLockAll waits for nothing and gives back what it got unless every
//     shard granted. A lazy transaction (LockLazily, for scripts) takes a
//     shard's locks with its first step there, after every lower involved
//     shard's: the same order, so the same argument holds.
//   - A part that reads indexFrom (64) keys or more of its shard and writes
//     none there holds the whole shard shared (part.shared,
//     shard.AcquireShared) instead of each key: the same exclusion for its
//     keys, more for the shard's other keys (their writers wait too). It
//     is taken in the same step and order as key locks, so the deadlock
//     argument above holds. A write declared on that shard later in the
//     transaction turns it back into key locks (narrow) before any lock is
//     taken. It holds nothing exclusively, so a snapshot's checks of keys
//     held exclusively (shard.ExclLocked) need not see it.
//   - Every involved shard runs its part of the operation before it
//     releases its locks, and no lock is released before every part ran
//     (two-phase locking): no client can observe half of the operation
//     (docs/DESIGN.md §8.2). With Lock all locks are held before any part runs;
//     with LockLazily a step may run before a later shard is locked, which
//     is still atomic because nothing it changed is visible before Finish.
//   - A transaction with more than one key, one written, shows each shard
//     its keys (read and written) in the step that takes them, before
//     taking them (shard.Capture): a snapshot streaming with its journal
//     writes their pending baselines before any of the transaction's
//     entries.
//   - Journal parts are committed when the locks are released, one
//     transaction at a time (commitMu), so two transactions' parts are in
//     the same order on every shard they share. A transaction that saw a
//     journal recording commits what its parts hold even if it wrote
//     nothing itself (an expiry a step found) and even when aborted.
//   - A step that panics on a shard is raised again on the coordinator
//     (StepPanic); Abort then gives back every lock the transaction holds.
package tx
