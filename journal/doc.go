// Package journal is a shard's log of applied writes (docs/DESIGN.md §6):
// every write a shard applies is appended after it applies, in apply
// order, with a per-shard log sequence number (LSN). Consumers — the feed
// that merges every shard's journal into one Redis command stream for
// Redis-protocol replicas (master/stream.go), and dfly's per-shard
// flows (master/flows.go) — subscribe to it, and a bounded ring
// backlog (by bytes, and by age with Config.BacklogAge) lets a consumer
// that fell behind or reconnected read again from an LSN the ring still
// holds.
//
// What it owns: LSNs, the backlog, the subscribers, the per-transaction
// parts being built, and the binary encoding of an Entry (Encode/Decode,
// carried in rdb.OpJournal tagged chunks).
//
// What it never does: block, or run I/O. A Journal is owned by its shard's
// goroutine; every method except Active runs there, and subscriber
// callbacks run there too, so a callback must only hand the entry over
// (append to a queue, signal) and return.
//
// Invariants:
//   - LSNs of a shard are consecutive from 1: an entry's LSN is one more
//     than its predecessor's, so a consumer can tell a gap.
//   - An entry is self-contained and deterministic: replaying the entries
//     in LSN order on the dataset of the cut reproduces the shard (relative
//     TTLs already made absolute, random choices already made, expiries
//     recorded as DEL).
//   - An entry a subscriber or ReadFrom's fn gets is valid only during the
//     call: the backlog keeps entries encoded (a circular buffer), and the
//     Args of a recorded command are the writer's own. A consumer that
//     keeps an entry keeps a Clone; the flows encode it at once. So a
//     write while a replica follows allocates nothing in the journal.
//   - A multi-shard transaction appears in each of its shards' journals as
//     one contiguous part: zero or more OpMulti entries then one OpExec
//     entry naming every shard of the transaction. Parts are appended when
//     the transaction releases its locks, so two transactions' parts are in
//     the same relative order on every shard they share (the caller
//     serializes commits; see tx). A consumer applies a transaction once all
//     of its shards' parts arrived, its OpMulti entries in Seq order (Seq
//     orders the commands across the shards of the transaction), and keeps
//     later entries of those shards behind it. A transaction confined to one
//     shard is a part naming only that shard.
//   - Recording costs one atomic load when nobody listens: Active is false
//     unless there is a subscriber or a retained backlog (Start).
//
// Using it (all on the shard's goroutine):
//
//	id, last := sh.Journal.Subscribe(fn) // fn gets every entry with LSN > last
//	ok := sh.Journal.ReadFrom(lsn, fn)   // replay held entries from lsn (partial sync)
//	sh.Journal.Unsubscribe(id)
//	b = e.Encode(b); e, n, err := journal.Decode(b) // an rdb.OpJournal payload
//
// A consumer that needs a consistent start (a full sync) subscribes in the
// same whole-shard step that takes the snapshot's cut (server's
// replicationCut), so that the entries it gets are exactly those after the
// cut. Writers call Record (through the server's Exec.run and tx's steps),
// Enter/Leave/Commit for transaction parts; Start/Stop keep a backlog
// without subscribers.
package journal
