// Package replica is the client side of Redis replication: it follows a
// Redis-protocol master (real redis-server, or anything speaking its
// PSYNC protocol) and hands what it receives to an Applier, which owns the
// dataset (package server applies it to the shards).
//
// It is only that client: dfly's own replication between dfly servers
// (one flow per master shard) is server/repl_flow.go on the master and
// server/repl_flow_replica.go on the replica, which starts a Client when
// the master does not answer DFLY HELLO. The master side of the Redis
// protocol is server/repl_master.go.
//
// A link runs: PING, AUTH when a password is configured (masterauth,
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
// What it never does: touch the dataset itself, reply to the master's
// commands (only ACKs go back), or trust a length the master declares
// before the bytes arrive (allocation is bounded by the bytes read and by
// the protocol limits of package resp).
//
// Invariants:
//   - The offset is Redis's: the master's offset at FULLRESYNC plus every
//     byte of the command stream processed since, and it never counts
//     part of an open MULTI block (as Redis's reploff), so a partial resync
//     after a disconnect inside a block replays the block from its MULTI.
//   - Ops reach the Applier in stream order; a MULTI/EXEC block reaches it
//     as one Op and is applied whole or not at all.
//   - An ACK is sent only for ops the Applier has applied (Apply returned).
//   - Bad input from the master (protocol errors, bad replies, a corrupt
//     payload) ends the link with an error, never a panic; the link is
//     then retried, with a full resync when the dataset may be partial.
package replica
