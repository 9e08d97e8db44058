// Package bitmap owns the semantics of Redis's bit and range commands on a
// string value: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
// BITFIELD_RO, GETRANGE/SUBSTR and SETRANGE. It parses their arguments into
// plain values and computes replies and new values on []byte, matching
// Redis 7.0 down to its quirks and error texts.
//
// Never: key lookup, type checks, replies, locking or I/O. The server looks
// the key up (nil for a missing key), checks WRONGTYPE, calls in here and
// stores what comes back. Where Redis interleaves parsing with the lookup,
// the function's comment says which error comes first.
//
// Invariants:
//   - Bits are numbered from the most significant bit of byte 0, as in Redis.
//   - No value grows beyond MaxLen bytes (proto-max-bulk-len's default,
//     512 MiB, so bit offsets stop at 2^32-1).
//   - Functions that return a new value may write into val's backing array
//     and return it resliced; pass a copy when val is shared (for example
//     with a snapshot in progress). Grown bytes are always zeroed.
//   - Errors are num.Error values holding Redis's reply text.
package bitmap
