package tests

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// isClosed reports whether the server closed c (within a second).
func isClosed(c *RawConn) bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err := c.reader.ReadByte()
	return err == io.EOF || err != nil && !strings.Contains(err.Error(), "timeout")
}

// isOpen reports whether c still answers.
func isOpen(c *RawConn) bool {
	_ = c.conn.SetReadDeadline(time.Time{})
	return c.Do("PING").Str == "PONG"
}

// CLIENT KILL's filters with bystanders: each kill closes exactly the
// clients every filter matches, the caller only with SKIPME no; checked
// against redis-server too.
func TestClientKillFilters(t *testing.T) {
	srv := StartServer(t)
	me := srv.Raw(t)
	mustOK(t, me.Do("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all"), "SETUSER")

	normal, sub, alice := srv.Raw(t), srv.Raw(t), srv.Raw(t)
	expectReply(t, sub.Do("SUBSCRIBE", "ch"), "(array)\n  \"subscribe\"\n  \"ch\"\n  (integer) 1")
	mustOK(t, alice.Do("AUTH", "alice", "pw"), "AUTH")

	expectReply(t, me.Do("CLIENT", "KILL", "TYPE", "pubsub"), "(integer) 1")
	if !isClosed(sub) || !isOpen(normal) || !isOpen(alice) || !isOpen(me) {
		t.Fatal("TYPE pubsub killed the wrong clients")
	}
	expectReply(t, me.Do("CLIENT", "KILL", "TYPE", "master"), "(integer) 0")
	expectReply(t, me.Do("CLIENT", "KILL", "TYPE", "replica"), "(integer) 0")
	expectReply(t, me.Do("CLIENT", "KILL", "USER", "alice"), "(integer) 1")
	if !isClosed(alice) || !isOpen(normal) || !isOpen(me) {
		t.Fatal("USER alice killed the wrong clients")
	}
	id := me.Do("CLIENT", "ID").Int
	expectReply(t, me.Do("CLIENT", "KILL", "ID", fmt.Sprint(id)), "(integer) 0") // SKIPME yes
	addr := strings.TrimPrefix(strings.Fields(normal.Do("CLIENT", "INFO").Str)[1], "addr=")
	expectReply(t, me.Do("CLIENT", "KILL", "ADDR", addr, "TYPE", "pubsub"), "(integer) 0")
	expectReply(t, me.Do("CLIENT", "KILL", "ADDR", addr, "TYPE", "normal"), "(integer) 1")
	if !isClosed(normal) || !isOpen(me) {
		t.Fatal("ADDR killed the wrong clients")
	}
	b1, b2 := srv.Raw(t), srv.Raw(t)
	b1.Do("PING") // connected and known to the server
	b2.Do("PING")
	expectReply(t, me.Do("CLIENT", "KILL", "TYPE", "normal"), "(integer) 2") // all but me
	if !isClosed(b1) || !isClosed(b2) || !isOpen(me) {
		t.Fatal("TYPE normal killed the wrong clients")
	}

	for _, tc := range []struct{ args, want string }{
		{"TYPE foo", "(error) ERR Unknown client type 'foo'"},
		{"ID 0", "(error) ERR client-id should be greater than 0"},
		{"ID abc", "(error) ERR client-id should be greater than 0"},
		{"SKIPME maybe", "(error) ERR syntax error"},
		{"ID 5 TYPE", "(error) ERR syntax error"},
		{"FOO bar", "(error) ERR syntax error"},
		{"USER nobody", "(error) ERR No such user 'nobody'"},
		{"127.0.0.1:1", "(error) ERR No such client"},
	} {
		args := append([]string{"CLIENT", "KILL"}, strings.Fields(tc.args)...)
		expectReply(t, me.Do(args...), tc.want)
	}

	// The old form and SKIPME no kill the caller too, after its reply.
	myAddr := strings.TrimPrefix(strings.Fields(me.Do("CLIENT", "INFO").Str)[1], "addr=")
	expectReply(t, me.Do("CLIENT", "KILL", myAddr), "OK")
	if !isClosed(me) {
		t.Fatal("CLIENT KILL <own addr> left the caller open")
	}
	me = srv.Raw(t)
	id = me.Do("CLIENT", "ID").Int
	expectReply(t, me.Do("CLIENT", "KILL", "ID", fmt.Sprint(id), "SKIPME", "no"), "(integer) 1")
	if !isClosed(me) {
		t.Fatal("SKIPME no left the caller open")
	}
}

// MAXAGE (Redis 7.4) kills the clients connected at least that long ago.
func TestClientKillMaxAge(t *testing.T) {
	if IsRedis() {
		t.Skip("redis-server 7.0 has no MAXAGE")
	}
	srv := StartServer(t)
	me, old := srv.Raw(t), srv.Raw(t)
	old.Do("PING")
	time.Sleep(2100 * time.Millisecond)
	young := srv.Raw(t)
	young.Do("PING")
	expectReply(t, me.Do("CLIENT", "KILL", "MAXAGE", "2"), "(integer) 1")
	if !isClosed(old) || !isOpen(young) || !isOpen(me) {
		t.Fatal("MAXAGE 2 killed the wrong clients")
	}
}
