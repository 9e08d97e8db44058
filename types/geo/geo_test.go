package geo

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Values redis-server 7.0.15 gives for the same points.
func TestRedisValues(t *testing.T) {
	for _, tc := range []struct {
		lon, lat float64
		score    uint64
		hash     string
		dlon     string
		dlat     string
	}{
		{13.361389, 38.115556, 3479099956230698, "sqc8b49rny0", "13.36138933897018433", "38.11555639549629859"},
		{15.087269, 37.502669, 3479447370796909, "sqdtr74hyu0", "15.08726745843887329", "37.50266842333162032"},
	} {
		s, ok := Score(tc.lon, tc.lat)
		if !ok || uint64(s) != tc.score {
			t.Fatalf("Score(%v, %v) = %v, %v; want %d", tc.lon, tc.lat, uint64(s), ok, tc.score)
		}
		if got := String(s); got != tc.hash {
			t.Fatalf("String = %s, want %s", got, tc.hash)
		}
		lon, lat := Decode(s)
		if got := strconv.FormatFloat(lon, 'f', 17, 64)[:len(tc.dlon)]; got != tc.dlon {
			t.Fatalf("Decode lon = %s, want %s", got, tc.dlon)
		}
		if got := strconv.FormatFloat(lat, 'f', 17, 64)[:len(tc.dlat)]; got != tc.dlat {
			t.Fatalf("Decode lat = %s, want %s", got, tc.dlat)
		}
	}
	// Palermo to Catania, as GEODIST answers it.
	d := Distance(13.36138933897018433, 38.11555639549629859, 15.08726745843887329, 37.50266842333162032)
	if got := strconv.FormatFloat(d, 'f', 4, 64); got != "166274.1516" {
		t.Fatalf("Distance = %s, want 166274.1516", got)
	}
	if _, ok := Score(181, 0); ok {
		t.Fatal("Score accepted longitude 181")
	}
	if _, ok := Score(0, 85.06); ok {
		t.Fatal("Score accepted latitude 85.06")
	}
	// Scores no GEOADD wrote decode as Redis's cast on x86-64 makes them.
	if got := scoreBits(math.Inf(1)); got != 0 {
		t.Fatalf("scoreBits(+Inf) = %#x, want 0", got)
	}
	if got := scoreBits(-1); got != math.MaxUint64 {
		t.Fatalf("scoreBits(-1) = %#x", got)
	}
}

// A decoded point lies in its encoded cell, the cells a search reads
// cover every point within its radius, and each neighbour borders the
// centre cell. Random points, seed printed on failure.
func TestCellsCoverTheShape(t *testing.T) {
	seed := uint64(20261126)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := 0; i < 2000; i++ {
		lon, lat := r.Float64()*360-180, r.Float64()*170-85
		s, ok := Score(lon, lat)
		if !ok {
			t.Fatalf("seed %d: Score(%v, %v) refused", seed, lon, lat)
		}
		dlon, dlat := Decode(s)
		if math.Abs(dlon-lon) > 360.0/(1<<26) || math.Abs(dlat-lat) > 170.2/(1<<26) {
			t.Fatalf("seed %d: (%v, %v) decoded as (%v, %v)", seed, lon, lat, dlon, dlat)
		}
		sh := Shape{Lon: lon, Lat: lat, Radius: []float64{1, 100, 10000, 500000}[i%4], Conversion: 1}
		cells := sh.Cells()
		// A point just inside the radius, in a random direction.
		for k := 0; k < 5; k++ {
			plon := lon + (r.Float64()*2-1)*sh.Radius/111000/math.Max(math.Cos(lat*math.Pi/180), 0.05)
			plat := lat + (r.Float64()*2-1)*sh.Radius/111000
			if plon < LongMin || plon > LongMax || plat < LatMin || plat > LatMax {
				continue
			}
			ps, _ := Score(plon, plat)
			qlon, qlat := Decode(ps)
			if _, in := sh.Within(qlon, qlat); !in {
				continue
			}
			found := false
			for _, c := range cells {
				if lo, hi := c.ScoreRange(); !c.Zero() && ps >= lo && ps < hi {
					found = true
				}
			}
			if !found {
				t.Fatalf("seed %d: point (%v, %v) within %v m of (%v, %v) is in none of the cells", seed, plon, plat, sh.Radius, lon, lat)
			}
		}
	}
}
