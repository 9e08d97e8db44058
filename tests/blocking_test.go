package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// readWithin reads one reply, failing when none comes within d.
func readWithin(t *testing.T, c *RawConn, d time.Duration) Reply {
	t.Helper()
	got := make(chan Reply, 1)
	go func() {
		r, err := c.Read()
		if err == nil {
			got <- r
		}
	}()
	select {
	case r := <-got:
		return r
	case <-time.After(d):
		t.Fatalf("no reply within %v", d)
	}
	return Reply{}
}

func TestBlockingListPops(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, b, p := srv.Raw(t), srv.Raw(t), srv.Raw(t)

	// Woken by a push from another client.
	a.Send("BLPOP", "q1", "q2", "0")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("RPUSH", "q2", "x"), "(integer) 1")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"q2\"\n  \"x\"")
	expectReply(t, p.Do("EXISTS", "q2"), "(integer) 0")

	// A timeout answers nil after roughly that long.
	start := time.Now()
	expectReply(t, a.Do("BLPOP", "empty", "0.2"), "(nil)")
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Fatalf("BLPOP 0.2 took %v", d)
	}

	// First come, first served.
	a.Send("BRPOP", "fifo", "0")
	time.Sleep(50 * time.Millisecond)
	b.Send("BRPOP", "fifo", "0")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("LPUSH", "fifo", "one"), "(integer) 1")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"fifo\"\n  \"one\"")
	expectReply(t, p.Do("LPUSH", "fifo", "two"), "(integer) 1")
	expectReply(t, readWithin(t, b, 2*time.Second), "(array)\n  \"fifo\"\n  \"two\"")

	// One push of three elements serves two waiters and leaves one.
	a.Send("BLPOP", "multi", "0")
	time.Sleep(30 * time.Millisecond)
	b.Send("BLPOP", "multi", "0")
	time.Sleep(30 * time.Millisecond)
	expectReply(t, p.Do("RPUSH", "multi", "1", "2", "3"), "(integer) 3")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"multi\"\n  \"1\"")
	expectReply(t, readWithin(t, b, 2*time.Second), "(array)\n  \"multi\"\n  \"2\"")
	expectReply(t, p.Do("LRANGE", "multi", "0", "-1"), "(array)\n  \"3\"")

	// Data already there: no blocking; WRONGTYPE before a later list.
	expectReply(t, p.Do("SET", "str", "v"), "OK")
	expectReply(t, a.Do("BLPOP", "nothing", "str", "multi", "0"), "(error) WRONGTYPE Operation against a key holding the wrong kind of value")
	expectReply(t, a.Do("BLPOP", "nothing", "multi", "0"), "(array)\n  \"multi\"\n  \"3\"")

	// Errors.
	expectReply(t, a.Do("BLPOP", "k", "abc"), "(error) ERR timeout is not a float or out of range")
	expectReply(t, a.Do("BLPOP", "k", "-1"), "(error) ERR timeout is negative")
}

func TestBlockingWakeByRenameAndMove(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, p := srv.Raw(t), srv.Raw(t)
	// A RENAME into the waited key serves the client.
	a.Send("BLPOP", "target", "0")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("RPUSH", "source", "moved"), "(integer) 1")
	expectReply(t, p.Do("RENAME", "source", "target"), "OK")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"target\"\n  \"moved\"")

	// BLMOVE across (probably different) shards, woken by a push.
	for i := 0; i < 4; i++ {
		src, dst := fmt.Sprintf("src%d", i), fmt.Sprintf("dst%d", i)
		a.Send("BLMOVE", src, dst, "LEFT", "RIGHT", "0")
		time.Sleep(30 * time.Millisecond)
		expectReply(t, p.Do("RPUSH", src, "e"), "(integer) 1")
		expectReply(t, readWithin(t, a, 2*time.Second), "\"e\"")
		expectReply(t, p.Do("LRANGE", dst, "0", "-1"), "(array)\n  \"e\"")
		expectReply(t, p.Do("EXISTS", src), "(integer) 0")
	}
	expectReply(t, a.Do("BRPOPLPUSH", "none", "d", "0.05"), "(nil)")
	expectReply(t, a.Do("BLMPOP", "0.05", "2", "x", "y", "LEFT"), "(nil)")
	expectReply(t, p.Do("RPUSH", "y", "1", "2", "3"), "(integer) 3")
	expectReply(t, a.Do("BLMPOP", "0", "2", "x", "y", "RIGHT", "COUNT", "2"), "(array)\n  \"y\"\n  (array)\n    \"3\"\n    \"2\"")
}

// TestBlockingDisconnect: a client that disconnects while blocked leaves
// nothing behind: a later push stays in the list.
func TestBlockingDisconnect(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	a, p := srv.Raw(t), srv.Raw(t)
	a.Send("BLPOP", "gone", "0")
	time.Sleep(50 * time.Millisecond)
	a.Close()
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("RPUSH", "gone", "kept"), "(integer) 1")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("LRANGE", "gone", "0", "-1"), "(array)\n  \"kept\"")
	if info := p.Do("INFO", "clients").String(); !strings.Contains(info, "connected_clients:1") {
		t.Fatalf("after disconnect: %s", info)
	}
}

func TestBlockingZSetPops(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, p := srv.Raw(t), srv.Raw(t)
	a.Send("BZPOPMIN", "z1", "z2", "0")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("ZADD", "z2", "2", "b", "1", "a"), "(integer) 2")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"z2\"\n  \"a\"\n  \"1\"")
	expectReply(t, a.Do("BZPOPMAX", "z2", "0"), "(array)\n  \"z2\"\n  \"b\"\n  \"2\"")
	expectReply(t, a.Do("BZPOPMAX", "z2", "0.05"), "(nil)")
	a.Send("BZMPOP", "0", "2", "m1", "m2", "MAX", "COUNT", "5")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("ZADD", "m1", "1", "x", "3", "y"), "(integer) 2")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"m1\"\n  (array)\n    (array)\n      \"y\"\n      \"3\"\n    (array)\n      \"x\"\n      \"1\"")
	expectReply(t, p.Do("SET", "s", "v"), "OK")
	expectReply(t, a.Do("BZPOPMIN", "s", "0"), "(error) WRONGTYPE Operation against a key holding the wrong kind of value")
}

func TestBlockingStreams(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, p := srv.Raw(t), srv.Raw(t)
	expectReply(t, p.Do("XADD", "s1", "1-1", "f", "old"), "\"1-1\"")
	// $ means entries added after the call.
	a.Send("XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "$", "$")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("XADD", "s2", "5-1", "f", "new"), "\"5-1\"")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  (array)\n    \"s2\"\n    (array)\n      (array)\n        \"5-1\"\n        (array)\n          \"f\"\n          \"new\"")
	// Data already there: answered at once; a timeout answers nil.
	expectReply(t, a.Do("XREAD", "BLOCK", "1000", "STREAMS", "s1", "0"), "(array)\n  (array)\n    \"s1\"\n    (array)\n      (array)\n        \"1-1\"\n        (array)\n          \"f\"\n          \"old\"")
	expectReply(t, a.Do("XREAD", "BLOCK", "50", "STREAMS", "s1", "$"), "(nil)")
	// XREADGROUP BLOCK with ">" is woken by a new entry and updates the PEL.
	expectReply(t, p.Do("XGROUP", "CREATE", "s1", "g", "$"), "OK")
	a.Send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s1", ">")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("XADD", "s1", "2-1", "f", "grp"), "\"2-1\"")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  (array)\n    \"s1\"\n    (array)\n      (array)\n        \"2-1\"\n        (array)\n          \"f\"\n          \"grp\"")
	expectReply(t, p.Do("XPENDING", "s1", "g"), "(array)\n  (integer) 1\n  \"2-1\"\n  \"2-1\"\n  (array)\n    (array)\n      \"c1\"\n      \"1\"")
}

// TestBlockingWakeByExec: a push inside MULTI/EXEC serves the blocked
// client after the transaction, never in its middle: the client sees the
// element the transaction left, not the one it pushed and popped again.
func TestBlockingWakeByExec(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	a, p := srv.Raw(t), srv.Raw(t)
	a.Send("BLPOP", "txq", "0")
	time.Sleep(50 * time.Millisecond)
	expectReply(t, p.Do("MULTI"), "OK")
	expectReply(t, p.Do("RPUSH", "txq", "first"), "QUEUED")
	expectReply(t, p.Do("LPOP", "txq"), "QUEUED")
	expectReply(t, p.Do("RPUSH", "txq", "second"), "QUEUED")
	expectReply(t, p.Do("SET", "other", "x"), "QUEUED")
	expectReply(t, p.Do("EXEC"), "(array)\n  (integer) 1\n  \"first\"\n  (integer) 1\n  OK")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"txq\"\n  \"second\"")
}

// INFO's blocked_clients counts the clients waiting in a blocking command,
// however the wait ends: served, timed out, CLIENT UNBLOCK, disconnect.
func TestBlockedClientsCounted(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	a, b, c, p := srv.Raw(t), srv.Raw(t), srv.Raw(t), srv.Raw(t)
	blocked := func(want string) {
		t.Helper()
		waitFor(t, 2*time.Second, "blocked_clients:"+want, func() bool { return infoField(p, "clients", "blocked_clients") == want })
	}
	blocked("0")
	a.Send("BLPOP", "l1", "l2", "0")
	b.Send("BZPOPMIN", "z", "0.3")
	idC := c.Do("CLIENT", "ID").Int
	c.Send("XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "$", "$")
	blocked("3")
	expectReply(t, p.Do("RPUSH", "l2", "x"), "(integer) 1")
	expectReply(t, readWithin(t, a, 2*time.Second), "(array)\n  \"l2\"\n  \"x\"")
	expectReply(t, readWithin(t, b, 2*time.Second), "(nil)") // timed out
	blocked("1")
	expectReply(t, p.Do("CLIENT", "UNBLOCK", fmt.Sprint(idC)), "(integer) 1")
	expectReply(t, readWithin(t, c, 2*time.Second), "(nil)")
	blocked("0")
	a.Send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
	blocked("1")
	a.Close()
	blocked("0")
}

// A positive timeout, however small, times out (Redis rounds it up to a
// millisecond); 0 and a negative one that rounds up to 0 wait for ever;
// below, the timeout is negative. Every blocking command with a timeout
// in seconds, checked against redis-server too.
func TestBlockingTinyTimeouts(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	c := srv.Raw(t)
	cmds := [][]string{
		{"BLPOP", "a", "b", "T"}, {"BRPOP", "a", "T"}, {"BLMOVE", "a", "b", "LEFT", "RIGHT", "T"},
		{"BRPOPLPUSH", "a", "b", "T"}, {"BLMPOP", "T", "2", "a", "b", "LEFT"},
		{"BZPOPMIN", "z", "y", "T"}, {"BZPOPMAX", "z", "T"}, {"BZMPOP", "T", "1", "z", "MIN"},
	}
	with := func(cmd []string, timeout string) []string {
		out := append([]string(nil), cmd...)
		for i, a := range out {
			if a == "T" {
				out[i] = timeout
			}
		}
		return out
	}
	for _, cmd := range cmds {
		for _, timeout := range []string{"0.001", "0.0001", "1e-10", "0.009"} {
			c.Send(with(cmd, timeout)...)
			r := readWithin(t, c, 3*time.Second)
			if r.Kind != KindNil {
				t.Errorf("%v: %s, want a timeout's nil", with(cmd, timeout), r.String())
			}
		}
		for _, timeout := range []string{"-0.002", "-1"} {
			expectReply(t, c.Do(with(cmd, timeout)...), "(error) ERR timeout is negative")
		}
		// -0.001 rounds up to 0: it waits until a push serves it.
		w := srv.Raw(t)
		w.Send(with(cmd, "-0.001")...)
		time.Sleep(300 * time.Millisecond)
		if cmd[0][1] == 'Z' {
			c.Do("ZADD", "z", "1", "m")
		} else {
			c.Do("RPUSH", "a", "x")
		}
		if r := readWithin(t, w, 3*time.Second); r.Kind == KindNil || r.IsError() {
			t.Errorf("%v: %s, want it served", with(cmd, "-0.001"), r.String())
		}
		w.Close()
		c.Do("DEL", "a", "b", "z", "y")
	}
}

// An XREADGROUP waiting on a stream ends when the stream goes (DEL,
// expiry, another type stored over it) or its group does (XGROUP
// DESTROY), with Redis 7.0's errors; an XREAD goes on waiting. Checked
// against redis-server too.
func TestBlockingXReadGroupStreamGone(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	c := srv.Raw(t)
	cases := []struct {
		end  []string
		want string
	}{
		{[]string{"DEL", "s"}, "(error) UNBLOCKED the stream key no longer exists"},
		{[]string{"SET", "s", "x"}, "(error) UNBLOCKED the stream key no longer exists"},
		{[]string{"PEXPIRE", "s", "50"}, "(error) UNBLOCKED the stream key no longer exists"},
		{[]string{"XGROUP", "DESTROY", "s", "g"}, "(error) NOGROUP the consumer group this client was blocked on no longer exists"},
	}
	for _, tc := range cases {
		c.Do("DEL", "s")
		expectReply(t, c.Do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), "OK")
		w := srv.Raw(t)
		w.Send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
		time.Sleep(100 * time.Millisecond)
		c.Do(tc.end...)
		expectReply(t, readWithin(t, w, 3*time.Second), tc.want)
		w.Close()
	}
	// XREAD waits on through a DEL, and an XADD then serves it.
	c.Do("DEL", "s")
	c.Do("XADD", "s", "1-1", "f", "v")
	w := srv.Raw(t)
	w.Send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	time.Sleep(100 * time.Millisecond)
	c.Do("DEL", "s")
	time.Sleep(100 * time.Millisecond)
	c.Do("XADD", "s", "2-1", "f", "w")
	r := readWithin(t, w, 3*time.Second)
	if r.Kind != KindArray || !strings.Contains(r.String(), "2-1") {
		t.Fatalf("XREAD after DEL and XADD: %s", r.String())
	}
}
