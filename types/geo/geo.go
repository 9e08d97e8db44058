package geo

import "math"

// The WGS84 limits Redis accepts: latitudes beyond ±85.05112878 have no
// Web Mercator cell.
const (
	LatMin  = -85.05112878
	LatMax  = 85.05112878
	LongMin = -180.0
	LongMax = 180.0
	// StepMax is the bits per coordinate of a stored point.
	StepMax = 26
)

// EarthRadius is Redis's Earth radius in meters (WGS84 quadratic mean).
const EarthRadius = 6372797.560856

const mercatorMax = 20037726.37

// Hash is a geohash of step bits per coordinate: latitude bits at even
// positions, longitude bits at odd ones.
type Hash struct {
	Bits uint64
	Step uint8
}

// Zero reports whether h is the empty cell an excluded neighbour becomes.
func (h Hash) Zero() bool { return h.Bits == 0 && h.Step == 0 }

// Range is one coordinate's interval.
type Range struct{ Min, Max float64 }

// Area is a cell's extent.
type Area struct{ Long, Lat Range }

// wgs84 are the ranges stored points are encoded in.
var (
	wgs84Long = Range{LongMin, LongMax}
	wgs84Lat  = Range{LatMin, LatMax}
)

// spread puts the low 32 bits of v at the even bit positions.
func spread(v uint64) uint64 {
	v &= 0xFFFFFFFF
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	v = (v | v<<4) & 0x0F0F0F0F0F0F0F0F
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// squash gathers the even bits of v into the low 32 bits.
func squash(v uint64) uint64 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0F0F0F0F0F0F0F0F
	v = (v | v>>4) & 0x00FF00FF00FF00FF
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	v = (v | v>>16) & 0x00000000FFFFFFFF
	return v
}

// encode is geohashEncode: ok false outside the WGS84 limits or the
// ranges.
func encode(long, lat Range, lon, la float64, step uint8) (Hash, bool) {
	if lon > LongMax || lon < LongMin || la > LatMax || la < LatMin {
		return Hash{}, false
	}
	if la < lat.Min || la > lat.Max || lon < long.Min || lon > long.Max {
		return Hash{}, false
	}
	latOff := (la - lat.Min) / (lat.Max - lat.Min)
	lonOff := (lon - long.Min) / (long.Max - long.Min)
	latOff *= float64(uint64(1) << step)
	lonOff *= float64(uint64(1) << step)
	// C converts the doubles to uint32 (truncating) for interleave64.
	return Hash{Bits: spread(uint64(uint32(latOff))) | spread(uint64(uint32(lonOff)))<<1, Step: step}, true
}

// Encode is a point's cell of step bits (StepMax for a stored point).
func Encode(lon, lat float64, step uint8) (Hash, bool) {
	return encode(wgs84Long, wgs84Lat, lon, lat, step)
}

// Score is the sorted-set score of a point (its 52-bit hash), ok false
// when the point is outside the WGS84 limits.
func Score(lon, lat float64) (float64, bool) {
	h, ok := Encode(lon, lat, StepMax)
	if !ok {
		return 0, false
	}
	return float64(h.align52()), true
}

func (h Hash) align52() uint64 { return h.Bits << (52 - 2*uint(h.Step)) }

// decode is geohashDecode: the cell h covers.
func decode(long, lat Range, h Hash) Area {
	ilat := squash(h.Bits)
	ilon := squash(h.Bits >> 1)
	cells := float64(uint64(1) << h.Step)
	latScale, lonScale := lat.Max-lat.Min, long.Max-long.Min
	return Area{
		Lat:  Range{lat.Min + (float64(ilat)/cells)*latScale, lat.Min + (float64(ilat+1)/cells)*latScale},
		Long: Range{long.Min + (float64(ilon)/cells)*lonScale, long.Min + (float64(ilon+1)/cells)*lonScale},
	}
}

// Decode is the point a score stands for: its cell's centre, clamped to
// the WGS84 limits.
func Decode(score float64) (lon, lat float64) {
	a := decode(wgs84Long, wgs84Lat, Hash{Bits: scoreBits(score), Step: StepMax})
	lon = min(max((a.Long.Min+a.Long.Max)/2, LongMin), LongMax)
	lat = min(max((a.Lat.Min+a.Lat.Max)/2, LatMin), LatMax)
	return lon, lat
}

// scoreBits converts a score to its bits as Redis's (uint64_t) cast does
// on x86-64 for scores no GEOADD wrote (any zset command can set them):
// at or above 2^63, +Inf included, the high bit is flipped after a signed
// conversion (+Inf gives 0); below, a signed conversion (-1 gives all
// ones, -Inf and NaN the sign bit alone).
func scoreBits(score float64) uint64 {
	const two63 = 9223372036854775808.0
	if score >= two63 {
		return uint64(truncInt64(score-two63)) ^ (1 << 63)
	}
	return uint64(truncInt64(score))
}

// truncInt64 is int64(f) with x86-64's answer (the sign bit alone) for
// what does not fit, on every platform.
func truncInt64(f float64) int64 {
	if f != f || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// String is GEOHASH's 11-character form of a score: the point re-encoded
// in the standard ranges (latitude ±90), 5 bits a character, the last
// always '0' (52 bits make ten and a half).
func String(score float64) string {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	lon, lat := Decode(score)
	h, _ := encode(Range{-180, 180}, Range{-90, 90}, lon, lat, StepMax)
	var buf [11]byte
	for i := range buf {
		idx := 0
		if i < 10 {
			idx = int(h.Bits>>(52-uint((i+1)*5))) & 0x1f
		}
		buf[i] = alphabet[idx]
	}
	return string(buf[:])
}

// moveX and moveY step a cell one cell east/west and north/south.
func (h Hash) moveX(d int) Hash {
	x := h.Bits & 0xaaaaaaaaaaaaaaaa
	y := h.Bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - 2*uint(h.Step))
	if d > 0 {
		x += zz + 1
	} else {
		x = (x | zz) - (zz + 1)
	}
	x &= uint64(0xaaaaaaaaaaaaaaaa) >> (64 - 2*uint(h.Step))
	return Hash{Bits: x | y, Step: h.Step}
}

func (h Hash) moveY(d int) Hash {
	x := h.Bits & 0xaaaaaaaaaaaaaaaa
	y := h.Bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - 2*uint(h.Step))
	if d > 0 {
		y += zz + 1
	} else {
		y = (y | zz) - (zz + 1)
	}
	y &= uint64(0x5555555555555555) >> (64 - 2*uint(h.Step))
	return Hash{Bits: x | y, Step: h.Step}
}

// Shape is a search: a circle of Radius, or a box of Width by Height,
// around (Lon, Lat); the sizes in a unit of Conversion meters.
type Shape struct {
	Lon, Lat      float64
	Box           bool
	Radius        float64
	Width, Height float64
	Conversion    float64
}

func degRad(a float64) float64 { return a * (math.Pi / 180.0) }
func radDeg(a float64) float64 { return a / (math.Pi / 180.0) }

// bounds is geohashBoundingBox: min long, min lat, max long, max lat.
func (s *Shape) bounds() (minLon, minLat, maxLon, maxLat float64) {
	height, width := s.Conversion*s.Radius, s.Conversion*s.Radius
	if s.Box {
		height, width = s.Conversion*s.Height/2, s.Conversion*s.Width/2
	}
	latDelta := radDeg(height / EarthRadius)
	top := radDeg(width / EarthRadius / math.Cos(degRad(s.Lat+latDelta)))
	bottom := radDeg(width / EarthRadius / math.Cos(degRad(s.Lat-latDelta)))
	if s.Lat < 0 { // southern hemisphere: the box is widest at its top
		return s.Lon - bottom, s.Lat - latDelta, s.Lon + bottom, s.Lat + latDelta
	}
	return s.Lon - top, s.Lat - latDelta, s.Lon + top, s.Lat + latDelta
}

// stepsFor is geohashEstimateStepsByRadius.
func stepsFor(meters, lat float64) uint8 {
	if meters == 0 {
		return 26
	}
	step := 1
	for meters < mercatorMax {
		meters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// Cells are the nine cells a search reads, in Redis's order: the centre,
// then north, south, east, west, north-east, north-west, south-east,
// south-west; excluded ones are zero.
func (s *Shape) Cells() [9]Hash {
	minLon, minLat, maxLon, maxLat := s.bounds()
	meters := s.Radius
	if s.Box {
		meters = math.Sqrt((s.Width/2)*(s.Width/2) + (s.Height/2)*(s.Height/2))
	}
	meters *= s.Conversion
	steps := stepsFor(meters, s.Lat)
	h, _ := Encode(s.Lon, s.Lat, steps)
	n := neighbours(h)
	// The step may be too coarse at the edges of the covered area: one
	// of the four sides' neighbours does not reach past the search's box.
	north, south := decode(wgs84Long, wgs84Lat, n[1]), decode(wgs84Long, wgs84Lat, n[2])
	east, west := decode(wgs84Long, wgs84Lat, n[3]), decode(wgs84Long, wgs84Lat, n[4])
	if steps > 1 && (north.Lat.Max < maxLat || south.Lat.Min > minLat || east.Long.Max < maxLon || west.Long.Min > minLon) {
		steps--
		h, _ = Encode(s.Lon, s.Lat, steps)
		n = neighbours(h)
	}
	area := decode(wgs84Long, wgs84Lat, h)
	if steps >= 2 { // leave out the cells the search cannot reach
		if area.Lat.Min < minLat {
			n[2], n[7], n[8] = Hash{}, Hash{}, Hash{}
		}
		if area.Lat.Max > maxLat {
			n[1], n[5], n[6] = Hash{}, Hash{}, Hash{}
		}
		if area.Long.Min < minLon {
			n[4], n[8], n[6] = Hash{}, Hash{}, Hash{}
		}
		if area.Long.Max > maxLon {
			n[3], n[7], n[5] = Hash{}, Hash{}, Hash{}
		}
	}
	return n
}

func neighbours(h Hash) [9]Hash {
	return [9]Hash{h,
		h.moveY(1), h.moveY(-1), h.moveX(1), h.moveX(-1),
		h.moveX(1).moveY(1), h.moveX(-1).moveY(1), h.moveX(1).moveY(-1), h.moveX(-1).moveY(-1)}
}

// ScoreRange is the scores [min, max) of the stored points inside cell h.
func (h Hash) ScoreRange() (lo, hi float64) {
	return float64(h.align52()), float64(Hash{Bits: h.Bits + 1, Step: h.Step}.align52())
}

// Distance is the haversine distance in meters (Redis 7.0's form).
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lat1r, lon1r := degRad(lat1), degRad(lon1)
	lat2r, lon2r := degRad(lat2), degRad(lon2)
	u := math.Sin((lat2r - lat1r) / 2)
	v := math.Sin((lon2r - lon1r) / 2)
	return 2.0 * EarthRadius * math.Asin(math.Sqrt(u*u+math.Cos(lat1r)*math.Cos(lat2r)*v*v))
}

// Within reports whether the point is inside the shape, with its
// distance from the centre in meters.
func (s *Shape) Within(lon, lat float64) (dist float64, ok bool) {
	if !s.Box {
		d := Distance(s.Lon, s.Lat, lon, lat)
		return d, d <= s.Radius*s.Conversion
	}
	lonDist := Distance(lon, lat, s.Lon, lat)
	latDist := Distance(lon, lat, lon, s.Lat)
	if lonDist > s.Width*s.Conversion/2 || latDist > s.Height*s.Conversion/2 {
		return 0, false
	}
	return Distance(s.Lon, s.Lat, lon, lat), true
}
