package num

import (
	"strconv"
	"testing"
)

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "9223372036854775807", "-9223372036854775808", "01", "-0", "+1", " 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := ParseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		if ok && (err != nil || v != want) {
			t.Fatalf("ParseInt(%q) = %d, strconv says %d, %v", b, v, want, err)
		}
		// string2ll accepts exactly the canonical spelling of each int64.
		if !ok && err == nil && strconv.FormatInt(want, 10) == string(b) {
			t.Fatalf("ParseInt(%q) rejected a canonical integer", b)
		}
	})
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0.1", "-inf", "0x1p-3", "1e400", "1e-400", "nan", ".5", "1e", "0x10"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := ParseFloat(b)
		x, xok := ParseLongDouble(b)
		if ok {
			if v != v {
				t.Fatalf("ParseFloat(%q) accepted NaN", b)
			}
			if want, err := strconv.ParseFloat(string(b), 64); err == nil && want != v {
				t.Fatalf("ParseFloat(%q) = %v, strconv says %v", b, v, want)
			}
			// The long double range contains the double range.
			if !xok && len(b) < maxLongDoubleChars {
				t.Fatalf("ParseLongDouble(%q) rejected what ParseFloat accepts", b)
			}
		}
		if xok {
			AppendFloatIncr(nil, x)
			if _, err := IncrFloat(x, x); err != nil && !x.IsInf() && x.exp < ldMaxExp-ldPrec-1 {
				t.Fatalf("IncrFloat(%q, %q) = %v", b, b, err)
			}
		}
	})
}
