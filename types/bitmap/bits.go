package bitmap

import "github.com/dfly/dfly/types/num"

// MaxLen is the longest value the bit and range commands create, Redis's
// default proto-max-bulk-len.
const MaxLen = 512 << 20

// Error replies of the bit and range commands, as Redis 7.0 words them.
const (
	ErrBitOffset   num.Error = "ERR bit offset is not an integer or out of range"
	ErrBitValue    num.Error = "ERR bit is not an integer or out of range"
	ErrBitArg      num.Error = "ERR The bit argument must be 1 or 0."
	ErrSyntax                = num.ErrSyntax
	ErrNotSingle   num.Error = "ERR BITOP NOT must be called with a single source key."
	ErrFieldType   num.Error = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	ErrOverflowArg num.Error = "ERR Invalid OVERFLOW type specified"
	ErrReadOnly    num.Error = "ERR BITFIELD_RO only supports the GET subcommand"
	ErrTooLong     num.Error = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffsetRange num.Error = "ERR offset is out of range"
)

// ParseOffset parses the bit offset of SETBIT and GETBIT: a string2ll
// integer in [0, 8*MaxLen), else ErrBitOffset.
func ParseOffset(b []byte) (uint64, error) {
	return parseOffset(b, 0)
}

// parseOffset is Redis's getBitOffsetFromArgument. With width > 0 (BITFIELD)
// a leading '#' multiplies the offset by the field width; the product wraps
// like the C code's does before the range check.
func parseOffset(b []byte, width int) (uint64, error) {
	hash := width > 0 && len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	off, ok := num.ParseInt(b)
	if !ok {
		return 0, ErrBitOffset
	}
	if hash {
		off *= int64(width)
	}
	if off < 0 || off>>3 >= MaxLen {
		return 0, ErrBitOffset
	}
	return uint64(off), nil
}

// ParseBit parses SETBIT's value, 0 or 1, else ErrBitValue. SETBIT parses
// the offset first.
func ParseBit(b []byte) (bool, error) {
	v, ok := num.ParseInt(b)
	if !ok || v&^1 != 0 {
		return false, ErrBitValue
	}
	return v == 1, nil
}

// Bit is GETBIT: the bit at offset, 0 past the end of val.
func Bit(val []byte, offset uint64) int {
	i := offset >> 3
	if i >= uint64(len(val)) {
		return 0
	}
	return int(val[i]>>(7-offset&7)) & 1
}

// SetBit is SETBIT: it sets or clears the bit at offset, zero-growing val as
// needed (a missing key, nil, becomes a new value even when clearing), and
// returns the new value and the bit's previous value.
func SetBit(val []byte, offset uint64, on bool) ([]byte, int) {
	val = grow(val, int(offset>>3)+1)
	i, shift := offset>>3, 7-offset&7
	old := int(val[i]>>shift) & 1
	if on {
		val[i] |= 1 << shift
	} else {
		val[i] &^= 1 << shift
	}
	return val, old
}

// grow returns val extended with zero bytes to at least n bytes.
func grow(val []byte, n int) []byte {
	if n <= len(val) {
		return val
	}
	return append(val, make([]byte, n-len(val))...)
}
