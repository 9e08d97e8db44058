// Package snapshot is the fork-less point-in-time serialization of a shard
// (Dragonfly's SliceSnapshot, DESIGN.md §4): a Slice walks its shard's
// tables bucket by bucket as cooperative work on the shard's own goroutine,
// while commands keep running between its steps.
//
// What it never does: block the shard (a full output buffer postpones the
// walk, it does not wait), or let a change reach a bucket before the
// bucket's contents at the cut have been written.
//
// Invariants (PIT mode, the only one so far):
//   - The cut: every shard takes its snapshot version (Shard.CutVersion)
//     inside one transaction that holds every shard, so no multi-shard
//     command is half-applied at the cut.
//   - A bucket whose version is below the snapshot version still holds its
//     contents at the cut; serializing it raises its version to the
//     snapshot version (SetVersion), so it is written exactly once.
//   - Before any mutation the change hooks serialize every bucket it may
//     touch: the item's bucket (PreUpdate), the buckets an erase may change
//     (PreDelete, expiry: dash's EraseChanges), every bucket an insert may
//     change, including a whole segment about to split (PreInsert: dash's
//     InsertChanges), and the whole table before a flush. Dash gives the
//     buckets an item moves into the highest version of their sources, so
//     a moved item never lands in a bucket that looks written but is not.
//   - Records leave in chunks of whole records, each chunk starting with
//     its database's SELECTDB, so chunks of all shards can be interleaved
//     into one RDB stream.
//
// Roadmap (issue 7): non-PIT mode with OnMoved, the per-bucket state
// machine (NotVisited, Serializing, DelayedPending, Covered) with parked
// mutations and the deferred deletion queue, big values in bounded chunks,
// tagged chunks for replication, backpressure that delays mutations.
package snapshot
