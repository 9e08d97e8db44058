package num

import "math"

// maxIntLen mirrors LONG_STR_SIZE (21): string2ll refuses inputs that long.
const maxIntLen = 21

// ParseInt parses b exactly like Redis's string2ll (util.c): optional '-',
// decimal digits, no '+', no spaces, no leading zeros, "-0" rejected,
// out-of-range rejected, at most 20 bytes. It never allocates.
func ParseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n >= maxIntLen {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := b[0] == '-'
	if neg {
		i++
		if i == n {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	v := uint64(b[i] - '0')
	for i++; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		d := uint64(c - '0')
		if v > math.MaxUint64-d {
			return 0, false
		}
		v += d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// Int is ParseInt for command arguments and stored values: it fails with
// ErrNotInt, as Redis's getLongLongFromObjectOrReply does.
func Int(b []byte) (int64, error) {
	v, ok := ParseInt(b)
	if !ok {
		return 0, ErrNotInt
	}
	return v, nil
}

// AddInt returns value+incr, or ErrOverflow when the sum leaves int64
// (Redis's incrDecrCommand check, shared by INCR, INCRBY, DECR, DECRBY and
// HINCRBY).
func AddInt(value, incr int64) (int64, error) {
	if (incr < 0 && value < 0 && incr < math.MinInt64-value) ||
		(incr > 0 && value > 0 && incr > math.MaxInt64-value) {
		return 0, ErrOverflow
	}
	return value + incr, nil
}

// Negate turns DECRBY's decrement into the increment to add; -2^63 has no
// negation and fails with ErrDecrOverflow before the key is looked at.
func Negate(decr int64) (int64, error) {
	if decr == math.MinInt64 {
		return 0, ErrDecrOverflow
	}
	return -decr, nil
}
