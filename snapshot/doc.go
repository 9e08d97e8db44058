// Package snapshot is the fork-less serialization of a shard (Dragonfly's
// SliceSnapshot, docs/DESIGN.md §4): a Slice walks its shard's tables bucket by
// bucket as cooperative work on the shard's own goroutine, while commands
// keep running between its steps, and hands chunks to a consumer (a file
// writer, a replication flow) through a channel it never blocks on.
//
// What it never does: block the shard (a full output postpones the walk
// and parks the writers that would need a baseline, not the shard), hold
// any lock across a flush, or let a change reach a value before the value's
// baseline has been emitted.
//
// Modes. PIT (backups; replication by default): the output is exactly the
// dataset at the cut. NonPIT (replication only): single-key mutations
// serialize nothing; the walk writes every bucket it visits, an item a
// mutation moved from ahead of the walk's position to behind it is
// written by the next step (OnMoved: not inside the command, whose keys
// may be half built or hold a write not yet journaled), the journal fills
// in the rest, and commands with several keys have theirs captured first
// (Capture, below). An empty list, set, sorted set or hash (a command's
// new key before its first element) is never written: it cannot be
// encoded, and its command's entry creates it.
//
// The bucket state machine, per snapshot (docs/DESIGN.md §4): NotVisited →
// Serializing → DelayedPending → Covered. Capturing a bucket encodes its
// small values at once; a value that does not fit one chunk (or one being
// read from disk) makes the bucket Serializing (or DelayedPending while
// only reads are outstanding), pins the value's key with a shared key lock
// and is written a chunk per step by a coroutine (iter.Pull) that encodes
// it and stops at every chunk. Only busy buckets are tracked (the seed's
// map); NotVisited and Covered are told apart by the bucket version (PIT)
// or the walk's position (non-PIT).
//
// Invariants and where they are kept:
//   - The cut (Start): every shard takes its snapshot version inside one
//     transaction that holds every shard, so no multi-shard command is half
//     in it.
//   - PIT exactly once (serializeBucket): a bucket below the snapshot
//     version still holds its contents at the cut; capturing stamps it. The
//     change hooks capture every bucket a mutation may touch before it
//     happens: the item's bucket (PreUpdate), the buckets an erase may
//     change (PreDelete, OnExpire: dash's EraseChanges), every bucket an
//     insert may change, a whole segment before a split included
//     (PreInsert: InsertChanges). Dash gives a bucket an item moves into the
//     highest version of its sources.
//   - A value is not changed while its baseline is partly written: its
//     key is pinned (a shared lock), so writers park at the shard's gate
//     (Admit, consulted by every path that checks key locks) until the
//     bucket is Covered; other commands keep running. Admit also captures a
//     NotVisited bucket holding a big value about to be written, so that
//     writer waits for the pieces instead of the shard stalling on them. A
//     mutation that reaches a half-written value anyway (a path that does
//     not declare its key) finishes it inline first (drain): slower, never
//     wrong.
//   - Multi-key commands (Capture, the gate's other half): with a journal
//     in the output, every key a command with more than one key reads or
//     moves has its complete baseline in the stream before the command's
//     journal entry. Otherwise RENAME a b, a's bucket not walked yet and
//     b's walked, reaches the replica before a exists there, fails, and
//     b is never sent again; so would SMOVE, LMOVE, SUNIONSTORE, COPY,
//     MOVE, EXEC or a script (PIT too, for a key only read: the hooks see
//     what a command writes). So before such a command runs — more than
//     one key over all its shards, one written; a transaction's or
//     script's whole key set — every path that runs it calls shard.Capture with its keys on
//     each shard, read and written, once they are available and before
//     they are taken: a connection's batch (single-shard commands, EXEC
//     and scripts: server/conn.go), a transaction's lock step on each
//     shard (package tx, so every coordinator command, EXEC and script),
//     and BLMOVE served on wake (family/list_blocking.go); EXEC's hop
//     path never runs while a journal records. Capture writes each
//     bucket of those keys whose baseline is still due (PIT: below the
//     snapshot version, then stamped; non-PIT: not passed by the walk,
//     written again when it gets there) and finishes a value still in
//     pieces (not one still being read from disk, which cannot be hurried:
//     a gap left with tiered storage). Non-PIT leaves out keys another transaction holds
//     exclusively (it may have applied writes it has not journaled yet:
//     skip), which the walk writes after the commit. A single-key command
//     needs none of this: its key's later baseline replaces whatever its
//     entry did on the replica; nor does one that writes no key (it has
//     no entry).
//   - Ordering (for every key K, K's complete baseline precedes any
//     journal entry of K): a journal entry is emitted after the main
//     stream is cut, so every baseline captured before it precedes it;
//     writers of half-written values wait (above); an expiry, which cannot
//     wait, deletes at once, and the journal DEL (Journal with Expiry) of
//     a value still being written in pieces goes to its bucket's deferred
//     deletion queue, emitted when the bucket is Covered (any other key's
//     DEL goes out at once: held back, it could follow a write that
//     created the key again). A flush, PIT, holds the journal until the
//     baseline is complete (the flushed tables are still walked); non-PIT
//     finishes the db's values in pieces instead and holds nothing (its
//     captures take values as they are now, so a held entry would land
//     after a baseline that already holds its write).
//   - Steps never starve clients: each step reschedules itself with
//     shard.Yield, which runs it after the event loop's pending I/O.
//   - Backpressure (Run, Admit): the walk pauses once walkPending output
//     waits beyond the consumer's channel; the change hooks may go on to
//     maxPending, and only past it is a writer needing a baseline parked.
//     So writers wait only when the consumer falls behind the writes
//     themselves, not whenever the walk outruns it.
//   - Off the shard (Defer, deferred.go; every server consumer uses it):
//     a small string is captured as its record's head and a reference to
//     its bytes; the consumer's goroutine (Complete) encodes the values on
//     a background thread (background.go: a thread and a P of its own while it
//     lives). Copy-on-write keeps a referenced value as it was: PreUpdate
//     copies a shared value (Value.Share) before an in-place change while
//     any deferred cut is outstanding, and a cowHook does so after the
//     walk until the last cut is materialized; a value moved to another
//     key (DB.Take: RENAME, MOVE), maybe on another shard, whose hooks
//     know nothing of this Slice, is copied the same way before it goes.
//     Writers are held back by the old values kept alive meanwhile
//     (maxRetained), not by the references, which cost no memory.
//   - Stall measure (stats.go): thread CPU time of each step and of a
//     hook's captures, read with CLOCK_THREAD_CPUTIME_ID. A stretch that changed
//     threads (its goroutine lost its processor in a syscall) counts its
//     wall time. Resuming parked writers at the start of a step runs their
//     commands and is not counted.
//   - Output framing: tagged (dfly files, replication): each producer has
//     its own buffer and stream id (journal 0, the walk's small records 1,
//     one per busy bucket), so big values, other buckets and the journal
//     interleave as rdb.AppendChunk frames the loader reassembles by id.
//     Untagged (.rdb for Redis): plain records; while a big value is half
//     written nothing else is emitted, and a chunk that ends inside one is
//     marked Open so a consumer merging shards takes that shard's next
//     chunk first.
//   - A flush replaces the db's tables (shard.DB.Flush): PIT keeps walking
//     the old ones, which nobody else touches any more, so a FLUSHALL during
//     a save costs no stall.
//   - Unpinning (releasing key locks) runs parked commands, so it happens
//     only in the Slice's own steps, never inside a hook.
package snapshot
