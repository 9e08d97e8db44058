// Package persist saves the shards' data to files and loads it back: SAVE,
// BGSAVE (point-in-time and fork-less), DEBUG RELOAD's save and load,
// loading at start-up, the save schedule (--save), the loading progress
// and INFO persistence's fields, in both formats (--dbformat):
//
//   - rdb.go: the RDB file (SAVE under a lock on every shard, DEBUG
//     RELOAD, loading at start-up), INFO persistence.
//   - bgsave.go: BGSAVE in the RDB format: the cut, the shards' chunks
//     merged into one stream (WriteRDB, also a Redis full sync's payload).
//   - dfly.go, dfly_bg.go: dfly's own format, one file per shard and a
//     summary, written and read in parallel; the tagged framing of chunks
//     (BlobFrames, AppendPlainFrames) dfly flows share.
//   - schedule.go: the save schedule and the loading progress.
//
// A file keeps the replication position of its data (package replpos,
// taken at the cut through Host.PositionCut): AUX fields in the RDB format,
// aux lines of the summary in dfly's; LoadedPosition is the one the
// start-up load read, valid while no write changed the data since, which
// a server that becomes a replica offers.
//
// An Engine reaches the server only through Host (settings, function
// libraries, tiered storage's reads) and the shards it was given; values
// are encoded and decoded by package rdbvalue, files replaced whole by
// package atomicfile. docs/DESIGN.md §5 describes the formats.
//
// Never: block a shard goroutine on a file (writers are goroutines fed
// through bounded channels: a slow disk holds the snapshot's walk back,
// not the shard); present a partial load as success; leave a half-written
// file at the configured path.
//
// Invariants:
//   - One save at a time (mu): SAVE, BGSAVE and DEBUG RELOAD exclude each
//     other; a BGSAVE (SCHEDULE or not) while one runs is refused, as
//     Redis's while its RDB child runs; one inside EXEC is scheduled
//     (ScheduleBgsave) and starts when the running one ends.
//   - A file holds the dataset at one cut, taken in one step that holds
//     every shard (a transaction over all of them), so no multi-shard
//     command is half in it; the function libraries are taken at the cut.
//   - Files are written to a temporary name, synced and renamed; dfly shard
//     files go into place before the summary that lists them, and a load
//     checks every file's size and CRC-64 against the summary.
//   - Every chunk channel of a snapshot is read to its end, even after an
//     error, so no shard is left waiting for a consumer that gave up.
//   - A load routes every key by shardOf, so the shard count of the
//     loading server may differ from the saving one's.
//   - The start-up load runs once the server listens (LoadWhenServing),
//     each batch applied on its shard's loop; until it has applied every
//     key, Loading holds and clients get LOADING, the save schedule and a
//     shutdown's save write nothing (a failed load stays loading until the
//     server exits).
package persist
