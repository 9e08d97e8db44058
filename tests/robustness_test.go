package tests

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

// Every command the server lists gets random arguments: keys of every type
// (and missing ones), numbers at and past their limits, option words of
// many commands in random places, empty and binary strings. Any reply is
// fine, an error included; the server must answer, stay up and keep
// answering PING. A command that waits (a blocking one with a long
// timeout) costs the connection, which is replaced.
//
//	DFLY_TEST_SEED=n          the arguments' seed (printed)
//	DFLY_TEST_ROBUST_N=n      argument lists per command (default 12)

// robustSkip are commands whose effect would end the run rather than test
// it: they stop the server, turn the connection into something else, or
// stop the server serving for long (CLIENT PAUSE, DEBUG SLEEP, CONFIG SET).
// Transactions, scripts, functions, SELECT, SWAPDB and the flushes are
// in: a random MULTI queues the random commands after it.
var robustSkip = map[string]bool{
	"shutdown": true, "monitor": true, "sync": true, "psync": true, "replicaof": true, "slaveof": true,
	"subscribe": true, "psubscribe": true, "ssubscribe": true, "quit": true, "client": true,
	"dfly": true, "failover": true, "debug": true, "config": true, "replconf": true,
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
	seed := newSeed(t)
	per := 12
	if n, ok := lookupEnvUint("DFLY_TEST_ROBUST_N"); ok {
		per = int(n)
	}
	srv := StartServer(t, "--shards", "3")
	admin := srv.Raw(t)
	var names []string
	for _, e := range admin.Do("COMMAND", "LIST").Elems {
		if !robustSkip[e.Str] {
			names = append(names, e.Str)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"str", "num", "list", "hash", "set", "zset", "stream", "hll", "geo", "missing", "str2", "{t}a", "{t}b"}
	setup := func(c *RawConn) {
		c.Do("FLUSHALL")
		c.Do("SET", "str", "hello world")
		c.Do("SET", "num", "42")
		c.Do("RPUSH", "list", "a", "b", "c", "1", "2")
		c.Do("HSET", "hash", "f", "v", "n", "7")
		c.Do("SADD", "set", "a", "b", "1")
		c.Do("ZADD", "zset", "1", "a", "2", "b", "2.5", "c")
		c.Do("XADD", "stream", "1-1", "f", "v")
		c.Do("XGROUP", "CREATE", "stream", "g", "0")
		c.Do("PFADD", "hll", "a", "b")
		c.Do("GEOADD", "geo", "13.36", "38.11", "palermo", "15.08", "37.5", "catania")
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
	c := srv.Raw(t)
	c.Timeout = 3 * time.Second
	setup(c)
	sent := 0
	for _, name := range names {
		for i := 0; i < per; i++ {
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
			if _, err := c.Read(); err != nil {
				if !alive(srv) {
					t.Fatalf("seed %d: the server died after %q (command %d):\n%s", seed, args, sent, srv.Output())
				}
				// It waits (a blocking command): a fresh connection.
				c = srv.Raw(t)
				c.Timeout = 3 * time.Second
			}
			if sent%200 == 0 {
				setup(c)
			}
		}
	}
	if !alive(srv) {
		t.Fatalf("seed %d: the server died at the end:\n%s", seed, srv.Output())
	}
	t.Logf("seed %d: %d commands over %d command names", seed, sent, len(names))
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
