// Package hash owns the representations of Redis hashes: a packed
// "listpack" byte slice for small hashes and Map, an open-addressing table
// whose entries live in a few large byte pages, for the rest. Map is also
// the "hashtable" representation of string sets (types/set), with empty
// values.
//
// Never: I/O, locking, or knowledge of keys and commands. Callers own
// concurrency (a value belongs to one shard goroutine).
//
// Invariants:
//   - A Hash converts listpack -> hashtable once it passes MaxListpackEntries
//     or holds a field or value longer than MaxListpackValue, and never back
//     (as Redis). Both are CONFIG SET's, process-wide atomics read on every
//     write: lowering them converts a hash at its next write, not before.
//   - Map keeps pointers few: its slots are plain uint64s and its entries are
//     packed into pages of at most pageSize bytes, so a 1M-field hash is a
//     few hundred heap objects, not millions.
//   - Map.Scan uses Redis's reverse-binary cursor over home buckets: a field
//     present for a whole scan is returned at least once, across growth and
//     shrinking of the table.
//   - Byte slices returned by reads alias the representation and are valid
//     only until its next mutation.
package hash
