package tests

// Differential tests: one random command stream runs on dfly (4 shards) and
// on a real redis-server side by side, and every reply must be the same.
// The key space is small so commands collide, cross shards and hit
// WRONGTYPE. Replies Redis documents as unordered (SMEMBERS, HGETALL ...)
// are compared as multisets; commands with random or clock-dependent replies
// are not generated, and positive TTLs compare equal.
//
//	DFLY_TEST_SEED=n     the stream's seed (default 1)
//	DFLY_TEST_DIFF_N=n   commands in the RESP2 run (default 20000)
//	DFLY_TEST_DIFF_SKIP=CMD,CMD   commands not to generate
//
// After a mismatch the keys the command names are deleted on both servers,
// so the run goes on and reports every mismatch it meets (up to
// maxMismatches), each with the seed, the command's index and the commands
// before it.

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	diffDefaultSeed = 1
	diffDefaultN    = 20000
	diffHistory     = 20
	maxMismatches   = 10
)

// checkEvery is how often (in commands) all keys are compared; 1 with
// DFLY_TEST_DIFF_CHECK=1, to find the command that made them drift.
var checkEvery = 500

func TestDifferential(t *testing.T) {
	n := uint64(diffDefaultN)
	if raceBuild() {
		// The race pass is for concurrency; the plain run covers the
		// replies. A quarter keeps CI's race pass short.
		n /= 4
	}
	if v, ok := lookupEnvUint("DFLY_TEST_DIFF_N"); ok {
		n = v
	}
	runDifferential(t, 2, int(n), diffCommands)
}

// TestDifferentialRESP3 runs the commands whose replies RESP3 changes
// (maps, sets, doubles, nulls) after HELLO 3 on both servers.
func TestDifferentialRESP3(t *testing.T) {
	n := uint64(diffDefaultN / 4)
	if raceBuild() {
		n /= 4
	}
	if v, ok := lookupEnvUint("DFLY_TEST_DIFF_N"); ok {
		n = v / 4
	}
	var cmds []diffCommand
	for _, c := range diffCommands {
		if c.resp3 {
			cmds = append(cmds, c)
		}
	}
	runDifferential(t, 3, int(n), cmds)
}

// startRedis starts a redis-server next to dfly, whatever the suite's
// target; it skips the test when redis-server is not installed.
func startRedis(t *testing.T) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("differential test: redis-server is not installed (it is the reference)")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		s, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, port)
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

func runDifferential(t *testing.T, proto, n int, cmds []diffCommand) {
	if IsRedis() {
		t.Skip("differential test compares dfly with redis-server; it runs with the dfly target only")
	}
	if _, ok := lookupEnv("DFLY_TEST_DIFF_CHECK"); ok {
		checkEvery = 1
	}
	seed := uint64(diffDefaultSeed)
	if v, ok := lookupEnvUint("DFLY_TEST_SEED"); ok {
		seed = v
	}
	ref := startRedis(t)
	srv := StartServer(t, "--shards", "4")
	dc, rc := srv.Raw(t), ref.Raw(t)
	// A second client on each: the one that WATCHes (diffStep.run).
	dw, rw := srv.Raw(t), ref.Raw(t)
	if proto == 3 {
		for _, c := range []*RawConn{dc, rc} {
			if r := c.Do("HELLO", "3"); r.IsError() {
				t.Fatalf("HELLO 3: %s", r)
			}
		}
	}
	cmds = availableCommands(t, dc, cmds)
	if len(cmds) == 0 {
		t.Fatal("no command to run")
	}

	g := &diffGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), query: func(args ...string) Reply {
		return rc.Do(args...) // TTLs are far away: a read deletes nothing
	}, cmds: cmds}
	total := 0
	for _, c := range cmds {
		total += c.weight
	}
	var history, mismatches []string
	skipped := map[string]int{}
	for i := 0; i < n && len(mismatches) < maxMismatches; i++ {
		pick := g.r.IntN(total)
		var c diffCommand
		for _, c = range cmds {
			if pick < c.weight {
				break
			}
			pick -= c.weight
		}
		st := c.gen(g).named(c.name)
		if known := st.knownMismatch(); known != "" {
			skipped[known]++
			continue
		}
		want, got := st.run(rc, rw), st.run(dc, dw)
		line := st.line()
		if w, d := normalize(st, want), normalize(st, got); w != d {
			var b strings.Builder
			fmt.Fprintf(&b, "mismatch at command %d (DFLY_TEST_SEED=%d, RESP%d)\n", i, seed, proto)
			fmt.Fprintf(&b, "previous commands:\n")
			for _, h := range history {
				fmt.Fprintf(&b, "    %s\n", h)
			}
			fmt.Fprintf(&b, "command:\n    %s\nredis:\n%s\ndfly:\n%s", line,
				indentLines(want.Lines(), "    "), indentLines(got.Lines(), "    "))
			fmt.Fprintf(&b, "\nKEYS on redis: %s\nKEYS on dfly: %s", unorderedString(rc.Do("KEYS", "*"), 1), unorderedString(dc.Do("KEYS", "*"), 1))
			mismatches = append(mismatches, b.String())
			// Bring the two back in step: drop every key the command named.
			if del := st.namedKeys(); len(del) > 0 {
				rc.Do(append([]string{"DEL"}, del...)...)
				dc.Do(append([]string{"DEL"}, del...)...)
			}
		}
		history = append(history, line)
		if len(history) > diffHistory {
			history = history[1:]
		}
		if (i+1)%checkEvery == 0 || i == n-1 {
			// Replies can agree while the data drifts apart: compare every
			// key's type and contents now and then.
			for _, k := range diffKeys {
				w, d := dumpKey(rc, k), dumpKey(dc, k)
				if w == d {
					continue
				}
				mismatches = append(mismatches, fmt.Sprintf("key %s differs after command %d (DFLY_TEST_SEED=%d, RESP%d)\n"+
					"previous commands:\n    %s\nredis:\n%s\ndfly:\n%s", k, i, seed, proto,
					strings.Join(history, "\n    "), indentLines(strings.Split(w, "\n"), "    "), indentLines(strings.Split(d, "\n"), "    ")))
				rc.Do("DEL", k)
				dc.Do("DEL", k)
			}
		}
	}
	for k, n := range skipped {
		t.Logf("not run (known mismatch, %s): %d commands", k, n)
	}
	if len(mismatches) > 0 {
		t.Fatalf("%d mismatch(es) between redis-server and dfly (seed %d, rerun with DFLY_TEST_SEED=%d):\n\n%s",
			len(mismatches), seed, seed, strings.Join(mismatches, "\n\n"))
	}
}

// dumpKey renders key's type and contents (members sorted where the
// order is not defined).
func dumpKey(c *RawConn, key string) string {
	typ := c.Do("TYPE", key).Str
	var r Reply
	switch typ {
	case "none":
		return typ
	case "string":
		r = c.Do("GET", key)
	case "list":
		r = c.Do("LRANGE", key, "0", "-1")
	case "hash":
		return typ + "\n" + unorderedString(c.Do("HGETALL", key), 2)
	case "set":
		return typ + "\n" + unorderedString(c.Do("SMEMBERS", key), 1)
	case "zset":
		r = c.Do("ZRANGE", key, "0", "-1", "WITHSCORES")
	case "stream":
		r = Reply{Kind: KindArray, Elems: []Reply{c.Do("XRANGE", key, "-", "+"),
			fixStreamInfo(c.Do("XINFO", "STREAM", key)), c.Do("XINFO", "GROUPS", key)}}
	}
	ttl := "no ttl"
	if c.Do("TTL", key).Int > 0 {
		ttl = "ttl"
	}
	return typ + " " + ttl + "\n" + r.String()
}

// availableCommands drops the command families dfly does not have yet (one
// harmless probe per family) and single commands COMMAND LIST does not
// name, logging what it skips, so the test runs while families land.
func availableCommands(t *testing.T, dc *RawConn, cmds []diffCommand) []diffCommand {
	skip := map[string]bool{}
	if v, ok := lookupEnv("DFLY_TEST_DIFF_SKIP"); ok {
		for _, name := range strings.Split(v, ",") {
			skip[strings.ToUpper(strings.TrimSpace(name))] = true
		}
	}
	families := map[string]bool{}
	for _, c := range cmds {
		if _, seen := families[c.family]; seen {
			continue
		}
		r := dc.Do(familyProbes[c.family]...)
		families[c.family] = !(r.IsError() && strings.HasPrefix(r.Str, "ERR unknown command"))
		if !families[c.family] {
			t.Logf("dfly lacks the %s family (%s: %s): skipped", c.family, familyProbes[c.family][0], r.Str)
		}
	}
	known := map[string]bool{}
	for _, e := range dc.Do("COMMAND", "LIST").Elems {
		known[strings.ToUpper(e.Str)] = true
	}
	var out []diffCommand
	var missing []string
	for _, c := range cmds {
		switch {
		case !families[c.family] || skip[c.name]:
		case !known[c.name]:
			missing = append(missing, c.name)
		default:
			out = append(out, c)
		}
	}
	if len(missing) > 0 {
		t.Logf("dfly lacks %s: skipped", strings.Join(missing, " "))
	}
	return out
}

// familyProbes are harmless commands that tell whether dfly has a family.
var familyProbes = map[string][]string{
	"strings": {"GET", "diff:probe"},
	"bits":    {"GETBIT", "diff:probe", "0"},
	"keys":    {"EXISTS", "diff:probe"},
	"lists":   {"LLEN", "diff:probe"},
	"hashes":  {"HLEN", "diff:probe"},
	"sets":    {"SCARD", "diff:probe"},
	"zsets":   {"ZCARD", "diff:probe"},
	"sort":    {"SORT_RO", "diff:probe"},
	"geo":     {"GEOPOS", "diff:probe", "m"},
	"streams": {"XLEN", "diff:probe"},
	"hll":     {"PFCOUNT", "diff:probe"},
	"tx":      {"EXISTS", "diff:probe"},
}

// knownMismatches are reported, unfixed differences from Redis. Commands
// that match one are not run (and counted), so the test stays useful until
// the fix lands; then the entry goes. Each key is its reproducer.
var knownMismatches = map[string]func(args []string) bool{
	// Distances come from Go's sin/cos/asin, which can differ from glibc's
	// in the last bit: a stored distance (17 digits) then differs, where
	// replies (4 decimals) do not.
	"GEOSEARCHSTORE d s FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST": func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, "STOREDIST") })
	},
}

func knownMismatch(args []string) string {
	for repro, match := range knownMismatches {
		if match != nil && match(args) {
			return repro
		}
	}
	return ""
}

// diffStep is one generated command and how to compare its reply.
type diffStep struct {
	name string // when not the diffCommand's
	args []string
	// chunks > 0: the top-level array is unordered in groups of chunks
	// elements (SORT BY nosort of a set, rows of a SORT ... GET).
	chunks int
	// fix, when set, rewrites the reply's implementation- or clock-
	// dependent parts (idle times, radix tree sizes) before comparison.
	fix func(Reply) Reply
	// wrap is "MULTI" (inner runs as one transaction), "EVAL" (args is
	// the EVAL that runs inner[0] through redis.pcall), "SCAN" (a whole
	// iteration) or "WATCH" (another client watches inner[0]'s keys while
	// it runs: whether its EXEC then fails is compared too).
	wrap  string
	inner []diffStep
}

// named completes a generated step: its command name first in args.
func (st diffStep) named(def string) diffStep {
	if st.wrap == "MULTI" || st.wrap == "WATCH" {
		return st
	}
	if st.name == "" {
		st.name = def
	}
	st.args = append([]string{st.name}, st.args...)
	return st
}

// run sends the step and reads its reply; a transaction's reply is an
// array of MULTI's, each queued command's and EXEC's replies.
func (st diffStep) run(c, watcher *RawConn) Reply {
	switch st.wrap {
	case "SCAN":
		return st.scan(c)
	case "WATCH":
		return st.watch(c, watcher)
	case "MULTI":
	default:
		return c.Do(st.args...)
	}
	out := Reply{Kind: KindArray, Elems: []Reply{c.Do("MULTI")}}
	for _, in := range st.inner {
		out.Elems = append(out.Elems, c.Do(in.args...))
	}
	out.Elems = append(out.Elems, c.Do("EXEC"))
	return out
}

func (st diffStep) line() string {
	if st.wrap == "WATCH" {
		return "(another client: WATCH " + strings.Join(st.namedKeys(), " ") + ") " + cliLine(st.inner[0].args)
	}
	if st.wrap != "MULTI" {
		return cliLine(st.args)
	}
	parts := []string{"MULTI"}
	for _, in := range st.inner {
		parts = append(parts, cliLine(in.args))
	}
	return strings.Join(append(parts, "EXEC"), " ; ")
}

func (st diffStep) namedKeys() []string {
	out := namedKeys(st.args)
	for _, in := range st.inner {
		for _, k := range namedKeys(in.args) {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

func (st diffStep) knownMismatch() string {
	for _, in := range st.inner {
		if known := knownMismatch(in.args); known != "" {
			return known
		}
	}
	return knownMismatch(st.args)
}

type diffCommand struct {
	name   string
	family string
	weight int
	resp3  bool // also in the RESP3 run
	solo   bool // not inside MULTI or a script (a whole SCAN iteration)
	gen    func(g *diffGen) diffStep
}

// unorderedReplies are the commands Redis documents as replying in no
// particular order.
var unorderedReplies = map[string]bool{
	"SMEMBERS": true, "SUNION": true, "SINTER": true, "SDIFF": true, "KEYS": true,
	"HKEYS": true, "HVALS": true,
}

// normalize renders a reply for comparison.
func normalize(st diffStep, r Reply) string {
	switch st.wrap {
	case "EVAL":
		return normalize(st.inner[0], r)
	case "WATCH":
		if len(r.Elems) != 2 {
			return r.String()
		}
		return normalize(st.inner[0], r.Elems[0]) + "\nwatcher's EXEC: " + r.Elems[1].String()
	case "MULTI":
		// MULTI's, the queued and EXEC's replies; EXEC's elements are
		// each the reply of one queued command.
		var parts []string
		for i, e := range r.Elems {
			if i == len(r.Elems)-1 && e.Kind == KindArray && len(e.Elems) == len(st.inner) {
				for j, x := range e.Elems {
					parts = append(parts, fmt.Sprintf("exec[%d]: %s", j, normalize(st.inner[j], x)))
				}
				continue
			}
			parts = append(parts, e.String())
		}
		return strings.Join(parts, "\n")
	}
	if st.fix != nil && !r.IsError() {
		r = st.fix(r)
	}
	name := strings.ToUpper(st.args[0])
	switch {
	case r.IsError():
	case (name == "TTL" || name == "PTTL") && r.Kind == KindInt && r.Int > 0:
		return "(integer) >0"
	case (name == "EXPIRETIME" && r.Int < 4e9 || name == "PEXPIRETIME" && r.Int < 4e12) && r.Kind == KindInt && r.Int > 0:
		// A relative TTL's deadline depends on each server's clock when
		// it was set; the far absolute times the generator sets (from
		// 4e9 s) compare exactly.
		return "(integer) >0"
	case name == "HGETALL":
		return unorderedString(r, 2)
	case unorderedReplies[name]:
		return unorderedString(r, 1)
	case st.chunks > 0:
		if len(r.Elems) > 0 && r.Elems[0].isContainer() {
			return unorderedString(r, 1) // RESP3's pairs come nested
		}
		return unorderedString(r, st.chunks)
	}
	return r.String()
}

// unorderedString renders a flat container with its elements taken k at a
// time and sorted; a RESP3 map or set is unordered anyway.
func unorderedString(r Reply, k int) string {
	if !r.isContainer() {
		return r.String()
	}
	var groups []string
	for i := 0; i+k <= len(r.Elems); i += k {
		var parts []string
		for _, e := range r.Elems[i : i+k] {
			parts = append(parts, e.String())
		}
		groups = append(groups, strings.Join(parts, " => "))
	}
	slices.Sort(groups)
	return fmt.Sprintf("(%s of %d)\n%s", containerName(r.Kind), len(r.Elems), strings.Join(groups, "\n"))
}

// commandLine quotes args for redis-cli.
func cliLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'\\{}*#>") || strings.IndexFunc(a, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			out[i] = Quote(a)
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// diffKeys is the key space: a few keys per type that the families prefer,
// plus two sharing a hash tag. Elements "0".."2", "a" and "b" make SORT
// patterns such as s* and {g}* name keys of this space.
var diffKeys = []string{"s0", "s1", "s2", "l0", "l1", "h0", "h1", "t0", "t1", "z0", "z1", "p0", "p1", "x0", "x1", "y0", "y1", "{g}a", "{g}b"}

func namedKeys(args []string) []string {
	var out []string
	if len(args) == 0 {
		return nil
	}
	for _, a := range args[1:] {
		if slices.Contains(diffKeys, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

type diffGen struct {
	r    *rand.Rand
	cmds []diffCommand // the commands the run generates
	ms   int           // the last stream ID's milliseconds
	// query asks redis-server something that changes nothing, to shape a
	// command (TYPE, ZRANGE).
	query func(args ...string) Reply
}

func (g *diffGen) typeOf(key string) string { return g.query("TYPE", key).Str }

// lexOK reports whether BYLEX ranges on key have a result Redis defines
// by more than its skiplist's random levels: all members share one score,
// or Redis keeps the set as a listpack, which it walks in order (as
// zset.LexSpan does). A set once converted to a skiplist stays one.
func (g *diffGen) lexOK(key string) bool {
	if g.query("OBJECT", "ENCODING", key).Str == "listpack" {
		return true
	}
	var scores []string
	for i, e := range g.query("ZRANGE", key, "0", "-1", "WITHSCORES").Elems {
		switch {
		case e.Kind == KindArray && len(e.Elems) == 2: // RESP3: [member, score]
			scores = append(scores, e.Elems[1].Str)
		case i%2 == 1:
			scores = append(scores, e.Str)
		}
	}
	for _, sc := range scores {
		if sc != scores[0] {
			return false
		}
	}
	return true
}

// key picks a key, from those with prefix most of the time.
func (g *diffGen) key(prefix string) string {
	if g.r.IntN(4) > 0 {
		var pref []string
		for _, k := range diffKeys {
			if strings.HasPrefix(k, prefix) {
				pref = append(pref, k)
			}
		}
		return pref[g.r.IntN(len(pref))]
	}
	return diffKeys[g.r.IntN(len(diffKeys))]
}

func (g *diffGen) keys(prefix string, lo, hi int) []string {
	n := lo + g.r.IntN(hi-lo+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.key(prefix)
	}
	return out
}

func (g *diffGen) pick(choices ...string) string { return choices[g.r.IntN(len(choices))] }

func (g *diffGen) maybe(p float64, args ...string) []string {
	if g.r.Float64() < p {
		return args
	}
	return nil
}

func (g *diffGen) intIn(lo, hi int) string { return strconv.Itoa(lo + g.r.IntN(hi-lo+1)) }

var (
	diffValues  = []string{"0", "1", "2", "-1", "10", "007", "1.5", "-2.5", "3.0", "1e3", "a", "b", "abc", "", "x y", "9223372036854775807"}
	diffMembers = []string{"0", "1", "2", "-1", "10", "1.5", "a", "b", "c"}
	diffFields  = []string{"f0", "f1", "f2", "f3"}
	diffScores  = []string{"0", "1", "2", "-1", "1.5", "3", "inf", "-inf", "10"}
)

func (g *diffGen) value() string  { return g.pick(diffValues...) }
func (g *diffGen) member() string { return g.pick(diffMembers...) }
func (g *diffGen) field() string  { return g.pick(diffFields...) }
func (g *diffGen) score() string {
	if g.r.IntN(50) == 0 {
		return g.pick("nan", "x", "")
	}
	return g.pick(diffScores...)
}

func (g *diffGen) members(lo, hi int) []string {
	n := lo + g.r.IntN(hi-lo+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.member()
	}
	return out
}

// index is a list or range index, mostly small, sometimes negative.
func (g *diffGen) index() string { return g.intIn(-6, 6) }

func (g *diffGen) ttl() string { return g.intIn(1000, 100000) }

// lon and lat are a point around Sicily (ten km steps), or out of range.
func (g *diffGen) lon() string {
	if g.r.IntN(40) == 0 {
		return g.pick("181", "abc")
	}
	return strconv.FormatFloat(12+float64(g.r.IntN(40))/10, 'f', -1, 64)
}

func (g *diffGen) lat() string { return strconv.FormatFloat(36+float64(g.r.IntN(30))/10, 'f', -1, 64) }

func (g *diffGen) geoRadius() string { return g.pick("0", "10", "50", "100", "300", "5000") }

// geoSearchArgs are GEOSEARCH's (store: GEOSEARCHSTORE's) options after
// the key(s).
func (g *diffGen) geoSearchArgs(store bool) []string {
	var out []string
	if g.r.IntN(3) == 0 {
		out = strs("FROMMEMBER", g.member())
	} else {
		out = strs("FROMLONLAT", g.lon(), g.lat())
	}
	if g.r.IntN(2) == 0 {
		out = append(out, "BYRADIUS", g.geoRadius(), g.pick("km", "mi"))
	} else {
		out = append(out, "BYBOX", g.geoRadius(), g.geoRadius(), "km")
	}
	out = append(out, g.maybe(0.5, g.pick("ASC", "DESC"))...)
	out = append(out, g.maybe(0.3, "COUNT", g.intIn(1, 3))...)
	if store {
		return append(out, g.maybe(0.5, "STOREDIST")...)
	}
	return append(out, g.maybe(0.3, g.pick("WITHDIST", "WITHHASH", "WITHCOORD"))...)
}

// geoTies adapts a GEO search of key whose members share positions (a
// sorted set's equal scores: bulk ZADDs make them): Redis orders equal
// distances as its qsort leaves them, so the step drops COUNT (which ties
// would pick among) and compares the result unordered.
func (g *diffGen) geoTies(key string, st diffStep) diffStep {
	seen := map[string]bool{}
	tied := false
	for i, e := range g.query("ZRANGE", key, "0", "-1", "WITHSCORES").Elems {
		score := e.Str
		if e.Kind == KindArray && len(e.Elems) == 2 { // RESP3
			score = e.Elems[1].String()
		} else if i%2 == 0 {
			continue
		}
		tied = tied || seen[score]
		seen[score] = true
	}
	if !tied {
		return st
	}
	if i := slices.Index(st.args, "COUNT"); i >= 0 {
		st.args = slices.Delete(st.args, i, i+2)
	}
	st.chunks = 1
	return st
}

// badTime is an expire time that is not an integer or at an int64 limit
// (the minimum deletes the key in PEXPIRE, and is an error elsewhere).
func (g *diffGen) badTime() string {
	return g.pick("abc", "1.5", "", "9223372036854775807", "-9223372036854775808")
}

func (g *diffGen) scoreBound() string {
	b := g.pick("0", "1", "2", "1.5", "-1", "inf", "-inf", "+inf", "3")
	if g.r.IntN(3) == 0 && !strings.HasSuffix(b, "inf") {
		b = "(" + b
	}
	return b
}

func (g *diffGen) lexBound() string {
	switch g.r.IntN(6) {
	case 0:
		return "-"
	case 1:
		return "+"
	case 2:
		return "(" + g.member()
	}
	return "[" + g.member()
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func strs(a ...string) []string { return a }

func mkStep(a ...[]string) diffStep { return diffStep{args: concat(a...)} }

// simple is a command of one key of the preferred prefix and fixed extra
// arguments made by rest.
func keyCommand(name, family, prefix string, weight int, resp3 bool, rest func(g *diffGen) []string) diffCommand {
	return diffCommand{name: name, family: family, weight: weight, resp3: resp3, gen: func(g *diffGen) diffStep {
		var extra []string
		if rest != nil {
			extra = rest(g)
		}
		return mkStep(strs(g.key(prefix)), extra)
	}}
}

// lexCommand is a "key min max" lex range command, generated only for a key
// whose members share one score (else ZCARD).
func lexCommand(name string) diffCommand {
	return diffCommand{name: name, family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		key := g.key("z")
		if !g.lexOK(key) {
			return diffStep{args: []string{key}, name: "ZCARD"}
		}
		return mkStep(strs(key, g.lexBound(), g.lexBound()))
	}}
}

// setOptions are SET's optional arguments, with TTLs far in the future. (No
// EXAT in the past: Redis 7.0 then stores a logically expired key that
// DBSIZE counts until active expiry collects it; dfly deletes at once.)
func (g *diffGen) setOptions() []string {
	var out []string
	out = append(out, g.maybe(0.2, g.pick("NX", "XX"))...)
	out = append(out, g.maybe(0.2, "GET")...)
	switch g.r.IntN(8) {
	case 0:
		out = append(out, "EX", g.ttl())
	case 1:
		out = append(out, "PX", g.ttl()+"000")
	case 2:
		out = append(out, "KEEPTTL")
	}
	return out
}

func (g *diffGen) keyValuePairs(prefix string, lo, hi int) []string {
	var out []string
	for _, k := range g.keys(prefix, lo, hi) {
		out = append(out, k, g.value())
	}
	return out
}

func (g *diffGen) fieldValuePairs(lo, hi int) []string {
	n := lo + g.r.IntN(hi-lo+1)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, g.field(), g.value())
	}
	return out
}

func (g *diffGen) scoreMemberPairs(lo, hi int) []string {
	n := lo + g.r.IntN(hi-lo+1)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, g.score(), g.member())
	}
	return out
}

// numKeys is "n key..." for the commands that take a key count.
func (g *diffGen) numKeys(prefix string, lo, hi int) []string {
	ks := g.keys(prefix, lo, hi)
	return append([]string{strconv.Itoa(len(ks))}, ks...)
}

// sortArgs makes SORT's options. Orders Redis leaves open are compared as
// unordered: BY nosort over a set (its internal order) and ALPHA BY, whose
// ties qsort orders as it likes.
func (g *diffGen) sortArgs(key string, readonly bool) diffStep {
	st := diffStep{args: []string{key}}
	nosort, alphaBy := false, false
	switch g.r.IntN(5) {
	case 0:
		st.args = append(st.args, "BY", g.pick("s*", "h*->f1", "h*->f2", "{g}*", "z*", "nokey_*"))
	case 1:
		st.args = append(st.args, "BY", "nosort")
		nosort = true
	}
	hasBy := len(st.args) > 1 && !nosort
	setNosort := nosort && g.typeOf(key) == "set"
	store := !readonly && g.r.IntN(4) == 0
	// ALPHA BY leaves ties to qsort: no LIMIT (the window would depend on
	// them), no STORE (the stored order would), unordered rows.
	alpha := g.r.IntN(2) == 0 && !(store && hasBy)
	alphaBy = alpha && hasBy
	if g.r.IntN(3) == 0 && !setNosort && !alphaBy {
		st.args = append(st.args, "LIMIT", g.intIn(-1, 4), g.intIn(-1, 4))
	}
	gets := 0
	for g.r.IntN(3) == 0 && gets < 3 {
		st.args = append(st.args, "GET", g.pick("#", "s*", "h*->f0", "h*->f1", "{g}*", "l*", "fixed"))
		gets++
	}
	if g.r.IntN(3) == 0 {
		st.args = append(st.args, g.pick("ASC", "DESC"))
	}
	if alpha {
		st.args = append(st.args, "ALPHA")
	}
	if store {
		st.args = append(st.args, "STORE", g.key("l"))
	} else if setNosort || alphaBy {
		st.chunks = max(gets, 1)
	}
	return st
}

var diffCommands = []diffCommand{
	// strings
	{name: "SET", family: "strings", weight: 6, resp3: true, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("s"), g.value()), g.setOptions())
	}},
	keyCommand("GET", "strings", "s", 5, true, nil),
	keyCommand("GETSET", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.value()) }),
	keyCommand("GETDEL", "strings", "s", 1, false, nil),
	keyCommand("GETEX", "strings", "s", 1, false, func(g *diffGen) []string {
		switch g.r.IntN(4) {
		case 0:
			return strs("EX", g.ttl())
		case 1:
			return strs("PX", g.ttl()+"000")
		case 2:
			return strs("PERSIST")
		}
		if g.r.IntN(3) == 0 { // errors come after the key's checks
			return strs(g.pick("EX", "PX"), g.badTime())
		}
		return nil
	}),
	keyCommand("SETNX", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.value()) }),
	keyCommand("SETEX", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.ttl(), g.value()) }),
	keyCommand("APPEND", "strings", "s", 2, false, func(g *diffGen) []string { return strs(g.value()) }),
	keyCommand("STRLEN", "strings", "s", 1, false, nil),
	keyCommand("INCR", "strings", "s", 2, false, nil),
	keyCommand("DECR", "strings", "s", 1, false, nil),
	keyCommand("INCRBY", "strings", "s", 2, false, func(g *diffGen) []string { return strs(g.pick("1", "-3", "100", "x", "9223372036854775807")) }),
	keyCommand("DECRBY", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.pick("1", "-3", "100", "-9223372036854775808")) }),
	keyCommand("INCRBYFLOAT", "strings", "s", 2, true, func(g *diffGen) []string { return strs(g.pick("1", "0.1", "-2.5", "1e3", "x", "inf")) }),
	keyCommand("GETRANGE", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.index(), g.index()) }),
	keyCommand("SETRANGE", "strings", "s", 1, false, func(g *diffGen) []string { return strs(g.intIn(0, 12), g.value()) }),
	{name: "MSET", family: "strings", weight: 2, gen: func(g *diffGen) diffStep { return mkStep(g.keyValuePairs("s", 1, 3)) }},
	{name: "MSETNX", family: "strings", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(g.keyValuePairs("s", 1, 3)) }},
	{name: "MGET", family: "strings", weight: 2, resp3: true, gen: func(g *diffGen) diffStep { return mkStep(g.keys("s", 1, 4)) }},

	// bits
	keyCommand("SETBIT", "bits", "s", 2, false, func(g *diffGen) []string { return strs(g.intIn(0, 40), g.pick("0", "1")) }),
	keyCommand("GETBIT", "bits", "s", 1, false, func(g *diffGen) []string { return strs(g.intIn(0, 40)) }),
	keyCommand("BITCOUNT", "bits", "s", 1, false, func(g *diffGen) []string {
		return g.maybe(0.5, g.index(), g.index(), g.pick("BYTE", "BIT"))
	}),
	keyCommand("BITPOS", "bits", "s", 1, false, func(g *diffGen) []string {
		return concat(strs(g.pick("0", "1")), g.maybe(0.5, g.index()))
	}),
	{name: "BITOP", family: "bits", weight: 1, gen: func(g *diffGen) diffStep {
		op := g.pick("AND", "OR", "XOR", "NOT")
		if op == "NOT" {
			return mkStep(strs(op, g.key("s"), g.key("s")))
		}
		return mkStep(strs(op, g.key("s")), g.keys("s", 1, 3))
	}},

	// keys
	{name: "DEL", family: "keys", weight: 3, gen: func(g *diffGen) diffStep { return mkStep(g.keys("", 1, 3)) }},
	{name: "UNLINK", family: "keys", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(g.keys("", 1, 2)) }},
	{name: "EXISTS", family: "keys", weight: 2, gen: func(g *diffGen) diffStep { return mkStep(g.keys("", 1, 4)) }},
	{name: "TOUCH", family: "keys", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(g.keys("", 1, 3)) }},
	keyCommand("TYPE", "keys", "", 2, false, nil),
	{name: "RENAME", family: "keys", weight: 2, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key(""), g.key(""))) }},
	{name: "RENAMENX", family: "keys", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key(""), g.key(""))) }},
	{name: "COPY", family: "keys", weight: 2, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key(""), g.key("")), g.maybe(0.5, "REPLACE"))
	}},
	keyCommand("EXPIRE", "keys", "", 2, false, func(g *diffGen) []string {
		switch g.r.IntN(10) {
		case 0:
			return strs(g.pick("0", "-5")) // deletes the key
		case 1:
			return concat(strs(g.badTime()), g.maybe(0.3, g.pick("NX", "XX", "GT", "LT", "FOO")))
		}
		return concat(strs(g.ttl()), g.maybe(0.3, g.pick("NX", "XX", "GT", "LT")))
	}),
	keyCommand("PEXPIRE", "keys", "", 1, false, func(g *diffGen) []string {
		if g.r.IntN(10) == 0 {
			return strs(g.badTime())
		}
		return strs(g.ttl() + "000")
	}),
	keyCommand("PERSIST", "keys", "", 1, false, nil),
	keyCommand("TTL", "keys", "", 2, false, nil),
	keyCommand("PTTL", "keys", "", 1, false, nil),
	{name: "DBSIZE", family: "keys", weight: 1, gen: func(g *diffGen) diffStep { return mkStep() }},
	{name: "KEYS", family: "keys", weight: 1, resp3: true, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.pick("*", "s*", "*1", "{g}*", "?0")))
	}},

	// lists
	keyCommand("LPUSH", "lists", "l", 4, false, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("RPUSH", "lists", "l", 4, false, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("LPUSHX", "lists", "l", 1, false, func(g *diffGen) []string { return g.members(1, 2) }),
	keyCommand("RPUSHX", "lists", "l", 1, false, func(g *diffGen) []string { return g.members(1, 2) }),
	keyCommand("LPOP", "lists", "l", 2, true, func(g *diffGen) []string { return g.maybe(0.4, g.intIn(0, 3)) }),
	keyCommand("RPOP", "lists", "l", 2, true, func(g *diffGen) []string { return g.maybe(0.4, g.intIn(0, 3)) }),
	keyCommand("LRANGE", "lists", "l", 3, true, func(g *diffGen) []string { return strs(g.index(), g.index()) }),
	keyCommand("LLEN", "lists", "l", 1, false, nil),
	keyCommand("LINDEX", "lists", "l", 1, true, func(g *diffGen) []string { return strs(g.index()) }),
	keyCommand("LSET", "lists", "l", 1, false, func(g *diffGen) []string { return strs(g.index(), g.member()) }),
	keyCommand("LINSERT", "lists", "l", 1, false, func(g *diffGen) []string {
		return strs(g.pick("BEFORE", "AFTER"), g.member(), g.member())
	}),
	keyCommand("LREM", "lists", "l", 1, false, func(g *diffGen) []string { return strs(g.intIn(-2, 2), g.member()) }),
	keyCommand("LTRIM", "lists", "l", 1, false, func(g *diffGen) []string { return strs(g.intIn(0, 2), g.intIn(-3, 8)) }),
	keyCommand("LPOS", "lists", "l", 1, false, func(g *diffGen) []string {
		return concat(strs(g.member()), g.maybe(0.3, "RANK", g.pick("1", "-1", "2", "0")),
			g.maybe(0.3, "COUNT", g.intIn(0, 3)), g.maybe(0.2, "MAXLEN", g.intIn(0, 4)))
	}),
	{name: "LMOVE", family: "lists", weight: 2, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("l"), g.key("l"), g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT")))
	}},
	{name: "RPOPLPUSH", family: "lists", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key("l"), g.key("l"))) }},
	{name: "LMPOP", family: "lists", weight: 1, resp3: true, gen: func(g *diffGen) diffStep {
		return mkStep(g.numKeys("l", 1, 3), strs(g.pick("LEFT", "RIGHT")), g.maybe(0.5, "COUNT", g.intIn(1, 3)))
	}},

	// hashes
	keyCommand("HSET", "hashes", "h", 4, false, func(g *diffGen) []string { return g.fieldValuePairs(1, 3) }),
	keyCommand("HMSET", "hashes", "h", 1, false, func(g *diffGen) []string { return g.fieldValuePairs(1, 2) }),
	keyCommand("HSETNX", "hashes", "h", 1, false, func(g *diffGen) []string { return strs(g.field(), g.value()) }),
	keyCommand("HGET", "hashes", "h", 2, true, func(g *diffGen) []string { return strs(g.field()) }),
	keyCommand("HMGET", "hashes", "h", 1, true, func(g *diffGen) []string { return strs(g.field(), g.field()) }),
	keyCommand("HDEL", "hashes", "h", 2, false, func(g *diffGen) []string { return strs(g.field(), g.field()) }),
	keyCommand("HLEN", "hashes", "h", 1, false, nil),
	keyCommand("HEXISTS", "hashes", "h", 1, false, func(g *diffGen) []string { return strs(g.field()) }),
	keyCommand("HSTRLEN", "hashes", "h", 1, false, func(g *diffGen) []string { return strs(g.field()) }),
	keyCommand("HINCRBY", "hashes", "h", 2, false, func(g *diffGen) []string { return strs(g.field(), g.pick("1", "-2", "x", "100")) }),
	keyCommand("HINCRBYFLOAT", "hashes", "h", 2, true, func(g *diffGen) []string {
		return strs(g.field(), g.pick("1", "0.5", "-2.25", "1e2", "x"))
	}),
	keyCommand("HKEYS", "hashes", "h", 1, true, nil),
	keyCommand("HVALS", "hashes", "h", 1, true, nil),
	keyCommand("HGETALL", "hashes", "h", 2, true, nil),

	// sets
	keyCommand("SADD", "sets", "t", 4, false, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("SREM", "sets", "t", 2, false, func(g *diffGen) []string { return g.members(1, 2) }),
	keyCommand("SISMEMBER", "sets", "t", 1, true, func(g *diffGen) []string { return strs(g.member()) }),
	keyCommand("SMISMEMBER", "sets", "t", 1, true, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("SCARD", "sets", "t", 1, false, nil),
	keyCommand("SMEMBERS", "sets", "t", 2, true, nil),
	{name: "SUNION", family: "sets", weight: 1, resp3: true, gen: func(g *diffGen) diffStep { return mkStep(g.keys("t", 1, 3)) }},
	{name: "SINTER", family: "sets", weight: 1, resp3: true, gen: func(g *diffGen) diffStep { return mkStep(g.keys("t", 1, 3)) }},
	{name: "SDIFF", family: "sets", weight: 1, resp3: true, gen: func(g *diffGen) diffStep { return mkStep(g.keys("t", 1, 3)) }},
	{name: "SUNIONSTORE", family: "sets", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key("t")), g.keys("t", 1, 3)) }},
	{name: "SINTERSTORE", family: "sets", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key("t")), g.keys("t", 1, 3)) }},
	{name: "SDIFFSTORE", family: "sets", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key("t")), g.keys("t", 1, 3)) }},
	{name: "SINTERCARD", family: "sets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(g.numKeys("t", 1, 3), g.maybe(0.4, "LIMIT", g.intIn(0, 3)))
	}},
	{name: "SMOVE", family: "sets", weight: 1, gen: func(g *diffGen) diffStep { return mkStep(strs(g.key("t"), g.key("t"), g.member())) }},

	// sorted sets
	keyCommand("ZADD", "zsets", "z", 5, true, func(g *diffGen) []string {
		var opts []string
		opts = append(opts, g.maybe(0.15, g.pick("NX", "XX"))...)
		opts = append(opts, g.maybe(0.15, g.pick("GT", "LT"))...)
		opts = append(opts, g.maybe(0.2, "CH")...)
		if g.r.IntN(8) == 0 {
			return concat(opts, strs("INCR"), g.scoreMemberPairs(1, 1))
		}
		return concat(opts, g.scoreMemberPairs(1, 3))
	}),
	keyCommand("ZINCRBY", "zsets", "z", 2, true, func(g *diffGen) []string { return strs(g.score(), g.member()) }),
	keyCommand("ZREM", "zsets", "z", 2, false, func(g *diffGen) []string { return g.members(1, 2) }),
	keyCommand("ZSCORE", "zsets", "z", 2, true, func(g *diffGen) []string { return strs(g.member()) }),
	keyCommand("ZMSCORE", "zsets", "z", 1, true, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("ZCARD", "zsets", "z", 1, false, nil),
	keyCommand("ZRANK", "zsets", "z", 1, false, func(g *diffGen) []string { return strs(g.member()) }),
	keyCommand("ZREVRANK", "zsets", "z", 1, false, func(g *diffGen) []string { return strs(g.member()) }),
	{name: "ZRANGE", family: "zsets", weight: 3, resp3: true, gen: func(g *diffGen) diffStep {
		key := g.key("z")
		switch g.r.IntN(3) {
		case 0:
			return mkStep(strs(key, g.scoreBound(), g.scoreBound(), "BYSCORE"), g.maybe(0.3, "REV"),
				g.maybe(0.3, "LIMIT", g.intIn(0, 2), g.intIn(-1, 3)), g.maybe(0.5, "WITHSCORES"))
		case 1:
			if g.lexOK(key) {
				return mkStep(strs(key, g.lexBound(), g.lexBound(), "BYLEX"), g.maybe(0.3, "REV"))
			}
		}
		return mkStep(strs(key, g.index(), g.index()), g.maybe(0.3, "REV"), g.maybe(0.5, "WITHSCORES"))
	}},
	keyCommand("ZRANGEBYSCORE", "zsets", "z", 1, false, func(g *diffGen) []string {
		return concat(strs(g.scoreBound(), g.scoreBound()), g.maybe(0.5, "WITHSCORES"))
	}),
	keyCommand("ZREVRANGEBYSCORE", "zsets", "z", 1, false, func(g *diffGen) []string {
		return concat(strs(g.scoreBound(), g.scoreBound()), g.maybe(0.3, "LIMIT", g.intIn(0, 2), g.intIn(-1, 3)))
	}),
	lexCommand("ZRANGEBYLEX"),
	keyCommand("ZCOUNT", "zsets", "z", 1, false, func(g *diffGen) []string { return strs(g.scoreBound(), g.scoreBound()) }),
	lexCommand("ZLEXCOUNT"),
	lexCommand("ZREMRANGEBYLEX"),
	keyCommand("ZPOPMIN", "zsets", "z", 1, true, func(g *diffGen) []string { return g.maybe(0.5, g.intIn(0, 3)) }),
	keyCommand("ZPOPMAX", "zsets", "z", 1, true, func(g *diffGen) []string { return g.maybe(0.5, g.intIn(0, 3)) }),
	keyCommand("ZREMRANGEBYRANK", "zsets", "z", 1, false, func(g *diffGen) []string { return strs(g.index(), g.index()) }),
	keyCommand("ZREMRANGEBYSCORE", "zsets", "z", 1, false, func(g *diffGen) []string { return strs(g.scoreBound(), g.scoreBound()) }),
	{name: "ZUNIONSTORE", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("z")), g.zalgebraArgs())
	}},
	{name: "ZINTERSTORE", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("z")), g.zalgebraArgs())
	}},
	{name: "ZUNION", family: "zsets", weight: 1, resp3: true, gen: func(g *diffGen) diffStep {
		return mkStep(g.zalgebraArgs(), g.maybe(0.5, "WITHSCORES"))
	}},
	{name: "ZINTER", family: "zsets", weight: 1, resp3: true, gen: func(g *diffGen) diffStep {
		return mkStep(g.zalgebraArgs(), g.maybe(0.5, "WITHSCORES"))
	}},
	{name: "ZDIFF", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(g.numKeys("z", 1, 3), g.maybe(0.5, "WITHSCORES"))
	}},
	{name: "ZDIFFSTORE", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("z")), g.numKeys("z", 1, 3))
	}},
	{name: "ZRANGESTORE", family: "zsets", weight: 1, gen: func(g *diffGen) diffStep {
		return mkStep(strs(g.key("z"), g.key("z"), g.index(), g.index()))
	}},
	// GEO: points around Sicily in p* keys; searches with every option.
	keyCommand("GEOADD", "geo", "p", 3, false, func(g *diffGen) []string {
		out := g.maybe(0.2, g.pick("NX", "XX", "CH"))
		for n := 1 + g.r.IntN(2); n > 0; n-- {
			out = append(out, g.lon(), g.lat(), g.member())
		}
		return out
	}),
	keyCommand("GEOPOS", "geo", "p", 1, true, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("GEOHASH", "geo", "p", 1, false, func(g *diffGen) []string { return g.members(1, 3) }),
	keyCommand("GEODIST", "geo", "p", 1, false, func(g *diffGen) []string {
		return concat(strs(g.member(), g.member()), g.maybe(0.5, g.pick("m", "km", "mi", "ft")))
	}),
	{name: "GEOSEARCH", family: "geo", weight: 2, resp3: true, gen: func(g *diffGen) diffStep {
		k := g.key("p")
		return g.geoTies(k, mkStep(strs(k), g.geoSearchArgs(false)))
	}},
	{name: "GEOSEARCHSTORE", family: "geo", weight: 1, gen: func(g *diffGen) diffStep {
		k := g.key("p")
		return g.geoTies(k, mkStep(strs(g.key("p"), k), g.geoSearchArgs(true)))
	}},
	{name: "GEORADIUS", family: "geo", weight: 1, gen: func(g *diffGen) diffStep {
		k := g.key("p")
		return g.geoTies(k, mkStep(strs(k, g.lon(), g.lat(), g.geoRadius(), "km"), g.maybe(0.5, g.pick("ASC", "DESC")),
			g.maybe(0.3, "COUNT", g.intIn(1, 3)), g.maybe(0.3, "STORE", g.key("p"))))
	}},
	{name: "ZMPOP", family: "zsets", weight: 1, resp3: true, gen: func(g *diffGen) diffStep {
		return mkStep(g.numKeys("z", 1, 3), strs(g.pick("MIN", "MAX")), g.maybe(0.5, "COUNT", g.intIn(1, 3)))
	}},

	// SORT
	{name: "SORT", family: "sort", weight: 4, resp3: true, gen: func(g *diffGen) diffStep {
		return g.sortArgs(g.key(g.pick("l", "t", "z")), false)
	}},
	{name: "SORT_RO", family: "sort", weight: 2, resp3: true, gen: func(g *diffGen) diffStep {
		return g.sortArgs(g.key(g.pick("l", "t", "z")), true)
	}},
}

// zalgebraArgs are "numkeys key... [WEIGHTS w...] [AGGREGATE a]"; sets
// and sorted sets both qualify as inputs.
func (g *diffGen) zalgebraArgs() []string {
	ks := g.numKeys(g.pick("z", "z", "t"), 1, 3)
	out := ks
	if g.r.IntN(3) == 0 {
		out = append(out, "WEIGHTS")
		for range ks[1:] {
			out = append(out, g.pick("1", "2", "-1", "0.5"))
		}
	}
	if g.r.IntN(3) == 0 {
		out = append(out, "AGGREGATE", g.pick("SUM", "MIN", "MAX"))
	}
	return out
}
