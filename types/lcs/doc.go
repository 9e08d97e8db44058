// Package lcs owns the semantics of Redis's LCS command: option parsing and
// the longest common subsequence of two values, with its length and the
// IDX match list, in the exact order and shape Redis 7.0 replies with.
//
// Never: key lookup, replies, or an unbounded allocation. Redis fills an
// (n+1)·(m+1) table of uint32 and only stops when malloc fails; this package
// refuses inputs whose table would exceed MaxCells (256 MiB of uint32, also
// a bound on the O(n·m) CPU time spent in one command) with ErrTooLarge.
//
// Invariants: the LCS string, its length and the matches are those of
// Redis's dynamic program and backtrack (ties prefer stepping back in the
// second string), so they equal Redis's reply byte for byte; match ranges
// are inclusive and listed from the end of the strings to the start.
package lcs
