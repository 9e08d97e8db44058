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
//   - Every involved shard runs its part of the operation before it
//     releases its locks, and all locks are held before any part runs: no
//     client can observe half of the operation (DESIGN §8.2).
package tx
