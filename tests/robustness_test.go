package tests

import (
	"bufio"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dfly/dfly/rdb"
)

// Every command the server lists gets random arguments: keys of every type
// (and missing ones), numbers at and past their limits, option words of
// many commands in random places, empty and binary strings. Any reply is
// fine, an error included; the server must answer, stay up and keep
// answering PING. A command that waits (a blocking one with a long
// timeout) costs the connection, which is replaced.
//
//	DFLY_TEST_SEED=n          the arguments' seed (printed)
//	DFLY_TEST_ROBUST_N=n      argument lists per command and protocol (default 8)

// robustSkip are commands whose effect would end the run rather than test
// it: they stop the server, turn the connection into something else, or
// stop the server serving for long (CLIENT PAUSE, DEBUG SLEEP, CONFIG SET,
// MIGRATE to whatever host the arguments name, waiting up to their timeout).
// Transactions, scripts, functions, SELECT, SWAPDB and the flushes are
// in: a random MULTI queues the random commands after it.
var robustSkip = map[string]bool{
	"shutdown": true, "monitor": true, "sync": true, "psync": true, "replicaof": true, "slaveof": true,
	"subscribe": true, "psubscribe": true, "ssubscribe": true, "quit": true, "client": true,
	"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true, // a reply per channel
	"dfly": true, "failover": true, "debug": true, "config": true, "replconf": true, "migrate": true,
}

var robustWords = []string{
	"EX", "PX", "EXAT", "PXAT", "NX", "XX", "GT", "LT", "CH", "INCR", "KEEPTTL", "GET", "WITHSCORES",
	"WITHSCORE", "LIMIT", "COUNT", "MATCH", "TYPE", "BY", "STORE", "ASC", "DESC", "ALPHA", "BLOCK",
	"STREAMS", "GROUP", "NOACK", "MAXLEN", "MINID", "~", "=", "*", "$", ">", "-", "+", "0-0", "1-1",
	"LEFT", "RIGHT", "BEFORE", "AFTER", "REV", "BYSCORE", "BYLEX", "AGGREGATE", "SUM", "MIN", "MAX",
	"WEIGHTS", "IDLE", "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "RANK", "MAXLEN", "FROMMEMBER",
	"FROMLONLAT", "BYRADIUS", "BYBOX", "m", "km", "WITHCOORD", "WITHDIST", "WITHHASH", "ANY",
	"STOREDIST", "IDX", "LEN", "MINMATCHLEN", "WITHMATCHLEN", "ENCODING", "FREQ", "REPLACE",
	"ABSTTL", "DB", "COPY", "KEYS", "AUTH", "u8", "i64", "#1", "OVERFLOW", "SAT", "FAIL", "WRAP",
	"AND", "OR", "XOR", "NOT", "BIT", "BYTE", "HELP", "USAGE", "SAMPLES", "CREATE", "SETID",
	"DESTROY", "CREATECONSUMER", "DELCONSUMER", "MKSTREAM", "ENTRIESREAD", "CONSUMERS", "STREAM",
	"FULL", "NOMKSTREAM", "PERSIST", "EXPIRE", "WITHVALUES", "NOW", "SCHEDULE",
}

var robustNumbers = []string{
	"0", "1", "-1", "2", "3", "10", "100", "-100", "1000000", "9223372036854775807",
	"-9223372036854775808", "9223372036854775808", "18446744073709551616", "1.5", "-0.5", "inf",
	"-inf", "+inf", "nan", "1e308", "1e309", "0x10", "", " 1", "4294967296", "2147483648", "-0",
	"(1", "[a", "(", "[", "-inf", "65536", "536870912", "1e-320",
}

func TestEveryCommandSurvivesRandomArguments(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only: Redis's own crashes are not ours to find")
	}
	// The -race pass runs RESP2 and the dfly replica (raceSubset).
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			raceSubset(t, proto == 2)
			randomArguments(t, proto)
		})
	}
	// With tiered storage every string of 8 bytes or more is offloaded:
	// commands meet values on disk, being written and being read back.
	t.Run("tiered", func(t *testing.T) {
		raceSubset(t, false)
		randomArguments(t, 2, "--tiered_prefix", filepath.Join(t.TempDir(), "tier"), "--tiered_min_value_size", "8")
	})
	// A dfly replica, and a redis-server one, follow the random commands;
	// each must hold what the master does at every set-up.
	t.Run("replicated", func(t *testing.T) { randomArguments(t, 2, "replica") })
	t.Run("redis-replica", func(t *testing.T) {
		raceSubset(t, false)
		needRedisReplica(t)
		randomArguments(t, 2, "redis-replica")
	})
}

// randomArguments runs TestEveryCommandSurvivesRandomArguments over
// connections speaking RESP proto, the server started with flags.
func randomArguments(t *testing.T, proto int, flags ...string) {
	seed := newSeed(t)
	per := 8
	if n, ok := lookupEnvUint("DFLY_TEST_ROBUST_N"); ok {
		per = int(n)
	}
	replicaKind := ""
	if len(flags) == 1 && strings.HasSuffix(flags[0], "replica") {
		replicaKind, flags = flags[0], nil
	}
	replicated := replicaKind != ""
	srv := StartServer(t, append([]string{"--shards", "3"}, flags...)...)
	admin := srv.Raw(t)
	var rc *RawConn
	switch replicaKind {
	case "replica":
		rc = StartServer(t, "--shards", "2").Raw(t)
		mustOK(t, rc.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(srv.Port)), "REPLICAOF")
	case "redis-replica":
		rc = startRedisReplica(t, srv, t.TempDir(), 0).Raw(t)
	}
	var mc *RawConn // the master, for the replica's comparisons
	if replicated {
		waitLinkUp(t, rc)
		mc = srv.Raw(t)
	}
	equal := func() {
		if replicaKind == "redis-replica" {
			waitCaughtUp(t, mc, rc)
		}
		waitDigestsEqual(t, mc, rc)
	}
	var names []string
	for _, e := range admin.Do("COMMAND", "LIST").Elems {
		if !robustSkip[e.Str] {
			names = append(names, e.Str)
		}
	}
	keys := []string{"str", "num", "list", "hash", "set", "zset", "stream", "hll", "geo", "missing", "str2", "{t}a", "{t}b"}
	rng := rand.New(rand.NewPCG(seed, 7))
	var history [][]string // the last commands sent, for a failure's report
	setup := func(c *RawConn) {
		if replicated && len(history) > 0 {
			// Before the data goes: the replica holds what the master does
			// (the marker: the random commands may have emptied it all).
			mustOK(t, mc.Do("SET", "robust:end", strconv.Itoa(len(history))), "SET")
			equal()
		}
		for _, cmd := range [][]string{{"DISCARD"}, {"FLUSHALL"}, {"SET", "str", "hello world"},
			{"SET", "str2", strings.Repeat("long value ", 40)}, {"SET", "num", "42"},
			{"RPUSH", "list", "a", "b", "c", "1", "2"}, {"HSET", "hash", "f", "v", "n", "7"}, {"SADD", "set", "a", "b", "1"},
			{"ZADD", "zset", "1", "a", "2", "b", "2.5", "c"}, {"XADD", "stream", "1-1", "f", "v"},
			{"XGROUP", "CREATE", "stream", "g", "0"}, {"PFADD", "hll", "a", "b"},
			{"GEOADD", "geo", "13.36", "38.11", "palermo", "15.08", "37.5", "catania"}} {
			c.Send(cmd...)
			if _, err := c.Read(); err != nil {
				t.Fatalf("seed %d: %q: %v; the last commands before:\n%q", seed, cmd, err, history)
			}
		}
		// Every command gets exactly one reply: an extra or a missing one
		// shows as a mismatched echo.
		mark := "mark-" + strconv.Itoa(len(history)) + "-" + strconv.FormatUint(rng.Uint64(), 36)
		c.Send("ECHO", mark)
		if r, err := c.Read(); err != nil || r.Str != mark {
			t.Fatalf("seed %d: ECHO %s answered %q (%v): replies out of step after:\n%q", seed, mark, r.Str, err, history)
		}
	}
	arg := func() string {
		switch rng.IntN(6) {
		case 0, 1:
			return keys[rng.IntN(len(keys))]
		case 2:
			return robustNumbers[rng.IntN(len(robustNumbers))]
		case 3, 4:
			return robustWords[rng.IntN(len(robustWords))]
		default:
			b := make([]byte, rng.IntN(8))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return string(b)
		}
	}
	dial := func() *RawConn {
		c := srv.Raw(t)
		c.Timeout = 3 * time.Second
		if proto == 3 {
			if r := c.Do("HELLO", "3"); r.Kind != KindMap {
				t.Fatalf("HELLO 3: %s", r)
			}
		}
		return c
	}
	c := dial()
	setup(c)
	sent := 0
	// Rounds over every name in a new order each: so a random MULTI is
	// followed by EXEC or DISCARD now and then, with random commands queued.
	for i := 0; i < per; i++ {
		rng.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		for _, name := range names {
			args := []string{name}
			for n := rng.IntN(7); n > 0; n-- {
				args = append(args, arg())
			}
			if strings.HasPrefix(name, "b") || name == "xread" || name == "xreadgroup" {
				// A blocking command's wait must end within the reply's
				// deadline: its timeout argument is made short.
				for j := 1; j < len(args); j++ {
					if args[j] == "0" || args[j] == "BLOCK" {
						args[j] = "0.01"
					}
				}
			}
			c.Send(args...)
			sent++
			if history = append(history, args); len(history) > 40 {
				history = history[1:]
			}
			if _, err := c.Read(); err != nil {
				if !alive(srv) {
					t.Fatalf("seed %d: the server died after %q (command %d):\n%s", seed, args, sent, srv.Output())
				}
				// It waits (a blocking command): a fresh connection.
				c = dial()
			}
			if sent%200 == 0 {
				setup(c)
			}
		}
	}
	if !alive(srv) {
		t.Fatalf("seed %d: the server died at the end:\n%s", seed, srv.Output())
	}
	// A panic recovered inside a command (recover.go) is a bug too.
	if p := infoField(srv.Raw(t), "stats", "command_panics"); p != "0" {
		t.Fatalf("seed %d: %s commands panicked:\n%s", seed, p, srv.Output())
	}
	if replicated {
		mustOK(t, mc.Do("SET", "robust:end", "1"), "SET")
		equal()
	}
	tier := ""
	if len(flags) > 0 {
		a := srv.Raw(t)
		tier = " (tiered: " + infoField(a, "tiered", "tiered_writes") + " writes, " + infoField(a, "tiered", "tiered_reads") + " reads)"
	}
	t.Logf("seed %d: %d commands over %d command names%s", seed, sent, len(names), tier)
}

// alive reports whether srv answers PING on a new connection.
func alive(srv *Server) bool {
	select {
	case <-srv.exited:
		return false
	default:
	}
	for i := 0; i < 3; i++ {
		conn, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
		if err == nil {
			c := &RawConn{t: srv.t, conn: conn, reader: bufio.NewReader(conn), Timeout: 5 * time.Second}
			_, werr := io.WriteString(conn, EncodeCommand("PING"))
			r, err := c.Read()
			conn.Close()
			if werr == nil && err == nil && r.Str == "PONG" {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// RESTORE of damaged DUMP payloads: bytes of real payloads (every type,
// streams with groups, listpacks and big encodings) changed at random,
// the checksum made right again so the body is parsed. Any reply is
// fine; the server must stay up.
func TestRestoreSurvivesDamagedPayloads(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only: Redis's own crashes are not ours to find")
	}
	seed := newSeed(t)
	n := 1500
	if v, ok := lookupEnvUint("DFLY_TEST_ROBUST_N"); ok {
		n = int(v) * 100
	}
	srv := StartServer(t, "--shards", "2")
	c := srv.Raw(t)
	c.Timeout = 5 * time.Second
	for _, cmd := range [][]string{
		{"SET", "s", "hello"}, {"SET", "n", "12345"}, {"SET", "big", strings.Repeat("abc", 3000)},
		{"RPUSH", "l", "a", "b", "1", "2", strings.Repeat("x", 100)},
		{"HSET", "h", "f", "v", "n", "7"}, {"SADD", "si", "1", "2", "3"}, {"SADD", "ss", "a", "b"},
		{"ZADD", "z", "1", "a", "2.5", "b"},
		{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "g", "w"}, {"XGROUP", "CREATE", "x", "grp", "0"},
		{"XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "x", ">"},
		{"PFADD", "hll", "a", "b", "c"},
	} {
		if r := c.Do(cmd...); r.IsError() {
			t.Fatalf("%v: %s", cmd, r.Str)
		}
	}
	for i := 0; i < 300; i++ {
		c.Send("HSET", "hbig", "field"+strconv.Itoa(i), strings.Repeat("v", i%70))
		c.Send("ZADD", "zbig", strconv.Itoa(i), "m"+strconv.Itoa(i))
		c.Send("RPUSH", "lbig", strconv.Itoa(i*7919))
		c.Send("SADD", "sbig", "member"+strconv.Itoa(i))
	}
	for i := 0; i < 1200; i++ {
		c.MustRead()
	}
	var payloads []string
	for _, k := range []string{"s", "n", "big", "l", "h", "si", "ss", "z", "x", "hll", "hbig", "zbig", "lbig", "sbig"} {
		payloads = append(payloads, c.Do("DUMP", k).Str)
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	restored := 0
	for i := 0; i < n; i++ {
		p := []byte(payloads[rng.IntN(len(payloads))])
		body := len(p) - 10
		for m := 1 + rng.IntN(4); m > 0; m-- {
			j := rng.IntN(body)
			switch rng.IntN(3) {
			case 0:
				p[j] = byte(rng.IntN(256))
			case 1:
				p[j] ^= 1 << rng.IntN(8)
			default:
				p[j] = []byte{0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x40, 0xc0}[rng.IntN(8)]
			}
		}
		binary.LittleEndian.PutUint64(p[len(p)-8:], rdb.CRC64(0, p[:len(p)-8]))
		c.Send("RESTORE", "r", "0", string(p), "REPLACE")
		r, err := c.Read()
		if err == nil && r.Str == "OK" {
			restored++
			// Use what was restored: a value built wrong shows here.
			for _, cmd := range [][]string{{"GET", "r"}, {"STRLEN", "r"}, {"LRANGE", "r", "0", "-1"}, {"LPOP", "r"},
				{"SMEMBERS", "r"}, {"SPOP", "r"}, {"HGETALL", "r"}, {"ZRANGE", "r", "0", "-1", "WITHSCORES"},
				{"ZPOPMIN", "r"}, {"XINFO", "STREAM", "r", "FULL"}, {"XADD", "r", "*", "a", "b"},
				{"XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "r", ">"}, {"PFCOUNT", "r"}, {"PFADD", "r", "zz"},
				{"DUMP", "r"}, {"OBJECT", "ENCODING", "r"}, {"MEMORY", "USAGE", "r"}} {
				c.Send(cmd...)
			}
			for j := 0; j < 17; j++ {
				if _, err := c.Read(); err != nil {
					break
				}
			}
		}
		if err != nil {
			if !alive(srv) {
				t.Fatalf("seed %d: the server died restoring payload %d %q:\n%s", seed, i, p, srv.Output())
			}
			c = srv.Raw(t)
			c.Timeout = 5 * time.Second
		}
		if i%50 == 0 {
			// Read what was restored, so a value built wrong is also used.
			for _, cmd := range [][]string{{"TYPE", "r"}, {"DUMP", "r"}, {"OBJECT", "ENCODING", "r"}, {"MEMORY", "USAGE", "r"}} {
				c.Send(cmd...)
				c.Read()
			}
		}
	}
	if !alive(srv) {
		t.Fatalf("seed %d: the server died:\n%s", seed, srv.Output())
	}
	if p := infoField(srv.Raw(t), "stats", "command_panics"); p != "0" {
		t.Fatalf("seed %d: %s commands panicked over restored values:\n%s", seed, p, srv.Output())
	}
	t.Logf("seed %d: %d damaged payloads, %d of them restored (the rest refused)", seed, n, restored)
}
