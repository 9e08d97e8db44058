// Package rdbvalue converts stored values (shard.Value over types/*) to
// and from the RDB format of package rdb: Encode feeds an rdb.Encoder
// from a value (SAVE, BGSAVE, full syncs, DUMP, MIGRATE), Loader is the
// rdb.Handler that builds values from a file, a replication stream or a
// DUMP payload (DecodeDump), and Apply stores a Loader's batches on their
// shard. DUMP/RESTORE, persistence (package persist) and replication
// (packages master and replica) all go through it, so it sits below them
// and imports only shard, rdb, types/* and lock (a lock is a hash of
// lock.Fields in a file: README "Locks").
//
// Never: touch a shard's data except in Apply, which runs on the shard's
// goroutine; keep a reference into the decoder's buffers (keys and values
// are copied: a dfly flow reuses its fragment buffer).
//
// Invariants:
//   - A Loader routes each key by the shardOf it was given, so the
//     loading server's shard count may differ from the writer's.
//   - Keys already expired when loaded are skipped, as Redis does, unless
//     KeepExpired (a replica: its master decides what expired).
//   - A batch handed to dispatch is the callee's unless Reuse: then
//     dispatch has applied it when it returns and its buffers are reused.
//   - RESIZEDB reservations are bounded by what the input can hold
//     (LimitReserve) and by loadReserveBudget, never by the count alone.
//   - A malformed value (duplicate member, element outside its value,
//     stream PEL without its consumer) is an error wrapping
//     rdb.ErrCorrupt, never a partial value.
package rdbvalue
