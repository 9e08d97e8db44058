package num

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// Every expected reply in this file was confirmed against redis-server
// 7.0.15 (INCRBY on a missing key for ParseInt, ZADD+ZSCORE on a skiplist
// zset for ParseFloat/AppendFloatReply, SET+INCRBYFLOAT for LongDouble,
// SET+INCRBY and DECRBY for AddInt/Negate). Error rows hold Redis's text.

func TestParseInt(t *testing.T) {
	// INCRBY k <in> on a missing key replies <in> or the error.
	for _, tc := range []struct{ in, reply string }{
		{"0", "0"},
		{"1", "1"},
		{"-1", "-1"},
		{"10", "10"},
		{"-0", "ERR value is not an integer or out of range"},
		{"+1", "ERR value is not an integer or out of range"},
		{"01", "ERR value is not an integer or out of range"},
		{"-01", "ERR value is not an integer or out of range"},
		{"00", "ERR value is not an integer or out of range"},
		{"", "ERR value is not an integer or out of range"},
		{"-", "ERR value is not an integer or out of range"},
		{" 1", "ERR value is not an integer or out of range"},
		{"1 ", "ERR value is not an integer or out of range"},
		{"1a", "ERR value is not an integer or out of range"},
		{"1.0", "ERR value is not an integer or out of range"},
		{"0x10", "ERR value is not an integer or out of range"},
		{"1e3", "ERR value is not an integer or out of range"},
		{"9223372036854775807", "9223372036854775807"},
		{"9223372036854775808", "ERR value is not an integer or out of range"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"-9223372036854775809", "ERR value is not an integer or out of range"},
		{"18446744073709551615", "ERR value is not an integer or out of range"},
		{"18446744073709551616", "ERR value is not an integer or out of range"},
		{"99999999999999999999", "ERR value is not an integer or out of range"},
		{"-99999999999999999999", "ERR value is not an integer or out of range"},
		{"12345678901234567890", "ERR value is not an integer or out of range"},
		{"-0000000000000000001", "ERR value is not an integer or out of range"},
		{"00000000000000000001", "ERR value is not an integer or out of range"},
	} {
		got := string(ErrNotInt)
		if v, ok := ParseInt([]byte(tc.in)); ok {
			got = strconv.FormatInt(v, 10)
		}
		if got != tc.reply {
			t.Errorf("ParseInt(%q) = %s, Redis %s", tc.in, got, tc.reply)
		}
		if _, err := Int([]byte(tc.in)); (err == nil) != (got == tc.in) {
			t.Errorf("Int(%q) error %v disagrees with ParseInt", tc.in, err)
		}
	}
}

func TestParseFloat(t *testing.T) {
	// ZADD z <in> m; ZSCORE z m.
	for _, tc := range []struct{ in, reply string }{
		{"0", "0"},
		{"-0", "-0"},
		{"+0", "0"},
		{"1", "1"},
		{"-1", "-1"},
		{"0.1", "0.10000000000000001"},
		{"1.5", "1.5"},
		{".5", "0.5"},
		{"5.", "5"},
		{"+.5", "0.5"},
		{"1e5", "100000"},
		{"1E+05", "100000"},
		{"1e-5", "1.0000000000000001e-05"},
		{"0.0001", "0.0001"},
		{"0.00001", "1.0000000000000001e-05"},
		{"1e16", "10000000000000000"},
		{"1e17", "1e+17"},
		{"12345678901234567", "12345678901234568"},
		{"1e20", "1e+20"},
		{"1.5e300", "1.5000000000000001e+300"},
		{"123.456", "123.456"},
		{"-1.5e-7", "-1.4999999999999999e-07"},
		{"0x10", "16"},
		{"0X1P3", "8"},
		{"0x.8", "0.5"},
		{"0x1.", "1"},
		{"0x1p-1074", "4.9406564584124654e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"4e-320", "3.999955468730732e-320"},
		{"inf", "inf"},
		{"-inf", "-inf"},
		{"+inf", "inf"},
		{"INF", "inf"},
		{"Infinity", "inf"},
		{"-infinity", "-inf"},
		{"", "ERR value is not a valid float"},
		{" 1", "ERR value is not a valid float"},
		{"1 ", "ERR value is not a valid float"},
		{"1\x00", "ERR value is not a valid float"},
		{".", "ERR value is not a valid float"},
		{"-", "ERR value is not a valid float"},
		{"1e", "ERR value is not a valid float"},
		{"1e+", "ERR value is not a valid float"},
		{"0x", "ERR value is not a valid float"},
		{"0x1p", "ERR value is not a valid float"},
		{"1_000", "ERR value is not a valid float"},
		{"nan", "ERR value is not a valid float"},
		{"-nan", "ERR value is not a valid float"},
		{"NaN", "ERR value is not a valid float"},
		{"nan(1)", "ERR value is not a valid float"},
		{"infinit", "ERR value is not a valid float"},
		{"in", "ERR value is not a valid float"},
		{"1e400", "ERR value is not a valid float"},
		{"-1e400", "ERR value is not a valid float"},
		{"1e-400", "ERR value is not a valid float"},
		{"2e-324", "ERR value is not a valid float"},
		{"1.7976931348623159e308", "ERR value is not a valid float"},
		{"0e99999999999", "0"},
		{"1,5", "ERR value is not a valid float"},
		{"1.5.", "ERR value is not a valid float"},
		{"--1", "ERR value is not a valid float"},
	} {
		got := string(ErrNotFloat)
		if f, err := Float([]byte(tc.in)); err == nil {
			got = string(AppendFloatReply(nil, f))
		} else if err != ErrNotFloat {
			t.Errorf("Float(%q) error %v", tc.in, err)
		}
		if got != tc.reply {
			t.Errorf("ParseFloat(%q) replies %s, Redis %s", tc.in, got, tc.reply)
		}
	}
}

func TestAppendFloatReply(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0.1, "0.10000000000000001"},
		{0.30000000000000004, "0.30000000000000004"}, // ZINCRBY z 0.2 m after ZADD z 0.1 m
		{math.Copysign(0, -1), "-0"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{1e17, "1e+17"},
	} {
		if got := string(AppendFloatReply([]byte("x"), tc.f)); got != "x"+tc.want {
			t.Errorf("AppendFloatReply(%v) = %q, want x%s", tc.f, got, tc.want)
		}
	}
}

// incrByFloat is INCRBYFLOAT as the server wires it; "" is a missing key.
func incrByFloat(current, incr string) string {
	var value LongDouble
	if current != "" {
		v, err := LongDoubleArg([]byte(current))
		if err != nil {
			return err.Error()
		}
		value = v
	}
	by, err := LongDoubleArg([]byte(incr))
	if err != nil {
		return err.Error()
	}
	sum, err := IncrFloat(value, by)
	if err != nil {
		return err.Error()
	}
	return string(AppendFloatIncr(nil, sum))
}

func TestIncrFloat(t *testing.T) {
	// SET k <current> (DEL k when ""); INCRBYFLOAT k <incr>.
	for _, tc := range []struct{ current, incr, reply string }{
		{"10.5", "0.1", "10.6"},
		{"0.1", "0.2", "0.3"},
		{"3.0e3", "0", "3000"},
		{"5.0e3", "2.0e3", "7000"},
		{"", "5.0e3", "5000"},
		{"12345", "0.1", "12345.09999999999999964"},
		{"", "1e20", "100000000000000000000"},
		{"", "1e-20", "0"},
		{"1e20", "1e-20", "100000000000000000000"},
		{"", "-5e-18", "0"},
		{"-0", "0", "0"},
		{"", "0.000003814697265625", "0.00000381469726562"},
		{"", "0.0000000000000000125", "0.00000000000000001"},
		{"", "0.0000000000000000135", "0.00000000000000001"},
		{"", "1e-17", "0.00000000000000001"},
		{"", "1.5", "1.5"},
		{"-1.5", "1.5", "0"},
		{"1", "-1.25", "-0.25"},
		{"", "0x10", "16"},
		{"", "1e400", "10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880"},
		{"1e4932", "1e4932", "ERR increment would produce NaN or Infinity"},
		{"", "1e4933", "ERR value is not a valid float"},
		{"", "1e-5000", "ERR value is not a valid float"},
		{"", "inf", "ERR increment would produce NaN or Infinity"},
		{"inf", "1", "ERR increment would produce NaN or Infinity"},
		{"inf", "-inf", "ERR increment would produce NaN or Infinity"},
		{"", "nan", "ERR value is not a valid float"},
		{"", " 1", "ERR value is not a valid float"},
		{"abc", "1", "ERR value is not a valid float"},
		{"", "9223372036854775807", "9223372036854775807"},
		{"9223372036854775807", "1", "9223372036854775808"},
		{"", "0.3333333333333333", "0.3333333333333333"},
		{"", "100.01", "100.01"},
		{"1.1", "2.2", "3.3"},
		{"", "-0.0", "0"},
		{"", "123456789.123456789", "123456789.12345678899873747"},
		{"", "1e-300", "0"},
		{"1e300", "1e300", "2000000000000000000017994648159118387741047888546581495876520164642531293192361871511698304167500994380700745017228549671807185112369345967826192521041497292574654271283687306588168510215212033579453305864740061102765895241989080589545563779241212358535223254194821301134374772211380178849830208012288"},
	} {
		if got := incrByFloat(tc.current, tc.incr); got != tc.reply {
			t.Errorf("INCRBYFLOAT %q by %q = %s, Redis %s", tc.current, tc.incr, got, tc.reply)
		}
	}
}

func TestHashIncrFloatInfinity(t *testing.T) {
	// HINCRBYFLOAT h f inf → "ERR value is NaN or Infinity".
	x, ok := ParseLongDouble([]byte("inf"))
	if !ok || !x.IsInf() {
		t.Fatalf("ParseLongDouble(inf) = %v, %v", x, ok)
	}
}

func TestLongDoubleFloat64(t *testing.T) {
	for _, in := range []string{"0.1", "-2.5", "1e300", "inf", "0x1p-1074"} {
		x, _ := ParseLongDouble([]byte(in))
		f, _ := ParseFloat([]byte(in))
		if x.Float64() != f {
			t.Errorf("%s: Float64() = %v, want %v", in, x.Float64(), f)
		}
	}
}

func TestAddInt(t *testing.T) {
	// SET k <value>; INCRBY k <incr>.
	for _, tc := range []struct {
		value, incr int64
		reply       string
	}{
		{1, 1, "2"},
		{9223372036854775806, 1, "9223372036854775807"},
		{9223372036854775807, 1, "ERR increment or decrement would overflow"},
		{9223372036854775807, -1, "9223372036854775806"},
		{-9223372036854775807, -1, "-9223372036854775808"},
		{-9223372036854775808, -1, "ERR increment or decrement would overflow"},
		{-9223372036854775808, 1, "-9223372036854775807"},
		{-9223372036854775808, 9223372036854775807, "-1"},
		{9223372036854775807, -9223372036854775808, "-1"},
		{0, -9223372036854775808, "-9223372036854775808"},
		{-1, -9223372036854775808, "ERR increment or decrement would overflow"},
		{1, 9223372036854775807, "ERR increment or decrement would overflow"},
	} {
		got := ""
		if v, err := AddInt(tc.value, tc.incr); err != nil {
			got = err.Error()
		} else {
			got = strconv.FormatInt(v, 10)
		}
		if got != tc.reply {
			t.Errorf("AddInt(%d, %d) = %s, Redis %s", tc.value, tc.incr, got, tc.reply)
		}
	}
}

func TestNegate(t *testing.T) {
	// SET k 0; DECRBY k <decr>.
	for _, tc := range []struct {
		decr  int64
		reply string
	}{
		{1, "-1"},
		{-1, "1"},
		{9223372036854775807, "-9223372036854775807"},
		{-9223372036854775807, "9223372036854775807"},
		{-9223372036854775808, "ERR decrement would overflow"},
	} {
		got := ""
		if incr, err := Negate(tc.decr); err != nil {
			got = err.Error()
		} else if v, err := AddInt(0, incr); err != nil {
			got = err.Error()
		} else {
			got = strconv.FormatInt(v, 10)
		}
		if got != tc.reply {
			t.Errorf("DECRBY %d = %s, Redis %s", tc.decr, got, tc.reply)
		}
	}
}

func TestErrorIs(t *testing.T) {
	var e Error
	if err := error(ErrNotInt); !errors.As(err, &e) || string(e) != "ERR value is not an integer or out of range" {
		t.Fatalf("errors.As(ErrNotInt) = %q", e)
	}
}

func TestParseIntAllocs(t *testing.T) {
	b := []byte("-9223372036854775808")
	if n := testing.AllocsPerRun(100, func() { ParseInt(b) }); n != 0 {
		t.Fatalf("ParseInt allocates %v times", n)
	}
}

func BenchmarkParseInt(b *testing.B) {
	in := [][]byte{[]byte("0"), []byte("12345"), []byte("-9223372036854775808"), []byte("1x")}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ParseInt(in[i&3])
	}
}

func BenchmarkParseFloat(b *testing.B) {
	in := []byte("3.14159")
	b.ReportAllocs()
	for b.Loop() {
		ParseFloat(in)
	}
}

func BenchmarkIncrFloat(b *testing.B) {
	value, _ := ParseLongDouble([]byte("10.5"))
	by, _ := ParseLongDouble([]byte("0.1"))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		sum, _ := IncrFloat(value, by)
		buf = AppendFloatIncr(buf[:0], sum)
	}
}
