package num

import (
	"math"
	"math/big"
)

// x87 extended precision: a 64-bit mantissa and a 15-bit exponent.
const (
	ldPrec = 64
	// Every finite long double is below 2^16384; big.Float's MantExp
	// exponent e (x = m·2^e, 0.5 <= |m| < 1) must stay <= ldMaxExp.
	ldMaxExp = 16384
	// The smallest subnormal is 2^-16445; strtold rounds anything below
	// half of it to zero and reports ERANGE, which string2ld rejects.
	ldMinExp = -16444
	// maxLongDoubleChars mirrors MAX_LONG_DOUBLE_CHARS (5*1024): string2ld
	// rejects inputs that long.
	maxLongDoubleChars = 5 * 1024
	// With at most 5k digits, a decimal exponent beyond this puts the value
	// far outside the long double range either way, so big.Float never has
	// to evaluate it.
	ldMaxDecimalExp = 20000
)

// LongDouble is an x87 80-bit long double, the type Redis computes
// INCRBYFLOAT and HINCRBYFLOAT in. The zero value is +0, the value of a
// missing key. Values are immutable and safe to copy.
type LongDouble struct {
	mant uint64 // top bit set unless the value is zero or infinite
	exp  int32  // value = mant · 2^exp
	neg  bool
	inf  bool
}

// ParseLongDouble parses b like Redis 7.0's string2ld (util.c), which
// INCRBYFLOAT and HINCRBYFLOAT use for both the stored value and the
// increment: the strtod grammar of ParseFloat (hex floats, "inf", any-case
// "infinity"; no spaces, no NaN), at most 5119 bytes, rounded to a 64-bit
// mantissa. Because the range is the long double range, "1e400" is accepted
// while "1e5000" and "1e-5000" are not.
//
// Difference from Redis: values below 2^-16382 are subnormal on x87 and lose
// mantissa bits there; here they keep all 64. Both print as "0" in
// AppendFloatIncr, so only sums of such values with each other could differ.
func ParseLongDouble(b []byte) (LongDouble, bool) {
	if len(b) >= maxLongDoubleChars {
		return LongDouble{}, false
	}
	s := scanFloat(b)
	if !s.ok {
		return LongDouble{}, false
	}
	if s.inf {
		return LongDouble{neg: s.neg, inf: true}, true
	}
	if !s.nonZero {
		return LongDouble{neg: s.neg}, true
	}
	if !s.hex && (s.exp > ldMaxDecimalExp || s.exp < -ldMaxDecimalExp) {
		return LongDouble{}, false // overflow or underflow, ERANGE
	}
	if s.hex && (s.exp > 4*ldMaxDecimalExp || s.exp < -4*ldMaxDecimalExp) {
		return LongDouble{}, false
	}
	text := string(b)
	if s.hex && !s.hasExp {
		text += "p0"
	}
	f, _, err := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Parse(text, 0)
	if err != nil {
		return LongDouble{}, false
	}
	x, ok := fromBig(f)
	if !ok || x.inf {
		return LongDouble{}, false
	}
	return x, true
}

// LongDoubleArg is ParseLongDouble for command arguments and stored values:
// it fails with ErrNotFloat, as getLongDoubleFromObjectOrReply does.
func LongDoubleArg(b []byte) (LongDouble, error) {
	x, ok := ParseLongDouble(b)
	if !ok {
		return LongDouble{}, ErrNotFloat
	}
	return x, nil
}

// fromBig rounds f into the long double range; ok is false when f
// underflows to zero. Overflow yields an infinity.
func fromBig(f *big.Float) (LongDouble, bool) {
	if f.IsInf() {
		return LongDouble{neg: f.Signbit(), inf: true}, true
	}
	if f.Sign() == 0 {
		return LongDouble{neg: f.Signbit()}, true
	}
	mant := new(big.Float)
	e := f.MantExp(mant) // f = mant · 2^e, 0.5 <= |mant| < 1
	if e > ldMaxExp {
		return LongDouble{neg: f.Signbit(), inf: true}, true
	}
	if e < ldMinExp {
		return LongDouble{}, false
	}
	mant.SetMantExp(mant, ldPrec) // now an integer of exactly 64 bits
	mant.Abs(mant)
	m, _ := mant.Uint64()
	return LongDouble{mant: m, exp: int32(e - ldPrec), neg: f.Signbit()}, true
}

func (x LongDouble) big() *big.Float {
	f := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	if x.inf {
		return f.SetInf(x.neg)
	}
	f.SetMantExp(f.SetUint64(x.mant), int(x.exp))
	if x.neg {
		f.Neg(f)
	}
	return f
}

// MulCeil is (long long)ceill(x * k) as Redis's x86-64 build computes it:
// the product in long double precision, rounded up to an integer; an
// infinity or a product out of the int64 range is the minimum int64 (the
// cast's result on x86-64).
func (x LongDouble) MulCeil(k int64) int64 {
	if x.inf {
		return math.MinInt64
	}
	f := x.big()
	f.Mul(f, new(big.Float).SetInt64(k))
	if f.IsInf() {
		return math.MinInt64
	}
	i, acc := f.Int64()
	if i == math.MaxInt64 && acc == big.Below {
		return math.MinInt64 // above the range
	}
	if acc == big.Below {
		i++ // a positive fraction: up
	}
	return i
}

// IsInf reports whether x is an infinity (HINCRBYFLOAT refuses such an
// increment with ErrIncrNaNInf).
func (x LongDouble) IsInf() bool { return x.inf }

// Float64 rounds x to the nearest float64.
func (x LongDouble) Float64() float64 {
	if x.inf {
		return math.Inf(sign(x.neg))
	}
	f, _ := x.big().Float64()
	return f
}

func sign(neg bool) int {
	if neg {
		return -1
	}
	return 1
}

// IncrFloat is the INCRBYFLOAT/HINCRBYFLOAT step: value+incr rounded as the
// x87 FPU rounds (64-bit mantissa, nearest-even), or ErrNaNInf when the sum
// is NaN or overflows, as Redis checks after the addition. It computes with
// math/big (about a dozen small allocations with AppendFloatIncr); the
// integer paths of this package allocate nothing.
func IncrFloat(value, incr LongDouble) (LongDouble, error) {
	if value.inf || incr.inf {
		return LongDouble{}, ErrNaNInf // inf+x is inf, inf-inf is NaN
	}
	sum := value.big()
	sum.Add(sum, incr.big())
	r, ok := fromBig(sum)
	if !ok {
		// Underflow to zero: x87 yields a signed zero (or subnormal);
		// AppendFloatIncr prints "0" for either.
		return LongDouble{}, nil
	}
	if r.inf {
		return LongDouble{}, ErrNaNInf
	}
	return r, nil
}

// AppendFloatIncr appends x the way INCRBYFLOAT and HINCRBYFLOAT store and
// reply with it: Redis 7.0's ld2string(LD_STR_HUMAN), which is
// printf("%.17Lf") with trailing zeros and a trailing '.' removed and "-0"
// turned into "0"; infinities print "inf"/"-inf". So 10.5+0.1 gives "10.6",
// 0.1+0.2 gives "0.3", 3.0e3 gives "3000", 1e20 gives
// "100000000000000000000" and 12345+0.1 gives "12345.09999999999999964".
//
// Redis formats with %.17Lf (fixed notation), not %.17Lg; a float64 cannot
// reproduce these digits, hence LongDouble.
func AppendFloatIncr(dst []byte, x LongDouble) []byte {
	if x.inf {
		if x.neg {
			return append(dst, "-inf"...)
		}
		return append(dst, "inf"...)
	}
	start := len(dst)
	dst = x.big().Append(dst, 'f', 17)
	end := len(dst)
	for dst[end-1] == '0' {
		end--
	}
	if dst[end-1] == '.' {
		end--
	}
	dst = dst[:end]
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}
