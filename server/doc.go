// Package server is dfly's front end: the listener and event loops, client
// connections, the RESP protocol, the command table, and the commands
// themselves (connection, server, string and key families).
//
// A connection parses every complete command in a read, then dispatches
// them in order: connection commands run inline on the event loop; runs of
// single-shard commands go to each involved shard as one batch (one hop per
// shard per read); a command whose keys span shards runs on a coordinator
// goroutine through package tx — except EXECs whose commands each live on
// one shard, all of the connection's loop but at most one: a run of them,
// with the single-shard commands among them, runs from the loop itself in
// one round trip to that other shard (a hop group, multi_hop.go) — and
// scripts: one whose keys live on one shard runs inline on that shard's
// loop; one whose keys span loops runs inline on the lowest of those
// loops (a connection of a higher loop forwards its run of such scripts
// there: forward.go), which borrows the higher loops' shards for the run
// and keeps them until their owners recall them (borrow.go; the
// connection's commands for them in the same batch then run on that loop
// too), and goes to a coordinator only when they are busy (locks on its
// keys, a snapshot, a recording journal). Coordinators are reused goroutines. Replies are written in request order
// once the commands before them are done, in one write per dispatch step
// unless the work in flight may block.
//
// A replica (repl_replica*.go) applies its master's stream the same way,
// without a socket: replApplier batches the stream's single-shard commands
// per shard and runs MULTI/EXEC blocks and multi-shard commands as
// transactions, with shard.MasterApply set so the master's writes see keys
// the replica hides from clients as expired.
//
// What it never does: touch a shard's data outside a message running on
// that shard's goroutine (or on its borrower's, while the shard is lent
// and its own loop defers its messages: shard/lend.go), or block an event
// loop on another loop's shard work (a borrower waits only for answers
// that lenders give at once, serving lend requests meanwhile).
//
// Invariants:
//   - A connection has at most one dispatch step in flight; it reads no
//     further input until that step completes, which bounds its memory and
//     keeps its replies in order.
//   - Commands of one connection on the same key run in the order sent (one
//     shard, one FIFO inbox, parked batches resume in order).
package server
