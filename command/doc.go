// Package command is the context every command runs in, and the table
// that finds it: what a command family sees of the server, and nothing
// more (docs/DESIGN.md §2).
//
//   - command.go: Command (name, arity, flags, key positions, how it runs:
//     Local on the connection's loop, Shard on the one shard owning its
//     keys, Multi on a coordinator; how it is journaled: Rewrite,
//     JournalArgs), Exec (a command on its shard: the shard, the DB, the
//     arguments, the reply writer), Table and Register, the one way a
//     family enters the table (each family's file registers itself from
//     its init function).
//   - coord.go: Coord (a command on a coordinator goroutine) and Runner,
//     what the server does for it: transactions over the shards (package
//     tx), work on one shard or all, waiting while blocked. Server is what
//     a command reads of the server (shard routing, --databases, limits).
//   - blocking.go: how a blocking command waits (BlockSpec, Coord.Block).
//   - record.go: what the journal records for a command (Exec.Run; a
//     coordinator command's JournalCommit; RunPart; RecordServed).
//   - info.go, reply.go, acl_cat.go: what COMMAND INFO/DOCS/GETKEYS/LIST
//     report (key specs, flags) and the ACL categories of each command,
//     derived from what its definition says beside its handler (KeySpecs,
//     KeyFlags, InfoFlags, ACLCats, Subcommands): adding a command touches
//     one place.
//   - errors.go, subcommand.go, typed.go: Redis's error texts, container
//     commands' subcommand checks and HELP, typed key lookups.
//
// Invariants:
//   - A Shard handler runs on the goroutine that owns (or borrowed) its
//     shard and touches only that shard; a Multi handler touches shards
//     only through the transactions and runs its Runner gives it.
//   - Every command that runs on a shard goes through Exec.Run, which
//     journals its write while the shard's journal records, in the form a
//     replica must apply (as sent, Rewrite's deterministic form, or what
//     it gave to Propagate); a coordinator command journals at its
//     transaction's commit (JournalCommit, tx.Recorder).
//   - The table is read-only once a server serves (Table.Add only before).
//   - This package imports no server-side package (listener, persistence,
//     replication): tests/layout_test.go checks it.
package command
