// Package master is the master side of replication: what a server sends
// its replicas, in both protocols.
//
//   - stream.go: Redis-protocol replicas (a redis-server, redis-cli
//     --replica, a dfly replica of a Redis-protocol master): SYNC/PSYNC
//     served off the event loop (ServeReplica), the shards' journals
//     merged by one feed goroutine into one command stream with SELECTs
//     and MULTI/EXEC blocks, its ring backlog for +CONTINUE, REPLCONF
//     ACKs, WAIT's offsets (FlushedOffset, Acked), INFO replication and
//     ROLE for a master.
//   - rdb.go: a full sync's RDB: the fork-less point-in-time cut, sent in
//     the diskless "$EOF:" form or through a temporary file; the RDB only
//     for redis-cli --rdb and --functions-rdb.
//   - flows.go: dfly replicas: DFLY HELLO and FLOW sessions, one
//     connection per shard carrying its baseline interleaved with its
//     journal as tagged chunks, then the journal; partial syncs from the
//     journals' backlogs; the backlogs kept for replicas and expired after
//     --repl_backlog_ttl.
//   - master.go: Host (what the master side needs of the server), WAIT's
//     and FAILOVER's view of the replicas (PromoteReplica tells its target
//     to become a master), and the histories DFLY HANDOVER
//     continues (History, StartHandover).
//   - position.go: this master's replication position at a snapshot's
//     cut (PositionCut, package replpos), which a file keeps so that the
//     server, restarted as a replica, continues by a partial sync.
//
// The command handlers (SYNC, PSYNC, REPLCONF, WAIT, DFLY) are the
// server's (server/cmd_master.go); they hand the socket over and call this
// package. FAILOVER, which pauses the server's writes and makes it a
// replica, is the server's too (server/failover.go). What the journal
// records of each command is decided where commands run
// (command/record.go); docs/DESIGN.md §6 is the overview.
//
// Never: make a shard wait for a replica. Shards only append to the feed's
// queues and a flow's queue; a replica's output is bounded
// (client-output-buffer-limit's replica class, Host.ReplicaOutputLimit;
// a flow's by Settings.FlowBufferLimit) and a replica past it is dropped,
// to sync again.
//
// Invariants:
//   - A full sync's snapshot cut, the start of journaling and the cut
//     marker in each shard's feed queue (or a flow's subscription) happen
//     in one step that holds every shard: the stream after the cut holds
//     exactly the writes after it, nothing lost, nothing twice; no
//     multi-shard transaction is half on either side.
//   - The Redis-protocol offset is the byte count of the one stream, as
//     Redis counts it; a transaction is emitted as one MULTI/EXEC block only
//     once every shard's part arrived, and later entries of those shards
//     wait behind it.
//   - For every key, its complete baseline precedes any journal entry of it
//     on a flow (the snapshot's ordering, package snapshot).
//   - cutMu orders every change of the journals' state (full syncs' cuts,
//     the feed's start and stop, flow sessions, their expiry).
package master
