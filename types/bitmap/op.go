package bitmap

import "encoding/binary"

// Op is a BITOP operation.
type Op uint8

const (
	And Op = iota
	Or
	Xor
	Not
)

// ParseOp parses BITOP's operation name (any case) given the number of
// source keys: ErrSyntax for an unknown name, ErrNotSingle for NOT with
// other than one source. Redis checks both before looking up any key.
func ParseOp(name []byte, sources int) (Op, error) {
	var op Op
	switch {
	case equalFold(name, "and"):
		op = And
	case equalFold(name, "or"):
		op = Or
	case equalFold(name, "xor"):
		op = Xor
	case equalFold(name, "not"):
		op = Not
	default:
		return 0, ErrSyntax
	}
	if op == Not && sources != 1 {
		return 0, ErrNotSingle
	}
	return op, nil
}

// Apply computes op over srcs (a missing key is nil, the same as empty) and
// appends the result to dst[:0]. The result is as long as the longest
// source, shorter sources read as zero-padded. BITOP replies with the
// result's length; when it is 0 Redis deletes the destination key instead
// of storing an empty string. dst must not overlap any source.
func Apply(op Op, dst []byte, srcs [][]byte) []byte {
	if op == Not {
		srcs = srcs[:1]
	}
	n := 0
	for _, s := range srcs {
		n = max(n, len(s))
	}
	dst = dst[:0]
	if n == 0 {
		return dst
	}
	dst = grow(dst, n) // zeroed
	if op == Not {
		src := srcs[0]
		for i := range dst {
			dst[i] = ^src[i]
		}
		return dst
	}
	// dst starts as the first source, zero-padded, then folds in the rest.
	copy(dst, srcs[0])
	for _, src := range srcs[1:] {
		i := 0
		switch op {
		case And:
			for ; i+8 <= len(src); i += 8 {
				binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])&binary.LittleEndian.Uint64(src[i:]))
			}
			for ; i < len(src); i++ {
				dst[i] &= src[i]
			}
			clear(dst[len(src):]) // AND with the zero padding
		case Or:
			for ; i+8 <= len(src); i += 8 {
				binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])|binary.LittleEndian.Uint64(src[i:]))
			}
			for ; i < len(src); i++ {
				dst[i] |= src[i]
			}
		case Xor:
			for ; i+8 <= len(src); i += 8 {
				binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])^binary.LittleEndian.Uint64(src[i:]))
			}
			for ; i < len(src); i++ {
				dst[i] ^= src[i]
			}
		}
	}
	return dst
}
