// Package resp owns the Redis wire protocol at the edge of a connection:
// splitting client bytes into commands (Parser) and encoding replies for
// RESP2 and RESP3 (Writer). It does no I/O, holds no connection state beyond
// one parser's progress, and never interprets commands.
//
// # Parsing contract
//
// The connection keeps one Parser and one input buffer. On every read it
// calls Next on the unconsumed bytes, repeatedly, dropping `consumed` bytes
// after each call:
//
//   - ok: one command; args may be empty (a blank inline line, "*0" or
//     "*-1"): skip it as Redis does, without a reply.
//   - !ok, err == nil: the buffer holds only part of a command; keep the
//     bytes, read more, and call Next again on a buffer that starts with the
//     same bytes (the parser resumes where it stopped instead of rescanning a
//     huge multibulk). If the connection ever drops those bytes, call Reset.
//   - err != nil: a *ProtocolError. Reply "-ERR " + err.Error() (for example
//     "-ERR Protocol error: invalid bulk length") and close the connection
//     after the reply is written; the rest of the buffer is garbage.
//
// Past the client-query-buffer-limit Redis closes the connection without a
// reply; what it counts is the unparsed bytes plus the big bulk being
// received (Receiving, with assembly). Overflow checks unparsed bytes
// against the limit the parser was made with.
// The parser itself never allocates in proportion to a declared length, so a
// "$536870912" header costs nothing until the bytes arrive.
//
// Assembly (SetAssembly, assemble.go) lets the parser take a big command out
// of the buffer as it arrives, so that receiving N bytes costs O(N) however
// they are split. With it on, Next may also return !ok, err == nil with
// consumed > 0: drop those bytes, as after a command. A command whose bytes
// were taken that way is Assembled: its arguments belong to the caller, the
// parser keeps no reference to them, and each of BigArg bytes or more is a
// buffer of its own (capacity = length) that the caller may keep as a value.
// Receiving reports the big bulk in progress, which Redis counts in the query
// buffer.
//
// Lifetimes: the returned [][]byte is reused by the next call to Next (copy
// the slice to keep a pipeline batch); the byte slices in it alias buf and are
// valid until buf changes (unless the command was assembled, see above). Each has its capacity cut to its length, so
// appending to one never overwrites the buffer. For inline commands
// with quoted arguments Next unescapes those arguments in place, rewriting
// bytes of the line it consumes (never before it knows the line is valid, and
// never bytes outside it); multibulk input is never written.
//
// Authentication limits: when a password is required, a connection that has
// not authenticated may send at most 10 arguments and bulks of at most 16384
// bytes (Redis's CVE-2021-32675 fix). Call SetAuthenticated(false) on such
// connections and SetAuthenticated(true) after a successful AUTH/HELLO —
// before parsing the commands pipelined behind it, since Redis parses and runs
// one command at a time.
//
// # Differences from Redis 7.0, all on malformed input
//
//   - A header line ("*3", "$5") must end in CR LF; Redis skips whatever byte
//     follows the CR. Here that is "invalid multibulk length" / "invalid
//     bulk length".
//   - A bulk must be followed by CR LF; Redis skips the two bytes unchecked.
//     Here that is "invalid bulk length" (redcon checks it).
//   - A NUL byte is ordinary data. Redis looks for line ends with strchr, so a
//     NUL before the CR or LF makes it wait for more input until 64 KiB pile
//     up; here the line is parsed (a NUL inside a header number makes it
//     invalid; inside an inline line it is part of an argument).
//
// # Replies
//
// Writer appends replies to a caller-owned buffer, allocation-free, in the
// connection's protocol version (2 unless Proto is 3), converting RESP3 types
// to their RESP2 forms as Redis does. Doubles use C's "%.17g", as Redis 7.0
// does for both protocols.
package resp
