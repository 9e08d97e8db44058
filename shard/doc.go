// Package shard owns one shard of the keyspace: its databases (a dash
// table of Values plus an expiry table each; small strings packed in
// chunks, strs.go), its key-lock table and the work parked on it, the
// hooks and gates a snapshot or journal installs, its journal, and the
// per-key registrations of blocked clients (blocking.go), WATCH
// (watch.go) and client tracking (tracking.go). It also holds the seams
// to the rest: lending the shard to another goroutine (lend.go), SWAPDB
// (swap.go), and offloaded values of tiered storage (tier.go).
//
// One goroutine owns a shard and runs every message for it (Exec): in the
// server, the event loop the shard is attached to (Attach; shard i on loop
// i mod L, server/loops.go); without an attached executor, a goroutine of
// its own reading an inbox channel (Start). Other goroutines reach it
// through Send; cooperative work (a snapshot's steps) goes through Yield,
// behind the executor's pending I/O. Expiry and defragmentation run on a
// 100 ms tick, each step bounded (expireBudget); the tick ends with Publish,
// the copy of the shard's figures that metrics scrapes read instead of
// stopping it.
//
// What it never does: block. A shard goroutine never waits on a socket, a
// file, another shard or a client; work that cannot run yet is parked and
// resumed when the lock it waits for is released. Messages run in the
// order they were sent.
//
// Invariants:
//   - Only the owning goroutine reads or writes a DB, the lock table or the
//     parked queue (docs/DESIGN.md §8.1) — or, between Lend and Return,
//     only the borrower (ExecBorrowed), while the owner defers every
//     message for the shard. Everything else talks to it through Send.
//   - A key with a parked waiter is unavailable to newcomers, so a waiter is
//     never starved by a stream of later commands on the same key (FIFO per
//     key), and a waiter is blocked only by holders and earlier waiters.
//   - Locks are held by multi-shard transactions, taken in ascending shard
//     order (locks.go), and by a snapshot pinning a value it is still
//     writing (shared, never waited for); single-shard commands only
//     check them (and park, holding nothing), hop groups take free ones
//     without waiting: no cycle of waits.
//   - A shared hold of the whole shard (AcquireShared: a transaction
//     reading many keys) is a shared lock of every key: Available refuses
//     every exclusive key while it lasts, blocked clients are not served
//     (serveReady), the sweep leaves keys alone while journaling
//     (lockedWhileJournaled), and it is granted only while no key is held
//     exclusively and nothing is parked (no writer starves behind a run
//     of readers). ExclLocked does not report it: it writes nothing.
//   - Every mutation goes through DB's mutation methods, which call the
//     change hooks before the table changes, so a snapshot can serialize the
//     buckets first (OnDbChange) and a journal can record the change after.
//     Expiries and deletions that bypass a command are reported to the
//     expiry hooks (journaled as DEL).
//   - A command with more than one key (over all its shards) that writes
//     one shows its keys, read and written, to the gates (Capture) once
//     they are available and before it takes or uses them: TryLock and a
//     waiter's Resume do it for transactions, a connection's batch for its
//     commands.
//   - Keyspace notifications (Notify, package notify): the families
//     publish their commands' events (DB.Notify); the shard publishes
//     "new" when DB.Insert adds a key (not DB.Load's) and "expired" when
//     a key's TTL passed, lazily or in the sweep, right after the change.
//   - Eviction (evict.go, package evict) deletes only between messages,
//     on the owning goroutine, keys no transaction or snapshot holds,
//     through the expiry path (dropBypassing: expiry hooks, journal DEL,
//     "evicted" event); never in ReplicaMode or while applying a master.
//   - A replica (ReplicaMode) or a paused server (Paused) expires nothing:
//     a logically expired key is hidden from readers until its master's
//     DEL (or the pause's end), but writes that replace a value (Set, Load)
//     still see it in the table and replace it in place (DB.Set); Insert
//     and SetExpire need their key's real position, never a hidden miss.
package shard
