package family

import (
	"github.com/dfly/dfly/command"

	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
	"github.com/dfly/dfly/types/set"
	"github.com/dfly/dfly/types/zset"
)

// Sorted set commands (Redis 7.0 semantics; ZRANK/ZREVRANK WITHSCORE from
// 7.2). Blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP) live with the blocking
// machinery, which pops through zsetPop.

func init() { command.Register("sortedset", zsetCommands) }

const (
	errZNaN        = "ERR resulting score is not a number (NaN)"
	errZMinMax     = "ERR min or max is not a float"
	errZLexRange   = "ERR min or max not valid string range item"
	errZPositive   = "ERR value is out of range, must be positive"
	errZLimitRange = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZLexScores  = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)

func zsetCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	ro := command.FlagReadonly
	k1 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	algebra := func(name string, arity int, flags command.Flags, op zsetOp, store bool) *command.Command {
		at := 1
		if store {
			at = 2
		}
		return &command.Command{Name: name, Arity: arity, Flags: flags, KeyPositions: zsetNumKeys(at, store),
			Shard: func(x *command.Exec) { zsetAlgebraOne(x, op, store) }, Multi: func(x *command.Coord) { zsetAlgebraMulti(x, op, store) }}
	}
	return []*command.Command{
		withKeyFlags(k1("zadd", -4, rw|command.FlagFast, cmdZAdd), "RW update"),
		k1("zincrby", 4, rw|command.FlagFast, cmdZIncrBy),
		withKeyFlags(k1("zrem", -3, command.FlagWrite|command.FlagFast, cmdZRem), "RW delete"),
		withKeyFlags(k1("zcard", 2, ro|command.FlagFast, cmdZCard), "RO"),
		k1("zscore", 3, ro|command.FlagFast, cmdZScore),
		k1("zmscore", -3, ro|command.FlagFast, cmdZMScore),
		k1("zrank", -3, ro|command.FlagFast, func(x *command.Exec) { zrankGeneric(x, false) }),
		k1("zrevrank", -3, ro|command.FlagFast, func(x *command.Exec) { zrankGeneric(x, true) }),
		k1("zcount", 4, ro|command.FlagFast, cmdZCount),
		k1("zlexcount", 4, ro|command.FlagFast, cmdZLexCount),
		k1("zrange", -4, ro, func(x *command.Exec) { zrangeCmd(x, zrAuto, false, false) }),
		k1("zrevrange", -4, ro, func(x *command.Exec) { zrangeCmd(x, zrRank, true, true) }),
		k1("zrangebyscore", -4, ro, func(x *command.Exec) { zrangeCmd(x, zrScore, false, true) }),
		k1("zrevrangebyscore", -4, ro, func(x *command.Exec) { zrangeCmd(x, zrScore, true, true) }),
		k1("zrangebylex", -4, ro, func(x *command.Exec) { zrangeCmd(x, zrLex, false, true) }),
		k1("zrevrangebylex", -4, ro, func(x *command.Exec) { zrangeCmd(x, zrLex, true, true) }),
		{Name: "zrangestore", Arity: -5, Flags: rw, KeySpecs: "OW update @1; RO access @2", FirstKey: 1, LastKey: 2, Step: 1, Shard: cmdZRangeStore, Multi: multiZRangeStore},
		withKeyFlags(k1("zremrangebyrank", 4, command.FlagWrite, func(x *command.Exec) { zremrangeGeneric(x, zrRank) }), "RW delete"),
		withKeyFlags(k1("zremrangebyscore", 4, command.FlagWrite, func(x *command.Exec) { zremrangeGeneric(x, zrScore) }), "RW delete"),
		withKeyFlags(k1("zremrangebylex", 4, command.FlagWrite, func(x *command.Exec) { zremrangeGeneric(x, zrLex) }), "RW delete"),
		withKeyFlags(k1("zpopmin", -2, command.FlagWrite|command.FlagFast, func(x *command.Exec) { zpopCmd(x, false) }), "RW access delete"),
		withKeyFlags(k1("zpopmax", -2, command.FlagWrite|command.FlagFast, func(x *command.Exec) { zpopCmd(x, true) }), "RW access delete"),
		{Name: "zmpop", Arity: -4, Flags: command.FlagWrite, KeySpecs: "RW access delete @1 keynum:0:1:1", KeyPositions: zsetNumKeys(1, false), Shard: cmdZMPop, Multi: multiZMPop},
		withTips(k1("zrandmember", -2, ro, cmdZRandMember), "nondeterministic_output"),
		withTips(k1("zscan", -3, ro, cmdZScan), "nondeterministic_output"),
		withKeySpecs(algebra("zunion", -3, ro, zopUnion, false), "RO access @1 keynum:0:1:1"),
		withKeySpecs(algebra("zinter", -3, ro, zopInter, false), "RO access @1 keynum:0:1:1"),
		withKeySpecs(algebra("zdiff", -3, ro, zopDiff, false), "RO access @1 keynum:0:1:1"),
		withKeySpecs(algebra("zunionstore", -4, rw, zopUnion, true), "OW update @1; RO access @2 keynum:0:1:1"),
		withKeySpecs(algebra("zinterstore", -4, rw, zopInter, true), "OW update @1; RO access @2 keynum:0:1:1"),
		withKeySpecs(algebra("zdiffstore", -4, rw, zopDiff, true), "OW update @1; RO access @2 keynum:0:1:1"),
		withKeySpecs(algebra("zintercard", -3, ro, zopInterCard, false), "RO access @1 keynum:0:1:1"),
	}
}

// zsetNumKeys are the key positions of "[dest] numkeys key..." commands,
// numkeys at args[at]; with dest, args[1] is a key too. A bad numkeys gives
// only the destination (the handler then replies with the error).
func zsetNumKeys(at int, dest bool) func(dst []int, args [][]byte) []int {
	return func(dst []int, args [][]byte) []int {
		if dest {
			dst = append(dst, 1)
		}
		if at >= len(args) {
			return dst
		}
		n, ok := num.ParseInt(args[at])
		if !ok || n <= 0 || n > int64(len(args)-at-1) {
			return dst
		}
		for i := at + 1; i <= at+int(n); i++ {
			dst = append(dst, i)
		}
		return dst
	}
}

// zsetOf finds key as a sorted set, writing WRONGTYPE for another type; z is
// nil for a missing key.
func zsetOf(x *command.Exec, key []byte) (shard.Iterator, *zset.Set, bool) {
	return command.TypedValue[*zset.Set](x, key, shard.TypeZSet)
}

// mutableZSet announces an update of the sorted set at it.
func mutableZSet(db *shard.DB, it shard.Iterator) *zset.Set {
	return command.Mutable[*zset.Set](db, it)
}

// zremoved notifies event (members left key at it), then removes the key
// when its set has no members left.
func zremoved(db *shard.DB, it shard.Iterator, key []byte, z *zset.Set, event string) {
	db.Notify(notify.ZSet, event, key)
	if z.Len() == 0 {
		db.Delete(it)
		db.Notify(notify.Generic, "del", key)
	}
}

// writeScored writes members with scores: a flat array in RESP2, pairs in
// RESP3 when nested is allowed.
func zreplyHeader(w *resp.Writer, n int, withScores bool) {
	if withScores && w.Proto == 2 {
		w.Array(2 * n)
	} else {
		w.Array(n)
	}
}

func zreplyPair(w *resp.Writer, member string, score float64, withScores bool) {
	if !withScores {
		w.BulkString(member)
		return
	}
	if w.Proto != 2 {
		w.Array(2)
	}
	w.BulkString(member)
	w.Double(score)
}

// ---- ZADD / ZINCRBY ----

type zaddFlags struct {
	nx, xx, gt, lt, ch, incr bool
}

func cmdZAdd(x *command.Exec) { zaddFlagged(x, zaddFlags{}) }

// cmdZIncrBy is ZADD INCR, flags and all: Redis parses ZINCRBY's
// arguments with ZADD's parser, so "ZINCRBY k NX 5 m" is ZADD k NX INCR 5 m
// and "ZINCRBY k GT m" a syntax error.
func cmdZIncrBy(x *command.Exec) { zaddFlagged(x, zaddFlags{incr: true}) }

// zaddFlagged reads ZADD's flags from the third argument on, then the
// score/member pairs.
func zaddFlagged(x *command.Exec, f zaddFlags) {
	i := 2
	for ; i < len(x.Args); i++ {
		switch strings.ToLower(string(x.Args[i])) {
		case "nx":
			f.nx = true
		case "xx":
			f.xx = true
		case "gt":
			f.gt = true
		case "lt":
			f.lt = true
		case "ch":
			f.ch = true
		case "incr":
			f.incr = true
		default:
			zaddGeneric(x, f, i)
			return
		}
	}
	zaddGeneric(x, f, i)
}

func zaddGeneric(x *command.Exec, f zaddFlags, scoreIdx int) {
	elems := len(x.Args) - scoreIdx
	switch {
	case elems%2 != 0 || elems == 0:
		x.W.Error(command.ErrSyntax)
		return
	case f.nx && f.xx:
		x.W.Error("ERR XX and NX options at the same time are not compatible")
		return
	case f.gt && f.nx || f.lt && f.nx || f.gt && f.lt:
		x.W.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case f.incr && elems > 2:
		x.W.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	n := elems / 2
	var scoreBuf [8]float64
	scores := scoreBuf[:0]
	for j := 0; j < n; j++ {
		s, ok := num.ParseFloat(x.Args[scoreIdx+2*j])
		if !ok {
			x.W.Error(command.ErrNotFloat)
			return
		}
		scores = append(scores, s)
	}
	key := x.Args[1]
	it, z, ok := zsetOf(x, key)
	if !ok {
		return
	}
	added, updated, processed := 0, 0, 0
	var score float64
	// run applies the pairs to z, or with dry only counts what they would
	// do up to the first change, which is all a dry run is for: a ZADD
	// that changes nothing (same scores, NX on members in, XX on members
	// out, GT/LT refusing, INCR by 0) writes nothing, so a WATCH of the
	// key holds, as in Redis. ok=false: the error is written.
	run := func(z *zset.Set, dry bool) (ok bool) {
		for j := 0; j < n; j++ {
			member := x.Args[scoreIdx+2*j+1]
			score = scores[j]
			cur, exists := z.Score(member)
			switch {
			case exists:
				if f.nx {
					continue
				}
				if f.incr {
					score += cur
					if math.IsNaN(score) {
						x.W.Error(errZNaN)
						return false
					}
				}
				if f.lt && score >= cur || f.gt && score <= cur {
					continue
				}
				processed++
				if score != cur {
					updated++
					if dry {
						return true // a change: the real run follows
					}
					z.Add(member, score)
				}
			case !f.xx:
				added++
				processed++
				if dry {
					return true
				}
				z.Add(member, score)
			}
		}
		return true
	}
	switch {
	case z == nil && f.xx:
		goto reply
	case z == nil:
		z = zset.New()
		it, _ = x.DB.Insert(key, shard.ObjectValue(shard.TypeZSet, z))
	default:
		if !run(z, true) {
			return
		}
		if added+updated == 0 {
			goto reply
		}
		added, updated, processed = 0, 0, 0
		z = mutableZSet(x.DB, it)
	}
	if !run(z, false) {
		return
	}
	if added+updated > 0 {
		x.DB.Notify(notify.ZSet, endEvent("zincr", "zadd", f.incr), key)
	}
reply:
	if f.incr {
		if processed > 0 {
			x.W.Double(score)
		} else {
			x.W.Null()
		}
		return
	}
	if f.ch {
		x.W.Int(int64(added + updated))
	} else {
		x.W.Int(int64(added))
	}
}

// ---- point reads and removal ----

func cmdZRem(x *command.Exec) {
	it, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil || !slices.ContainsFunc(x.Args[2:], func(m []byte) bool { _, ok := z.Score(m); return ok }) {
		x.W.Int(0) // nothing to remove: no write (WATCH holds)
		return
	}
	z = mutableZSet(x.DB, it)
	n := 0
	for _, m := range x.Args[2:] {
		if z.Remove(m) {
			n++
		}
	}
	zremoved(x.DB, it, x.Args[1], z, "zrem")
	x.W.Int(int64(n))
}

func cmdZCard(x *command.Exec) {
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(z.Len()))
}

func cmdZScore(x *command.Exec) {
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z != nil {
		if s, found := z.Score(x.Args[2]); found {
			x.W.Double(s)
			return
		}
	}
	x.W.Null()
}

func cmdZMScore(x *command.Exec) {
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	x.W.Array(len(x.Args) - 2)
	for _, m := range x.Args[2:] {
		if z != nil {
			if s, found := z.Score(m); found {
				x.W.Double(s)
				continue
			}
		}
		x.W.Null()
	}
}

// zrankGeneric is ZRANK/ZREVRANK, with Redis 7.2's WITHSCORE.
func zrankGeneric(x *command.Exec, rev bool) {
	if len(x.Args) > 4 {
		x.W.Error(command.WrongArity(strings.ToLower(string(x.Args[0]))))
		return
	}
	withScore := false
	if len(x.Args) == 4 {
		if !strings.EqualFold(string(x.Args[3]), "withscore") {
			x.W.Error(command.ErrSyntax)
			return
		}
		withScore = true
	}
	missing := func() {
		if withScore {
			x.W.NullArray()
		} else {
			x.W.Null()
		}
	}
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil {
		missing()
		return
	}
	rank, score, found := z.Rank(x.Args[2])
	if !found {
		missing()
		return
	}
	if rev {
		rank = z.Len() - 1 - rank
	}
	if withScore {
		x.W.Array(2)
		x.W.Int(int64(rank))
		x.W.Double(score)
		return
	}
	x.W.Int(int64(rank))
}

// ---- ranges ----

// zparseBound parses a score range bound as Redis's zslParseRange does,
// with strtod: leading blanks, the empty string (0) and overflow (±inf)
// are accepted; trailing bytes and NaN are not.
func zparseBound(b []byte) (float64, bool) {
	for len(b) > 0 && (b[0] == ' ' || b[0] >= '\t' && b[0] <= '\r') {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, true
	}
	if f, ok := num.ParseFloat(b); ok {
		return f, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
		return f, true // overflow to ±inf or underflow to 0, as strtod
	}
	if err != nil || math.IsNaN(f) || strings.ContainsRune(string(b), '_') {
		return 0, false
	}
	return f, true
}

func zparseScoreRange(minArg, maxArg []byte) (zset.ScoreRange, bool) {
	var r zset.ScoreRange
	var ok bool
	bound := func(b []byte) (float64, bool, bool) {
		if len(b) > 0 && b[0] == '(' {
			f, ok := zparseBound(b[1:])
			return f, true, ok
		}
		f, ok := zparseBound(b)
		return f, false, ok
	}
	if r.Min, r.MinEx, ok = bound(minArg); !ok {
		return r, false
	}
	if r.Max, r.MaxEx, ok = bound(maxArg); !ok {
		return r, false
	}
	return r, true
}

func zparseLexBound(b []byte) (zset.LexBound, bool) {
	if len(b) == 0 {
		return zset.LexBound{}, false
	}
	switch b[0] {
	case '+':
		return zset.LexBound{Inf: 1}, len(b) == 1
	case '-':
		return zset.LexBound{Inf: -1}, len(b) == 1
	case '(':
		return zset.LexBound{Value: string(b[1:]), Exclude: true}, true
	case '[':
		return zset.LexBound{Value: string(b[1:])}, true
	}
	return zset.LexBound{}, false
}

func zparseLexRange(minArg, maxArg []byte) (zset.LexRange, bool) {
	lo, ok1 := zparseLexBound(minArg)
	hi, ok2 := zparseLexBound(maxArg)
	return zset.LexRange{Min: lo, Max: hi}, ok1 && ok2
}

type zrangeKind uint8

const (
	zrAuto zrangeKind = iota
	zrRank
	zrScore
	zrLex
)

// zrangeSpec is a parsed ZRANGE-family request.
type zrangeSpec struct {
	kind          zrangeKind
	rev           bool
	withScores    bool
	offset, limit int64 // limit -1: none
	start, end    int64 // ranks
	score         zset.ScoreRange
	lex           zset.LexRange
}

// parseZRange parses "<min> <max> [options]" at args[0:], as
// zrangeGenericCommand does. kind/revFixed preset the variant: the legacy
// commands fix both (fixed=true).
func parseZRange(args [][]byte, kind zrangeKind, rev, fixed, store bool) (zrangeSpec, string) {
	sp := zrangeSpec{kind: kind, rev: rev, limit: -1}
	revSet, kindSet := fixed, fixed
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		opt := strings.ToLower(string(args[j]))
		switch {
		case opt == "withscores" && !store:
			sp.withScores = true
		case opt == "limit" && left >= 2:
			o, ok1 := num.ParseInt(args[j+1])
			l, ok2 := num.ParseInt(args[j+2])
			if !ok1 || !ok2 {
				return sp, command.ErrNotInt
			}
			sp.offset, sp.limit = o, l
			j += 2
		case opt == "rev" && !revSet:
			sp.rev, revSet = true, true
		case opt == "bylex" && !kindSet:
			sp.kind, kindSet = zrLex, true
		case opt == "byscore" && !kindSet:
			sp.kind, kindSet = zrScore, true
		default:
			return sp, command.ErrSyntax
		}
	}
	if sp.kind == zrAuto {
		sp.kind = zrRank
	}
	if sp.limit != -1 && sp.kind == zrRank {
		return sp, errZLimitRange
	}
	if sp.withScores && sp.kind == zrLex {
		return sp, errZLexScores
	}
	minArg, maxArg := args[0], args[1]
	if sp.rev && sp.kind != zrRank {
		minArg, maxArg = maxArg, minArg
	}
	switch sp.kind {
	case zrRank:
		s, ok1 := num.ParseInt(minArg)
		e, ok2 := num.ParseInt(maxArg)
		if !ok1 || !ok2 {
			return sp, command.ErrNotInt
		}
		sp.start, sp.end = s, e
	case zrScore:
		r, ok := zparseScoreRange(minArg, maxArg)
		if !ok {
			return sp, errZMinMax
		}
		sp.score = r
	case zrLex:
		r, ok := zparseLexRange(minArg, maxArg)
		if !ok {
			return sp, errZLexRange
		}
		sp.lex = r
	}
	return sp, ""
}

// zrankSpan turns Redis start/end rank arguments into a clamped inclusive
// range; ok=false when it is empty.
func zrankSpan(start, end int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= ln {
		return 0, 0, false
	}
	if end >= ln {
		end = ln - 1
	}
	return int(start), int(end), true
}

// zwindow is a run of n members starting at ascending rank from, visited
// downwards when rev.
type zwindow struct {
	from, n int
	rev     bool
}

// resolve finds the members sp selects in z.
func (sp *zrangeSpec) resolve(z *zset.Set) zwindow {
	n := z.Len()
	if sp.kind == zrRank {
		s, e, ok := zrankSpan(sp.start, sp.end, n)
		if !ok {
			return zwindow{}
		}
		if sp.rev {
			return zwindow{from: n - 1 - s, n: e - s + 1, rev: true}
		}
		return zwindow{from: s, n: e - s + 1}
	}
	var a, b int
	if sp.kind == zrScore {
		if sp.score.Empty() {
			return zwindow{}
		}
		a, b = z.ScoreSpan(sp.score)
	} else {
		if sp.lex.Empty() {
			return zwindow{}
		}
		a, b = z.LexSpan(sp.lex, sp.rev)
	}
	if sp.offset < 0 || sp.offset >= int64(b-a) {
		return zwindow{}
	}
	cnt := int64(b-a) - sp.offset
	if sp.limit >= 0 && sp.limit < cnt {
		cnt = sp.limit
	}
	if sp.rev {
		return zwindow{from: b - 1 - int(sp.offset), n: int(cnt), rev: true}
	}
	return zwindow{from: a + int(sp.offset), n: int(cnt)}
}

// each visits the zwindow's members in reply order.
func (wd zwindow) each(z *zset.Set, fn func(member string, score float64)) {
	if wd.n <= 0 {
		return
	}
	left := wd.n
	visit := func(m string, s float64) bool {
		fn(m, s)
		left--
		return left > 0
	}
	if wd.rev {
		z.Descend(wd.from, visit)
	} else {
		z.Ascend(wd.from, visit)
	}
}

func zrangeCmd(x *command.Exec, kind zrangeKind, rev, fixed bool) {
	sp, e := parseZRange(x.Args[2:], kind, rev, fixed, false)
	if e != "" {
		x.W.Error(e)
		return
	}
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil {
		x.W.Array(0)
		return
	}
	wd := sp.resolve(z)
	zreplyHeader(x.W, wd.n, sp.withScores)
	wd.each(z, func(m string, s float64) { zreplyPair(x.W, m, s, sp.withScores) })
}

// zrangeCollect copies the members sp selects into a new set for
// ZRANGESTORE; nil when none.
func zrangeCollect(z *zset.Set, sp *zrangeSpec) *zset.Set {
	if z == nil {
		return nil
	}
	wd := sp.resolve(z)
	if wd.n == 0 {
		return nil
	}
	// Redis 7.0 creates the destination for the length it will hold: a
	// skiplist past the listpack limit, so every score keeps its sign
	// (a listpack's -0 reads back 0).
	out := zset.New()
	if int64(wd.n) > zset.MaxListpackEntries() {
		out = zset.NewSkiplist()
	}
	wd.each(z, func(m string, s float64) { out.Add([]byte(m), s) })
	return out
}

// zstore writes a STORE command's result to dst: the set, or a deletion
// when it is empty (nil). It returns the reply count.
// event is the command's keyspace event.
func zstore(db *shard.DB, dst []byte, z *zset.Set, event string) int {
	if z == nil || z.Len() == 0 {
		if it, _ := db.Find(dst); it.Valid() {
			db.Delete(it)
			db.Notify(notify.Generic, "del", dst)
		}
		return 0
	}
	z.Shrink()
	db.Set(dst, shard.ObjectValue(shard.TypeZSet, z), false)
	db.Notify(notify.ZSet, event, dst)
	return z.Len()
}

func cmdZRangeStore(x *command.Exec) {
	sp, e := parseZRange(x.Args[3:], zrAuto, false, false, true)
	if e != "" {
		x.W.Error(e)
		return
	}
	prev := x.S.ReadMisses(true) // a read of the source: a miss is a keymiss
	_, z, ok := zsetOf(x, x.Args[2])
	x.S.ReadMisses(prev)
	if !ok {
		return
	}
	x.W.Int(int64(zstore(x.DB, x.Args[1], zrangeCollect(z, &sp), "zrangestore")))
}

// multiZRangeStore reads the source under a shared lock and writes the
// destination under an exclusive one, in one transaction.
func multiZRangeStore(x *command.Coord) {
	sp, e := parseZRange(x.Args[3:], zrAuto, false, false, true)
	if e != "" {
		x.W.Error(e)
		return
	}
	dst, src := x.Args[1], x.Args[2]
	ds, ss := x.ShardOf(dst), x.ShardOf(src)
	t := x.Tx()
	t.Add(ds, x.DB, string(dst), true)
	t.Add(ss, x.DB, string(src), false)
	t.Lock()
	defer t.Finish(nil)
	var out *zset.Set
	wrong := false
	t.Run(ss, func(s *shard.Shard) {
		defer s.ReadMisses(s.ReadMisses(true)) // a read of the source: a miss is a keymiss
		_, v, ok := s.DBs[x.DB].FindType(src, shard.TypeZSet)
		if !ok {
			wrong = true
			return
		}
		if v != nil {
			out = zrangeCollect(v.Obj().(*zset.Set), &sp) // a fresh set: safe to carry
		}
	})
	if wrong {
		x.W.Error(command.ErrWrongType)
		return
	}
	n := 0
	t.Run(ds, func(s *shard.Shard) { n = zstore(s.DBs[x.DB], dst, out, "zrangestore") })
	x.W.Int(int64(n))
}

func cmdZCount(x *command.Exec) {
	r, ok := zparseScoreRange(x.Args[2], x.Args[3])
	if !ok {
		x.W.Error(errZMinMax)
		return
	}
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil || r.Empty() {
		x.W.Int(0)
		return
	}
	a, b := z.ScoreSpan(r)
	x.W.Int(int64(b - a))
}

func cmdZLexCount(x *command.Exec) {
	r, ok := zparseLexRange(x.Args[2], x.Args[3])
	if !ok {
		x.W.Error(errZLexRange)
		return
	}
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil || r.Empty() {
		x.W.Int(0)
		return
	}
	a, b := z.LexSpan(r, false)
	x.W.Int(int64(b - a))
}

// zremrangeEvents are ZREMRANGEBY*'s keyspace events.
var zremrangeEvents = [...]string{zrRank: "zremrangebyrank", zrScore: "zremrangebyscore", zrLex: "zremrangebylex"}

func zremrangeGeneric(x *command.Exec, kind zrangeKind) {
	var start, end int64
	var sr zset.ScoreRange
	var lr zset.LexRange
	switch kind {
	case zrRank:
		s, ok1 := num.ParseInt(x.Args[2])
		e, ok2 := num.ParseInt(x.Args[3])
		if !ok1 || !ok2 {
			x.W.Error(command.ErrNotInt)
			return
		}
		start, end = s, e
	case zrScore:
		r, ok := zparseScoreRange(x.Args[2], x.Args[3])
		if !ok {
			x.W.Error(errZMinMax)
			return
		}
		sr = r
	case zrLex:
		r, ok := zparseLexRange(x.Args[2], x.Args[3])
		if !ok {
			x.W.Error(errZLexRange)
			return
		}
		lr = r
	}
	it, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil {
		x.W.Int(0)
		return
	}
	var a, b int // ranks [a, b)
	switch kind {
	case zrRank:
		s, e, ok := zrankSpan(start, end, z.Len())
		if ok {
			a, b = s, e+1
		}
	case zrScore:
		if !sr.Empty() {
			a, b = z.ScoreSpan(sr)
		}
	case zrLex:
		if !lr.Empty() {
			a, b = z.LexSpan(lr, false)
		}
	}
	if b <= a {
		x.W.Int(0)
		return
	}
	z = mutableZSet(x.DB, it)
	n := z.RemoveRange(a, b-1)
	zremoved(x.DB, it, x.Args[1], z, zremrangeEvents[kind])
	x.W.Int(int64(n))
}

// ---- pops ----

// ZItem is a popped member with its score.
type ZItem struct {
	Member string
	Score  float64
}

// zsetPop pops up to count members from the low (max=false) or high end
// of the sorted set at key, deleting the key when it empties. It returns
// nil when the key is missing or not a sorted set. The blocking commands
// (BZPOPMIN, BZPOPMAX, BZMPOP) call it for a woken client on the key's
// shard; the items are copies and outlive the call.
func zsetPop(db *shard.DB, key []byte, max bool, count int) []ZItem {
	it, v, ok := db.FindType(key, shard.TypeZSet)
	if !ok || v == nil || count <= 0 {
		return nil
	}
	z := mutableZSet(db, it)
	n := min(count, z.Len())
	out := make([]ZItem, 0, n)
	for len(out) < n {
		r := 0
		if max {
			r = z.Len() - 1
		}
		m, s := z.At(r)
		out = append(out, ZItem{Member: strings.Clone(m), Score: s})
		z.RemoveRange(r, r)
	}
	zremoved(db, it, key, z, endEvent("zpopmax", "zpopmin", max))
	return out
}

// zwritePopped replies with popped items: flat pairs, or nested pairs when
// nested (RESP3 with COUNT, and ZMPOP always).
func zwritePopped(w *resp.Writer, items []ZItem, nested bool) {
	if nested {
		w.Array(len(items))
	} else {
		w.Array(2 * len(items))
	}
	for _, p := range items {
		if nested {
			w.Array(2)
		}
		w.BulkString(p.Member)
		w.Double(p.Score)
	}
}

func zpopCmd(x *command.Exec, max bool) {
	if len(x.Args) > 3 {
		x.W.Error(command.ErrSyntax)
		return
	}
	count := int64(-1)
	if len(x.Args) == 3 {
		c, ok := num.ParseInt(x.Args[2])
		if !ok || c < 0 { // Redis: one message for both
			x.W.Error(errZPositive)
			return
		}
		count = c
	}
	nested := x.W.Proto > 2 && count != -1
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil || count == 0 {
		x.W.Array(0)
		return
	}
	if count == -1 {
		count = 1
	}
	zwritePopped(x.W, zsetPop(x.DB, x.Args[1], max, int(min(count, math.MaxInt32))), nested)
}

// parseZMPop parses "numkeys key... MIN|MAX [COUNT n]" (ZMPOP, args[1:]).
func parseZMPop(args [][]byte) (pos []int, max bool, count int, errText string) {
	n, ok := num.ParseInt(args[1])
	if !ok || n <= 0 { // Redis: one message for both
		return nil, false, 0, "ERR numkeys should be greater than 0"
	}
	if n >= int64(len(args)) { // before the sum, which a huge n overflows
		return nil, false, 0, command.ErrSyntax
	}
	whereIdx := int64(2) + n
	if whereIdx >= int64(len(args)) {
		return nil, false, 0, command.ErrSyntax
	}
	switch strings.ToLower(string(args[whereIdx])) {
	case "min":
	case "max":
		max = true
	default:
		return nil, false, 0, command.ErrSyntax
	}
	count = -1
	for j := int(whereIdx) + 1; j < len(args); j++ {
		if count == -1 && strings.EqualFold(string(args[j]), "count") && j+1 < len(args) {
			j++
			c, ok := num.ParseInt(args[j])
			if !ok {
				return nil, false, 0, command.ErrNotInt
			}
			if c <= 0 {
				return nil, false, 0, "ERR count should be greater than 0"
			}
			count = int(min(c, math.MaxInt32))
			continue
		}
		return nil, false, 0, command.ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	for i := 2; i < int(whereIdx); i++ {
		pos = append(pos, i)
	}
	return pos, max, count, ""
}

func writeZMPop(w *resp.Writer, key []byte, items []ZItem) {
	w.Array(2)
	w.Bulk(key)
	zwritePopped(w, items, true)
}

func cmdZMPop(x *command.Exec) {
	pos, max, count, e := parseZMPop(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	for _, i := range pos {
		_, v, ok := x.DB.FindType(x.Args[i], shard.TypeZSet)
		if !ok {
			x.W.Error(command.ErrWrongType)
			return
		}
		if v != nil {
			writeZMPop(x.W, x.Args[i], zsetPop(x.DB, x.Args[i], max, count))
			return
		}
	}
	x.W.NullArray()
}

// zkeyState is what a multi-shard command learned about one key.
type zkeyState uint8

const (
	zkeyMissing zkeyState = iota
	zkeyPresent
	zkeyWrongType
)

func multiZMPop(x *command.Coord) {
	pos, max, count, e := parseZMPop(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	t, parts := x.LockSplit(pos, true)
	defer t.Finish(nil)
	states := make([]zkeyState, len(x.Args))
	t.RunAll(func(s *shard.Shard) {
		for _, i := range parts[s.ID] {
			_, v, ok := s.DBs[x.DB].FindType(x.Args[i], shard.TypeZSet)
			switch {
			case !ok:
				states[i] = zkeyWrongType
			case v != nil:
				states[i] = zkeyPresent
			}
		}
	})
	for _, i := range pos {
		switch states[i] {
		case zkeyWrongType:
			x.W.Error(command.ErrWrongType)
			return
		case zkeyPresent:
			key := x.Args[i]
			var items []ZItem
			t.Run(x.ShardOf(key), func(s *shard.Shard) { items = zsetPop(s.DBs[x.DB], key, max, count) })
			writeZMPop(x.W, key, items)
			return
		}
	}
	x.W.NullArray()
}

// ---- ZRANDMEMBER ----

func cmdZRandMember(x *command.Exec) {
	if len(x.Args) == 2 {
		_, z, ok := zsetOf(x, x.Args[1])
		if !ok {
			return
		}
		if z == nil {
			x.W.Null()
			return
		}
		m, _ := z.At(rand.IntN(z.Len()))
		x.W.BulkString(m)
		return
	}
	l, ok := num.ParseInt(x.Args[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	if l == math.MinInt64 {
		x.W.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	withScores := false
	if len(x.Args) > 4 || len(x.Args) == 4 && !strings.EqualFold(string(x.Args[3]), "withscores") {
		x.W.Error(command.ErrSyntax)
		return
	}
	if len(x.Args) == 4 {
		withScores = true
		if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
			x.W.Error("ERR value is out of range")
			return
		}
	}
	_, z, ok := zsetOf(x, x.Args[1])
	if !ok {
		return
	}
	if z == nil || l == 0 {
		x.W.Array(0)
		return
	}
	size := z.Len()
	if l < 0 {
		// Repeats allowed: count independent draws.
		n := -l
		if n > math.MaxInt32 {
			x.W.Error("ERR value is out of range")
			return
		}
		zreplyHeader(x.W, int(n), withScores)
		for i := int64(0); i < n; i++ {
			m, s := z.At(rand.IntN(size))
			zreplyPair(x.W, m, s, withScores)
		}
		return
	}
	if l >= int64(size) {
		zreplyHeader(x.W, size, withScores)
		z.Ascend(0, func(m string, s float64) bool {
			zreplyPair(x.W, m, s, withScores)
			return true
		})
		return
	}
	// Distinct ranks: a partial Fisher-Yates shuffle over rank indexes.
	n := int(l)
	picked := make(map[int]int, n)
	zreplyHeader(x.W, n, withScores)
	for i := 0; i < n; i++ {
		j := i + rand.IntN(size-i)
		vi, ok := picked[i]
		if !ok {
			vi = i
		}
		vj, ok := picked[j]
		if !ok {
			vj = j
		}
		picked[i], picked[j] = vj, vi
		m, s := z.At(vj)
		zreplyPair(x.W, m, s, withScores)
	}
}

// ---- ZSCAN ----

func cmdZScan(x *command.Exec) {
	cursor, ok := parseScanCursor(x.Args[2])
	if !ok {
		x.W.Error("ERR invalid cursor")
		return
	}
	_, z, found := zsetOf(x, x.Args[1])
	if !found {
		return
	}
	o, ok := parseScanOptions(x.W, x.Args[3:], false)
	if !ok {
		return
	}
	o.cursor = cursor
	if z == nil {
		writeScan(x.W, 0, nil)
		return
	}
	// Redis's reply holds member and score pairs; MATCH filters members.
	var items [][]byte
	n := 0
	emit := func(m []byte, score float64) {
		n++
		if o.match == nil || glob.Match(o.match, m, false) {
			items = append(items, m, num.AppendFloatReply(nil, score))
		}
	}
	next := runScan(o, func(c uint64) uint64 { return z.Scan(c, emit) }, func() int { return n })
	writeScan(x.W, next, items)
}

// ---- ZUNION / ZINTER / ZDIFF and their STORE forms, ZINTERCARD ----

type zsetOp uint8

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
	zopInterCard
)

type zaggregate uint8

const (
	zaggSum zaggregate = iota
	zaggMin
	zaggMax
)

// zsrc is one input of an algebra command: a sorted set, a plain set
// (every member scores 1), or nothing (a missing key).
type zsrc struct {
	z      *zset.Set
	s      *set.Set
	weight float64
}

func (s *zsrc) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.s != nil:
		return s.s.Len()
	}
	return 0
}

func (s *zsrc) score(member []byte) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(member)
	case s.s != nil:
		if s.s.Contains(member) {
			return 1, true
		}
	}
	return 0, false
}

func (s *zsrc) each(fn func(member []byte, score float64)) {
	switch {
	case s.z != nil:
		s.z.Ascend(0, func(m string, sc float64) bool {
			// A read-only view: consumers only look up or copy it.
			fn(unsafe.Slice(unsafe.StringData(m), len(m)), sc)
			return true
		})
	case s.s != nil:
		s.s.Range(func(m []byte) bool {
			fn(m, 1)
			return true
		})
	}
}

// readZSrc reads one input key; wrong=true for a type other than zset/set.
// With clone the value is deep-copied so it can leave the shard.
func readZSrc(db *shard.DB, key []byte, clone bool) (src zsrc, wrong bool) {
	defer db.Shard().ReadMisses(db.Shard().ReadMisses(true)) // a STORE's too: a miss is a keymiss
	_, v := db.Find(key)
	if v == nil {
		return src, false
	}
	switch v.Type {
	case shard.TypeZSet:
		src.z = v.Obj().(*zset.Set)
		if clone {
			src.z = src.z.Clone().(*zset.Set)
		}
	case shard.TypeSet:
		src.s = v.Obj().(*set.Set)
		if clone {
			src.s = src.s.Clone().(*set.Set)
		}
	default:
		return src, true
	}
	return src, false
}

// zalgebraArgs is a parsed algebra command.
type zalgebraArgs struct {
	numKeysAt int
	keys      []int // positions of the input keys
	dest      []byte
}

func (op zsetOp) name(store bool) string {
	n := [...]string{"zunion", "zinter", "zdiff", "zintercard"}[op]
	if store {
		n += "store"
	}
	return n
}

// parseZAlgebraKeys parses numkeys; errors come before any key look-up.
func parseZAlgebraKeys(args [][]byte, op zsetOp, store bool) (zalgebraArgs, string) {
	a := zalgebraArgs{numKeysAt: 1}
	if store {
		a.numKeysAt, a.dest = 2, args[1]
	}
	n, ok := num.ParseInt(args[a.numKeysAt])
	if !ok {
		return a, command.ErrNotInt
	}
	if n < 1 {
		return a, "ERR at least 1 input key is needed for '" + op.name(store) + "' command"
	}
	if n > int64(len(args)-a.numKeysAt-1) {
		return a, command.ErrSyntax
	}
	for i := a.numKeysAt + 1; i <= a.numKeysAt+int(n); i++ {
		a.keys = append(a.keys, i)
	}
	return a, ""
}

// zalgebraOpts are the options after the keys.
type zalgebraOpts struct {
	agg        zaggregate
	withScores bool
	limit      int64
}

// parseZAlgebraOpts parses WEIGHTS/AGGREGATE/WITHSCORES/LIMIT into opts and
// the sources' weights; it runs after the key look-ups, as in Redis.
func parseZAlgebraOpts(args [][]byte, a *zalgebraArgs, op zsetOp, srcs []zsrc) (zalgebraOpts, string) {
	var o zalgebraOpts
	j := a.keys[len(a.keys)-1] + 1
	setnum := len(a.keys)
	store := a.dest != nil
	for j < len(args) {
		remaining := len(args) - j
		opt := strings.ToLower(string(args[j]))
		switch {
		case op != zopDiff && op != zopInterCard && remaining >= setnum+1 && opt == "weights":
			j++
			for i := 0; i < setnum; i, j = i+1, j+1 {
				w, ok := num.ParseFloat(args[j])
				if !ok {
					return o, "ERR weight value is not a float"
				}
				srcs[i].weight = w
			}
		case op != zopDiff && op != zopInterCard && remaining >= 2 && opt == "aggregate":
			switch strings.ToLower(string(args[j+1])) {
			case "sum":
				o.agg = zaggSum
			case "min":
				o.agg = zaggMin
			case "max":
				o.agg = zaggMax
			default:
				return o, command.ErrSyntax
			}
			j += 2
		case remaining >= 1 && !store && op != zopInterCard && opt == "withscores":
			o.withScores = true
			j++
		case op == zopInterCard && remaining >= 2 && opt == "limit":
			l, ok := num.ParseInt(args[j+1])
			if !ok {
				return o, command.ErrNotInt
			}
			if l < 0 {
				return o, "ERR LIMIT can't be negative"
			}
			o.limit = l
			j += 2
		default:
			return o, command.ErrSyntax
		}
	}
	return o, ""
}

func zaggregateInto(target *float64, v float64, agg zaggregate) {
	switch agg {
	case zaggSum:
		*target += v
		if math.IsNaN(*target) {
			*target = 0 // inf + -inf
		}
	case zaggMin:
		if v < *target {
			*target = v
		}
	case zaggMax:
		if v > *target {
			*target = v
		}
	}
}

// zalgebra computes the operation over srcs (in argument order). For
// zopInterCard it returns only the count.
func zalgebra(op zsetOp, srcs []zsrc, o zalgebraOpts) (*zset.Set, int) {
	if op != zopDiff {
		// Smallest first, as Redis sorts its inputs (stable for equal sizes).
		srcs = append([]zsrc(nil), srcs...)
		sort.SliceStable(srcs, func(i, j int) bool { return srcs[i].len() < srcs[j].len() })
	}
	out := zset.NewSkiplist()
	switch op {
	case zopInter, zopInterCard:
		card := 0
		if srcs[0].len() == 0 {
			break
		}
		stop := false
		srcs[0].each(func(m []byte, sc float64) {
			if stop {
				return
			}
			score := srcs[0].weight * sc
			if math.IsNaN(score) {
				score = 0
			}
			for j := 1; j < len(srcs); j++ {
				v, ok := srcs[j].score(m)
				if !ok {
					return
				}
				zaggregateInto(&score, v*srcs[j].weight, o.agg)
			}
			if op == zopInterCard {
				card++
				if o.limit > 0 && int64(card) >= o.limit {
					stop = true
				}
				return
			}
			out.Add(m, score)
		})
		if op == zopInterCard {
			return nil, card
		}
	case zopUnion:
		for i := range srcs {
			w := srcs[i].weight
			srcs[i].each(func(m []byte, sc float64) {
				score := w * sc
				if math.IsNaN(score) {
					score = 0
				}
				if cur, ok := out.Score(m); ok {
					zaggregateInto(&cur, score, o.agg)
					if cur == 0 {
						// Add keeps the old score when the new one compares
						// equal, so -0 would survive a +0 result (Redis: 0).
						out.Remove(m)
					}
					out.Add(m, cur)
					return
				}
				out.Add(m, score)
			})
		}
	case zopDiff:
		srcs[0].each(func(m []byte, sc float64) {
			for j := 1; j < len(srcs); j++ {
				if _, ok := srcs[j].score(m); ok {
					return
				}
			}
			out.Add(m, sc)
		})
	}
	return out, out.Len()
}

// writeZAlgebra replies for the non-store forms.
func writeZAlgebra(w *resp.Writer, op zsetOp, out *zset.Set, card int, o zalgebraOpts) {
	if op == zopInterCard {
		w.Int(int64(card))
		return
	}
	zreplyHeader(w, out.Len(), o.withScores)
	out.Ascend(0, func(m string, s float64) bool {
		zreplyPair(w, m, s, o.withScores)
		return true
	})
}

func newZSrcs(n int) []zsrc {
	srcs := make([]zsrc, n)
	for i := range srcs {
		srcs[i].weight = 1
	}
	return srcs
}

func zsetAlgebraOne(x *command.Exec, op zsetOp, store bool) {
	a, e := parseZAlgebraKeys(x.Args, op, store)
	if e != "" {
		x.W.Error(e)
		return
	}
	srcs := newZSrcs(len(a.keys))
	for i, p := range a.keys {
		var wrong bool
		if srcs[i], wrong = readZSrc(x.DB, x.Args[p], false); wrong {
			x.W.Error(command.ErrWrongType)
			return
		}
		srcs[i].weight = 1
	}
	o, e := parseZAlgebraOpts(x.Args, &a, op, srcs)
	if e != "" {
		x.W.Error(e)
		return
	}
	out, card := zalgebra(op, srcs, o)
	if store {
		x.W.Int(int64(zstore(x.DB, a.dest, out, op.name(true))))
		return
	}
	writeZAlgebra(x.W, op, out, card, o)
}

// zsetAlgebraMulti copies the inputs out of their shards under shared
// locks, computes on the coordinator, and writes the destination under an
// exclusive lock, all in one transaction: no client sees a partial STORE.
func zsetAlgebraMulti(x *command.Coord, op zsetOp, store bool) {
	a, e := parseZAlgebraKeys(x.Args, op, store)
	if e != "" {
		x.W.Error(e)
		return
	}
	t := x.Tx()
	parts := make([][]int, x.NumShards()) // indexes into a.keys
	for i, p := range a.keys {
		sid := x.ShardOf(x.Args[p])
		parts[sid] = append(parts[sid], i)
		t.Add(sid, x.DB, string(x.Args[p]), false)
	}
	if store {
		t.Add(x.ShardOf(a.dest), x.DB, string(a.dest), true)
	}
	t.Lock()
	defer t.Finish(nil)
	srcs := newZSrcs(len(a.keys))
	wrong := make([]bool, len(a.keys))
	t.RunAll(func(s *shard.Shard) {
		for _, i := range parts[s.ID] {
			srcs[i], wrong[i] = readZSrc(s.DBs[x.DB], x.Args[a.keys[i]], true)
			srcs[i].weight = 1
		}
	})
	for _, w := range wrong {
		if w {
			x.W.Error(command.ErrWrongType)
			return
		}
	}
	o, e := parseZAlgebraOpts(x.Args, &a, op, srcs)
	if e != "" {
		x.W.Error(e)
		return
	}
	out, card := zalgebra(op, srcs, o)
	if !store {
		writeZAlgebra(x.W, op, out, card, o)
		return
	}
	n := 0
	t.Run(x.ShardOf(a.dest), func(s *shard.Shard) { n = zstore(s.DBs[x.DB], a.dest, out, op.name(true)) })
	x.W.Int(int64(n))
}
