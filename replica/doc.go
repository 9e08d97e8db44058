// Package replica is the replica side of replication: it follows a master
// and applies what it receives to the server's shards, reaching the server
// only through Host and ApplyHost.
//
//   - flows.go: Link, a dfly replica's link (docs/DESIGN.md §6): DFLY HELLO,
//     one connection per master shard (DFLY FLOW), each flow's baseline
//     loaded through Host.NewLoader and its journal applied through an
//     Applier of its own, multi-shard transactions applied once every
//     shard's part arrived (txBarrier), ACKs, DFLY HANDOVER offers, and the
//     redirect to the master a refusing replica names. A master that does
//     not answer DFLY HELLO gets the Redis protocol: the Link runs a Client.
//   - client.go, wire.go: Client, the link to a Redis-protocol master (real
//     redis-server, or anything speaking its PSYNC protocol), described
//     below.
//   - apply.go: ShardApplier, the Applier of both: it applies ops like a
//     connection's pipeline, without a socket — single-shard commands
//     batched per shard, MULTI/EXEC blocks and multi-shard commands as
//     transactions (package tx) over every shard they touch — through the
//     command context (command.Table, command.Exec, command.Coord), with
//     shard.MasterApply set so the master's writes see keys the replica
//     hides from clients as expired. A full sync's RDB payload loads
//     through Host's loader.
//   - info.go: what a replica reports of its link (Status.Info for INFO
//     replication, Status.Role for ROLE).
//
// The master side is package master. What the server gives a link: Host
// (loading, flushing, following another master, an Applier per flow) and
// ApplyHost (what only the server has: a client for the master's commands
// to run as, coordinators, connection commands, statistics, tiered
// storage's loads); REPLICAOF and the link's life are the server's
// (server/repl_replica.go).
//
// A Client's link runs: PING, AUTH when a password is configured (masterauth,
// masteruser), REPLCONF listening-port, REPLCONF capa eof capa
// psync2, PSYNC <replid> <offset+1> ("? -1" the first time). The master
// answers +FULLRESYNC <replid> <offset> followed by the RDB payload, either
// "$<len>\r\n<bytes>" or the diskless "$EOF:<40-byte mark>" form ending with
// the mark, or +CONTINUE [<replid>] for a partial resync. Then comes the
// command stream: RESP arrays, SELECT, MULTI/EXEC blocks, PING and
// REPLCONF GETACK among the writes. The client acknowledges its offset
// (REPLCONF ACK) every second and on GETACK, gives the link up after
// repl-timeout of silence, and after a disconnect it reconnects with
// backoff and asks for a partial resync.
//
// What it never does: touch the dataset but through an Applier (a
// ShardApplier runs the master's commands on the shards' goroutines, as a
// connection's would) and Host's loader; reply to the master's commands
// (only ACKs go back); import the server, persistence or scripting
// (tests/layout_test.go); or trust a length the master declares before the bytes
// arrive (allocation is bounded by the bytes read and by the protocol
// limits of package resp).
//
// Invariants:
//   - The offset is Redis's: the master's offset at FULLRESYNC plus every
//     byte of the command stream processed since, and it never counts
//     part of an open MULTI block (as Redis's reploff), so a partial resync
//     after a disconnect inside a block replays the block from its MULTI.
//   - Ops reach the Applier in stream order; a MULTI/EXEC block reaches it
//     as one Op and is applied whole or not at all.
//   - A ShardApplier runs one shard's commands in stream order (one batch
//     per shard in flight, parking as a whole behind client locks); blocks
//     and multi-shard commands are barriers. A batch leaves MasterApply as
//     it found it: it may park between the steps of another flow's
//     transaction that holds the shard with it set. A command reading an
//     offloaded value runs only once the value is in memory, however many
//     reads fail first.
//   - An ACK is sent only for ops the Applier has applied (Apply returned).
//   - A flow's baseline records are in the shards before the transaction
//     parts after them apply, and a multi-shard transaction applies only
//     once every flow brought its part: no reader sees half of it.
//   - A Link's LSNs describe the dataset only once a full sync reached
//     every flow's cut (complete); until then it asks for a full sync.
//   - Bad input from the master (protocol errors, bad replies, a corrupt
//     payload) ends the link with an error, never a panic; the link is
//     then retried, with a full resync when the dataset may be partial.
package replica
