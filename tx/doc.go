// Package tx runs operations that span shards atomically: it takes key
// locks on every involved shard, runs steps on the shards while holding
// them, and releases them. MULTI/EXEC, Lua scripts and blocking commands
// build on it.
//
// What it never does: run on a shard goroutine (a Tx blocks its caller
// while shards work), or touch shard data outside a step.
//
// Invariants:
//   - Locks are taken one shard at a time in ascending shard id, all of a
//     shard's keys in one step, and never while waiting for a lower shard;
//     so two transactions cannot wait on each other in a cycle (no deadlock).
//     A lazy transaction (LockLazily, for scripts) takes a shard's locks
//     with its first step there, after every lower involved shard's: the
//     same order, so the same argument holds.
//   - Every involved shard runs its part of the operation before it
//     releases its locks, and no lock is released before every part ran
//     (two-phase locking): no client can observe half of the operation
//     (DESIGN §8.2). With Lock all locks are held before any part runs;
//     with LockLazily a step may run before a later shard is locked, which
//     is still atomic because nothing it changed is visible before Finish.
//   - A transaction with more than one key, one written, shows each shard
//     its keys (read and written) in the step that takes them, before
//     taking them (shard.Capture): a snapshot streaming with its journal
//     writes their pending baselines before any of the transaction's
//     entries.
package tx
