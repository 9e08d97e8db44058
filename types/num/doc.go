// Package num owns the number syntax and arithmetic of Redis's string
// commands: parsing integers and floats exactly as Redis 7.0 accepts them,
// overflow-checked integer increments, the x87 long double arithmetic of
// INCRBYFLOAT/HINCRBYFLOAT, and the text Redis replies with for doubles.
//
// It also owns Error, the Redis error reply type shared by the types/*
// packages so that the server maps errors to replies in one place.
//
// Never: I/O, key lookup, allocation on the integer paths, or accepting a
// spelling Redis rejects (or the reverse). Every function is pure.
//
// Invariants:
//   - ParseInt accepts exactly the inputs of Redis's string2ll (util.c).
//   - ParseFloat accepts exactly the inputs of string2d (strtod, C locale).
//   - ParseLongDouble accepts the inputs of string2ld (strtold), and
//     LongDouble arithmetic rounds to a 64-bit mantissa, nearest-even, as
//     the x87 FPU does, so INCRBYFLOAT replies match Redis digit for digit.
//     The one gap is subnormal long doubles (below 2^-16382), which keep a
//     full 64-bit mantissa here; see ParseLongDouble.
//   - Error texts equal Redis 7.0's, "ERR " prefix included.
package num
