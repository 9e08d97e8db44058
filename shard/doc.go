// Package shard owns one shard of the keyspace: the goroutine that alone
// touches its data, its databases (a dash table of entries plus an expiry
// table each), its key-lock table, and the queue of work parked on locks.
//
// What it never does: block. A shard goroutine never waits on a socket, a
// file, another shard or a client; work that cannot run yet is parked and
// resumed when the lock it waits for is released. Messages arrive on one
// inbox channel and are run in arrival order.
//
// Invariants:
//   - Only the shard goroutine reads or writes a DB, the lock table or the
//     parked queue (DESIGN §8.1). Everything else talks to it through Send.
//   - A key with a parked waiter is unavailable to newcomers, so a waiter is
//     never starved by a stream of later commands on the same key (FIFO per
//     key), and a waiter is blocked only by holders and earlier waiters.
//   - Every mutation goes through DB's mutation methods, which call the
//     change hooks before the table changes, so a snapshot can serialize the
//     buckets first (OnDbChange) and a journal can record the change after.
//   - A command with more than one key (over all its shards) that writes
//     one shows its keys, read and written, to the gates (Capture) once
//     they are available and before it takes or uses them: TryLock and a
//     waiter's Resume do it for transactions, a connection's batch for its
//     commands.
//   - A replica hides a logically expired key from readers until its
//     master's DEL, but writes that replace a value (Set, Load) still see
//     it in the table and replace it in place (DB.Set); Insert and
//     SetExpire need their key's real position, never a hidden miss.
package shard
