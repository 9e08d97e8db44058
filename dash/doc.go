// Package dash is the shard's keyspace table: Dragonfly's Dashtable, an
// extendible hash of fixed-size segments, generic over the stored value,
// with the per-bucket versions, cursors, change hooks and move reports a
// SliceSnapshot needs (docs/DESIGN.md §3–4).
//
// # What it owns
//
// Keys (copied into per-segment byte arenas), values (in per-segment
// arrays), and the layout: a directory of 2^depth segment pointers, each
// segment 56 regular buckets and 4 stash buckets of 14 slots (840 slots).
// A key with hash h lives in segment dir[h>>(64-depth)], in its home bucket
// (bits 8..39 of h mod 56), the next bucket (its neighbour, probe bit set),
// or a stash bucket (counted in the home bucket's overflow, per stash
// bucket). An insert that
// finds home and neighbour full first tries one displacement (an item of
// home that lives there as a neighbour goes back to its own home, or an
// item of the neighbour moves on to its own neighbour), then the stash;
// failing all, the segment splits (local depth + 1, the directory doubles
// when local = global depth) and the items whose next hash bit is 1 move to
// the new segment, each to the same bucket and slot; then each half moves
// what it can from its stash back to home or neighbour buckets.
//
// Layout per slot: 1 fingerprint byte, 4 bytes key offset, the value; per
// bucket two 16-bit bitmaps (busy, probe), four stash overflow counts and an
// 8-byte version: 88 bytes of metadata per 14 slots (6.3 bytes a slot). Key
// bytes sit in the segment's arena behind a uvarint length. All of that is
// pointer-free. A segment has at most two pointers the
// collector must follow (its arena, and its values when V has pointers),
// laid out first so the collector scans only that prefix.
//
// # What it never does
//
//   - It is never used from two goroutines: the owning shard serializes all
//     calls. Hooks run synchronously inside the mutation that causes them.
//   - It never rewrites key bytes in place: arenas are append-only and
//     compaction copies into a new array, so a string from Key stays valid
//     and unchanged as long as the caller holds it, even after erasure.
//   - It never retains the caller's key string or buffer (Insert copies).
//   - It never merges segments or shrinks the directory; only Clear does.
//   - It never lowers a bucket version (Clear aside).
//
// # Invariants
//
//  1. Placement: an item is in its home bucket with its probe bit clear,
//     in the next bucket with it set, or in stash bucket k with stashHome
//     naming its home, whose overflow[k] counts it. Find relies on this and
//     looks only at the stash buckets the home bucket's overflow counts.
//  2. Directory: a segment of local depth L with prefix p fills directory
//     entries [p<<(depth-L), (p+1)<<(depth-L)), and all its items' hashes
//     start with p. Its cursor base p<<(40-L) does not change when it
//     splits; the new half's base is the old one with bit 40-L-1 set.
//  3. Versions: every bucket an Insert changes is stamped with at least the
//     insert's version; Bump stamps the item's bucket; a moved item's
//     destination takes the max of its own and the source's version; a
//     split's new bucket i starts with the version of old bucket i (the max
//     over its only source). A PIT snapshot (version < snapshot ⇒ not
//     serialized) stays exact if the caller serializes the buckets
//     InsertChanges/EraseChanges/BucketOf report before each mutation:
//     then every move's source and destination are already serialized, so
//     the max never hides an unserialized item (max of unserialized
//     sources stays below the snapshot version) and never exposes a
//     serialized one (any serialized source lifts the destination to it).
//     A new-half bucket that received nothing keeps the old version; it
//     holds no item, and any later insert reports it first.
//  4. Traversal: TraverseBuckets goes bucket-major over the directory
//     (segment by segment within a bucket index, each segment once), so a
//     position's "visited" status (Visited) is fixed by its cursor; items
//     move only by displacement, stash unload or split, each reported to
//     OnMove with both cursors, so a caller can tell which moves cross the
//     traversal position.
//  5. Iterators are plain (segment id, bucket, slot) values, valid until
//     the next Insert, Erase, Delete or Clear.
package dash
