package num

import (
	"math"
	"testing"
)

// MulCeil rounds the long double product up, as ceill: any positive
// fraction of a millisecond is one, a negative one is zero (-0.001 too:
// its long double is a little above -0.001, as redis-server shows).
func TestMulCeil(t *testing.T) {
	for in, want := range map[string]int64{
		"0.001": 1, "0.0001": 1, "1e-10": 1, "0.01": 10, "1.5": 1500, "2": 2000, "0": 0,
		"-0.0001": 0, "-0.001": 0, "-0.002": -1, "-1.5": -1500, "inf": math.MinInt64, "1e400": math.MinInt64,
		"9.3e15": math.MinInt64, "9.2e15": 9200000000000000000,
	} {
		x, ok := ParseLongDouble([]byte(in))
		if !ok {
			t.Fatalf("%s: not parsed", in)
		}
		if got := x.MulCeil(1000); got != want {
			t.Errorf("MulCeil(%s, 1000) = %d, want %d", in, got, want)
		}
	}
}
