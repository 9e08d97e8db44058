package tests

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// COMMAND INFO, GETKEYS, GETKEYSANDFLAGS and DOCS as Redis 7 replies:
// TestCommandInfoReplies checks fixed replies (no Redis needed);
// TestCommandInfoMatchesRedis compares every command with a redis-server.

// commandEntry is the part of a COMMAND INFO entry the tests compare.
type commandEntry struct {
	name              string
	arity             int64
	flags, cats       []string // sorted
	first, last, step int64
	specs             []string // keySpecShape of each
	tips              []string // in order
	subs              map[string]commandEntry
}

func parseCommandEntry(t *testing.T, r Reply) commandEntry {
	t.Helper()
	if r.Kind != KindArray || len(r.Elems) != 10 {
		t.Fatalf("COMMAND INFO entry: want an array of 10, got\n%s", r)
	}
	e := r.Elems
	c := commandEntry{name: e[0].Str, arity: e[1].Int, flags: sortedStrings(e[2]),
		first: e[3].Int, last: e[4].Int, step: e[5].Int, cats: sortedStrings(e[6]),
		subs: map[string]commandEntry{}}
	for _, s := range e[7].Elems {
		c.tips = append(c.tips, s.Str)
	}
	for _, s := range e[8].Elems {
		c.specs = append(c.specs, keySpecShape(t, s))
	}
	for _, s := range e[9].Elems {
		sub := parseCommandEntry(t, s)
		c.subs[sub.name] = sub
	}
	return c
}

func sortedStrings(r Reply) []string {
	var out []string
	for _, e := range r.Elems {
		out = append(out, e.Str)
	}
	sort.Strings(out)
	return out
}

// replyMap is a RESP2 map (a flat array of pairs) by key.
func replyMap(r Reply) map[string]Reply {
	m := map[string]Reply{}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		m[r.Elems[i].Str] = r.Elems[i+1]
	}
	return m
}

// keySpecShape renders a key spec as "flags|begin|find", e.g.
// "OW update|index 1|range 0 1 0" or "RO access|keyword STREAMS 1|range -1 1 2".
func keySpecShape(t *testing.T, r Reply) string {
	t.Helper()
	m := replyMap(r)
	part := func(name string, fields ...string) string {
		p := replyMap(m[name])
		out := []string{p["type"].Str}
		spec := replyMap(p["spec"])
		for _, f := range fields {
			if v, ok := spec[f]; ok {
				if v.Kind == KindInt {
					out = append(out, fmt.Sprint(v.Int))
				} else {
					out = append(out, v.Str)
				}
			}
		}
		return strings.Join(out, " ")
	}
	return strings.Join(sortedStrings(m["flags"]), " ") + "|" +
		part("begin_search", "index", "keyword", "startfrom") + "|" +
		part("find_keys", "lastkey", "keynumidx", "firstkey", "keystep", "limit")
}

func commandInfo(t *testing.T, c *RawConn, name string) (commandEntry, bool) {
	t.Helper()
	r := c.Do("COMMAND", "INFO", name)
	if r.Kind != KindArray || len(r.Elems) != 1 {
		t.Fatalf("COMMAND INFO %s: %s", name, r)
	}
	if r.Elems[0].Kind == KindNil {
		return commandEntry{}, false
	}
	return parseCommandEntry(t, r.Elems[0]), true
}

// Fixed replies, as Redis 7.0 gives them.
func TestCommandInfoReplies(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)

	get, ok := commandInfo(t, c, "get")
	if !ok {
		t.Fatal("COMMAND INFO get: nil")
	}
	want := commandEntry{name: "get", arity: 2, flags: []string{"fast", "readonly"},
		first: 1, last: 1, step: 1, cats: []string{"@fast", "@read", "@string"},
		specs: []string{"RO access|index 1|range 0 1 0"}, subs: map[string]commandEntry{}}
	if fmt.Sprint(get) != fmt.Sprint(want) {
		t.Errorf("COMMAND INFO get:\n got %v\nwant %v", get, want)
	}

	// A container: no flags or keys of its own, its subcommands' entries.
	client, _ := commandInfo(t, c, "client")
	if len(client.flags) != 0 || client.first != 0 || client.last != 0 || client.step != 0 {
		t.Errorf("COMMAND INFO client: flags %v keys %d %d %d, want none and 0 0 0",
			client.flags, client.first, client.last, client.step)
	}
	list, ok := client.subs["client|list"]
	if !ok || list.arity != -2 || strings.Join(list.flags, " ") != "admin loading noscript stale" {
		t.Errorf("COMMAND INFO client: client|list is %+v (present %v)", list, ok)
	}
	if cat, ok := commandInfo(t, c, "acl|cat"); !ok || cat.name != "acl|cat" || cat.arity != -2 {
		t.Errorf("COMMAND INFO acl|cat: %+v (present %v)", cat, ok)
	}
	if e, _ := commandInfo(t, c, "object|encoding"); strings.Join(e.specs, ";") != "RO|index 2|range 0 1 0" ||
		e.first != 2 || e.last != 2 || e.step != 1 {
		t.Errorf("COMMAND INFO object|encoding: %+v", e)
	}

	// Keys found by a count only: 0 0 0 and movablekeys; the destination
	// of a STORE command is its first key.
	for name, keys := range map[string]string{"eval": "0 0 0", "zunion": "0 0 0", "xread": "0 0 0",
		"zunionstore": "1 1 1", "sort": "1 1 1", "georadius": "1 1 1", "mset": "1 -1 2", "rename": "1 2 1"} {
		e, _ := commandInfo(t, c, name)
		if got := fmt.Sprint(e.first, e.last, e.step); got != keys {
			t.Errorf("COMMAND INFO %s: keys %s, want %s", name, got, keys)
		}
		if movable := slices.Contains(e.flags, "movablekeys"); movable != (name != "mset" && name != "rename") {
			t.Errorf("COMMAND INFO %s: flags %v", name, e.flags)
		}
	}
	if e, _ := commandInfo(t, c, "eval"); strings.Join(e.specs, ";") != "RW access update|index 2|keynum 0 1 1" {
		t.Errorf("COMMAND INFO eval: key specs %v", e.specs)
	}

	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"SET", "a", "b"}, `[[a [OW update]]]`},
		{[]string{"SET", "a", "b", "GET"}, `[[a [RW access update]]]`},
		{[]string{"ZUNIONSTORE", "d", "2", "a", "b"}, `[[d [OW update]] [a [RO access]] [b [RO access]]]`},
		{[]string{"SORT", "k", "STORE", "d"}, `[[k [RO access]] [d [OW update]]]`},
		{[]string{"LMOVE", "a", "b", "LEFT", "RIGHT"}, `[[a [RW access delete]] [b [RW insert]]]`},
		{[]string{"EVAL", "return 1", "0"}, `[]`},
	} {
		r := c.Do(append([]string{"COMMAND", "GETKEYSANDFLAGS"}, tc.cmd...)...)
		if got := keysAndFlags(r); got != tc.want {
			t.Errorf("COMMAND GETKEYSANDFLAGS %v: %s, want %s", tc.cmd, got, tc.want)
		}
	}
	if r := c.Do("COMMAND", "GETKEYS", "PING"); !r.IsError() || !strings.Contains(r.Str, "wrong number of arguments") {
		t.Errorf("COMMAND GETKEYS PING: %s", r)
	}

	// DOCS: a map per command; a container's has its subcommands'.
	docs := replyMap(c.Do("COMMAND", "DOCS", "get", "object"))
	if g := replyMap(docs["get"]); g["group"].Str != "string" || g["since"].Kind != KindBulk {
		t.Errorf("COMMAND DOCS get: %s", docs["get"])
	}
	if subs := replyMap(replyMap(docs["object"])["subcommands"]); subs["object|encoding"].Kind != KindArray {
		t.Errorf("COMMAND DOCS object: %s", docs["object"])
	}

	// go-redis reads the whole table and GETKEYSANDFLAGS.
	ctx := context.Background()
	rdb := srv.Client(t, 2)
	infos, err := rdb.Command(ctx).Result()
	if err != nil || infos["get"] == nil || infos["get"].FirstKeyPos != 1 {
		t.Errorf("go-redis COMMAND: %v", err)
	}
	kf, err := rdb.CommandGetKeysAndFlags(ctx, "set", "a", "b").Result()
	if err != nil || len(kf) != 1 || kf[0].Key != "a" || strings.Join(kf[0].Flags, " ") != "OW update" {
		t.Errorf("go-redis COMMAND GETKEYSANDFLAGS set a b: %v %v", kf, err)
	}
}

// keysAndFlags renders a GETKEYSANDFLAGS reply as [[key [flags]] ...].
func keysAndFlags(r Reply) string {
	if r.Kind != KindArray {
		return r.String()
	}
	var keys []string
	for _, e := range r.Elems {
		if len(e.Elems) != 2 {
			return r.String()
		}
		var flags []string
		for _, f := range e.Elems[1].Elems {
			flags = append(flags, f.Str)
		}
		keys = append(keys, "["+e.Elems[0].Str+" ["+strings.Join(flags, " ")+"]]")
	}
	return "[" + strings.Join(keys, " ") + "]"
}

// commandInfoExceptions are the fields of COMMAND INFO where dfly differs
// from Redis 7.0 on purpose, as "command field".
var commandInfoExceptions = map[string]string{
	// Redis 7.2's ZRANK/ZREVRANK ... WITHSCORE.
	"zrank arity":    "WITHSCORE",
	"zrevrank arity": "WITHSCORE",
	// dfly refuses MIGRATE inside scripts: a script must not wait on
	// another server.
	"migrate flags": "noscript",
	// REPLICAOF runs while a replica loads its master's snapshot (so
	// that REPLICAOF NO ONE can end a sync).
	"replicaof flags": "loading",
	"slaveof flags":   "loading",
}

// Subcommands one side has: Redis 7.2's CLIENT NO-TOUCH and SETINFO and
// CLUSTER MYSHARDID are dfly's too; dfly's topology comes from DFLYCLUSTER
// CONFIG or etcd, so it has only CLUSTER's informational subcommands.
var (
	dflyOnlySubcommands = map[string]bool{"client|no-touch": true, "client|setinfo": true, "cluster|myshardid": true}
	redisOnlyContainer  = map[string]bool{"cluster": true}
)

// COMMAND INFO, for every command both have, is Redis's: arity, flags,
// key positions, ACL categories, tips, key specs and subcommands, apart from
// commandInfoExceptions; so are GETKEYS and GETKEYSANDFLAGS.
func TestCommandInfoMatchesRedis(t *testing.T) {
	if IsRedis() {
		t.Skip("compares dfly with redis-server; it runs with the dfly target only")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed: COMMAND INFO is compared with Redis's only where it is (TestCommandInfoReplies checks fixed replies)")
	}
	r := startRedis(t).Raw(t)
	d := StartServer(t).Raw(t)

	var names []string
	for _, n := range d.Do("COMMAND", "LIST").Elems {
		if !strings.Contains(n.Str, "|") {
			names = append(names, n.Str)
		}
	}
	compared, specs := 0, map[string]bool{}
	for _, name := range names {
		want, ok := commandInfo(t, r, name)
		if !ok {
			continue // a command of dfly's only, or of a later Redis
		}
		got, _ := commandInfo(t, d, name)
		compareCommandEntry(t, got, want)
		compared++
		if len(want.specs) > 0 {
			specs[name] = true
		}
	}
	for _, name := range []string{"get", "set", "mset", "zunionstore", "eval", "xread", "sort", "rename", "lmove"} {
		if !specs[name] {
			t.Errorf("%s: key specs not compared", name)
		}
	}
	t.Logf("%d commands compared", compared)

	if g, w := d.Do("COMMAND", "HELP"), r.Do("COMMAND", "HELP"); g.String() != w.String() {
		t.Errorf("COMMAND HELP:\n%s\nredis-server:\n%s", g, w)
	}
	for _, cmd := range [][]string{
		{"SET", "a", "b"}, {"SET", "a", "b", "get"}, {"SET", "k", "get"}, {"SET", "k", "get", "get"},
		{"BITFIELD", "k", "GET", "u8", "0"},
		{"BITFIELD", "k", "SET", "u8", "0", "1"}, {"SORT", "k", "BY", "w_*", "STORE", "d1", "STORE", "d2"},
		{"SORT_RO", "k", "GET", "g_*"}, {"ZUNIONSTORE", "d", "2", "a", "b"}, {"ZINTER", "3", "a", "b", "c"},
		{"XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0"},
		{"MSET", "a", "1", "b", "2"}, {"EVAL", "s", "2", "a", "b", "c"}, {"EVALSHA", "s", "0"},
		{"MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"}, {"GEORADIUS", "k", "0", "0", "1", "m", "STORE", "d"},
		{"GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"}, {"LMOVE", "a", "b", "LEFT", "RIGHT"},
		{"OBJECT", "ENCODING", "k"}, {"MEMORY", "USAGE", "k"}, {"XGROUP", "CREATE", "k", "g", "$"},
		{"SPUBLISH", "ch", "m"}, {"LCS", "a", "b"}, {"PFMERGE", "d", "a", "b"}, {"RENAME", "a", "b"},
		{"BITOP", "AND", "d", "a", "b"}, {"DEL", "a", "b"}, {"BLMPOP", "0", "2", "a", "b", "LEFT"},
		{"SINTERSTORE", "d", "a", "b"}, {"WATCH", "a", "b"}, {"GET"}, {"PING"},
		// Arguments the key specs do not fit: Redis asks the command, and
		// answers an error, or nothing for a command whose keys are optional.
		{"EVAL", "x", "-5"}, {"EVAL", "x", "0"}, {"EVAL", "x", "3", "a"}, {"XREAD", "COUNT", "1", "STREAMS", "a"},
		{"XREAD", "STREAMS", "a", "b", "c"}, {"ZUNION", "0", "a"}, {"ZUNIONSTORE", "d", "5", "a"},
		{"SINTERCARD", "3", "a"}, {"BLMPOP", "0", "3", "a", "LEFT"}, {"GET", "a", "b"}, {"PING", "x"},
		{"ECHO", "a"}, {"COMMAND", "GETKEYS", "GET"}, {"LMPOP", "0", "LEFT"}, {"GEORADIUS", "k", "0", "0", "1", "m", "STORE"},
	} {
		for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
			args := append([]string{"COMMAND", sub}, cmd...)
			if g, w := d.Do(args...), r.Do(args...); g.String() != w.String() {
				t.Errorf("%v:\n%s\nredis-server:\n%s", args, g, w)
			}
		}
	}
}

func compareCommandEntry(t *testing.T, got, want commandEntry) {
	t.Helper()
	check := func(field string, g, w any) {
		t.Helper()
		if fmt.Sprint(g) == fmt.Sprint(w) {
			return
		}
		if _, ok := commandInfoExceptions[got.name+" "+field]; ok {
			return
		}
		t.Errorf("%s: %s %v, redis-server has %v", got.name, field, g, w)
	}
	check("arity", got.arity, want.arity)
	check("flags", got.flags, want.flags)
	check("keys", []int64{got.first, got.last, got.step}, []int64{want.first, want.last, want.step})
	check("categories", got.cats, want.cats)
	check("key specs", got.specs, want.specs)
	check("tips", got.tips, want.tips)
	for name, w := range want.subs {
		if g, ok := got.subs[name]; ok {
			compareCommandEntry(t, g, w)
		} else if !redisOnlyContainer[got.name] {
			t.Errorf("%s: no subcommand %s", got.name, name)
		}
	}
	for name := range got.subs {
		if _, ok := want.subs[name]; !ok && !dflyOnlySubcommands[name] {
			t.Errorf("%s: subcommand %s, which redis-server does not have", got.name, name)
		}
	}
}
