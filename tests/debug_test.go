package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// DEBUG HELP is Redis 7.0's, word for word.
func TestDebugHelp(t *testing.T) {
	if IsRedis() {
		t.Skip("compares dfly with redis-server; it runs with the dfly target only")
	}
	d, r := StartServer(t).Raw(t), startRedisOn(t, t.TempDir(), "dump.rdb").Raw(t) // takes DEBUG
	if g, w := d.Do("DEBUG", "HELP"), r.Do("DEBUG", "HELP"); g.String() != w.String() {
		t.Errorf("DEBUG HELP:\n%s\nredis-server:\n%s", g, w)
	}
}

// DEBUG SET-ACTIVE-EXPIRE 0 stops the active expiry: expired keys stay
// (DBSIZE counts them) until read, which deletes them; 1 starts it again.
func TestDebugSetActiveExpire(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	mustOK(t, c.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0"), "DEBUG SET-ACTIVE-EXPIRE 0")
	const n = 50
	for i := range n {
		mustOK(t, c.Do("SET", fmt.Sprint("k", i), "v", "PX", "20"), "SET")
	}
	time.Sleep(600 * time.Millisecond) // several expiry ticks (10 a second)
	if got := c.Do("DBSIZE").Int; got != n {
		t.Fatalf("DBSIZE %d with active expiry off, want the %d expired keys still there", got, n)
	}
	if r := c.Do("GET", "k0"); r.Kind != KindNil {
		t.Fatalf("GET of an expired key: %s", r)
	}
	if got := c.Do("DBSIZE").Int; got != n-1 {
		t.Fatalf("DBSIZE %d after reading one, want %d (the read deletes it)", got, n-1)
	}
	mustOK(t, c.Do("DEBUG", "SET-ACTIVE-EXPIRE", "1"), "DEBUG SET-ACTIVE-EXPIRE 1")
	deadline := time.Now().Add(10 * time.Second)
	for c.Do("DBSIZE").Int != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE %d: active expiry did not come back", c.Do("DBSIZE").Int)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// enable-debug-command no refuses DEBUG with Redis's text; yes allows it
// (local, dfly's default, allows the test's loopback connection).
func TestDebugCommandDisabled(t *testing.T) {
	c := StartServer(t, "--enable-debug-command", "no").Raw(t)
	r := c.Do("DEBUG", "SLEEP", "0")
	want := `ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`
	if r.Kind != KindError || r.Str != want {
		t.Fatalf("DEBUG with enable-debug-command no: %s", r)
	}
	if r := c.Do("CONFIG", "SET", "enable-debug-command", "yes"); !strings.Contains(r.Str, "can't set immutable config") {
		t.Fatalf("CONFIG SET enable-debug-command: %s", r)
	}
	c = StartServer(t, "--enable-debug-command", "local").Raw(t)
	mustOK(t, c.Do("DEBUG", "SLEEP", "0"), "DEBUG over loopback with enable-debug-command local")
}

// The latency monitor records the active expiry's cycles that take at
// least latency-monitor-threshold ms as the "expire-cycle" event, as Redis.
func TestLatencyExpireCycle(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	mustOK(t, c.Do("CONFIG", "SET", "latency-monitor-threshold", "1"), "CONFIG SET")
	mustOK(t, c.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0"), "DEBUG SET-ACTIVE-EXPIRE 0")
	const n = 200_000
	mustOK(t, c.Do("DEBUG", "POPULATE", fmt.Sprint(n), "e"), "DEBUG POPULATE")
	var b strings.Builder
	for i := range n {
		b.WriteString(EncodeCommand("PEXPIRE", fmt.Sprint("e:", i), "1"))
		if i%10_000 == 9_999 {
			c.Write(b.String())
			b.Reset()
			for range 10_000 {
				if r := c.MustRead(); r.Int != 1 {
					t.Fatalf("PEXPIRE: %s", r)
				}
			}
		}
	}
	time.Sleep(10 * time.Millisecond)
	mustOK(t, c.Do("DEBUG", "SET-ACTIVE-EXPIRE", "1"), "DEBUG SET-ACTIVE-EXPIRE 1")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if strings.Contains(c.Do("LATENCY", "LATEST").String(), `"expire-cycle"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no expire-cycle event while %d keys expired (DBSIZE now %d): LATENCY LATEST %s",
				n, c.Do("DBSIZE").Int, c.Do("LATENCY", "LATEST"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	h := c.Do("LATENCY", "HISTORY", "expire-cycle")
	if len(h.Elems) == 0 || h.Elems[0].Elems[1].Int < 1 {
		t.Fatalf("LATENCY HISTORY expire-cycle: %s", h)
	}
}

// DEBUG DIGEST and DIGEST-VALUE are Redis's values for strings, lists,
// sets, sorted sets and hashes in every encoding, TTLs and databases
// included (streams digest to a value of dfly's own).
func TestDebugDigest(t *testing.T) {
	if IsRedis() {
		t.Skip("compares dfly with redis-server; it runs with the dfly target only")
	}
	d, r := StartServer(t).Raw(t), startRedisOn(t, t.TempDir(), "dump.rdb").Raw(t) // takes DEBUG
	both := func(args ...string) {
		t.Helper()
		if g, w := d.Do(args...), r.Do(args...); g.String() != w.String() {
			t.Fatalf("%v:\n%s\nredis-server:\n%s", args, g, w)
		}
	}
	both("DEBUG", "DIGEST")
	for _, db := range []string{"0", "3"} {
		both("SELECT", db)
		both("SET", "s", "abc")
		both("SET", "i", "-123")
		both("SET", "e", "x", "EX", "1000")
		both("RPUSH", "l", "a", "b", "12", "")
		both("SADD", "si", "1", "2", "300")
		both("SADD", "ss", "x", "y", "1")
		both("ZADD", "z", "1.5", "a", "2", "b", "0.1", "c", "-1e30", "d", "inf", "e")
		both("HSET", "h", "f", "v", "g", "12")
		for i := range 300 {
			n := fmt.Sprint(i)
			both("RPUSH", "bl", n+"x")
			both("SADD", "bsi", n)
			both("SADD", "bss", "m"+n)
			both("ZADD", "bz", n, "m"+n)
			both("HSET", "bh", "f"+n, n)
		}
		both("PEXPIRE", "bh", "100000")
		both("DEBUG", "DIGEST-VALUE", "s", "i", "e", "l", "si", "ss", "z", "h", "bl", "bsi", "bss", "bz", "bh", "nokey")
		both("DEBUG", "DIGEST")
	}
	both("DEBUG", "DIGEST-VALUE")
	both("FLUSHALL")
	both("DEBUG", "DIGEST")
}
