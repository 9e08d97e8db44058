package tests

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// migrateFill writes keys of every type under prefix, some with a TTL, and
// returns their names.
func migrateFill(t *testing.T, c *RawConn, prefix string) []string {
	t.Helper()
	var keys []string
	add := func(key string, args ...string) {
		mustOK(t, c.Do(args...), args[0])
		keys = append(keys, key)
	}
	for i := 0; i < 4; i++ { // spread over shards
		n := strconv.Itoa(i)
		add(prefix+"str"+n, "SET", prefix+"str"+n, strings.Repeat("v"+n, 50))
		add(prefix+"ttl"+n, "SET", prefix+"ttl"+n, "short-lived", "PX", "600000")
		add(prefix+"hash"+n, "HSET", prefix+"hash"+n, "f1", "a", "f2", n)
		add(prefix+"list"+n, "RPUSH", prefix+"list"+n, "x", "y", n)
		add(prefix+"set"+n, "SADD", prefix+"set"+n, "m1", "m2", n)
		add(prefix+"zset"+n, "ZADD", prefix+"zset"+n, "1", "a", "2.5", n)
		add(prefix+"stream"+n, "XADD", prefix+"stream"+n, "1-"+strconv.Itoa(i+1), "f", n)
	}
	mustOK(t, c.Do("PEXPIRE", prefix+"hash0", "900000"), "pexpire")
	return keys
}

// sameKey compares two describeKey texts, expiry times within tol ms
// (MIGRATE sends the time left, so the target's absolute time moves by
// the transfer's duration).
func sameKey(a, b string, tol int64) bool {
	fa, fb := strings.SplitN(a, " ", 3), strings.SplitN(b, " ", 3)
	if len(fa) != 3 || len(fb) != 3 || fa[0] != fb[0] || fa[2] != fb[2] {
		return false
	}
	if fa[1] == fb[1] {
		return true
	}
	x, errA := strconv.ParseInt(strings.TrimPrefix(fa[1], "expireat="), 10, 64)
	y, errB := strconv.ParseInt(strings.TrimPrefix(fb[1], "expireat="), 10, 64)
	return errA == nil && errB == nil && x-y <= tol && y-x <= tol
}

// TestMigrate moves keys of every type to another server — one of the
// same kind and a redis-server — with MIGRATE's forms and options, and
// checks Redis's replies: the target holds what the source held (TTLs
// kept), the source deletes what left unless COPY, an existing key
// without REPLACE is the target's BUSYKEY error and stays here, AUTH and
// AUTH2 reach a password-protected target, missing keys answer NOKEY, and
// an unreachable target IOERR.
func TestMigrate(t *testing.T) {
	src := StartServer(t, "--shards", "3")
	sc := src.Raw(t)
	targets := map[string]*Server{"same kind": StartServer(t, "--requirepass", "sesame")}
	if !IsRedis() {
		targets["redis-server"] = startRedis(t)
		rc := targets["redis-server"].Raw(t)
		mustOK(t, rc.Do("CONFIG", "SET", "requirepass", "sesame"), "requirepass")
	}
	for name, dst := range targets {
		t.Run(name, func(t *testing.T) {
			dc := dst.Raw(t)
			mustOK(t, dc.Do("AUTH", "sesame"), "auth")
			host, port := splitAddr(t, dst.Addr)
			prefix := strings.ReplaceAll(name, " ", "-") + ":"
			keys := migrateFill(t, sc, prefix)
			want := map[string]string{}
			for _, k := range keys {
				want[k] = describeKey(sc, k)
			}
			expect := func(r Reply, text string) {
				t.Helper()
				if r.String() != text {
					t.Fatalf("got %q, want %q", r.String(), text)
				}
			}

			// Without the password the target refuses; nothing moves.
			expect(sc.Do("MIGRATE", host, port, keys[0], "0", "5000"),
				"(error) ERR Target instance replied with error: NOAUTH Authentication required.")
			if sc.Do("EXISTS", keys[0]).Int != 1 {
				t.Fatal("the source lost a key the target refused")
			}

			// One key with AUTH, the rest with KEYS and AUTH2, to db 3.
			expect(sc.Do("MIGRATE", host, port, keys[0], "3", "5000", "AUTH", "sesame"), "OK")
			args := []string{"MIGRATE", host, port, "", "3", "5000", "AUTH2", "default", "sesame", "KEYS"}
			expect(sc.Do(append(args, append(keys[1:], prefix+"missing")...)...), "OK")
			for _, k := range keys {
				if n := sc.Do("EXISTS", k).Int; n != 0 {
					t.Fatalf("%s still on the source", k)
				}
			}
			mustOK(t, dc.Do("SELECT", "3"), "select")
			for _, k := range keys {
				if got := describeKey(dc, k); !sameKey(want[k], got, 2000) {
					t.Fatalf("%s on the target: %q, was %q", k, got, want[k])
				}
			}
			expect(dc.Do("DBSIZE"), "(integer) "+strconv.Itoa(len(keys)))

			// Nothing left to move.
			expect(sc.Do("MIGRATE", host, port, keys[0], "3", "5000", "AUTH", "sesame"), "NOKEY")
			expect(sc.Do("MIGRATE", host, port, "", "3", "5000", "AUTH", "sesame", "KEYS", keys[0], keys[1]), "NOKEY")

			// COPY keeps the source's key; an existing key needs REPLACE.
			mustOK(t, sc.Do("SET", keys[0], "second"), "set")
			expect(sc.Do("MIGRATE", host, port, keys[0], "3", "5000", "COPY", "AUTH", "sesame"),
				"(error) ERR Target instance replied with error: BUSYKEY Target key name already exists.")
			expect(sc.Do("GET", keys[0]), `"second"`)
			expect(sc.Do("MIGRATE", host, port, keys[0], "3", "5000", "COPY", "REPLACE", "AUTH", "sesame"), "OK")
			expect(sc.Do("GET", keys[0]), `"second"`)
			expect(dc.Do("GET", keys[0]), `"second"`)
			// Several keys, one refused: the others move, the refused one
			// stays, the reply is the target's error.
			mustOK(t, sc.Do("SET", keys[0], "third"), "set")
			mustOK(t, sc.Do("SET", prefix+"fresh", "new"), "set")
			expect(sc.Do("MIGRATE", host, port, "", "3", "5000", "AUTH", "sesame", "KEYS", keys[0], prefix+"fresh"),
				"(error) ERR Target instance replied with error: BUSYKEY Target key name already exists.")
			expect(sc.Do("GET", keys[0]), `"third"`)
			expect(sc.Do("EXISTS", prefix+"fresh"), "(integer) 0")
			expect(dc.Do("GET", prefix+"fresh"), `"new"`)
			// Another database on the cached connection: SELECT again.
			mustOK(t, sc.Do("SET", prefix+"db5", "five"), "set")
			expect(sc.Do("MIGRATE", host, port, prefix+"db5", "5", "5000", "AUTH", "sesame"), "OK")
			mustOK(t, dc.Do("SELECT", "5"), "select")
			expect(dc.Do("GET", prefix+"db5"), `"five"`)
			// A database the target does not have: its SELECT error.
			expect(sc.Do("MIGRATE", host, port, prefix+"db5", "-1", "5000", "AUTH", "sesame"), "NOKEY")
			mustOK(t, sc.Do("SET", prefix+"dbx", "x"), "set")
			// (Redis then forgets the connection's database as -1, so a
			// second MIGRATE to db -1 skips the SELECT; dfly does the same.)
			expect(sc.Do("MIGRATE", host, port, prefix+"dbx", "-1", "5000", "AUTH", "sesame"),
				"(error) ERR Target instance replied with error: ERR DB index is out of range")
			expect(sc.Do("GET", prefix+"dbx"), `"x"`)
		})
	}

	// Argument errors, as Redis words them.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0"}, "(error) ERR wrong number of arguments for 'migrate' command"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "KEYS", "a"},
			"(error) ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "x"}, "(error) ERR value is not an integer or out of range"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "y", "10"}, "(error) ERR value is not an integer or out of range"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH"}, "(error) ERR syntax error"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH2", "u"}, "(error) ERR syntax error"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "BOGUS"}, "(error) ERR syntax error"},
	} {
		if r := sc.Do(tc.args...); r.String() != tc.want {
			t.Fatalf("%v: %q, want %q", tc.args, r.String(), tc.want)
		}
	}
	// A refused connection (Redis connects without blocking and finds out
	// when it writes): the key stays.
	mustOK(t, sc.Do("SET", "stays", "1"), "set")
	closed := strconv.Itoa(freePort(t))
	start := time.Now()
	if r := sc.Do("MIGRATE", "127.0.0.1", closed, "stays", "0", "1000"); r.String() != "(error) IOERR error or timeout writing to target instance" {
		t.Fatalf("unreachable target: %q", r.String())
	}
	if time.Since(start) > 5*time.Second || sc.Do("GET", "stays").Str != "1" {
		t.Fatal("an unreachable target took too long or the key left")
	}
	// A target that takes the connection and never answers: the timeout
	// ends the wait, the key stays.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			go io.Copy(io.Discard, c)
		}
	}()
	mhost, mport := splitAddr(t, ln.Addr().String())
	start = time.Now()
	if r := sc.Do("MIGRATE", mhost, mport, "stays", "0", "300"); r.String() != "(error) IOERR error or timeout reading to target instance" {
		t.Fatalf("silent target: %q", r.String())
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second || sc.Do("GET", "stays").Str != "1" {
		t.Fatalf("silent target: answered after %v, or the key left", d)
	}
}

// TestMigrateReachesReplicas: a replica deletes what MIGRATE moved (Redis
// propagates it as DEL), and the key is on the target.
func TestMigrateReachesReplicas(t *testing.T) {
	needDfly(t)
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	replica := StartServer(t, "--shards", "3")
	rc := replica.Raw(t)
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	dst := StartServer(t)
	dc := dst.Raw(t)
	for i := 0; i < 6; i++ {
		mustOK(t, mc.Do("SET", "m"+strconv.Itoa(i), strconv.Itoa(i)), "set")
	}
	dhost, dport := splitAddr(t, dst.Addr)
	if r := mc.Do("MIGRATE", dhost, dport, "", "0", "5000", "KEYS", "m0", "m1", "m2", "m3"); r.Str != "OK" {
		t.Fatalf("MIGRATE: %s", r.String())
	}
	if r := mc.Do("MIGRATE", dhost, dport, "m4", "0", "5000", "COPY"); r.Str != "OK" {
		t.Fatalf("MIGRATE COPY: %s", r.String())
	}
	waitDigestsEqual(t, mc, rc)
	if got := rc.Do("DBSIZE").Int; got != 2 {
		t.Fatalf("the replica holds %d keys, want 2 (m4, m5)", got)
	}
	if got := dc.Do("DBSIZE").Int; got != 5 {
		t.Fatalf("the target holds %d keys, want 5", got)
	}
}

// TestMigrateOffloadedValues: with tiered storage the values MIGRATE sends
// may be on disk; they are read back first and arrive whole.
func TestMigrateOffloadedValues(t *testing.T) {
	needDfly(t)
	src := startTiered(t, t.TempDir(), "--shards", "2")
	sc := src.Raw(t)
	var keys []string
	for i := 0; i < 20; i++ {
		k := "off" + strconv.Itoa(i)
		mustOK(t, sc.Do("SET", k, strings.Repeat(strconv.Itoa(i%10), 1000+i)), "set")
		keys = append(keys, k)
	}
	waitOffloaded(t, sc, 20)
	dst := StartServer(t)
	dc := dst.Raw(t)
	host, port := splitAddr(t, dst.Addr)
	if r := sc.Do(append([]string{"MIGRATE", host, port, "", "0", "5000", "COPY", "KEYS"}, keys...)...); r.Str != "OK" {
		t.Fatalf("MIGRATE: %s", r.String())
	}
	for i, k := range keys {
		if got := dc.Do("GET", k).Str; got != strings.Repeat(strconv.Itoa(i%10), 1000+i) {
			t.Fatalf("%s on the target: %d bytes", k, len(got))
		}
	}
}
