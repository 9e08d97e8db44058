// Package hll owns HyperLogLog values in Redis's exact string layout
// (hyperloglog.c, Redis 7.0), so that GET, DUMP and RDB bytes of a key built
// by PFADD/PFMERGE equal redis-server's and PFCOUNT returns the same numbers:
//
//	+------+---+-----+----------+
//	| HYLL | E | N/U | Cardin.  |   16-byte header: magic, encoding (0 dense,
//	+------+---+-----+----------+   1 sparse), 3 unused bytes, 8-byte
//	                                little-endian cached cardinality whose
//	                                top bit set means "stale".
//
// followed by 16384 6-bit registers, either dense (12288 bytes, register i
// at bit 6i, least significant bits first) or sparse (ZERO 00xxxxxx,
// XZERO 01xxxxxx yyyyyyyy, VAL 1vvvvvxx run-length opcodes). Elements are
// hashed with MurmurHash64A (seed 0xadc83b19); the low 14 bits pick the
// register, the run of zeros above them (plus one) is the candidate value.
// A sparse value is promoted to dense when a register exceeds 32 or when it
// would grow past SparseMaxBytes (hll-sparse-max-bytes), by the same steps
// and in the same byte order as Redis, opcode merging included.
//
// It never does I/O or key look-ups; functions take and return the value
// bytes. Errors carry Redis's reply text (num.Error).
//
// Invariants:
//   - A value accepted by Valid has the magic, an encoding ≤ 1, and, when
//     dense, exactly DenseSize bytes.
//   - Count's float arithmetic is Redis's (Ertl's estimator, in double
//     precision, without fused multiply-adds), so estimates are identical.
package hll
