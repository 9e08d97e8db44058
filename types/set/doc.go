// Package set owns the representations of Redis sets: a sorted []int64
// ("intset") while every member is a canonical integer and there are at
// most MaxIntsetEntries of them, and a hash.Map with empty values
// ("hashtable") beyond. Redis 7.0 has no listpack sets, so neither do we:
// OBJECT ENCODING reports what 7.0 reports for the same data.
//
// Never: I/O, locking, knowledge of keys and commands.
//
// MaxIntsetEntries is set-max-intset-entries, a process-wide atomic CONFIG
// SET changes; a set converts at its next insertion past it.
//
// Invariants: the intset is sorted and duplicate-free; a set never
// converts back from hashtable to intset (as Redis); byte slices handed out
// alias the set (or a scratch buffer) and are valid only until the next
// mutation or callback.
package set
