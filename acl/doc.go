// Package acl holds Redis 7.0's access control lists: users, their rules
// as ACL SETUSER parses them and ACL LIST shows them, the permission check
// of a command's call (commands, subcommands, keys by %R~/%W~ patterns,
// Pub/Sub channels), password hashing, the ACL LOG entries, and the
// --aclfile format (one "user <name> <rules>" line per user, ACL LIST's
// lines).
//
//   - rules.go: Rules, one immutable version of a user's rules, and the
//     SETUSER rule language that builds it.
//   - check.go: Rules.Check, what a user may run, and the denials' texts.
//   - users.go: Users, every user by name (the default user, AUTH,
//     DELUSER), and the ACL LOG.
//   - file.go: loading and saving the ACL file.
//
// The ACL command itself, AUTH and HELLO, and what a denial does to a
// connection (logging it with the client's description, closing a
// deleted user's clients) stay with the connections in package server:
// this package knows no connection and imports no server-side package
// (listener, persistence, replication), only the command table for the
// commands and categories rules name.
//
// Invariants:
//   - A published Rules is never changed: SETUSER and LOAD build a new
//     one and store it in the User, which connections hold, so a change
//     applies to connections already authenticated (as in Redis) and a
//     command reads its rules with one atomic load.
//   - Rules.Unrestricted is exactly "every command, key and channel":
//     callers skip Check when it is set.
//   - SETUSER and LOAD are all or nothing: a rule that fails leaves every
//     user as it was.
//
// Not done: selectors; key permissions judged per key by key specs (a
// command that writes needs W on every key, one that reads R).
package acl
