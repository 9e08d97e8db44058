package bitmap

import "github.com/dfly/dfly/types/num"

// ParseRange parses the start and end of GETRANGE/SUBSTR (num.ErrNotInt).
// Redis parses them before the key lookup; a missing key then replies "".
func ParseRange(start, end []byte) (int64, int64, error) {
	s, err := num.Int(start)
	if err != nil {
		return 0, 0, err
	}
	e, err := num.Int(end)
	if err != nil {
		return 0, 0, err
	}
	return s, e, nil
}

// Range is GETRANGE: the bytes of val from start to end inclusive, negative
// indexes counting from the end, clamped to val. Redis's quirks are kept:
// both negative with start > end gives "" (GETRANGE k -1 -5), but a start
// before the beginning clamps to 0 (GETRANGE "Hello" -100 -200 is "", while
// -200 -100 is "H"). The result aliases val.
func Range(val []byte, start, end int64) []byte {
	n := int64(len(val))
	if start < 0 && end < 0 && start > end {
		return val[:0]
	}
	start, end = clampSpan(start, end, n)
	if start > end || n == 0 {
		return val[:0]
	}
	return val[start : end+1]
}

// ParseSetRangeOffset parses SETRANGE's offset: num.ErrNotInt, or
// ErrOffsetRange when negative. Redis checks it before the key lookup.
func ParseSetRangeOffset(b []byte) (int64, error) {
	off, err := num.Int(b)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, ErrOffsetRange
	}
	return off, nil
}

// SetRange is SETRANGE: it overwrites val (nil for a missing key) with
// value at offset, zero-padding any gap, and returns the new value, whose
// length is the reply. ErrTooLong when the result would exceed MaxLen.
//
// An empty value changes nothing and never fails: SetRange returns val as
// is, and Redis replies with its length without creating a missing key, so
// the server must not store a result for a missing key in that case.
func SetRange(val []byte, offset int64, value []byte) ([]byte, error) {
	if len(value) == 0 {
		return val, nil
	}
	if offset > MaxLen-int64(len(value)) {
		return val, ErrTooLong
	}
	end := int(offset) + len(value)
	val = grow(val, end)
	copy(val[offset:end], value)
	return val, nil
}
