// Package aof is the append-only file (appendonly yes): every shard's
// journal (package journal) written to a file of its own, in Redis 7's
// multi-part layout in appenddirname, replayed at start-up.
//
//   - manifest.go: the manifest, Redis 7's format ("file <name> seq <n>
//     type <t>"), replaced atomically (atomicfile), and the files' names.
//     A base (type b, <appendfilename>.<seq>.base.rdb: an RDB written by
//     the fork-less snapshot) is followed by generations of incremental
//     files: a Redis-made one (type i, one RESP stream) or dfly's, one file
//     per shard (type s, <appendfilename>.<seq>.s<shard>.incr.aof, with a
//     "shard <n>" key Redis's loader skips). Redis's loader refuses type s
//     ("Unknown AOF file type") instead of misreading a dfly directory;
//     dfly loads Redis's.
//   - writer.go: a shard's writer. Its journal subscriber encodes each
//     entry as RESP (SELECT when the database changes, "#TS:" annotations
//     with aof-timestamp-enabled) into a buffer and kicks the writer's
//     goroutine, which writes and syncs per appendfsync. A transaction's
//     part on the shard is "MULTI", its commands, then
//     "EXEC <txid> <shard,shard...> <seq,seq...>": the transaction's id,
//     every shard it spans, and the Seq of each of the part's commands
//     (their order across the shards).
//   - load.go, replay.go: start-up. The base loads through package
//     persist; each generation's files are parsed in parallel and applied
//     through a replica.Applier (as a replica applies its master's
//     stream): a file's commands run until its next transaction part, a
//     transaction once every shard it names has its part next (its
//     commands in Seq order, as one MULTI/EXEC block). A part whose shard's
//     file ended first is not applied. A file ending inside an entry or in
//     zeros is cut there (aof-load-truncated yes, with Redis's log lines;
//     no: start-up fails); anything else unparsable stops start-up naming
//     the file and offset (CorruptError).
//   - aof.go: the Manager. Start-up (Load: replay, then a new generation
//     of files so a cut tail is never followed by new entries in the same
//     file), CONFIG SET appendonly yes|no (a base first when turned on),
//     BGREWRITEAOF and the automatic rewrite, INFO's aof_* fields, and the
//     group commit of appendfsync always.
//
// A rewrite names its new incremental files in the manifest (after the
// old ones) before its cut, switches every writer to them in the cut's
// step (which holds every shard, so no transaction is split), writes the
// base of the cut, and only then replaces the manifest by the base and
// the new files and deletes the old ones: a failed rewrite loses nothing
// (the manifest still leads from the old base through both generations)
// and the automatic rewrite backs off after failures.
//
// Group commit (appendfsync always): a connection's finished batch that
// wrote takes the writers' appended positions (Marks) and its replies
// wait (WhenSynced) until every writer synced past them; a writer's one
// fsync covers everything encoded before it started, so concurrent
// clients share fsyncs, and the shards sync in parallel.
//
// Never: block a shard goroutine on the disk (subscribers only append to
// a buffer), or apply part of a cross-shard transaction at start-up.
//
// Invariants:
//   - A file holds the entries of one shard after a cut, in LSN order;
//     the manifest names files only once they exist, and a base only once
//     complete.
//   - The writers' positions only grow; synced <= appended.
package aof
