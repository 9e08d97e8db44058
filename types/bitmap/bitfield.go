package bitmap

import "github.com/dfly/dfly/types/num"

// Overflow is a BITFIELD OVERFLOW policy; it applies to the SET and INCRBY
// subcommands that follow it.
type Overflow uint8

const (
	Wrap Overflow = iota // the default
	Sat
	Fail
)

// FieldOp is a BITFIELD subcommand.
type FieldOp uint8

const (
	Get FieldOp = iota
	Set
	IncrBy
)

// Field is one BITFIELD subcommand with its arguments resolved.
type Field struct {
	Op       FieldOp
	Signed   bool
	Width    uint8  // 1..64 signed, 1..63 unsigned
	Offset   uint64 // in bits, '#' already multiplied out
	Value    int64  // SET value or INCRBY increment
	Overflow Overflow
}

// Program is a parsed BITFIELD or BITFIELD_RO command.
type Program struct {
	Fields []Field
	writes bool
	// bytes the value must have for the writes: the highest written bit's
	// byte plus one
	size uint64
}

// Result is one BITFIELD reply element: Value, or a null reply when Nil
// (a SET or INCRBY refused by OVERFLOW FAIL).
type Result struct {
	Value int64
	Nil   bool
}

// ParseBitfield parses the arguments after the key of BITFIELD (readOnly
// false) or BITFIELD_RO (readOnly true) into a Program. It fails like Redis
// does, at the first bad argument: ErrSyntax for an unknown subcommand or
// one short of arguments, ErrOverflowArg, ErrFieldType, ErrBitOffset (also
// for an offset whose '#' product leaves [0, 2^32)), num.ErrNotInt for a
// SET value or increment. BITFIELD_RO with a SET or INCRBY fails with
// ErrReadOnly, but only after the whole list parsed (OVERFLOW alone is
// allowed). Redis parses before the key lookup, so these errors win over
// WRONGTYPE. No subcommands at all is a valid, empty program.
func ParseBitfield(args [][]byte, readOnly bool) (Program, error) {
	var p Program
	overflow := Wrap
	for j := 0; j < len(args); j++ {
		more := len(args) - j - 1
		var f Field
		switch name := args[j]; {
		case equalFold(name, "get") && more >= 2:
			f.Op = Get
		case equalFold(name, "set") && more >= 3:
			f.Op = Set
		case equalFold(name, "incrby") && more >= 3:
			f.Op = IncrBy
		case equalFold(name, "overflow") && more >= 1:
			j++
			switch policy := args[j]; {
			case equalFold(policy, "wrap"):
				overflow = Wrap
			case equalFold(policy, "sat"):
				overflow = Sat
			case equalFold(policy, "fail"):
				overflow = Fail
			default:
				return Program{}, ErrOverflowArg
			}
			continue
		default:
			return Program{}, ErrSyntax
		}
		var err error
		if f.Signed, f.Width, err = parseFieldType(args[j+1]); err != nil {
			return Program{}, err
		}
		if f.Offset, err = parseOffset(args[j+2], int(f.Width)); err != nil {
			return Program{}, err
		}
		if f.Op != Get {
			p.writes = true
			p.size = max(p.size, (f.Offset+uint64(f.Width)-1)>>3+1)
			if f.Value, err = num.Int(args[j+3]); err != nil {
				return Program{}, err
			}
			j++
		}
		f.Overflow = overflow
		p.Fields = append(p.Fields, f)
		j += 2
	}
	if readOnly && p.writes {
		return Program{}, ErrReadOnly
	}
	return p, nil
}

// parseFieldType is Redis's getBitfieldTypeFromArgument: i1..i64, u1..u63,
// lower case only. Like the C code it reads the width only up to a NUL byte.
func parseFieldType(b []byte) (signed bool, width uint8, err error) {
	if len(b) == 0 {
		return false, 0, ErrFieldType
	}
	switch b[0] {
	case 'i':
		signed = true
	case 'u':
	default:
		return false, 0, ErrFieldType
	}
	digits := b[1:]
	for i, c := range digits {
		if c == 0 {
			digits = digits[:i]
			break
		}
	}
	w, ok := num.ParseInt(digits)
	if !ok || w < 1 || (signed && w > 64) || (!signed && w > 63) {
		return false, 0, ErrFieldType
	}
	return signed, uint8(w), nil
}

// Writes reports whether the program has a SET or INCRBY. A writing program
// creates a missing key and grows the value even when every write is
// refused by OVERFLOW FAIL; a read-only one neither creates nor changes it.
func (p Program) Writes() bool { return p.writes }

// Exec runs the program against val (nil for a missing key), appending one
// Result per GET, SET and INCRBY to results. SET replies with the old value,
// INCRBY with the new one. For a writing program it returns the new value:
// val zero-grown to cover every written field, then modified; otherwise val
// unchanged. GETs read past the end as zeros.
func (p Program) Exec(val []byte, results []Result) ([]byte, []Result) {
	if p.writes {
		val = grow(val, int(p.size))
	}
	for _, f := range p.Fields {
		if f.Op == Get {
			results = append(results, Result{Value: readField(val, f)})
			continue
		}
		old := readField(val, f)
		next, overflow := f.Value, false
		if f.Op == IncrBy {
			next, overflow = add(old, f.Value, f)
		} else {
			next, overflow = add(next, 0, f)
		}
		if overflow && f.Overflow == Fail {
			results = append(results, Result{Nil: true})
			continue
		}
		writeField(val, f.Offset, f.Width, uint64(next))
		if f.Op == IncrBy {
			results = append(results, Result{Value: next})
		} else {
			results = append(results, Result{Value: old})
		}
	}
	return val, results
}

// readField reads field f of val, zero past the end, sign-extended for a
// signed type.
func readField(val []byte, f Field) int64 {
	var u uint64
	for i, off := uint8(0), f.Offset; i < f.Width; i, off = i+1, off+1 {
		u <<= 1
		if byteAt := off >> 3; byteAt < uint64(len(val)) {
			u |= uint64(val[byteAt]>>(7-off&7)) & 1
		}
	}
	if f.Signed && f.Width < 64 && u>>(f.Width-1)&1 == 1 {
		u |= ^uint64(0) << f.Width
	}
	return int64(u)
}

// writeField stores the low width bits of v at offset; val covers them.
func writeField(val []byte, offset uint64, width uint8, v uint64) {
	for i := int(width) - 1; i >= 0; i, offset = i-1, offset+1 {
		shift := 7 - offset&7
		if v>>uint(i)&1 == 1 {
			val[offset>>3] |= 1 << shift
		} else {
			val[offset>>3] &^= 1 << shift
		}
	}
}

// add returns value+incr for field f under its overflow policy, and whether
// the sum overflowed the field. It mirrors Redis's
// checkSignedBitfieldOverflow and checkUnsignedBitfieldOverflow, including
// how SET (incr 0) of an out-of-range value behaves: an unsigned field
// treats a negative value as huge, so SAT stores the maximum.
func add(value, incr int64, f Field) (int64, bool) {
	w := uint(f.Width)
	if !f.Signed {
		v := uint64(value)
		maxv := uint64(1)<<w - 1
		maxIncr := int64(maxv - v)
		minIncr := -int64(v)
		switch {
		case v > maxv || (incr > 0 && incr > maxIncr):
			if f.Overflow == Sat {
				return int64(maxv), true
			}
		case incr < 0 && incr < minIncr:
			if f.Overflow == Sat {
				return 0, true
			}
		default:
			return int64(v + uint64(incr)), false
		}
		return int64((v + uint64(incr)) &^ (^uint64(0) << w)), true
	}
	maxv := int64(1)<<(w-1) - 1
	if w == 64 {
		maxv = 1<<63 - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	switch {
	case value > maxv || (w != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		if f.Overflow == Sat {
			return maxv, true
		}
	case value < minv || (w != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		if f.Overflow == Sat {
			return minv, true
		}
	default:
		return value + incr, false
	}
	c := uint64(value) + uint64(incr)
	if w < 64 {
		if c>>(w-1)&1 == 1 {
			c |= ^uint64(0) << w
		} else {
			c &^= ^uint64(0) << w
		}
	}
	return int64(c), true
}
