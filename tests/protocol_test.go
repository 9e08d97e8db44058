package tests

import (
	"strings"
	"testing"
	"time"
)

// TestInline covers the inline protocol redis-cli and telnet users send:
// space-separated words with redis-cli quoting, no RESP framing.
func TestInline(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)

	c := srv.Raw(t)
	c.Write("PING\r\n")
	expectReply(t, c.MustRead(), "PONG")
	c.Write("set \"a b\" 'c d'\r\n")
	expectReply(t, c.MustRead(), "OK")
	c.Write("GET \"a b\"\n") // a bare \n ends an inline command too
	expectReply(t, c.MustRead(), `"c d"`)
	c.Write("foo a b\r\n")
	expectReply(t, c.MustRead(), `(error) ERR unknown command 'foo', with args beginning with: 'a' 'b' `)
	// Inline and RESP requests can follow each other on one connection.
	c.Write(EncodeCommand("ECHO", "x") + "ECHO y\r\n")
	expectReply(t, c.MustRead(), `"x"`)
	expectReply(t, c.MustRead(), `"y"`)
	// Empty inline lines are ignored.
	c.Write("\r\n\r\nPING\r\n")
	expectReply(t, c.MustRead(), "PONG")

	bad := srv.Raw(t)
	bad.Write("set \"a b\r\n")
	expectReply(t, bad.MustRead(), "(error) ERR Protocol error: unbalanced quotes in request")
	bad.ExpectClosed(5 * time.Second)

	c.Write("PING\r\n")
	expectReply(t, c.MustRead(), "PONG")
}

// TestProtocolLimits sends requests beyond the protocol's limits: each gets
// Redis's error and a closed connection, and the server keeps serving.
func TestProtocolLimits(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	healthy := srv.Raw(t)
	expectReply(t, healthy.Do("SET", "k", "v"), "OK")

	cases := []struct {
		name, request, reply string
	}{
		{"multibulk length over the limit", "*99999999999\r\n", "(error) ERR Protocol error: invalid multibulk length"},
		{"multibulk length not a number", "*abc\r\n", "(error) ERR Protocol error: invalid multibulk length"},
		// proto-max-bulk-len is 512 MiB.
		{"bulk length over the limit", "*1\r\n$536870913\r\n", "(error) ERR Protocol error: invalid bulk length"},
		{"bulk length huge", "*1\r\n$999999999999\r\n", "(error) ERR Protocol error: invalid bulk length"},
		{"bulk length negative", "*1\r\n$-5\r\n", "(error) ERR Protocol error: invalid bulk length"},
		{"bulk without $", "*1\r\nx\r\n", "(error) ERR Protocol error: expected '$', got 'x'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := srv.Raw(t)
			c.Write(tc.request)
			expectReply(t, c.MustRead(), tc.reply)
			c.ExpectClosed(5 * time.Second)
			expectReply(t, healthy.Do("GET", "k"), `"v"`)
		})
	}

	// A command in the same read as the bad one is answered first.
	t.Run("good command before a bad one", func(t *testing.T) {
		c := srv.Raw(t)
		c.Write("*1\r\n$4\r\nPING\r\n*1\r\n$-1\r\n")
		expectReply(t, c.MustRead(), "PONG")
		expectReply(t, c.MustRead(), "(error) ERR Protocol error: invalid bulk length")
		c.ExpectClosed(5 * time.Second)
	})

	// Empty and negative multibulks are no-ops, not errors.
	t.Run("empty multibulk", func(t *testing.T) {
		c := srv.Raw(t)
		c.Write("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n")
		expectReply(t, c.MustRead(), "PONG")
	})

	// A request split across many writes is reassembled.
	t.Run("byte by byte", func(t *testing.T) {
		c := srv.Raw(t)
		req := EncodeCommand("SET", "split", strings.Repeat("x", 100)) + EncodeCommand("STRLEN", "split")
		for i := 0; i < len(req); i++ {
			c.Write(req[i : i+1])
		}
		expectReply(t, c.MustRead(), "OK")
		expectReply(t, c.MustRead(), "(integer) 100")
	})

	// A large (but legal) value survives the round trip.
	t.Run("4 MiB value", func(t *testing.T) {
		c := srv.Raw(t)
		big := strings.Repeat("0123456789abcdef", 1<<18)
		expectReply(t, c.Do("SET", "big", big), "OK")
		r := c.Do("GET", "big")
		if r.Kind != KindBulk || r.Str != big {
			t.Fatalf("GET big: kind %d, %d bytes; want the %d bytes written", r.Kind, len(r.Str), len(big))
		}
	})

	expectReply(t, healthy.Do("PING"), "PONG")
}

// expectReply compares a reply's canonical rendering with want.
func expectReply(t testing.TB, got Reply, want string) {
	t.Helper()
	if s := got.String(); s != want {
		t.Fatalf("reply:\n%s\nwant:\n%s", s, want)
	}
}
