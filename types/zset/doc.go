// Package zset owns the sorted set representation: members ordered by
// (score, member bytes), with O(log n) rank, score-range and lex-range
// queries, and member look-up by hash.
//
// A Set has two forms, named as Redis's OBJECT ENCODING reports them:
//
//   - "listpack": a sorted slice of at most MaxListpackEntries entries whose
//     members are at most MaxListpackValue bytes; look-up by member scans it.
//   - "skiplist": an order-statistic B+tree (every node counts the entries
//     below it) plus a member→score map (a hash.Map: its pages hold a copy
//     of each member, and its Scan is Redis's dictScan, so ZSCAN never
//     misses a member present throughout); leaves hold up to 64 entries
//     inline, so the tree adds about one pointer per 40 members.
//
// Both limits are CONFIG SET's (zset-max-listpack-*), process-wide atomics
// read on every insertion. Like Redis 7.0, a set starts as a listpack and is converted for good once
// it grows past either limit; only the STORE commands build a fresh result
// in the compact form when it fits (Shrink).
//
// It never does I/O, never parses command arguments, and never sees NaN
// scores (the caller rejects them). Members handed to callbacks are valid
// only until the next mutation of the set.
//
// Invariants:
//   - Entries are unique by member and strictly increasing by (score, member).
//   - In the skiplist form every tree entry has a map entry with the same
//     score, and node counts (and each inner node's inline counts[i]) equal
//     the number of entries below them.
//   - A listpack never holds -0: like Redis's listpack, which stores
//     integral scores as integers, it reads back 0.
//   - Inner node i's lows[j] (j ≥ 1) is greater than every entry of kids[j-1]
//     and at most every entry of kids[j]; lows[0] equals the parent's low for
//     the node (meaningless for the leftmost node of a level).
package zset
