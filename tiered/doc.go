// Package tiered keeps large string values of one shard in a backing file
// (docs/DESIGN.md §7): an allocator that places them (small values packed into
// shared 4 KiB pages by size class, big ones on whole page runs), and a
// Store that writes and reads them through a pool of I/O goroutines.
//
// What it never does: block its owner. A Store belongs to one shard
// goroutine (the owner); every method except ReadSync runs there and
// returns at once. File I/O happens on pool goroutines, whose results are
// posted back to the owner (the post function, shard.Send in the server)
// so callbacks run on the owner too. ReadSync is the one blocking read, for
// callers that cannot wait (--debug_snapshot_reference, the fallback of
// the few paths that were not loaded ahead: see server/tiered.go). Which
// values go to the file, and when, is package offload's.
//
// Invariants:
//   - A segment's space is reused only after it is freed and no read of it
//     is pending and no holder retains it (Retain/Release): a read never
//     returns bytes of another value.
//   - Concurrent reads of one segment share one I/O (one ReadAt, every
//     callback gets the same bytes, which they must not modify), except
//     ReadPrivate's: its I/O is its caller's alone, so the caller may
//     keep and modify the bytes (a big value loaded back without a copy).
//   - A value too big to copy at once is written in parts (Reserve,
//     WritePart, BigWrite): the owner copies a part per step, and its
//     space is given back (Abort) only once no part is in flight.
//   - A failed write frees its segments and reports the error; the caller
//     keeps its values in memory, so nothing is lost.
//   - The file shrinks when pages at its end are free: the allocator's
//     size drops at once and the store truncates the file on the pool,
//     the file not growing meanwhile (Store.shrink); free space inside the
//     file is reused, not punched out.
//   - The allocator is plain state driven by method calls, without I/O, so
//     tests drive it step by step.
package tiered
