package num

import (
	"math"
	"strconv"
)

// floatSyntax is what scanFloat learned about an input.
type floatSyntax struct {
	ok      bool
	neg     bool
	inf     bool // "inf" or "infinity", any case
	hex     bool // 0x mantissa
	hasExp  bool // hex only: a 'p' exponent is present
	nonZero bool // the mantissa has a non-zero digit
	exp     int64
	digits  int // mantissa digits, both sides of the point
}

// scanFloat checks b against the C-locale strtod grammar and requires the
// whole input to be consumed, as string2d and string2ld do (they reject a
// leading space explicitly and anything strtod leaves unparsed). NaN
// spellings are rejected here since both functions refuse a NaN result.
//
//	[+-] ( inf | infinity | decimal | 0x hex )
//	decimal = (digits [. digits*] | . digits) [(e|E) [+-] digits]
//	hex     = (xdigits [. xdigits*] | . xdigits) [(p|P) [+-] digits]
func scanFloat(b []byte) (s floatSyntax) {
	i, n := 0, len(b)
	if n == 0 {
		return s
	}
	if b[0] == '+' || b[0] == '-' {
		s.neg = b[0] == '-'
		i++
	}
	if rest := b[i:]; len(rest) > 0 && lower(rest[0]) == 'i' {
		if equalFold(rest, "inf") || equalFold(rest, "infinity") {
			s.ok, s.inf, s.nonZero = true, true, true
		}
		return s
	}
	if n-i >= 2 && b[i] == '0' && lower(b[i+1]) == 'x' {
		s.hex = true
		i += 2
	}
	digit := isDigit
	expChar := byte('e')
	if s.hex {
		digit, expChar = isHexDigit, 'p'
	}
	start := i
	for i < n && digit(b[i]) {
		if b[i] != '0' {
			s.nonZero = true
		}
		i++
	}
	s.digits = i - start
	if i < n && b[i] == '.' {
		i++
		fracStart := i
		for i < n && digit(b[i]) {
			if b[i] != '0' {
				s.nonZero = true
			}
			i++
		}
		s.digits += i - fracStart
	}
	if s.digits == 0 {
		return s
	}
	if i < n && lower(b[i]) == expChar {
		i++
		expNeg := false
		if i < n && (b[i] == '+' || b[i] == '-') {
			expNeg = b[i] == '-'
			i++
		}
		if i == n || !isDigit(b[i]) {
			return s
		}
		for ; i < n && isDigit(b[i]); i++ {
			if s.exp < 1<<40 { // saturate: far past any float's range
				s.exp = s.exp*10 + int64(b[i]-'0')
			}
		}
		if expNeg {
			s.exp = -s.exp
		}
		s.hasExp = true
	}
	s.ok = i == n
	return s
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || (lower(c) >= 'a' && lower(c) <= 'f') }
func lower(c byte) byte      { return c | 0x20 }

func equalFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		if lower(b[i]) != word[i] {
			return false
		}
	}
	return true
}

// ParseFloat parses b like Redis 7.0's string2d (util.c), the parser behind
// getDoubleFromObject: ZADD/ZINCRBY scores, ZRANGEBYSCORE bounds, GEO
// coordinates. It accepts what glibc strtod accepts in full, including hex
// floats ("0x10", "0x1p3") and "inf"/"+inf"/"-infinity" in any case, and
// rejects the empty string, leading or trailing spaces, NaN, overflow
// ("1e400") and underflow to zero ("1e-400"); subnormals are accepted.
func ParseFloat(b []byte) (float64, bool) {
	s := scanFloat(b)
	if !s.ok {
		return 0, false
	}
	if s.inf {
		if s.neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if !s.nonZero {
		if s.neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	var f float64
	var err error
	if s.hex && !s.hasExp {
		// Go wants the 'p' exponent that C makes optional.
		var buf [64]byte
		f, err = strconv.ParseFloat(string(append(append(buf[:0], b...), 'p', '0')), 64)
	} else {
		f, err = strconv.ParseFloat(string(b), 64)
	}
	if err != nil || f == 0 || math.IsInf(f, 0) {
		return 0, false // ERANGE: overflow, or underflow to zero
	}
	return f, true
}

// Float is ParseFloat for command arguments: it fails with ErrNotFloat, as
// getDoubleFromObjectOrReply does.
func Float(b []byte) (float64, error) {
	f, ok := ParseFloat(b)
	if !ok {
		return 0, ErrNotFloat
	}
	return f, nil
}

// AppendFloatReply appends f as Redis 7.0's addReplyDouble writes it: "inf"
// or "-inf", otherwise printf("%.17g"), so 0.1 reads "0.10000000000000001",
// 1e20 reads "1e+20" and -0 reads "-0" (ZSCORE, ZINCRBY, ZADD INCR, GEODIST).
// Redis 7.2 switched to shortest round-trip output; this is the 7.0 form.
func AppendFloatReply(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}
