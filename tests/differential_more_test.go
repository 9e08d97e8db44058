package tests

// The differential test's streams and HyperLogLog families, and the
// commands of every family run again inside MULTI/EXEC and through a Lua
// script (redis.pcall), so the transaction's replies and Lua's conversions
// of every reply type are compared with redis-server's too.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func init() {
	diffCommands = append(diffCommands, streamCommands...)
	diffCommands = append(diffCommands, hllCommands...)
	diffCommands = append(diffCommands,
		diffCommand{name: "MULTI", family: "tx", weight: 6, gen: func(g *diffGen) diffStep {
			st := diffStep{wrap: "MULTI"}
			for n := 1 + g.r.IntN(3); n > 0; n-- {
				st.inner = append(st.inner, g.plain(nil))
			}
			return st
		}},
		diffCommand{name: "WATCH", family: "tx", weight: 6, gen: func(g *diffGen) diffStep {
			// A command another client runs on keys one client watches:
			// Redis 7 fails the watcher's EXEC only when the command
			// changed one of them (expired or deleted it too).
			in := g.plain(func(c diffCommand) bool { return c.family != "sort" })
			if len(namedKeys(in.args)) == 0 {
				return in
			}
			return diffStep{name: in.args[0], wrap: "WATCH", inner: []diffStep{in}}
		}},
		diffCommand{name: "EVAL", family: "tx", weight: 6, resp3: true, gen: func(g *diffGen) diffStep {
			// Scripts declare their keys; SORT's BY and GET patterns name
			// keys no script could declare.
			in := g.plain(func(c diffCommand) bool { return c.family != "sort" })
			keys := namedKeys(in.args)
			args := append([]string{"return redis.pcall(unpack(ARGV))", strconv.Itoa(len(keys))}, keys...)
			return diffStep{name: "EVAL", args: append(args, in.args...), wrap: "EVAL", inner: []diffStep{in}}
		}},
	)
}

// watch runs a "WATCH" step: watcher WATCHes the keys inner[0] names, c
// runs it, watcher runs MULTI PING EXEC. The reply is [inner's reply,
// EXEC's].
func (st diffStep) watch(c, watcher *RawConn) Reply {
	keys := st.namedKeys()
	if r := watcher.Do(append([]string{"WATCH"}, keys...)...); r.IsError() {
		return r
	}
	r := c.Do(st.inner[0].args...)
	watcher.Do("MULTI")
	watcher.Do("PING")
	return Reply{Kind: KindArray, Elems: []Reply{r, watcher.Do("EXEC")}}
}

// plain generates one command of a family other than the wrappers' (and
// one ok accepts, when ok is set), its name first in its args.
func (g *diffGen) plain(ok func(diffCommand) bool) diffStep {
	var cmds []diffCommand
	total := 0
	for _, c := range g.cmds {
		if c.family != "tx" && !c.solo && (ok == nil || ok(c)) {
			cmds = append(cmds, c)
			total += c.weight
		}
	}
	pick := g.r.IntN(total)
	for _, c := range cmds {
		if pick < c.weight {
			return c.gen(g).named(c.name)
		}
		pick -= c.weight
	}
	panic("unreachable")
}

// Streams: entry IDs mostly ascend (a counter), sometimes repeat an old one
// or 0-0 (errors); groups g1 g2, consumers c1 c2 c3. Nothing is left to the
// clock: no "*" IDs, no BLOCK, idle times are masked.

// streamID is an XADD ID.
func (g *diffGen) streamID() string {
	switch g.r.IntN(12) {
	case 0:
		return g.pick("0-0", "0", "1-1", strconv.Itoa(g.r.IntN(g.ms+1))+"-0")
	case 1:
		g.ms += g.r.IntN(2)
		return strconv.Itoa(g.ms) + "-*"
	}
	g.ms += 1 + g.r.IntN(2)
	return fmt.Sprintf("%d-%d", g.ms, g.r.IntN(3))
}

// entryIDs picks IDs of key's entries, now and then one that is not.
func (g *diffGen) entryIDs(key string, lo, hi int) []string {
	var have []string
	for _, e := range g.query("XRANGE", key, "-", "+").Elems {
		if len(e.Elems) > 0 {
			have = append(have, e.Elems[0].Str)
		}
	}
	n := lo + g.r.IntN(hi-lo+1)
	out := make([]string, n)
	for i := range out {
		if len(have) > 0 && g.r.IntN(5) > 0 {
			out[i] = have[g.r.IntN(len(have))]
		} else {
			out[i] = g.pick(fmt.Sprintf("%d-%d", g.r.IntN(g.ms+2), g.r.IntN(3)), "0-1", "bad")
		}
	}
	return out
}

// streamBound is an XRANGE bound: - +, an ID, a bare ms, exclusive.
func (g *diffGen) streamBound(key string) string {
	switch g.r.IntN(6) {
	case 0:
		return "-"
	case 1:
		return "+"
	case 2:
		return strconv.Itoa(g.r.IntN(g.ms + 2))
	case 3:
		return "(" + g.entryIDs(key, 1, 1)[0]
	}
	return g.entryIDs(key, 1, 1)[0]
}

// readID is an XREAD / XREADGROUP position.
func (g *diffGen) readID(key string, group bool) string {
	if group && g.r.IntN(3) > 0 {
		return ">"
	}
	switch g.r.IntN(4) {
	case 0:
		return "0"
	case 1:
		return "$"
	}
	return g.entryIDs(key, 1, 1)[0]
}

func (g *diffGen) group() string    { return g.pick("g1", "g2", "g1") }
func (g *diffGen) consumer() string { return g.pick("c1", "c2", "c3") }

// trimArgs are XADD's and XTRIM's trimming options.
func (g *diffGen) trimArgs() []string {
	var out []string
	if g.r.IntN(2) == 0 {
		out = strs("MAXLEN")
		out = append(out, g.maybe(0.5, g.pick("=", "~"))...)
		out = append(out, g.intIn(0, 6))
	} else {
		out = strs("MINID")
		out = append(out, g.maybe(0.5, g.pick("=", "~"))...)
		out = append(out, strconv.Itoa(g.r.IntN(g.ms+2)))
	}
	if len(out) == 3 && out[1] == "~" && g.r.IntN(3) == 0 {
		out = append(out, "LIMIT", g.intIn(0, 3))
	}
	return out
}

// maskPending zeroes the idle time of XPENDING's extended rows.
func maskPending(r Reply) Reply {
	rows := make([]Reply, len(r.Elems))
	for i, row := range r.Elems {
		if row.Kind == KindArray && len(row.Elems) == 4 {
			row.Elems = append([]Reply(nil), row.Elems...)
			row.Elems[2] = Reply{Kind: KindInt}
		}
		rows[i] = row
	}
	r.Elems = rows
	return r
}

// dropFields removes the named fields of a field-value reply (a RESP2
// array of pairs or a RESP3 map).
func dropFields(r Reply, names ...string) Reply {
	if r.Kind != KindArray && r.Kind != KindMap {
		return r
	}
	var out []Reply
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, r.Elems[i].Str) }) {
			out = append(out, r.Elems[i], r.Elems[i+1])
		}
	}
	r.Elems = out
	return r
}

// fixStreamInfo drops XINFO STREAM's radix tree sizes, which depend on
// how the server lays its entries out.
func fixStreamInfo(r Reply) Reply { return dropFields(r, "radix-tree-keys", "radix-tree-nodes") }

// fixConsumers masks XINFO CONSUMERS' idle times.
func fixConsumers(r Reply) Reply {
	rows := make([]Reply, len(r.Elems))
	for i, row := range r.Elems {
		rows[i] = dropFields(row, "idle", "inactive")
	}
	r.Elems = rows
	return r
}

// reclaim is a DEL of key, half the time, when key holds a value not of
// type typ (other families' commands write every key now and then):
// without it most stream and HyperLogLog commands would meet WRONGTYPE.
func (g *diffGen) reclaim(key, typ string) (diffStep, bool) {
	t := g.typeOf(key)
	if t == typ && typ == "string" && !strings.HasPrefix(g.query("GET", key).Str, "HYLL") || t != typ && t != "none" {
		if g.r.IntN(2) == 0 {
			return diffStep{name: "DEL", args: []string{key}}, true
		}
	}
	return diffStep{}, false
}

// groupFirst is, half the time, an XGROUP CREATE ... MKSTREAM of group on
// key when key has no such group, so group commands mostly meet one.
func (g *diffGen) groupFirst(key, group string) (diffStep, bool) {
	if g.r.IntN(2) == 0 {
		return diffStep{}, false
	}
	if t := g.typeOf(key); t != "stream" && t != "none" {
		return diffStep{}, false
	}
	for _, info := range g.query("XINFO", "GROUPS", key).Elems {
		for i := 0; i+1 < len(info.Elems); i += 2 {
			if info.Elems[i].Str == "name" && info.Elems[i+1].Str == group {
				return diffStep{}, false
			}
		}
	}
	return diffStep{name: "XGROUP", args: []string{"CREATE", key, group, "0", "MKSTREAM"}}, true
}

var streamCommands = []diffCommand{
	{name: "XADD", family: "streams", weight: 8, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		if del, ok := g.reclaim(k, "stream"); ok {
			return del
		}
		out := g.maybe(0.1, "NOMKSTREAM")
		if g.r.IntN(4) == 0 {
			out = append(out, g.trimArgs()...)
		}
		return mkStep(strs(k), out, strs(g.streamID()), g.fieldValuePairs(1, 2))
	}},
	keyCommand("XLEN", "streams", "x", 1, false, nil),
	{name: "XRANGE", family: "streams", weight: 3, resp3: true, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		return mkStep(strs(k, g.streamBound(k), g.streamBound(k)), g.maybe(0.3, "COUNT", g.intIn(0, 3)))
	}},
	{name: "XREVRANGE", family: "streams", weight: 2, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		return mkStep(strs(k, g.streamBound(k), g.streamBound(k)), g.maybe(0.3, "COUNT", g.intIn(0, 3)))
	}},
	{name: "XDEL", family: "streams", weight: 2, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		return mkStep(strs(k), g.entryIDs(k, 1, 3))
	}},
	keyCommand("XTRIM", "streams", "x", 1, false, func(g *diffGen) []string { return g.trimArgs() }),
	{name: "XREAD", family: "streams", weight: 2, resp3: true, gen: func(g *diffGen) diffStep {
		ks := g.keys("x", 1, 2)
		out := concat(g.maybe(0.4, "COUNT", g.intIn(1, 3)), strs("STREAMS"), ks)
		for _, k := range ks {
			out = append(out, g.readID(k, false))
		}
		return mkStep(out)
	}},
	{name: "XGROUP", family: "streams", weight: 3, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		switch g.r.IntN(8) {
		case 0, 1, 5, 6:
			return mkStep(strs("CREATE", k, g.group(), g.pick("0", "$", g.entryIDs(k, 1, 1)[0])),
				g.maybe(0.5, "MKSTREAM"), g.maybe(0.2, "ENTRIESREAD", g.intIn(0, 4)))
		case 2:
			return mkStep(strs("SETID", k, g.group(), g.pick("0", "$", g.entryIDs(k, 1, 1)[0])),
				g.maybe(0.2, "ENTRIESREAD", g.intIn(0, 4)))
		case 3:
			if g.r.IntN(2) == 0 {
				return mkStep(strs("DESTROY", k, g.group()))
			}
			return mkStep(strs("HELP"))
		case 4:
			return mkStep(strs("CREATECONSUMER", k, g.group(), g.consumer()))
		}
		return mkStep(strs("DELCONSUMER", k, g.group(), g.consumer()))
	}},
	{name: "XREADGROUP", family: "streams", weight: 4, resp3: true, gen: func(g *diffGen) diffStep {
		ks, grp := g.keys("x", 1, 2), g.group()
		if create, ok := g.groupFirst(ks[0], grp); ok {
			return create
		}
		out := concat(strs("GROUP", grp, g.consumer()), g.maybe(0.4, "COUNT", g.intIn(1, 3)),
			g.maybe(0.15, "NOACK"), strs("STREAMS"), ks)
		for _, k := range ks {
			out = append(out, g.readID(k, true))
		}
		return mkStep(out)
	}},
	{name: "XACK", family: "streams", weight: 2, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		grp := g.group()
		if create, ok := g.groupFirst(k, grp); ok {
			return create
		}
		return mkStep(strs(k, grp), g.entryIDs(k, 1, 3))
	}},
	{name: "XPENDING", family: "streams", weight: 2, resp3: true, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		grp := g.group()
		if create, ok := g.groupFirst(k, grp); ok {
			return create
		}
		if g.r.IntN(2) == 0 {
			return mkStep(strs(k, grp))
		}
		st := mkStep(strs(k, grp, g.streamBound(k), g.streamBound(k), g.intIn(0, 4)), g.maybe(0.4, g.consumer()))
		st.fix = maskPending
		return st
	}},
	{name: "XCLAIM", family: "streams", weight: 2, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		grp := g.group()
		if create, ok := g.groupFirst(k, grp); ok {
			return create
		}
		return mkStep(strs(k, grp, g.consumer(), "0"), g.entryIDs(k, 1, 3),
			g.maybe(0.2, "RETRYCOUNT", g.intIn(0, 5)), g.maybe(0.2, "FORCE"), g.maybe(0.3, "JUSTID"))
	}},
	{name: "XAUTOCLAIM", family: "streams", weight: 2, resp3: true, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		grp := g.group()
		if create, ok := g.groupFirst(k, grp); ok {
			return create
		}
		return mkStep(strs(k, grp, g.consumer(), "0", g.pick("0", "0-0", g.entryIDs(k, 1, 1)[0])),
			g.maybe(0.4, "COUNT", g.intIn(1, 3)), g.maybe(0.3, "JUSTID"))
	}},
	{name: "XINFO", family: "streams", weight: 2, resp3: true, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		switch g.r.IntN(3) {
		case 0:
			st := mkStep(strs("STREAM", k))
			st.fix = fixStreamInfo
			return st
		case 1:
			return mkStep(strs("GROUPS", k))
		}
		st := mkStep(strs("CONSUMERS", k, g.group()))
		st.fix = fixConsumers
		return st
	}},
	keyCommand("XSETID", "streams", "x", 1, false, func(g *diffGen) []string {
		return concat(strs(fmt.Sprintf("%d-%d", max(0, g.ms-1+g.r.IntN(4)), g.r.IntN(3))),
			g.maybe(0.3, "ENTRIESADDED", g.intIn(0, 30)), g.maybe(0.3, "MAXDELETEDID", fmt.Sprintf("%d-0", g.r.IntN(g.ms+1))))
	}),
}

// HyperLogLogs live in keys y0 y1, strings to every other command (GET,
// APPEND, SETRANGE meet them now and then): the stored representation is
// compared byte for byte.
func (g *diffGen) hllElements(lo, hi int) []string {
	n := lo + g.r.IntN(hi-lo+1)
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(g.r.IntN(400))
	}
	return out
}

var hllCommands = []diffCommand{
	{name: "PFADD", family: "hll", weight: 4, gen: func(g *diffGen) diffStep {
		k := g.key("y")
		if del, ok := g.reclaim(k, "string"); ok {
			return del
		}
		return mkStep(strs(k), g.hllElements(0, 4))
	}},
	{name: "PFCOUNT", family: "hll", weight: 2, gen: func(g *diffGen) diffStep { return mkStep(g.keys("y", 1, 3)) }},
	{name: "PFMERGE", family: "hll", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(g.keys("y", 1, 3)) }},
}

// More of every family: bit fields, LCS, absolute expiry times, random
// picks whose result is the whole collection (count >= size, or 0), and
// full SCAN iterations (the set of what they return; cursors are the
// server's own).
func init() {
	diffCommands = append(diffCommands, moreCommands...)
}

// farTime is an absolute Unix time far in the future (seconds), or a
// past one (deletes the key), or a bad one.
func (g *diffGen) farTime(ms bool) string {
	switch g.r.IntN(12) {
	case 0:
		return g.pick("1", "100")
	case 1:
		return g.badTime()
	}
	t := 4000000000 + g.r.IntN(1000)
	if ms {
		return strconv.Itoa(t) + "000"
	}
	return strconv.Itoa(t)
}

// bitfieldOps are BITFIELD's operations (readonly: GET only).
func (g *diffGen) bitfieldOps(readonly bool) []string {
	var out []string
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		typ := g.pick("u8", "i8", "u1", "i16", "u63", "i64", "u5", "i3", "u64", "x8")
		off := g.pick("0", "3", "#1", "16", "#0", "-1")
		switch op := g.r.IntN(4); {
		case readonly || op == 0:
			out = append(out, "GET", typ, off)
		case op == 1:
			out = append(out, "SET", typ, off, g.pick("0", "1", "-1", "127", "255", "300", "-200", "x"))
		case op == 2:
			out = append(out, "INCRBY", typ, off, g.pick("1", "-1", "100", "-300", "x"))
		default:
			out = append(out, "OVERFLOW", g.pick("WRAP", "SAT", "FAIL", "BAD"))
		}
	}
	return out
}

// randomAll is a random-pick command (SRANDMEMBER, HRANDFIELD ...) with a
// count that takes the whole collection, so its reply is defined up to
// order: compared in groups of one, or of two WITH... (RESP2 pairs).
func randomAll(name, family, prefix, with string) diffCommand {
	return diffCommand{name: name, family: family, weight: 1, resp3: true, gen: func(g *diffGen) diffStep {
		st := mkStep(strs(g.key(prefix), g.pick("0", "100000")))
		st.chunks = 1
		if with != "" && g.r.IntN(2) == 0 {
			st.args = append(st.args, with)
			st.chunks = 2
		}
		return st
	}}
}

// scanCommand is a whole SCAN-style iteration run as one step (wrap
// "SCAN"): the union of its pages, compared unordered; key is "" for SCAN.
func scanCommand(name, family, prefix string, pairs bool, opts func(g *diffGen) []string) diffCommand {
	return diffCommand{name: name, family: family, weight: 1, solo: true, gen: func(g *diffGen) diffStep {
		st := diffStep{wrap: "SCAN", chunks: 1}
		if pairs {
			st.chunks = 2
		}
		if prefix != "" {
			st.args = strs(g.key(prefix))
		}
		st.args = append(append(st.args, "0"), opts(g)...)
		return st
	}}
}

// scan runs the iteration of a "SCAN" step: pages from cursor 0 until the
// server gives 0 back (at most 1000), their elements deduplicated (a
// rehash may repeat some) into one array.
func (st diffStep) scan(c *RawConn) Reply {
	args := append([]string(nil), st.args...)
	cur := 2 // NAME key cursor ...
	if st.name == "SCAN" {
		cur = 1
	}
	seen := map[string]bool{}
	out := Reply{Kind: KindArray}
	for range 1000 {
		r := c.Do(args...)
		if r.IsError() || len(r.Elems) != 2 {
			return r
		}
		page := r.Elems[1].Elems
		for i := 0; i+st.chunks <= len(page); i += st.chunks {
			var k strings.Builder
			for _, e := range page[i : i+st.chunks] {
				k.WriteString(e.String() + "\x00")
			}
			if !seen[k.String()] {
				seen[k.String()] = true
				out.Elems = append(out.Elems, page[i:i+st.chunks]...)
			}
		}
		if r.Elems[0].Str == "0" {
			return out
		}
		args[cur] = r.Elems[0].Str
	}
	return Reply{Kind: KindError, Str: "SCAN did not end in 1000 pages"}
}

var moreCommands = []diffCommand{
	keyCommand("BITFIELD", "bits", "s", 2, false, func(g *diffGen) []string { return g.bitfieldOps(false) }),
	keyCommand("BITFIELD_RO", "bits", "s", 1, false, func(g *diffGen) []string { return g.bitfieldOps(true) }),
	{name: "LCS", family: "strings", weight: 1, gen: func(g *diffGen) diffStep {
		opts := g.maybe(0.3, "LEN")
		if len(opts) == 0 && g.r.IntN(2) == 0 {
			opts = concat(strs("IDX"), g.maybe(0.5, "MINMATCHLEN", g.intIn(0, 2)), g.maybe(0.5, "WITHMATCHLEN"))
		}
		return mkStep(strs(g.key("s"), g.key("s")), opts)
	}},
	keyCommand("SUBSTR", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.index(), g.index()) }),
	keyCommand("EXPIREAT", "keys", "", 1, false, func(g *diffGen) []string {
		return concat(strs(g.farTime(false)), g.maybe(0.3, g.pick("NX", "XX", "GT", "LT")))
	}),
	keyCommand("PEXPIREAT", "keys", "", 1, false, func(g *diffGen) []string { return strs(g.farTime(true)) }),
	keyCommand("EXPIRETIME", "keys", "", 1, false, nil),
	keyCommand("PEXPIRETIME", "keys", "", 1, false, nil),
	keyCommand("GETEX", "strings", "s", 1, false, func(g *diffGen) []string {
		if g.r.IntN(2) == 0 {
			return strs("EXAT", g.farTime(false))
		}
		return strs("PXAT", g.farTime(true))
	}),
	{name: "SET", family: "strings", weight: 1, gen: func(g *diffGen) diffStep {
		// Never a time in the past (see setOptions).
		at := strconv.Itoa(4000000000 + g.r.IntN(1000))
		if g.r.IntN(2) == 0 {
			return mkStep(strs(g.key("s"), g.value(), "EXAT", at), g.maybe(0.3, "GET"))
		}
		return mkStep(strs(g.key("s"), g.value(), "PXAT", at+"000"), g.maybe(0.3, "GET"))
	}},
	randomAll("SRANDMEMBER", "sets", "t", ""),
	randomAll("HRANDFIELD", "hashes", "h", "WITHVALUES"),
	randomAll("ZRANDMEMBER", "zsets", "z", "WITHSCORES"),
	randomAll("SPOP", "sets", "t", ""),
	{name: "ZINTERCARD", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(g.numKeys("z", 1, 3), g.maybe(0.4, "LIMIT", g.intIn(0, 3)))
	}},
	lexCommand("ZREVRANGEBYLEX"),
	scanCommand("SCAN", "keys", "", false, func(g *diffGen) []string {
		return concat(g.maybe(0.5, "MATCH", g.pick("*", "s*", "?1", "{g}*")), g.maybe(0.3, "COUNT", g.intIn(1, 5)),
			g.maybe(0.4, "TYPE", g.pick("string", "list", "hash", "set", "zset", "stream", "none")))
	}),
	scanCommand("HSCAN", "hashes", "h", true, func(g *diffGen) []string {
		return concat(g.maybe(0.4, "MATCH", g.pick("*", "f1", "f?")), g.maybe(0.3, "COUNT", g.intIn(1, 3)))
	}),
	scanCommand("SSCAN", "sets", "t", false, func(g *diffGen) []string {
		return concat(g.maybe(0.4, "MATCH", g.pick("*", "1*", "?")), g.maybe(0.3, "COUNT", g.intIn(1, 3)))
	}),
	scanCommand("ZSCAN", "zsets", "z", true, func(g *diffGen) []string {
		return concat(g.maybe(0.4, "MATCH", g.pick("*", "1*", "?")), g.maybe(0.3, "COUNT", g.intIn(1, 3)))
	}),
	{name: "OBJECT", family: "keys", weight: 2, gen: func(g *diffGen) diffStep { return mkStep(strs("ENCODING", g.key(""))) }},

	// Bulk writes that cross Redis's encoding thresholds (128 entries or
	// a 64-byte element for listpacks, 512 integers for an intset), so
	// conversions and the big representations meet every other command.
	keyCommand("SADD", "sets", "t", 1, false, func(g *diffGen) []string { return g.bulk(g.pick("130", "520"), false) }),
	keyCommand("HSET", "hashes", "h", 1, false, func(g *diffGen) []string { return g.bulk("130", true) }),
	keyCommand("ZADD", "zsets", "z", 1, false, func(g *diffGen) []string { return g.bulk("130", true) }),
	keyCommand("RPUSH", "lists", "l", 1, false, func(g *diffGen) []string { return g.bulk("130", false) }),
	keyCommand("HSET", "hashes", "h", 1, false, func(g *diffGen) []string { return strs(g.field(), g.long()) }),
	keyCommand("SADD", "sets", "t", 1, false, func(g *diffGen) []string { return strs(g.long()) }),
	keyCommand("ZADD", "zsets", "z", 1, false, func(g *diffGen) []string { return strs(g.score(), g.long()) }),
	keyCommand("SET", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.long()) }),

	// Blocking commands with a short timeout: served at once when there is
	// data, else a null after the timeout (inside MULTI or a script they
	// never wait). Bad timeouts meet Redis's errors.
	{name: "BLPOP", family: "lists", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(g.keys("l", 1, 2), strs(g.blockTimeout()))
	}},
	{name: "BRPOP", family: "lists", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(g.keys("l", 1, 2), strs(g.blockTimeout()))
	}},
	{name: "BLMOVE", family: "lists", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("l"), g.key("l"), g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT"), g.blockTimeout()))
	}},
	{name: "BLMPOP", family: "lists", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.blockTimeout()), g.numKeys("l", 1, 2), strs(g.pick("LEFT", "RIGHT")), g.maybe(0.5, "COUNT", g.intIn(1, 3)))
	}},
	{name: "BZPOPMIN", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(g.keys("z", 1, 2), strs(g.blockTimeout()))
	}},
	{name: "BZMPOP", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.blockTimeout()), g.numKeys("z", 1, 2), strs(g.pick("MIN", "MAX")), g.maybe(0.5, "COUNT", g.intIn(1, 3)))
	}},
	{name: "XREAD", family: "streams", weight: 1, gen: func(g *diffGen) diffStep {
		k := g.key("x")
		return mkStep(strs("COUNT", g.intIn(1, 3), "BLOCK", g.pick("10", "-1", "x"), "STREAMS", k, g.readID(k, false)))
	}},
}

// blockTimeout is a blocking command's timeout in seconds: short, or bad.
func (g *diffGen) blockTimeout() string {
	if g.r.IntN(15) == 0 {
		return g.pick("-1", "x", "inf", "1e400")
	}
	return g.pick("0.01", "0.02")
}

// long is a 65-byte element (over the listpack element limit, and over
// embstr's 44 bytes).
func (g *diffGen) long() string { return strings.Repeat(g.pick("a", "b", "1"), 64) + g.pick("x", "y") }

// bulk is n elements (pairs: score or field first) over a range wider
// than n, so repeated bulks grow a key further; integers for a set, so
// it may stay an intset.
func (g *diffGen) bulk(count string, pairs bool) []string {
	n, _ := strconv.Atoi(count)
	var out []string
	base := g.r.IntN(1000)
	for i := 0; i < n; i++ {
		m := strconv.Itoa(base + i)
		if pairs {
			out = append(out, strconv.Itoa(g.r.IntN(50)), m)
		} else {
			out = append(out, m)
		}
	}
	return out
}
