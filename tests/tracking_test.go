package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// expectInvalidate reads the next reply of c, which must be an invalidation push
// naming keys (none: a flush's null).
func expectInvalidate(t *testing.T, c *RawConn, keys ...string) {
	t.Helper()
	r := c.MustRead()
	if want := invalidation(keys...); r.String() != want {
		t.Fatalf("got %s, want %s", r, want)
	}
}

// TestClientTracking: client-side caching as Redis 7 serves it. A RESP3
// client tracking in default mode hears once about each key it read when
// another client changes it (any read path: a plain GET, an MGET over
// shards, EXEC, a script), a flush tells it to drop everything, OPTIN
// tracks only after CLIENT CACHING YES, BCAST follows prefixes, and
// REDIRECT sends RESP2 messages to a subscriber of __redis__:invalidate.
func TestClientTracking(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, b := srv.Raw(t), srv.Raw(t)
	a.Do("HELLO", "3")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON"), "OK")
	b.Do("MSET", "k1", "v", "k2", "v", "k3", "v", "k4", "v")

	expectReply(t, a.Do("GET", "k1"), "\"v\"")
	b.Do("SET", "k1", "x")
	expectInvalidate(t, a, "k1")
	b.Do("SET", "k1", "y") // not read since: nothing
	expectReply(t, a.Do("PING"), "PONG")

	a.Do("MGET", "k2", "k3", "k4") // spans shards
	b.Do("DEL", "k3")
	expectInvalidate(t, a, "k3")
	b.Do("APPEND", "k4", "z")
	expectInvalidate(t, a, "k4")

	a.Do("MULTI")
	a.Do("GET", "k1")
	a.Do("STRLEN", "k2")
	a.Do("EXEC")
	b.Do("SET", "k2", "w")
	expectInvalidate(t, a, "k2")

	a.Do("EVAL", "return redis.call('get', KEYS[1])", "1", "k1")
	b.Do("INCR", "n")
	b.Do("SET", "k1", "s")
	expectInvalidate(t, a, "k1")

	a.Do("GET", "e")
	b.Do("SET", "e", "1", "PX", "30") // written: told at once
	expectInvalidate(t, a, "e")
	a.Do("GET", "e")
	time.Sleep(100 * time.Millisecond)
	b.Do("GET", "e") // expired: deleted, told
	expectInvalidate(t, a, "e")

	a.Do("GET", "k1")
	b.Do("FLUSHALL")
	expectInvalidate(t, a)
	expectReply(t, a.Do("CLIENT", "GETREDIR"), "(integer) 0")

	// OPTIN: only the command after CLIENT CACHING YES.
	expectReply(t, a.Do("CLIENT", "TRACKING", "OFF"), "OK")
	expectReply(t, a.Do("CLIENT", "GETREDIR"), "(integer) -1")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "OPTIN"), "OK")
	a.Do("GET", "o1")
	b.Do("SET", "o1", "1")
	expectReply(t, a.Do("PING"), "PONG") // o1 was not cached
	expectReply(t, a.Do("CLIENT", "CACHING", "YES"), "OK")
	a.Do("GET", "o2")
	a.Do("GET", "o3") // the flag covered one command only
	b.Do("SET", "o3", "1")
	b.Do("SET", "o2", "1")
	expectInvalidate(t, a, "o2")
	expectReply(t, a.Do("PING"), "PONG")

	// BCAST with a prefix.
	a.Do("CLIENT", "TRACKING", "OFF")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:"), "OK")
	if info := a.Do("CLIENT", "INFO").Str; !strings.Contains(info, " flags=tB ") || !strings.Contains(info, " redir=0 ") {
		t.Fatalf("CLIENT INFO of a BCAST tracking client: %s", info)
	}
	b.Do("SET", "user:1", "x")
	b.Do("SET", "order:1", "x")
	expectInvalidate(t, a, "user:1")
	expectReply(t, a.Do("PING"), "PONG")

	// NOLOOP: not told of its own writes, still of others'.
	a.Do("CLIENT", "TRACKING", "OFF")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "NOLOOP"), "OK")
	a.Do("GET", "own")
	a.Do("SET", "own", "1")
	expectReply(t, a.Do("PING"), "PONG")
	a.Do("GET", "own")
	b.Do("SET", "own", "2")
	expectInvalidate(t, a, "own")

	// REDIRECT to a RESP2 subscriber.
	sub := srv.Raw(t)
	id := sub.Do("CLIENT", "ID").Int
	sub.Send("SUBSCRIBE", "__redis__:invalidate")
	sub.MustRead()
	d := srv.Raw(t)
	expectReply(t, d.Do("CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(id, 10)), "OK")
	d.Do("GET", "r1")
	b.Do("SET", "r1", "1")
	expectReply(t, sub.MustRead(), "(array)\n  \"message\"\n  \"__redis__:invalidate\"\n  (array)\n    \"r1\"")

	// Redis's argument errors.
	expectReply(t, d.Do("CLIENT", "TRACKING", "ON", "PREFIX", "x"), "(error) ERR PREFIX option requires BCAST mode to be enabled")
	expectReply(t, d.Do("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"), "(error) ERR You can't specify both OPTIN mode and OPTOUT mode")
	expectReply(t, d.Do("CLIENT", "TRACKING", "ON", "BCAST"), "(error) ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	expectReply(t, d.Do("CLIENT", "CACHING", "YES"), "(error) ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	expectReply(t, d.Do("CLIENT", "TRACKING", "OFF"), "OK")
	expectReply(t, d.Do("CLIENT", "CACHING", "NO"), "(error) ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	expectReply(t, d.Do("CLIENT", "TRACKING", "ON", "REDIRECT", "999999999"), "(error) ERR The client ID you want redirect to does not exist")
}

// TestTrackingOptInPipelined: in a pipeline, CLIENT CACHING YES covers the
// command after it even when that command goes in a later dispatch step
// than the ones before (a multi-shard SUNION after a single-shard GET).
func TestTrackingOptInPipelined(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	a, b := srv.Raw(t), srv.Raw(t)
	a.Do("HELLO", "3")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "OPTIN"), "OK")
	b.Do("SADD", "{w}s", "x")
	b.Do("SADD", "{n}s", "y")
	a.Write(EncodeCommand("GET", "p1") + EncodeCommand("CLIENT", "CACHING", "YES") +
		EncodeCommand("SUNION", "{w}s", "{n}s"))
	for range 3 {
		a.MustRead()
	}
	b.Do("SET", "p1", "1") // read before CACHING YES: not tracked
	b.Do("SADD", "{w}s", "z")
	expectInvalidate(t, a, "{w}s")
	b.Do("SADD", "{n}s", "z")
	expectInvalidate(t, a, "{n}s")
}
