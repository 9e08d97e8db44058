// Package server is dfly's front end and its wiring: the listener and
// event loops, client connections and their dispatch, the server's own
// command families, and the machinery that spans shards — coordinators,
// MULTI/EXEC, scripts and functions, blocking commands, persistence's and
// replication's commands, REPLICAOF and the link's life, failover,
// loading offloaded values ahead of commands — plus ACL, Pub/Sub, client tracking, MONITOR,
// SLOWLOG, LATENCY and INFO. docs/DESIGN.md §1–2 is the map; the files, by
// subject:
//
//   - Loops and connections: server.go (Server, gnet callbacks, ShardOf),
//     loops.go (shard i on loop i mod L, loopInbox), conn.go (parse,
//     dispatch, shardBatch), coord.go (coordinator goroutines), multi_hop.go
//     (hop groups), borrow.go and forward.go (borrowed and forwarded script
//     runs), pause.go (CLIENT PAUSE), recover.go (a panicking command),
//     config.go, log.go, traffic.go, cluster.go (cluster mode's check per
//     command and role changes; the rest is package cluster).
//   - The command table is package command (the context a command runs
//     in, what the journal records for it, COMMAND INFO); the data-type
//     families are package family. The server's own families: cmd_conn.go,
//     cmd_server.go, cmd_memory.go, cmd_standalone.go, cmd_migrate.go;
//     coord.go is the server's side of a coordinator (command.Runner),
//     blocking.go how a client waits while blocked.
//   - Transactions and scripts: multi.go (MULTI/EXEC/WATCH); script.go
//     (EVAL, SCRIPT: where a script runs, with what locks), function.go
//     (FCALL, FUNCTION: shard 0 held for a change, the libraries at a
//     snapshot's cut), script_call.go (a script's redis.call: its checks,
//     run inline or within the script's transaction). The interpreter, the
//     script cache and the function libraries are package script.
//   - Clients: cmd_conn.go (CLIENT; its gate, line and filters are package
//     client), acl.go (the ACL command, AUTH's and denials' effects on
//     connections; users, rules and checks are package acl), pubsub.go,
//     tracking.go, monitor.go, slowlog.go,
//     latency.go (LATENCY; the monitor is package latency), errorstats.go, clientbuf.go (client buffer limits),
//     metrics.go (what package metrics' scrapes read: INFO over each
//     shard's figures published on its tick; the main port's HTTP).
//   - Persistence's commands: cmd_persist.go (SAVE, BGSAVE, LASTSAVE,
//     DEBUG RELOAD, persistHost: what package persist sees of the
//     server). Saving and loading are package persist's; DUMP/RESTORE
//     are family's (family/dump.go, over package rdbvalue).
//   - Replication, master side: cmd_master.go (SYNC, PSYNC, REPLCONF,
//     WAIT, DFLY over package master, which streams and keeps the
//     backlogs); replica side: repl_replica.go (REPLICAOF, the link's
//     life, replicaHost: what package replica's links and appliers see
//     of the server); repl.go (INFO replication, ROLE: the replica
//     side's report is replica.Status's, the master side's package
//     master's); failover.go (FAILOVER). Applying a master's ops is
//     package replica's (replica.ShardApplier).
//   - Tiered storage: tiered.go (the wiring of package offload, which
//     offloads values and reads them back), tiered_batch.go (a batch's
//     loads ahead), tiered_coord.go (a coordinator's or a replica's
//     preloads and pins, INFO tiered), tiered_save.go (DEBUG RELOAD).
//
// How a command travels: a connection parses every complete command in a
// read, then dispatches them in order: connection commands run inline on
// the event loop; runs of single-shard commands go to each involved shard
// as one batch (one hop per shard per read; inline for the loop's own
// shards); a command whose keys span shards runs on a coordinator
// goroutine through package tx — except EXECs whose commands each live on
// one shard, all of the connection's loop but at most one: a run of them,
// with the single-shard commands among them, runs from the loop itself in
// one round trip to that other shard (a hop group) — and scripts: one
// whose keys live on one shard runs inline on that shard's loop; one whose
// keys span loops runs inline on the lowest of those loops (a connection
// of a higher loop forwards its run of such scripts there), which borrows
// the higher loops' shards for the run and keeps them until their owners
// recall them (the connection's commands for them in the same batch then
// run on that loop too), and goes to a coordinator only when they are
// busy (locks on its keys, a snapshot, a recording journal, tiered
// storage). Coordinators are reused goroutines. Replies are written in
// request order once the commands before them are done, in one write per
// dispatch step unless the work in flight may block.
//
// A replica applies its master's stream the same way, without a socket
// (package replica's ShardApplier, through replicaHost): the stream's
// single-shard commands batched per shard, MULTI/EXEC blocks and
// multi-shard commands as transactions, with shard.MasterApply set so the
// master's writes see keys the replica hides from clients as expired.
//
// What it never does: touch a shard's data outside a message running on
// that shard's goroutine (or on its borrower's, while the shard is lent
// and its own loop defers its messages: shard/lend.go); block an event
// loop on another loop's shard work (a borrower waits only for answers
// that lenders give at once, serving lend requests meanwhile), on a
// socket or on a file (replication links, MIGRATE's connections, file
// writes and tiered I/O run off the loops); or wait on a replica (its
// output is bounded and a replica past it is dropped).
//
// Invariants:
//   - A connection has at most one dispatch step in flight; it reads no
//     further input until that step completes, which bounds its memory and
//     keeps its replies in order.
//   - Commands of one connection on the same key run in the order sent (one
//     shard, one FIFO inbox, parked batches resume in order).
//   - Every command that runs on a shard goes through runExec (command.Exec.Run), which
//     journals its write while the shard's journal records; coordinator
//     commands journal through their transaction's parts (package tx).
//   - A command that panics answers an error and gives its locks back
//     (recover.go); a panic in the snapshot, journal or replication
//     machinery still ends the process.
package server
