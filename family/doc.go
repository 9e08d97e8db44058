// Package family holds the data-type command families: strings
// (strings.go), bitmaps (bits.go), generic key commands (keys.go), hashes,
// lists, sets, sorted sets, streams, geo, HyperLogLog, SORT, their
// blocking variants (*_blocking.go), fenced locks and FENCE (lock.go, over
// package lock's state machine), and how the writes whose arguments
// do not determine their effect are journaled (rewrite.go). Each file
// registers its family with command.Register; the semantics of values
// live in types/*, the keyspace in shard.
//
// A family sees the server only through package command: Exec for a
// command on its shard, Coord (and its Runner) for one on a coordinator.
// It imports no listener, persistence or replication package
// (tests/layout_test.go checks it), so a family can be read, tested and
// changed on its own.
//
// Invariants (each enforced where the file says):
//   - A write that may run while a snapshot is serializing announces
//     in-place updates first (DB.Mutate, command.Mutable), so the
//     snapshot keeps the value it must write.
//   - A multi-key command on several shards locks every key before it
//     reads any (Coord.LockKeys, LockSplit, SplitKeys) and journals as one
//     transaction.
//   - A blocking command registers its waits in the same locked step as
//     its failed attempt (command.BlockSpec), so no write slips between.
//   - A command that changes a key publishes Redis 7.0's keyspace event
//     for it (DB.Notify: notify.Class and the event's name) right after
//     the change, on the key's shard, in Redis's order (LMOVE: the push,
//     then the pop); "new" and "expired" are the shard's.
//   - A command that stores a computed result (SORT ... STORE,
//     GEOSEARCHSTORE, ... STOREDIST) journals the result, not the
//     computation (Propagate), so every replica stores the same bytes.
package family
