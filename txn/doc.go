// Package txn holds dfly's one-request conditional transactions and the
// key versions they compare (issue 42): KEYVERSION, and TXN, which carries
// its conditions and an ordered list of mutations in one command, so that
// no lock outlives the request and a caller that dies leaves nothing to
// time out (SeaweedFS's ObjectTransaction; Elasticsearch's seq_no for the
// version).
//
//   - version.go: a key's version as KEYVERSION reports it and TXN's
//     VERSION condition compares it: the process's incarnation and the
//     key's bucket version (shard.DB.Version).
//   - request.go: TXN's syntax, parsed and checked against the command
//     table before anything is locked, without I/O (request_test.go).
//   - txn.go: running a request inline on its shard, or on a coordinator
//     through package tx; a SEQUENCER condition asks the lock key's
//     state machine (package lock) whether the grant is current.
//
// Invariants:
//   - A TXN applies every mutation or none: every key of every condition
//     and mutation is locked (tx.Tx: ordered, deadlock free) before the
//     first condition is read, every condition is checked before the first
//     mutation runs, and the locks are released only after the last.
//   - What is journaled is the mutations, as the commands they are, in one
//     journal transaction over the shards they ran on (the tx parts): a
//     replica applies them atomically and never re-evaluates a condition
//     (its versions are its own).
//   - A key's version changes on every write of the key and never returns
//     to a value it had, in this process; another server's versions carry
//     another incarnation, so a version read from a server never matches
//     on another one (a promoted replica, a restarted master): a TXN with
//     such a version fails its condition, it never applies on stale data.
//   - The package reaches the server only through package command (like
//     the families): no listener, persistence or replication package.
package txn
