// Package client is what the CLIENT command controls and reports of a
// connection, without the connection: CLIENT REPLY's gate over its
// replies (Gate), the line CLIENT LIST and CLIENT INFO print for it
// (Info, Redis 7.0's fields and order, with 7.2's lib-name and lib-ver),
// and the filters of CLIENT LIST and CLIENT KILL (Filter).
//
// The server takes a snapshot of each connection into an Info, under the
// connection's own lock, and asks this package what to print or whom a
// filter names; the Gate is driven by the connection's loop, one reply at
// a time in request order.
//
// Invariants:
//   - No I/O, no goroutines, no server: everything here is plain data
//     driven by method calls, testable alone.
//   - Gate's decisions depend only on the CLIENT REPLY and RESET commands
//     it was told of, in the order the connection sent them, as Redis's
//     client flags (CLIENT_REPLY_OFF, _SKIP, _SKIP_NEXT) do.
package client
