package tests

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Client-side caching as Redis 7.0 sends it, proven against redis-server
// too (DFLY_TEST_TARGET=redis): what one command's invalidations look like
// in each mode, BCAST's prefixes, NOLOOP, expiry, flushes, SWAPDB,
// redirection and its breaking, and the tracking table's INFO fields.

// invalidation renders an invalidation push of keys (none: a flush's null).
func invalidation(keys ...string) string {
	if len(keys) == 0 {
		return "(push)\n  \"invalidate\"\n  (nil)"
	}
	s := "(push)\n  \"invalidate\"\n  (array)"
	for _, k := range keys {
		s += "\n    \"" + k + "\""
	}
	return s
}

// trackingInfo renders CLIENT TRACKINGINFO's RESP3 reply.
func trackingInfo(flags []string, redirect int64, prefixes ...string) string {
	s := "(map)\n  \"flags\" =>\n    (set)"
	for _, f := range flags {
		s += "\n      \"" + f + "\""
	}
	s += "\n  \"redirect\" => (integer) " + strconv.FormatInt(redirect, 10)
	if len(prefixes) == 0 {
		return s + "\n  \"prefixes\" => (empty array)"
	}
	s += "\n  \"prefixes\" =>\n    (array)"
	for _, p := range prefixes {
		s += "\n      \"" + p + "\""
	}
	return s
}

// readReplies reads n replies of c, rendered.
func readReplies(c *RawConn, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.MustRead().String()
	}
	return out
}

// expectQuiet proves nothing is pending on c: the next reply is PING's.
func expectQuiet(t *testing.T, c *RawConn) {
	t.Helper()
	expectReply(t, c.Do("PING"), "PONG")
}

func resp3Tracking(t *testing.T, srv *Server, opts ...string) *RawConn {
	t.Helper()
	c := srv.Raw(t)
	c.Do("HELLO", "3")
	expectReply(t, c.Do(append([]string{"CLIENT", "TRACKING", "ON"}, opts...)...), "OK")
	return c
}

// TestTrackingDefaultPerKey: in the default mode Redis 7.0 sends one
// message per invalidated key, for MSET, DEL and EXEC alike; a client's
// own write is answered first, its invalidations follow.
func TestTrackingDefaultPerKey(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, b := resp3Tracking(t, srv), srv.Raw(t)
	read := func(keys ...string) {
		a.Do(append([]string{"MGET"}, keys...)...)
	}
	want := []string{invalidation("k1"), invalidation("k2"), invalidation("k3")}
	check := func(what string, got []string) {
		t.Helper()
		slices.Sort(got) // keys on several shards: any order
		if !slices.Equal(got, want) {
			t.Fatalf("%s: got %q, want %q", what, got, want)
		}
		expectQuiet(t, a)
	}
	read("k1", "k2", "k3")
	expectReply(t, b.Do("MSET", "k1", "1", "k2", "2", "k3", "3"), "OK")
	check("MSET", readReplies(a, 3))
	read("k1", "k2", "k3")
	expectReply(t, b.Do("DEL", "k1", "k2", "k3", "nokey"), "(integer) 3")
	check("DEL", readReplies(a, 3))
	read("k1", "k2", "k3")
	b.Do("MULTI")
	b.Do("SET", "k1", "x")
	b.Do("SET", "k2", "x")
	b.Do("INCR", "k3")
	expectReply(t, b.Do("EXEC"), "(array)\n  OK\n  OK\n  (integer) 1")
	check("EXEC", readReplies(a, 3))

	// Its own write: the reply, then the invalidations.
	read("k1", "k2", "k3")
	a.Send("MSET", "k1", "1", "k2", "2", "k3", "3")
	expectReply(t, a.MustRead(), "OK")
	check("own MSET", readReplies(a, 3))
}

// TestTrackingBCAST: several prefixes, BCAST without one (every key), the
// overlap errors, one message per prefix carrying the keys one command
// changed (keys of one shard: dfly batches a shard's step), NOLOOP.
func TestTrackingBCAST(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, b := resp3Tracking(t, srv, "BCAST", "PREFIX", "b", "PREFIX", "a"), srv.Raw(t)
	expectReply(t, b.Do("MSET", "a{t}1", "1", "b{t}1", "2", "c{t}1", "3", "a{t}2", "x", "a{t}1", "y"), "OK")
	expectReply(t, a.MustRead(), invalidation("a{t}1", "a{t}2"))
	expectReply(t, a.MustRead(), invalidation("b{t}1"))
	expectQuiet(t, a)
	expectReply(t, b.Do("SET", "c{t}2", "1"), "OK")
	expectQuiet(t, a)

	overlap := func(p, q string, existing bool) string {
		if existing {
			return "(error) ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap."
		}
		return "(error) ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
	}
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab"), overlap("ab", "a", true))
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "xy"), overlap("x", "xy", false))
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "xy", "PREFIX", "x"), overlap("xy", "x", false))
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "z", "PREFIX", "z"), overlap("z", "z", false))
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c"), "OK")
	expectReply(t, a.Do("CLIENT", "TRACKINGINFO"), trackingInfo([]string{"on", "bcast"}, 0, "a", "b", "c"))
	expectReply(t, a.Do("CLIENT", "TRACKING", "OFF"), "OK")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab"), "OK")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"), overlap("a", "ab", true))

	// No prefix: every key, under the prefix "".
	expectReply(t, a.Do("CLIENT", "TRACKING", "OFF"), "OK")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST"), "OK")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q"), overlap("q", "", true))
	expectReply(t, a.Do("CLIENT", "TRACKINGINFO"), trackingInfo([]string{"on", "bcast"}, 0, ""))
	b.Do("MULTI")
	b.Do("SET", "{t}y", "1")
	b.Do("SET", "{t}x", "1")
	b.Do("GET", "{t}z")
	b.Do("EXEC")
	expectReply(t, a.MustRead(), invalidation("{t}x", "{t}y"))
	expectQuiet(t, a)
	// Its own write, without NOLOOP: after the reply.
	a.Send("SET", "own", "1")
	expectReply(t, a.MustRead(), "OK")
	expectReply(t, a.MustRead(), invalidation("own"))

	// NOLOOP: not its own writes, still others'.
	expectReply(t, a.Do("CLIENT", "TRACKING", "OFF"), "OK")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"), "OK")
	expectReply(t, a.Do("SET", "own", "2"), "OK")
	expectQuiet(t, a)
	expectReply(t, b.Do("SET", "own", "3"), "OK")
	expectReply(t, a.MustRead(), invalidation("own"))
	expectReply(t, a.Do("CLIENT", "TRACKINGINFO"), trackingInfo([]string{"on", "bcast", "noloop"}, 0, ""))
}

// TestTrackingNoLoop: a NOLOOP client hears of others' writes of keys it
// read, never of its own, in the default mode and BCAST, whatever runs the
// command: its connection's batch, a coordinator (keys on several shards,
// EXEC across shards), a script.
func TestTrackingNoLoop(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	keys := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	for _, mode := range [][]string{{"NOLOOP"}, {"NOLOOP", "BCAST"}} {
		a, b := resp3Tracking(t, srv, mode...), srv.Raw(t)
		a.Do(append([]string{"MGET"}, keys...)...)
		expectReply(t, a.Do("MSET", "n1", "1", "n2", "2", "n3", "3", "n4", "4", "n5", "5", "n6", "6"), "OK")
		expectReply(t, a.Do("DEL", "n1", "n2", "n3", "n4"), "(integer) 4")
		a.Do("MULTI")
		for _, k := range keys {
			a.Do("SET", k, "x")
		}
		expectReply(t, a.Do("EXEC"), "(array)\n  OK\n  OK\n  OK\n  OK\n  OK\n  OK")
		if len(mode) == 1 { // Redis's BCAST takes a script's writes for another client's
			expectReply(t, a.Do("EVAL", "for _, k in ipairs(KEYS) do redis.call('set', k, 'y') end return 1", "6", "n1", "n2", "n3", "n4", "n5", "n6"), "(integer) 1")
		}
		expectQuiet(t, a)
		a.Do(append([]string{"MGET"}, keys...)...)
		expectReply(t, b.Do("SET", "n2", "y"), "OK")
		expectReply(t, a.MustRead(), invalidation("n2"))
		expectQuiet(t, a)
		a.Close()
	}
}

// TestTrackingExpiryFlushSwap: a key that expires is invalidated, whether
// a read finds it expired (active expiry off) or the active cycle deletes
// it; FLUSHDB and FLUSHALL send a null to every tracking client, read or
// not; SWAPDB sends nothing (Redis 7.0).
func TestTrackingExpiryFlushSwap(t *testing.T) {
	srv := StartServer(t)
	a, b, idle := resp3Tracking(t, srv), srv.Raw(t), resp3Tracking(t, srv)
	if r := b.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0"); r.IsError() {
		t.Logf("no lazy expiry check: DEBUG SET-ACTIVE-EXPIRE: %s", r) // dfly's DEBUG may lack it
	} else {
		expectReply(t, b.Do("SET", "lazy", "v", "PX", "100"), "OK")
		expectReply(t, a.Do("GET", "lazy"), "\"v\"")
		time.Sleep(200 * time.Millisecond)
		expectQuiet(t, a)
		expectReply(t, b.Do("GET", "lazy"), "(nil)")
		expectReply(t, a.MustRead(), invalidation("lazy"))
		expectReply(t, b.Do("DEBUG", "SET-ACTIVE-EXPIRE", "1"), "OK")
	}
	expectReply(t, b.Do("SET", "active", "v", "PX", "100"), "OK")
	expectReply(t, a.Do("GET", "active"), "\"v\"")
	expectReply(t, a.MustRead(), invalidation("active")) // nobody reads it again
	expectQuiet(t, a)

	expectReply(t, b.Do("SET", "s", "v"), "OK")
	expectReply(t, a.Do("GET", "s"), "\"v\"")
	expectReply(t, b.Do("SWAPDB", "0", "1"), "OK")
	expectQuiet(t, a)
	expectReply(t, b.Do("SWAPDB", "0", "1"), "OK")
	expectReply(t, b.Do("FLUSHDB"), "OK")
	expectReply(t, a.MustRead(), invalidation())
	expectReply(t, idle.MustRead(), invalidation())
	expectReply(t, b.Do("FLUSHALL"), "OK")
	expectReply(t, a.MustRead(), invalidation())
	expectReply(t, idle.MustRead(), invalidation())
	expectQuiet(t, a)
}

// TestTrackingRedirect: REDIRECT to a RESP2 client reaches it only in
// Pub/Sub mode (a flush as a null bulk), to a RESP3 one as pushes, across
// HELLO switches; when the target is gone a RESP3 tracking client hears
// tracking-redir-broken with each invalidation (a RESP2 one nothing), and
// TRACKINGINFO says broken_redirect from then on.
func TestTrackingRedirect(t *testing.T) {
	srv := StartServer(t)
	b, target, e := srv.Raw(t), srv.Raw(t), srv.Raw(t)
	id := target.Do("CLIENT", "ID").Int
	tid := strconv.FormatInt(id, 10)
	expectReply(t, e.Do("CLIENT", "TRACKING", "ON", "REDIRECT", tid), "OK")
	expectReply(t, e.Do("CLIENT", "GETREDIR"), "(integer) "+tid)
	step := func(val string) {
		t.Helper()
		e.Do("GET", "z")
		expectReply(t, b.Do("SET", "z", val), "OK")
	}
	step("1") // RESP2, not subscribed: lost
	expectQuiet(t, target)
	target.Do("HELLO", "3")
	step("2")
	expectReply(t, target.MustRead(), invalidation("z"))
	target.Do("HELLO", "2")
	step("3")
	expectQuiet(t, target)
	target.Send("SUBSCRIBE", "other") // any subscription will do, as in Redis
	target.MustRead()
	step("4")
	expectReply(t, target.MustRead(), "(array)\n  \"message\"\n  \"__redis__:invalidate\"\n  (array)\n    \"z\"")
	e.Do("GET", "z")
	expectReply(t, b.Do("FLUSHALL"), "OK")
	expectReply(t, target.MustRead(), "(array)\n  \"message\"\n  \"__redis__:invalidate\"\n  (nil)")

	// The target leaves.
	a := srv.Raw(t)
	a.Do("HELLO", "3")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "REDIRECT", tid), "OK")
	target.Close()
	waitFor(t, 5*time.Second, "the target gone", func() bool { return !strings.Contains(b.Do("CLIENT", "LIST").Str, "id="+tid+" ") })
	expectReply(t, a.Do("CLIENT", "TRACKINGINFO"), trackingInfo([]string{"on"}, id))
	a.Do("GET", "z")
	e.Do("GET", "z")
	expectReply(t, b.Do("SET", "z", "5"), "OK")
	broken := "(push)\n  \"tracking-redir-broken\"\n  (integer) " + tid
	expectReply(t, a.MustRead(), broken)
	expectQuiet(t, a)
	expectQuiet(t, e) // RESP2: told nothing
	a.Do("GET", "z")
	expectReply(t, b.Do("SET", "z", "6"), "OK")
	expectReply(t, a.MustRead(), broken)
	expectReply(t, a.Do("CLIENT", "TRACKINGINFO"), trackingInfo([]string{"on", "broken_redirect"}, id))
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "REDIRECT", tid), "(error) ERR The client ID you want redirect to does not exist")
	expectReply(t, a.Do("CLIENT", "TRACKING", "ON", "REDIRECT", tid, "BOGUS"), "(error) ERR The client ID you want redirect to does not exist")
}

// infoInt is field's value in INFO section.
func infoInt(t *testing.T, c *RawConn, section, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(c.Do("INFO", section).Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %s", field, line)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// TestTrackingTableInfo: INFO's tracking_clients, tracking_total_keys,
// _items and _prefixes follow the table; a client that disconnects leaves
// nothing in dfly's table (Redis keeps its keys until they change or the
// table's bound evicts them).
func TestTrackingTableInfo(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, b, o := resp3Tracking(t, srv), resp3Tracking(t, srv), srv.Raw(t)
	const n = 10000
	var pipe strings.Builder
	for i := range n {
		pipe.WriteString(EncodeCommand("GET", "key:"+strconv.Itoa(i)))
	}
	a.Write(pipe.String())
	readReplies(a, n)
	b.Do("MGET", "key:1", "key:2")
	stats := func() [3]int64 {
		return [3]int64{infoInt(t, o, "stats", "tracking_total_keys"), infoInt(t, o, "stats", "tracking_total_items"), infoInt(t, o, "stats", "tracking_total_prefixes")}
	}
	if got := stats(); got != [3]int64{n, n + 2, 0} {
		t.Fatalf("keys, items, prefixes: %v", got)
	}
	if got := infoInt(t, o, "clients", "tracking_clients"); got != 2 {
		t.Fatalf("tracking_clients %d", got)
	}
	expectReply(t, o.Do("SET", "key:1", "x"), "OK")
	if got := stats(); got != [3]int64{n - 1, n, 0} {
		t.Fatalf("after a write: %v", got)
	}
	c := resp3Tracking(t, srv, "BCAST", "PREFIX", "p", "PREFIX", "q")
	d := resp3Tracking(t, srv, "BCAST", "PREFIX", "p")
	if got := stats(); got[2] != 2 {
		t.Fatalf("prefixes: %v", got)
	}
	c.Close()
	d.Do("CLIENT", "TRACKING", "OFF")
	a.Close()
	waitFor(t, 5*time.Second, "tracking_clients 1", func() bool { return infoInt(t, o, "clients", "tracking_clients") == 1 })
	if got := stats(); got[2] != 0 {
		t.Fatalf("prefixes after they left: %v", got)
	}
	if IsRedis() {
		return // Redis keeps a gone client's keys until they change
	}
	waitFor(t, 5*time.Second, "the table to drop a's keys", func() bool { return stats() == [3]int64{1, 1, 0} })
}
