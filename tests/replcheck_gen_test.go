package tests

// The replication checker's command generator: random commands of every
// type, every multi-key and blocking command, MULTI/EXEC and scripts, with
// TTLs, over a small keyspace so that commands collide. A key names its
// family ("rc:l3" is a list's), so most commands meet the type they
// expect; the generic commands (RENAME, COPY, DEL, MOVE ...) mix families
// now and then. Half the keys carry one of a few hash tags (all the keys
// of a tag live on one shard), the others spread over every shard.

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// rcFamilies are the key families: string, counter, bitmap, list, hash,
// set (t), zset, stream (x), HyperLogLog (p) and geo.
var rcFamilies = []string{"s", "n", "b", "l", "h", "t", "z", "x", "p", "g"}

// rcTags are the hash tags; rcPlain and rcPerTag are the keys per family
// without a tag and per tag.
var rcTags = []string{"a", "b", "c"}

const (
	rcPlain  = 8
	rcPerTag = 4
)

// rcDBs are the databases the load writes: most commands run in 0, some
// in 3 (SELECT, MOVE, COPY ... DB, SWAPDB).
var rcDBs = []string{"0", "3"}

// rcKeyspace is every key the load can name.
func rcKeyspace() []string {
	var out []string
	for _, fam := range rcFamilies {
		for i := 0; i < rcPlain; i++ {
			out = append(out, "rc:"+fam+strconv.Itoa(i))
		}
		for _, tag := range rcTags {
			for i := 0; i < rcPerTag; i++ {
				out = append(out, "rc:{"+tag+"}"+fam+strconv.Itoa(i))
			}
		}
	}
	return out
}

// rcGen draws one step of a client: a command, or several sent together
// (MULTI ... EXEC, SELECT 3 ... SELECT 0).
type rcGen struct {
	r *rand.Rand
	// deterministic: the differential mode's stream, whose effects must
	// not depend on the server's randomness or clock: no SPOP, explicit
	// stream IDs, no approximate trimming, no short TTLs.
	deterministic bool
	// short: TTLs under a second may be drawn now.
	short bool
	xid   int64 // the last explicit stream ID's milliseconds
}

// rcCommand is one kind of step.
type rcCommand struct {
	name   string
	weight int
	// random: its effect depends on the server's randomness (left out
	// of the differential mode).
	random bool
	// simple: one command that MULTI may queue.
	simple bool
	// blocks: a blocking command (rarer in the differential mode, where
	// nobody serves it and each one waits its timeout).
	blocks bool
	gen    func(g *rcGen) [][]string
}

func (g *rcGen) n(hi int) string { return strconv.Itoa(g.r.IntN(hi)) }

func (g *rcGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// maybe returns args with probability p, else nothing.
func (g *rcGen) maybe(p float64, args ...string) []string {
	if g.r.Float64() < p {
		return args
	}
	return nil
}

func (g *rcGen) tagged(fam, tag string) string {
	return "rc:{" + tag + "}" + fam + g.n(rcPerTag)
}

func (g *rcGen) plain(fam string) string { return "rc:" + fam + g.n(rcPlain) }

// key is a key of fam, tagged or not.
func (g *rcGen) key(fam string) string {
	if g.r.IntN(2) == 0 {
		return g.plain(fam)
	}
	return g.tagged(fam, g.pick(rcTags...))
}

// anyKey is a key of any family.
func (g *rcGen) anyKey() string { return g.key(g.pick(rcFamilies...)) }

// keys draws one key per family in fams: all of one hash tag (one shard)
// a third of the time, all untagged (most likely several shards) a
// third, each its own way otherwise.
func (g *rcGen) keys(fams ...string) []string {
	out := make([]string, len(fams))
	mode := g.r.IntN(3)
	tag := g.pick(rcTags...)
	for i, fam := range fams {
		switch mode {
		case 0:
			out[i] = g.tagged(fam, tag)
		case 1:
			out[i] = g.plain(fam)
		default:
			out[i] = g.key(fam)
		}
	}
	return out
}

// same is n keys of fam (keys).
func (g *rcGen) same(fam string, n int) []string {
	fams := make([]string, n)
	for i := range fams {
		fams[i] = fam
	}
	return g.keys(fams...)
}

// pair is two keys of one family, or (one time in five) of any two.
func (g *rcGen) pair(fam string) []string {
	if g.r.IntN(5) == 0 {
		return g.keys(g.pick(rcFamilies...), g.pick(rcFamilies...))
	}
	return g.same(fam, 2)
}

// Values are few, so that members and values repeat; the digits name
// counters (SORT BY rc:n*).
var rcValues = []string{"0", "1", "2", "3", "5", "7", "10", "-3", "2.5", "a", "bb", "hello", "x y", ""}

func (g *rcGen) val() string    { return g.pick(rcValues...) }
func (g *rcGen) member() string { return "m" + g.n(12) }
func (g *rcGen) field() string  { return "f" + g.n(6) }
func (g *rcGen) score() string {
	if g.r.IntN(4) == 0 {
		return strconv.FormatFloat(float64(g.r.IntN(40))/4-3, 'f', -1, 64)
	}
	return g.n(20)
}

// pttl is a TTL in milliseconds: while short TTLs may be drawn, mostly
// 1-300 ms (they expire during the run) or up to a second; otherwise
// 100-1000 s (they outlive the comparison).
func (g *rcGen) pttl() string {
	if g.short && g.r.IntN(4) > 0 {
		if g.r.IntN(3) > 0 {
			return strconv.Itoa(1 + g.r.IntN(300))
		}
		return strconv.Itoa(300 + g.r.IntN(700))
	}
	return strconv.Itoa(100_000 + g.r.IntN(900_000))
}

// ttl is a TTL in seconds, 100-1000.
func (g *rcGen) ttl() string { return strconv.Itoa(100 + g.r.IntN(900)) }

// block is a blocking command's timeout in seconds, 10-100 ms (10 ms in
// the differential mode).
func (g *rcGen) block() string {
	if g.deterministic {
		return "0.01"
	}
	return fmt.Sprintf("0.%02d", 1+g.r.IntN(10))
}

// blockMs is block in milliseconds (XREAD).
func (g *rcGen) blockMs() string {
	if g.deterministic {
		return "10"
	}
	return strconv.Itoa(10 + g.r.IntN(90))
}

// streamID is "*", or an increasing explicit ID in the differential mode.
func (g *rcGen) streamID() string {
	if !g.deterministic {
		return "*"
	}
	g.xid++
	return strconv.FormatInt(g.xid, 10) + "-1"
}

func rcSide(g *rcGen) string { return g.pick("LEFT", "RIGHT") }

func rcCmd(args ...string) [][]string { return [][]string{args} }

func rcJoin(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Scripts over several keys (cross-shard when the keys are).
const (
	// rcScriptMove copies one string into another and deletes a third key.
	rcScriptMove = "local v = redis.call('GET', KEYS[1]); if v then redis.call('SET', KEYS[2], v) end; redis.call('DEL', KEYS[3]); return v"
	// rcScriptCount reads keys and writes nothing.
	rcScriptCount = "local n = 0; for _, k in ipairs(KEYS) do n = n + redis.call('EXISTS', k) end; return n"
	// rcScriptPushExpire pushes, sets a TTL and reads another list.
	rcScriptPushExpire = "redis.call('RPUSH', KEYS[1], ARGV[1]); redis.call('PEXPIRE', KEYS[1], ARGV[2]); return redis.call('LLEN', KEYS[2])"
	// rcScriptUnion adds a member and stores a union.
	rcScriptUnion = "redis.call('SADD', KEYS[1], ARGV[1]); return redis.call('SUNIONSTORE', KEYS[2], KEYS[1], KEYS[3])"
	// rcScriptIfExists increments a counter when another key exists.
	rcScriptIfExists = "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCR', KEYS[2]) end; return 0"
)

// rcCommands is the load's mix; weights are relative.
var rcCommands = []rcCommand{
	// Strings and counters.
	{name: "SET", weight: 8, simple: true, gen: func(g *rcGen) [][]string {
		var opt []string
		switch g.r.IntN(6) {
		case 0, 1:
			opt = []string{"PX", g.pttl()}
		case 2:
			opt = []string{"EX", g.ttl()}
		case 3:
			opt = []string{"KEEPTTL"}
		}
		return rcCmd(rcJoin([]string{"SET", g.key("s"), g.val()}, opt, g.maybe(0.2, g.pick("NX", "XX")), g.maybe(0.2, "GET"))...)
	}},
	{name: "PSETEX", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("PSETEX", g.key("s"), g.pttl(), g.val()) }},
	{name: "SETEX", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SETEX", g.key("s"), g.ttl(), g.val()) }},
	{name: "GETEX", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		switch g.r.IntN(3) {
		case 0:
			return rcCmd("GETEX", g.key("s"), "PX", g.pttl())
		case 1:
			return rcCmd("GETEX", g.key("s"), "EX", g.ttl())
		}
		return rcCmd("GETEX", g.key("s"), "PERSIST")
	}},
	{name: "GETDEL", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("GETDEL", g.key("s")) }},
	{name: "APPEND", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("APPEND", g.key("s"), g.val()) }},
	{name: "SETRANGE", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SETRANGE", g.key("s"), g.n(8), g.val()) }},
	{name: "GETSET", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("GETSET", g.key("s"), g.val()) }},
	{name: "SETNX", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SETNX", g.key("s"), g.val()) }},
	{name: "GET", weight: 3, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("GET", g.key("s")) }},
	{name: "MGET", weight: 3, simple: true, gen: func(g *rcGen) [][]string { return rcCmd(rcJoin([]string{"MGET"}, g.same("s", 2+g.r.IntN(3)))...) }},
	{name: "MSET", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		args := []string{"MSET"}
		for _, k := range g.same("s", 2+g.r.IntN(2)) {
			args = append(args, k, g.val())
		}
		return rcCmd(args...)
	}},
	{name: "MSETNX", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		args := []string{"MSETNX"}
		for _, k := range g.same("s", 2) {
			args = append(args, k, g.val())
		}
		return rcCmd(args...)
	}},
	{name: "LCS", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd(rcJoin([]string{"LCS"}, g.same("s", 2))...) }},
	{name: "INCRBY", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(g.pick("INCR", "DECR"), g.key("n"))
	}},
	{name: "INCRBYFLOAT", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("INCRBYFLOAT", g.key("n"), g.pick("1.5", "-0.25", "3")) }},
	{name: "SETCOUNTER", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SET", g.key("n"), g.n(8), "PX", g.pttl()) }},

	// Bitmaps.
	{name: "SETBIT", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SETBIT", g.key("b"), g.n(40), g.n(2)) }},
	{name: "BITOP", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		if g.r.IntN(4) == 0 {
			return rcCmd(rcJoin([]string{"BITOP", "NOT"}, g.same("b", 2))...)
		}
		return rcCmd(rcJoin([]string{"BITOP", g.pick("AND", "OR", "XOR")}, g.same("b", 2+g.r.IntN(2)))...)
	}},
	{name: "BITFIELD", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd("BITFIELD", g.key("b"), g.pick("SET", "INCRBY"), "u8", "#"+g.n(4), g.n(300))
	}},
	{name: "BITCOUNT", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("BITCOUNT", g.key("b")) }},

	// Lists.
	{name: "PUSH", weight: 8, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(g.pick("LPUSH", "RPUSH", "RPUSH", "LPUSHX"), g.key("l"), g.val(), g.val())
	}},
	{name: "POP", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("LPOP", "RPOP"), g.key("l")}, g.maybe(0.3, g.n(3)))...)
	}},
	{name: "LSET", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("LSET", g.key("l"), strconv.Itoa(g.r.IntN(6)-3), g.val()) }},
	{name: "LINSERT", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd("LINSERT", g.key("l"), g.pick("BEFORE", "AFTER"), g.val(), g.val())
	}},
	{name: "LREM", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("LREM", g.key("l"), strconv.Itoa(g.r.IntN(5)-2), g.val()) }},
	{name: "LTRIM", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("LTRIM", g.key("l"), g.n(3), strconv.Itoa(3+g.r.IntN(6))) }},
	{name: "LMOVE", weight: 4, simple: true, gen: func(g *rcGen) [][]string {
		k := g.pair("l")
		return rcCmd("LMOVE", k[0], k[1], rcSide(g), rcSide(g))
	}},
	{name: "RPOPLPUSH", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd(rcJoin([]string{"RPOPLPUSH"}, g.pair("l"))...) }},
	{name: "LMPOP", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"LMPOP", "2"}, g.same("l", 2), []string{rcSide(g), "COUNT", "2"})...)
	}},
	{name: "LRANGE", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("LRANGE", g.key("l"), "0", "-1") }},
	{name: "BLPOP", weight: 3, blocks: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("BLPOP", "BRPOP")}, g.same("l", 1+g.r.IntN(2)), []string{g.block()})...)
	}},
	{name: "BLMOVE", weight: 2, blocks: true, gen: func(g *rcGen) [][]string {
		k := g.pair("l")
		return rcCmd("BLMOVE", k[0], k[1], rcSide(g), rcSide(g), g.block())
	}},
	{name: "BRPOPLPUSH", weight: 1, blocks: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"BRPOPLPUSH"}, g.pair("l"), []string{g.block()})...)
	}},
	{name: "BLMPOP", weight: 1, blocks: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"BLMPOP", g.block(), "2"}, g.same("l", 2), []string{rcSide(g), "COUNT", "2"})...)
	}},

	// Hashes.
	{name: "HSET", weight: 5, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd("HSET", g.key("h"), g.field(), g.val(), g.field(), g.val())
	}},
	{name: "HSETNX", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("HSETNX", g.key("h"), g.field(), g.val()) }},
	{name: "HDEL", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("HDEL", g.key("h"), g.field(), g.field()) }},
	{name: "HINCRBY", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("HINCRBY", g.key("h"), "c"+g.n(2), "3") }},
	{name: "HINCRBYFLOAT", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("HINCRBYFLOAT", g.key("h"), "c"+g.n(2), "0.5") }},
	{name: "HGETALL", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("HGETALL", g.key("h")) }},

	// Sets.
	{name: "SADD", weight: 6, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SADD", g.key("t"), g.member(), g.member()) }},
	{name: "SREM", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SREM", g.key("t"), g.member(), g.member()) }},
	{name: "SPOP", weight: 2, simple: true, random: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"SPOP", g.key("t")}, g.maybe(0.3, g.n(3)))...)
	}},
	{name: "SMOVE", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"SMOVE"}, g.pair("t"), []string{g.member()})...)
	}},
	{name: "SSTORE", weight: 4, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE")}, g.same("t", 2+g.r.IntN(2)))...)
	}},
	{name: "SREAD", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		if g.r.IntN(3) == 0 {
			return rcCmd(rcJoin([]string{"SINTERCARD", "2"}, g.same("t", 2))...)
		}
		return rcCmd(rcJoin([]string{g.pick("SUNION", "SINTER", "SDIFF")}, g.same("t", 2))...)
	}},
	{name: "SRANDMEMBER", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("SRANDMEMBER", g.key("t"), "2") }},

	// Sorted sets.
	{name: "ZADD", weight: 6, simple: true, gen: func(g *rcGen) [][]string {
		opt := g.maybe(0.3, g.pick("NX", "XX", "GT", "LT"))
		if g.r.IntN(6) == 0 {
			return rcCmd(rcJoin([]string{"ZADD", g.key("z")}, opt, []string{"INCR", g.score(), g.member()})...)
		}
		return rcCmd(rcJoin([]string{"ZADD", g.key("z")}, opt, g.maybe(0.2, "CH"), []string{g.score(), g.member(), g.score(), g.member()})...)
	}},
	{name: "ZINCRBY", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("ZINCRBY", g.key("z"), g.score(), g.member()) }},
	{name: "ZREM", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("ZREM", g.key("z"), g.member(), g.member()) }},
	{name: "ZPOP", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("ZPOPMIN", "ZPOPMAX"), g.key("z")}, g.maybe(0.3, g.n(3)))...)
	}},
	{name: "ZREMRANGE", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		if g.r.IntN(2) == 0 {
			return rcCmd("ZREMRANGEBYSCORE", g.key("z"), g.n(5), g.n(10))
		}
		return rcCmd("ZREMRANGEBYRANK", g.key("z"), "0", g.n(2))
	}},
	{name: "ZSTORE", weight: 4, simple: true, gen: func(g *rcGen) [][]string {
		k := g.same("z", 3)
		switch g.r.IntN(4) {
		case 0:
			return rcCmd("ZDIFFSTORE", k[0], "2", k[1], k[2])
		case 1:
			return rcCmd("ZRANGESTORE", k[0], k[1], "0", g.n(5))
		}
		return rcCmd(rcJoin([]string{g.pick("ZUNIONSTORE", "ZINTERSTORE"), k[0], "2", k[1], k[2]},
			g.maybe(0.3, "WEIGHTS", "2", "1"), g.maybe(0.3, "AGGREGATE", g.pick("SUM", "MIN", "MAX")))...)
	}},
	{name: "ZMPOP", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"ZMPOP", "2"}, g.same("z", 2), []string{g.pick("MIN", "MAX"), "COUNT", "2"})...)
	}},
	{name: "ZREAD", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		if g.r.IntN(2) == 0 {
			return rcCmd(rcJoin([]string{"ZUNION", "2"}, g.same("z", 2), []string{"WITHSCORES"})...)
		}
		return rcCmd("ZRANGE", g.key("z"), "0", "-1", "WITHSCORES")
	}},
	{name: "BZPOP", weight: 2, blocks: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("BZPOPMIN", "BZPOPMAX")}, g.same("z", 1+g.r.IntN(2)), []string{g.block()})...)
	}},
	{name: "BZMPOP", weight: 1, blocks: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"BZMPOP", g.block(), "2"}, g.same("z", 2), []string{g.pick("MIN", "MAX")})...)
	}},

	// Streams.
	{name: "XADD", weight: 5, simple: true, gen: func(g *rcGen) [][]string {
		var trim []string
		switch g.r.IntN(4) {
		case 0:
			trim = []string{"MAXLEN", strconv.Itoa(2 + g.r.IntN(6))}
		case 1:
			if !g.deterministic {
				trim = []string{"MAXLEN", "~", "5"} // nodes differ from Redis's
			}
		}
		return rcCmd(rcJoin([]string{"XADD", g.key("x")}, trim, []string{g.streamID(), g.field(), g.val()})...)
	}},
	{name: "XTRIM", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("XTRIM", g.key("x"), "MAXLEN", g.n(6)) }},
	{name: "XGROUP", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		if g.r.IntN(4) == 0 {
			return rcCmd("XGROUP", "DESTROY", g.key("x"), "g"+g.n(2))
		}
		return rcCmd("XGROUP", "CREATE", g.key("x"), "g"+g.n(2), g.pick("$", "0"), "MKSTREAM")
	}},
	{name: "XREADGROUP", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"XREADGROUP", "GROUP", "g" + g.n(2), "c" + g.n(2), "COUNT", "2"}, g.maybe(0.2, "NOACK"), []string{"STREAMS", g.key("x"), ">"})...)
	}},
	{name: "XAUTOCLAIM", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd("XAUTOCLAIM", g.key("x"), "g"+g.n(2), "c"+g.n(2), "0", "0-0", "COUNT", "2")
	}},
	{name: "XRANGE", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("XRANGE", g.key("x"), "-", "+", "COUNT", "3") }},
	{name: "XREADBLOCK", weight: 2, blocks: true, gen: func(g *rcGen) [][]string {
		k := g.same("x", 1+g.r.IntN(2))
		args := []string{"XREAD", "COUNT", "2", "BLOCK", g.blockMs(), "STREAMS"}
		args = append(args, k...)
		for range k {
			args = append(args, "$")
		}
		return rcCmd(args...)
	}},
	{name: "XREADGROUPBLOCK", weight: 1, blocks: true, gen: func(g *rcGen) [][]string {
		return rcCmd("XREADGROUP", "GROUP", "g"+g.n(2), "c"+g.n(2), "COUNT", "2", "BLOCK", g.blockMs(), "STREAMS", g.key("x"), ">")
	}},

	// HyperLogLog.
	{name: "PFADD", weight: 3, simple: true, gen: func(g *rcGen) [][]string { return rcCmd("PFADD", g.key("p"), g.member(), g.member()) }},
	{name: "PFMERGE", weight: 2, simple: true, gen: func(g *rcGen) [][]string { return rcCmd(rcJoin([]string{"PFMERGE"}, g.same("p", 2+g.r.IntN(2)))...) }},
	{name: "PFCOUNT", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd(rcJoin([]string{"PFCOUNT"}, g.same("p", 1+g.r.IntN(2)))...) }},

	// Geo.
	{name: "GEOADD", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd("GEOADD", g.key("g"), fmt.Sprintf("%.2f", 13+float64(g.r.IntN(300))/100), fmt.Sprintf("%.2f", 36+float64(g.r.IntN(300))/100), g.member())
	}},
	{name: "GEOSEARCHSTORE", weight: 1, simple: true, gen: func(g *rcGen) [][]string {
		k := g.pair("g")
		return rcCmd(rcJoin([]string{"GEOSEARCHSTORE", k[0], k[1], "FROMLONLAT", "14.5", "37.5", "BYRADIUS", strconv.Itoa(50 + g.r.IntN(200)), "km", "ASC", "COUNT", "4"},
			g.maybe(0.3, "STOREDIST"))...)
	}},

	// Keys of any type.
	{name: "DEL", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		k := g.keys(g.pick(rcFamilies...), g.pick(rcFamilies...), g.pick(rcFamilies...))
		return rcCmd(rcJoin([]string{g.pick("DEL", "UNLINK")}, k[:1+g.r.IntN(3)])...)
	}},
	{name: "EXISTS", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("EXISTS", "TOUCH", "EXISTS")}, g.keys(g.pick(rcFamilies...), g.pick(rcFamilies...), g.pick(rcFamilies...)))...)
	}},
	{name: "TYPE", weight: 1, simple: true, gen: func(g *rcGen) [][]string { return rcCmd(g.pick("TYPE", "PTTL"), g.anyKey()) }},
	{name: "RENAME", weight: 4, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{g.pick("RENAME", "RENAME", "RENAMENX")}, g.pair(g.pick(rcFamilies...)))...)
	}},
	{name: "COPY", weight: 3, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"COPY"}, g.pair(g.pick(rcFamilies...)), g.maybe(0.2, "DB", "3"), g.maybe(0.5, "REPLACE"))...)
	}},
	{name: "PEXPIRE", weight: 6, simple: true, gen: func(g *rcGen) [][]string {
		return rcCmd(rcJoin([]string{"PEXPIRE", g.anyKey(), g.pttl()}, g.maybe(0.1, g.pick("NX", "XX", "GT", "LT")))...)
	}},
	{name: "EXPIRE", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		switch g.r.IntN(4) {
		case 0:
			return rcCmd("EXPIREAT", g.anyKey(), "1") // in the past: a delete
		case 1:
			return rcCmd("PERSIST", g.anyKey())
		}
		return rcCmd("EXPIRE", g.anyKey(), g.ttl())
	}},
	{name: "MOVE", weight: 1, gen: func(g *rcGen) [][]string {
		if g.r.IntN(2) == 0 {
			return rcCmd("MOVE", g.anyKey(), "3")
		}
		return [][]string{{"SELECT", "3"}, {"MOVE", g.anyKey(), "0"}, {"SELECT", "0"}}
	}},
	{name: "SORT", weight: 2, simple: true, gen: func(g *rcGen) [][]string {
		k := g.keys(g.pick("l", "t", "z"), "l")
		switch g.r.IntN(3) {
		case 0:
			// BY and GET read counters and strings of any shard.
			return rcCmd("SORT", k[0], "BY", "rc:n*", "GET", "#", "GET", "rc:s*", "STORE", k[1])
		case 1:
			return rcCmd(rcJoin([]string{"SORT", k[0], "ALPHA"}, g.maybe(0.5, "DESC"), g.maybe(0.3, "LIMIT", "0", "3"), []string{"STORE", k[1]})...)
		}
		return rcCmd("SORT", k[0], "STORE", k[1])
	}},
	{name: "SWAPDB", weight: 1, gen: func(g *rcGen) [][]string {
		if g.r.IntN(10) > 0 {
			return nil // rare: one in ten draws
		}
		return rcCmd("SWAPDB", "0", "3")
	}},

	// Several commands: transactions, scripts, another database.
	{name: "MULTI", weight: 5},
	{name: "EVAL", weight: 5, gen: func(g *rcGen) [][]string {
		switch g.r.IntN(5) {
		case 0:
			return rcCmd(rcJoin([]string{"EVAL", rcScriptMove, "3"}, g.keys("s", "s", g.pick(rcFamilies...)))...)
		case 1:
			k := g.keys(g.pick(rcFamilies...), g.pick(rcFamilies...), g.pick(rcFamilies...))
			return rcCmd(rcJoin([]string{"EVAL", rcScriptCount, "3"}, k)...)
		case 2:
			return rcCmd(rcJoin([]string{"EVAL", rcScriptPushExpire, "2"}, g.same("l", 2), []string{g.val(), g.pttl()})...)
		case 3:
			return rcCmd(rcJoin([]string{"EVAL", rcScriptUnion, "3"}, g.same("t", 3), []string{g.member()})...)
		}
		return rcCmd(rcJoin([]string{"EVAL", rcScriptIfExists, "2"}, g.keys(g.pick(rcFamilies...), "n"))...)
	}},
	{name: "DB3", weight: 2},
}

// rcMix is a weighted choice among commands.
type rcMix struct {
	cmds   []rcCommand
	total  int
	simple []rcCommand
	stotal int
}

// newRCMix keeps the commands keep allows (all when nil).
func newRCMix(deterministic bool, keep func(rcCommand) bool) *rcMix {
	m := &rcMix{}
	for _, c := range rcCommands {
		if (deterministic && c.random) || (keep != nil && !keep(c)) {
			continue
		}
		if deterministic && c.blocks {
			c.weight = max(1, c.weight/3)
		}
		m.cmds = append(m.cmds, c)
		m.total += c.weight
		if c.simple {
			m.simple = append(m.simple, c)
			m.stotal += c.weight
		}
	}
	return m
}

func pickCommand(r *rand.Rand, cmds []rcCommand, total int) rcCommand {
	n := r.IntN(total)
	for _, c := range cmds {
		if n < c.weight {
			return c
		}
		n -= c.weight
	}
	return cmds[len(cmds)-1]
}

// step draws the next step: the commands to send together.
func (m *rcMix) step(g *rcGen) [][]string {
	for {
		c := pickCommand(g.r, m.cmds, m.total)
		var out [][]string
		switch c.name {
		case "MULTI":
			out = [][]string{{"MULTI"}}
			for n := 2 + g.r.IntN(3); n > 0; n-- {
				out = append(out, pickCommand(g.r, m.simple, m.stotal).gen(g)...)
			}
			if g.r.IntN(20) == 0 {
				out = append(out, []string{"DISCARD"})
			} else {
				out = append(out, []string{"EXEC"})
			}
		case "DB3":
			out = [][]string{{"SELECT", "3"}}
			for n := 1 + g.r.IntN(3); n > 0; n-- {
				out = append(out, pickCommand(g.r, m.simple, m.stotal).gen(g)...)
			}
			out = append(out, []string{"SELECT", "0"})
		default:
			out = c.gen(g)
		}
		if len(out) > 0 {
			return out
		}
	}
}

// rcLine renders a command for a report, one line.
func rcLine(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 60 {
			a = a[:60] + "..."
		}
		if a == "" || strings.ContainsAny(a, " \"\r\n") {
			a = strconv.Quote(a)
		}
		b.WriteString(a)
	}
	return b.String()
}
