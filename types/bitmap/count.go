package bitmap

import (
	"encoding/binary"
	"math/bits"

	"github.com/dfly/dfly/types/num"
)

// Span is the optional [start end [BYTE|BIT]] range of BITCOUNT and BITPOS.
// The zero Span means "no range given": the whole value.
type Span struct {
	Start, End int64
	HasStart   bool // BITPOS may give a start alone
	HasEnd     bool
	Bits       bool // BIT unit instead of BYTE
}

// ParseCountSpan parses BITCOUNT's arguments after the key: none, or
// start end [BYTE|BIT]. Errors in Redis's order: argument count, start,
// end, unit (integers fail with num.ErrNotInt, a bad unit or count with
// ErrSyntax); when both ends are negative and start > end, Redis replies 0
// without checking the unit, and so does this.
// Redis replies 0 for a missing key before looking at these arguments, and
// checks WRONGTYPE before them too.
func ParseCountSpan(args [][]byte) (Span, error) {
	var s Span
	switch len(args) {
	case 0:
		return s, nil
	case 2, 3:
	default:
		return s, ErrSyntax
	}
	var err error
	if s.Start, err = num.Int(args[0]); err != nil {
		return s, err
	}
	if s.End, err = num.Int(args[1]); err != nil {
		return s, err
	}
	s.HasStart, s.HasEnd = true, true
	if s.Start < 0 && s.End < 0 && s.Start > s.End {
		return s, nil // Redis answers 0 here without looking at the unit
	}
	if len(args) == 3 {
		if s.Bits, err = parseUnit(args[2]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// ParsePosBit parses BITPOS's bit argument: num.ErrNotInt, or ErrBitArg
// unless 0 or 1. Redis checks it before the key lookup; a missing key then
// replies -1 when looking for 1 and 0 when looking for 0, whatever follows.
func ParsePosBit(b []byte) (int, error) {
	v, err := num.Int(b)
	if err != nil {
		return 0, err
	}
	if v != 0 && v != 1 {
		return 0, ErrBitArg
	}
	return int(v), nil
}

// ParsePosSpan parses BITPOS's arguments after the bit: none, start,
// start end, or start end BYTE|BIT. Errors in Redis's order: start, unit,
// end. Redis parses these after the lookup and WRONGTYPE check.
func ParsePosSpan(args [][]byte) (Span, error) {
	var s Span
	if len(args) > 3 {
		return s, ErrSyntax
	}
	if len(args) == 0 {
		return s, nil
	}
	var err error
	if s.Start, err = num.Int(args[0]); err != nil {
		return s, err
	}
	s.HasStart = true
	if len(args) == 3 {
		if s.Bits, err = parseUnit(args[2]); err != nil {
			return s, err
		}
	}
	if len(args) >= 2 {
		if s.End, err = num.Int(args[1]); err != nil {
			return s, err
		}
		s.HasEnd = true
	}
	return s, nil
}

func parseUnit(b []byte) (bool, error) {
	switch {
	case equalFold(b, "bit"):
		return true, nil
	case equalFold(b, "byte"):
		return false, nil
	}
	return false, ErrSyntax
}

func equalFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != word[i] {
			return false
		}
	}
	return true
}

// Count is BITCOUNT: the number of set bits of val within s, with Redis's
// index rules (negative indexes count from the end, both ends inclusive,
// a range with both ends negative and start > end counts 0).
func Count(val []byte, s Span) int64 {
	start, end := int64(0), int64(len(val))-1
	var firstMask, lastMask byte
	if s.HasStart {
		start, end = s.Start, s.End
		total := int64(len(val))
		if s.Bits {
			total <<= 3
		}
		if start < 0 && end < 0 && start > end {
			return 0
		}
		start, end = clampSpan(start, end, total)
		if s.Bits && start <= end {
			firstMask, lastMask = edgeMasks(start, end)
			start >>= 3
			end >>= 3
		}
	}
	if start > end {
		return 0
	}
	n := popcount(val[start : end+1])
	// Bits outside a BIT range in the edge bytes were counted; take them out.
	n -= int64(bits.OnesCount8(val[start]&firstMask) + bits.OnesCount8(val[end]&lastMask))
	return n
}

// clampSpan applies Redis's conversion of negative indexes and clamping to
// [0, total-1]; the result may be empty (start > end).
func clampSpan(start, end, total int64) (int64, int64) {
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= total {
		end = total - 1
	}
	return start, end
}

// edgeMasks returns the masks of the bits before start in its byte and after
// end in its byte, for a BIT range.
func edgeMasks(start, end int64) (first, last byte) {
	return ^byte(0xff >> (start & 7)), byte(0xff >> (end&7 + 1))
}

func popcount(p []byte) int64 {
	var n int
	for len(p) >= 32 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p)) +
			bits.OnesCount64(binary.LittleEndian.Uint64(p[8:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(p[16:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(p[24:]))
		p = p[32:]
	}
	for len(p) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	for _, c := range p {
		n += bits.OnesCount8(c)
	}
	return int64(n)
}

// Pos is BITPOS on an existing key: the position of the first bit equal to
// bit within s, or -1. Redis's quirks are kept: looking for 0 in a value of
// all ones with no end given answers the first bit past the end (the value
// is taken as zero-padded on the right), while with an end given it answers
// -1; an empty range answers -1.
func Pos(val []byte, bit int, s Span) int64 {
	start, end := int64(0), int64(len(val))-1
	var firstMask, lastMask byte
	if s.HasStart {
		total := int64(len(val))
		start = s.Start
		switch {
		case s.HasEnd:
			end = s.End
		case s.Bits:
			end = total<<3 + 7
		default:
			end = total - 1
		}
		if s.Bits {
			total <<= 3
		}
		start, end = clampSpan(start, end, total)
		if s.Bits && start <= end {
			firstMask, lastMask = edgeMasks(start, end)
			start >>= 3
			end >>= 3
		}
	}
	if start > end {
		return -1
	}
	pos, start, bytes := scanSpan(val, bit, start, end, firstMask, lastMask)
	// With an explicit end the value is not zero-padded on the right.
	if s.HasEnd && bit == 0 && pos == bytes<<3 {
		return -1
	}
	if pos != -1 {
		pos += start << 3
	}
	return pos
}

// scanSpan is the search of Redis's bitposCommand over bytes [start, end],
// masking the bits outside a BIT range in the edge bytes. It returns the
// position relative to the returned start and the bytes left from there.
func scanSpan(val []byte, bit int, start, end int64, firstMask, lastMask byte) (pos, from, bytes int64) {
	bytes = end - start + 1
	if firstMask != 0 {
		c := mask(val[start], firstMask, bit)
		if lastMask != 0 && bytes == 1 {
			c = mask(c, lastMask, bit)
		}
		pos = firstBit([]byte{c}, bit)
		if bytes == 1 || (pos != -1 && pos != 8) {
			return pos, start, bytes
		}
		start++
		bytes--
	}
	cur := bytes
	if lastMask != 0 {
		cur--
	}
	if cur > 0 {
		pos = firstBit(val[start:start+cur], bit)
		if bytes == cur || (pos != -1 && pos != cur<<3) {
			return pos, start, bytes
		}
		start += cur
		bytes -= cur
	}
	return firstBit([]byte{mask(val[end], lastMask, bit)}, bit), start, bytes
}

// mask forces the masked bits of c to the value not searched for.
func mask(c, m byte, bit int) byte {
	if bit == 1 {
		return c &^ m
	}
	return c | m
}

// firstBit is Redis's redisBitpos: the position of the first bit equal to
// bit in p; not found, -1 when looking for 1 and len(p)*8 when looking for
// 0 (the first bit past the end).
func firstBit(p []byte, bit int) int64 {
	skip := uint64(0)
	if bit == 0 {
		skip = ^uint64(0)
	}
	i := 0
	for ; i+8 <= len(p); i += 8 {
		if w := binary.BigEndian.Uint64(p[i:]); w != skip {
			return int64(i)<<3 + int64(bits.LeadingZeros64(w^skip))
		}
	}
	for ; i < len(p); i++ {
		if c := p[i]; c != byte(skip) {
			return int64(i)<<3 + int64(bits.LeadingZeros8(c^byte(skip)))
		}
	}
	if bit == 1 {
		return -1
	}
	return int64(len(p)) << 3
}
