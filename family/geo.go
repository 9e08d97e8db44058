package family

import (
	"github.com/dfly/dfly/command"

	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/geo"
	"github.com/dfly/dfly/types/num"
	"github.com/dfly/dfly/types/zset"
)

// GEO commands: points are members of a sorted set scored by their 52-bit
// geohash (package geo), as in Redis, so GEOADD is a ZADD and every zset
// command works on a GEO key. Replies, errors and the order of unsorted
// search results follow Redis 7.0.

func init() { command.Register("geo", geoCommands) }

func geoCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	ro := command.FlagReadonly
	one := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	search := func(name string, arity int, flags command.Flags, kind geoKind) *command.Command {
		c := &command.Command{Name: name, Arity: arity, Flags: flags,
			Shard: func(x *command.Exec) { geoSearchOne(x, kind) }, Multi: func(x *command.Coord) { geoSearchMulti(x, kind) }}
		switch {
		case kind&geoStoreDst != 0: // GEOSEARCHSTORE dst src
			c.FirstKey, c.LastKey, c.Step = 1, 2, 1
		case kind&geoNoStore != 0:
			c.FirstKey, c.LastKey, c.Step = 1, 1, 1
		default: // GEORADIUS[BYMEMBER] key ... [STORE key] [STOREDIST key]
			c.KeyPositions = func(dst []int, args [][]byte) []int {
				dst = append(dst, 1)
				if p := geoStoreArg(args, kind); p > 0 {
					dst = append(dst, p)
				}
				return dst
			}
		}
		return c
	}
	return []*command.Command{
		withKeyFlags(one("geoadd", -5, rw, cmdGeoAdd), "RW update"),
		one("geodist", -4, ro, cmdGeoDist),
		one("geohash", -2, ro, cmdGeoHash),
		one("geopos", -2, ro, cmdGeoPos),
		withKeySpecs(search("georadius", -6, rw, geoCoords), "RO access @1; OW update kw:STORE:6; OW update kw:STOREDIST:6"),
		search("georadius_ro", -6, ro, geoCoords|geoNoStore),
		withKeySpecs(search("georadiusbymember", -5, rw, geoMember), "RO access @1; OW update kw:STORE:5; OW update kw:STOREDIST:5"),
		search("georadiusbymember_ro", -5, ro, geoMember|geoNoStore),
		withKeySpecs(search("geosearch", -7, ro, geoSearchCmd), "RO access @1"),
		withKeySpecs(search("geosearchstore", -8, rw, geoSearchCmd|geoStoreDst), "OW update @1; RO access @2"),
	}
}

// geoKind is the search command variant (Redis's georadiusGeneric flags).
type geoKind uint8

const (
	geoCoords    geoKind = 1 << iota // GEORADIUS: key lon lat radius unit
	geoMember                        // GEORADIUSBYMEMBER: key member radius unit
	geoNoStore                       // the _RO variants
	geoSearchCmd                     // GEOSEARCH: FROMMEMBER/FROMLONLAT, BYRADIUS/BYBOX
	geoStoreDst                      // GEOSEARCHSTORE dst src
)

// geoStoreEvent is a storing search's keyspace event.
func geoStoreEvent(k geoKind) string {
	if k&geoSearchCmd != 0 {
		return "geosearchstore"
	}
	return "georadiusstore"
}

// base is the index of the first optional argument.
func (k geoKind) base() int {
	switch {
	case k&geoCoords != 0:
		return 6
	case k&geoMember != 0:
		return 5
	case k&geoStoreDst != 0:
		return 3
	}
	return 2
}

// geoStoreArg is the position of GEORADIUS's STORE/STOREDIST key, the
// last one given, or 0.
func geoStoreArg(args [][]byte, k geoKind) int {
	p := 0
	for i := k.base(); i+1 < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "store", "storedist":
			p = i + 1
			i++
		case "count":
			i++
		}
	}
	return p
}

const (
	errGeoMember = "ERR could not decode requested zset member"
	errGeoUnit   = "ERR unsupported unit provided. please use M, KM, FT, MI"
)

// geoLonLat parses a longitude and a latitude.
func geoLonLat(a, b []byte) (lon, lat float64, errText string) {
	var ok bool
	if lon, ok = num.ParseFloat(a); !ok {
		return 0, 0, command.ErrNotFloat
	}
	if lat, ok = num.ParseFloat(b); !ok {
		return 0, 0, command.ErrNotFloat
	}
	if lon < geo.LongMin || lon > geo.LongMax || lat < geo.LatMin || lat > geo.LatMax {
		return 0, 0, fmt.Sprintf("ERR invalid longitude,latitude pair %f,%f", lon, lat)
	}
	return lon, lat, ""
}

// geoUnit is the meters in one unit, 0 for an unknown unit.
func geoUnit(u []byte) float64 {
	switch strings.ToLower(string(u)) {
	case "m":
		return 1
	case "km":
		return 1000
	case "ft":
		return 0.3048
	case "mi":
		return 1609.34
	}
	return 0
}

// geoRadius parses "radius unit" into sh.
func geoRadius(sh *geo.Shape, r, unit []byte) string {
	d, ok := num.ParseFloat(r)
	if !ok {
		return "ERR need numeric radius"
	}
	if d < 0 {
		return "ERR radius cannot be negative"
	}
	sh.Radius, sh.Box = d, false
	if sh.Conversion = geoUnit(unit); sh.Conversion == 0 {
		return errGeoUnit
	}
	return ""
}

// geoBox parses "width height unit" into sh.
func geoBox(sh *geo.Shape, w, h, unit []byte) string {
	width, ok := num.ParseFloat(w)
	if !ok {
		return "ERR need numeric width"
	}
	height, ok := num.ParseFloat(h)
	if !ok {
		return "ERR need numeric height"
	}
	if width < 0 || height < 0 {
		return "ERR height or width cannot be negative"
	}
	sh.Width, sh.Height, sh.Box = width, height, true
	if sh.Conversion = geoUnit(unit); sh.Conversion == 0 {
		return errGeoUnit
	}
	return ""
}

// geoMemberPos is a member's point; ok false when z lacks it.
func geoMemberPos(z *zset.Set, member []byte) (lon, lat float64, ok bool) {
	s, ok := z.Score(member)
	if !ok {
		return 0, 0, false
	}
	lon, lat = geo.Decode(s)
	return lon, lat, true
}

func cmdGeoAdd(x *command.Exec) {
	i := 2
	nx, xx := false, false
	zargs := [][]byte{[]byte("zadd"), x.Args[1]}
flags:
	for ; i < len(x.Args); i++ {
		switch strings.ToLower(string(x.Args[i])) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "ch":
		default:
			break flags
		}
		zargs = append(zargs, x.Args[i])
	}
	if (len(x.Args)-i)%3 != 0 || (nx && xx) {
		x.W.Error(command.ErrSyntax)
		return
	}
	for ; i < len(x.Args); i += 3 {
		lon, lat, e := geoLonLat(x.Args[i], x.Args[i+1])
		if e != "" {
			x.W.Error(e)
			return
		}
		score, _ := geo.Score(lon, lat)
		zargs = append(zargs, strconv.AppendUint(nil, uint64(score), 10), x.Args[i+2])
	}
	// Redis runs ZADD with the scores in place of the coordinates. The
	// journal still records the GEOADD (runRecorded reads x.Args after).
	orig := x.Args
	x.Args = zargs
	defer func() { x.Args = orig }()
	zaddFlagged(x, zaddFlags{})
}

// writeGeoDistance is Redis's "%.4f" distance, a bulk string in both
// protocols.
func writeGeoDistance(w *resp.Writer, meters float64) {
	w.Bulk(strconv.AppendFloat(nil, meters, 'f', 4, 64))
}

// writeGeoCoord is addReplyHumanLongDouble: 17 decimals, trailing zeros
// dropped; a RESP3 double, a RESP2 bulk string.
func writeGeoCoord(w *resp.Writer, f float64) {
	b := strconv.AppendFloat(nil, f, 'f', 17, 64)
	b = []byte(strings.TrimRight(string(b), "0"))
	b = []byte(strings.TrimSuffix(string(b), "."))
	if string(b) == "-0" {
		b = []byte("0")
	}
	if w.Proto == 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, b...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(b)
}

func cmdGeoDist(x *command.Exec) {
	conv := 1.0
	switch len(x.Args) {
	case 4:
	case 5:
		if conv = geoUnit(x.Args[4]); conv == 0 {
			x.W.Error(errGeoUnit)
			return
		}
	default:
		x.W.Error(command.ErrSyntax)
		return
	}
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil {
		x.W.Null()
		return
	}
	lon1, lat1, ok1 := geoMemberPos(z, x.Args[2])
	lon2, lat2, ok2 := geoMemberPos(z, x.Args[3])
	if !ok1 || !ok2 {
		x.W.Null()
		return
	}
	writeGeoDistance(x.W, geo.Distance(lon1, lat1, lon2, lat2)/conv)
}

func cmdGeoHash(x *command.Exec) {
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	x.W.Array(len(x.Args) - 2)
	for _, m := range x.Args[2:] {
		var s float64
		found := false
		if z != nil {
			s, found = z.Score(m)
		}
		if !found {
			x.W.Null()
			continue
		}
		x.W.BulkString(geo.String(s))
	}
}

func cmdGeoPos(x *command.Exec) {
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	x.W.Array(len(x.Args) - 2)
	for _, m := range x.Args[2:] {
		if z == nil {
			x.W.NullArray()
			continue
		}
		lon, lat, found := geoMemberPos(z, m)
		if !found {
			x.W.NullArray()
			continue
		}
		x.W.Array(2)
		writeGeoCoord(x.W, lon)
		writeGeoCoord(x.W, lat)
	}
}

// geoQuery is a parsed search.
type geoQuery struct {
	shape                         geo.Shape
	withDist, withHash, withCoord bool
	any                           bool
	count                         int64
	sort                          int // 0 none, 1 asc, -1 desc
	store                         []byte
	storeDist                     bool
	srcMissing                    bool // the source key does not exist
}

type geoPoint struct {
	member      string
	score, dist float64
	lon, lat    float64
}

// parseGeoQuery parses a search's arguments against z (nil: the source
// key does not exist), in Redis's order: the centre and shape, every
// option, then the checks across options. errText is the error reply.
func parseGeoQuery(args [][]byte, z *zset.Set, k geoKind) (q geoQuery, errText string) {
	base := k.base()
	q.srcMissing = z == nil
	switch {
	case k&geoCoords != 0:
		lon, lat, e := geoLonLat(args[2], args[3])
		if e != "" {
			return q, e
		}
		q.shape.Lon, q.shape.Lat = lon, lat
		if e := geoRadius(&q.shape, args[4], args[5]); e != "" {
			return q, e
		}
	case k&geoMember != 0 && z != nil:
		lon, lat, ok := geoMemberPos(z, args[2])
		if !ok {
			return q, errGeoMember
		}
		q.shape.Lon, q.shape.Lat = lon, lat
		if e := geoRadius(&q.shape, args[3], args[4]); e != "" {
			return q, e
		}
	case k&geoStoreDst != 0:
		q.store = args[1]
	}
	fromMember, fromLonLat, byRadius, byBox := false, false, false, false
	search := k&geoSearchCmd != 0
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		left := len(rest) - i - 1 // arguments after this one
		switch a := strings.ToLower(string(rest[i])); {
		case a == "withdist":
			q.withDist = true
		case a == "withhash":
			q.withHash = true
		case a == "withcoord":
			q.withCoord = true
		case a == "any":
			q.any = true
		case a == "asc":
			q.sort = 1
		case a == "desc":
			q.sort = -1
		case a == "count" && left >= 1:
			n, ok := num.ParseInt(rest[i+1])
			if !ok {
				return q, command.ErrNotInt
			}
			if n <= 0 {
				return q, "ERR COUNT must be > 0"
			}
			q.count = n
			i++
		case (a == "store" || a == "storedist") && left >= 1 && k&geoNoStore == 0 && !search:
			q.store, q.storeDist = rest[i+1], a == "storedist"
			i++
		case a == "storedist" && search && k&geoStoreDst != 0:
			q.storeDist = true
		case a == "frommember" && left >= 1 && search && !fromLonLat:
			fromMember = true
			if z != nil {
				lon, lat, ok := geoMemberPos(z, rest[i+1])
				if !ok {
					return q, errGeoMember
				}
				q.shape.Lon, q.shape.Lat = lon, lat
			}
			i++
		case a == "fromlonlat" && left >= 2 && search && !fromMember:
			lon, lat, e := geoLonLat(rest[i+1], rest[i+2])
			if e != "" {
				return q, e
			}
			q.shape.Lon, q.shape.Lat = lon, lat
			fromLonLat = true
			i += 2
		case a == "byradius" && left >= 2 && search && !byBox:
			if e := geoRadius(&q.shape, rest[i+1], rest[i+2]); e != "" {
				return q, e
			}
			byRadius = true
			i += 2
		case a == "bybox" && left >= 3 && search && !byRadius:
			if e := geoBox(&q.shape, rest[i+1], rest[i+2], rest[i+3]); e != "" {
				return q, e
			}
			byBox = true
			i += 3
		default:
			return q, command.ErrSyntax
		}
	}
	if q.store != nil && (q.withDist || q.withHash || q.withCoord) {
		what := "STORE option in GEORADIUS"
		if k&geoStoreDst != 0 {
			what = "GEOSEARCHSTORE"
		}
		return q, "ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
	}
	name := strings.ToUpper(string(args[0]))
	if search && !fromMember && !fromLonLat {
		return q, "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + name
	}
	if search && !byRadius && !byBox {
		return q, "ERR exactly one of BYRADIUS and BYBOX can be specified for " + name
	}
	if q.any && q.count == 0 {
		return q, "ERR the ANY argument requires COUNT argument"
	}
	if q.count != 0 && q.sort == 0 && !q.any {
		q.sort = 1 // the closest COUNT need an order
	}
	return q, ""
}

// run is the search on z: the points inside the shape, in Redis's order
// (cell by cell, score order within a cell) or sorted by distance, at
// most COUNT of them.
func (q *geoQuery) run(z *zset.Set) []geoPoint {
	var out []geoPoint
	limit := 0
	if q.any {
		limit = int(q.count)
	}
	cells := q.shape.Cells()
	last := 0
	for i, c := range cells {
		if c.Zero() {
			continue
		}
		// A huge radius makes neighbours the same cell: read it once.
		if last != 0 && c == cells[last] {
			continue
		}
		if limit > 0 && len(out) >= limit {
			break
		}
		lo, hi := c.ScoreRange()
		a, b := z.ScoreSpan(zset.ScoreRange{Min: lo, Max: hi, MaxEx: true})
		if a < b {
			z.Ascend(a, func(m string, s float64) bool {
				lon, lat := geo.Decode(s)
				if d, ok := q.shape.Within(lon, lat); ok {
					out = append(out, geoPoint{member: strings.Clone(m), score: s, dist: d, lon: lon, lat: lat})
					if limit > 0 && len(out) >= limit {
						return false
					}
				}
				a++
				return a < b
			})
		}
		last = i
	}
	switch q.sort {
	case 1:
		sort.SliceStable(out, func(i, j int) bool { return out[i].dist < out[j].dist })
	case -1:
		sort.SliceStable(out, func(i, j int) bool { return out[i].dist > out[j].dist })
	}
	if q.count > 0 && int64(len(out)) > q.count {
		out = out[:q.count]
	}
	return out
}

// write replies with the points found.
func (q *geoQuery) write(w *resp.Writer, pts []geoPoint) {
	opts := 0
	for _, on := range []bool{q.withDist, q.withHash, q.withCoord} {
		if on {
			opts++
		}
	}
	w.Array(len(pts))
	for _, p := range pts {
		if opts > 0 {
			w.Array(opts + 1)
		}
		w.BulkString(p.member)
		if q.withDist {
			writeGeoDistance(w, p.dist/q.shape.Conversion)
		}
		if q.withHash {
			w.Int(int64(p.score))
		}
		if q.withCoord {
			w.Array(2)
			writeGeoCoord(w, p.lon)
			writeGeoCoord(w, p.lat)
		}
	}
}

// stored is the sorted set STORE/STOREDIST writes.
func (q *geoQuery) stored(pts []geoPoint) *zset.Set {
	if len(pts) == 0 {
		return nil
	}
	z := zset.New()
	for _, p := range pts {
		s := p.score
		if q.storeDist {
			s = p.dist / q.shape.Conversion
		}
		z.Add([]byte(p.member), s)
	}
	return z
}

// propagateStored journals a STOREDIST search as its effect, the set it
// stored (DEL dst, ZADD dst of each score in full) instead of the search:
// a replica computing the distances again may round them otherwise (a
// redis-server's libm differs from Go's math in the last bit of about a
// third of them).
func propagateStored(propagate func(...[]byte), dst []byte, z *zset.Set) {
	propagate([]byte("DEL"), dst)
	if z == nil || z.Len() == 0 {
		return
	}
	args := make([][]byte, 0, 2+2*z.Len())
	args = append(args, []byte("ZADD"), dst)
	z.Ascend(0, func(member string, score float64) bool {
		args = append(args, strconv.AppendFloat(nil, score, 'g', -1, 64), []byte(member))
		return true
	})
	propagate(args...)
}

// geoSource parses and runs a search on src in db: the query, the points,
// or the error reply (WRONGTYPE first, as Redis checks the key's type
// before its arguments).
func geoSource(db *shard.DB, args [][]byte, src []byte, k geoKind) (q geoQuery, pts []geoPoint, errText string) {
	defer db.Shard().ReadMisses(db.Shard().ReadMisses(true)) // a read, a STORE's too (keymiss)
	_, v, ok := db.FindType(src, shard.TypeZSet)
	if !ok {
		return q, nil, command.ErrWrongType
	}
	var z *zset.Set
	if v != nil {
		z = v.Obj().(*zset.Set)
	}
	if q, errText = parseGeoQuery(args, z, k); errText != "" || z == nil {
		return q, nil, errText
	}
	return q, q.run(z), ""
}

func geoSrcKey(args [][]byte, k geoKind) []byte {
	if k&geoStoreDst != 0 {
		return args[2]
	}
	return args[1]
}

func geoSearchOne(x *command.Exec, k geoKind) {
	q, pts, e := geoSource(x.DB, x.Args, geoSrcKey(x.Args, k), k)
	switch {
	case e != "":
		x.W.Error(e)
	case q.store != nil:
		z := q.stored(pts)
		if q.storeDist {
			propagateStored(x.Propagate, q.store, z)
		}
		x.W.Int(int64(zstore(x.DB, q.store, z, geoStoreEvent(k))))
	default:
		q.write(x.W, pts)
	}
}

// geoSearchMulti is a search that stores into a key on another shard:
// the source read under a shared lock, the destination written under an
// exclusive one, in one transaction.
func geoSearchMulti(x *command.Coord, k geoKind) {
	src := geoSrcKey(x.Args, k)
	ss := x.ShardOf(src)
	var dst []byte
	if k&geoStoreDst != 0 {
		dst = x.Args[1]
	} else if p := geoStoreArg(x.Args, k); p > 0 {
		dst = x.Args[p]
	}
	t := x.Tx()
	t.Add(ss, x.DB, string(src), false)
	if dst != nil {
		t.Add(x.ShardOf(dst), x.DB, string(dst), true)
	}
	t.Lock()
	defer t.Finish(nil)
	var q geoQuery
	var pts []geoPoint
	var e string
	t.Run(ss, func(s *shard.Shard) { q, pts, e = geoSource(s.DBs[x.DB], x.Args, src, k) })
	switch {
	case e != "":
		x.W.Error(e)
	case q.store != nil:
		n, z := 0, q.stored(pts)
		if q.storeDist {
			propagateStored(x.Propagate, q.store, z)
		}
		t.Run(x.ShardOf(q.store), func(s *shard.Shard) { n = zstore(s.DBs[x.DB], q.store, z, geoStoreEvent(k)) })
		x.W.Int(int64(n))
	default:
		q.write(x.W, pts)
	}
}
