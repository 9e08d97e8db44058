// Package offload decides which of a shard's strings live in its backing
// file (package tiered) and moves them there and back (docs/DESIGN.md §7):
// the heap-pressure ticker, the per-shard offload step, big values written
// in parts, the shard.Tier hooks (Free, FreeLater, Read, Load), loading
// values back for commands (LoadKeys, Pin, and the bookkeeping of a
// server batch's reads ahead), the serializers' view of offloaded values
// (View, Loader, ReadAhead) and INFO's figures (Stats).
//
// What it never does: know commands, connections or dispatch. Which
// commands read string bytes, how a batch parks while its reads run, how
// a coordinator waits for its preload: that is the server's (its
// tiered_*.go files), built on this package's per-shard methods. Every
// method of Shard runs on its shard goroutine; the ticker only stores
// budgets and queues steps.
//
//   - Offloading: the ticker samples the heap every 10 ms (heap.go);
//     while the live heap is above (1 - OffloadThreshold) × maxmemory, or
//     the heap's spans in use (live data, garbage and the holes offloaded
//     values leave) above maxmemory (always, when maxmemory is 0), each
//     shard runs a bounded step (~0.5 ms CPU, 1 MiB) that walks its tables
//     and stashes strings of at least MinValueSize bytes (keys with a TTL
//     under a minute are skipped) into a write job. A string over 1 MiB
//     (BigValue) is written a part per step instead, one such value at a
//     time (bigOffload), so no step copies more than about 1 MiB; the
//     value is marked (shard.Value.Mark) and becomes external only if
//     nothing changed it before its last part was written. The live heap
//     is the one at the last GC minus the bytes offloaded since. With
//     tiering the GC runs at GOGC 100 and a memory limit of 2 × maxmemory
//     (cmd/dfly); free heap is returned to the OS after offloading. Values
//     are not promoted back into memory by reads, so once offloaded they
//     stay so until written.
//   - Write completion: each value still holding the bytes written becomes
//     external (shard.Value.SetExternal) and its memory goes to the GC; a
//     value changed meanwhile keeps its new bytes and the space is freed.
//     A failed write (ENOSPC, EIO, the file size limit) frees the space
//     and leaves every value in memory; it is logged and counted and
//     offloading pauses for a second. The backing file is truncated when
//     its tail is free (tiered.Store); offloading waits for that.
//   - Pins: a pinned key (Pin, by a coordinated command that loaded its
//     value) is never offloaded again until unpinned: the walk skips it
//     and a write job or big value finishing for it frees its space.
//   - Flushes during a snapshot: the space of the values dropped is freed
//     (FreeLater) only once no change hook is registered, as the snapshot
//     may still walk the old tables and read them.
//   - Snapshots: BGSAVE and SAVE (both formats) and full syncs read
//     offloaded strings asynchronously through the snapshot's Loader (the
//     bucket waits DelayedPending). DEBUG RELOAD, which saves and loads
//     under one lock of every shard, reads them ahead in rounds its
//     coordinator waits for (ReadAhead). One debugging aid reads them
//     synchronously on the shard goroutine (View):
//     --debug_snapshot_reference, the dataset at a BGSAVE's cut, copied
//     within the cut's step (to check the snapshot against), so it must
//     be read at that instant; waiting for reads would let commands
//     change the dataset first.
//
// It imports shard, snapshot, rdb and tiered, never the server,
// persistence or replication.
package offload
