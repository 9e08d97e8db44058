package tests

import (
	"io"
	"strings"
	"testing"
	"time"
)

// replyStep is one step of a CLIENT REPLY case: commands sent in one
// write (pipelined), or a message published from another connection,
// then exactly the bytes the connection must receive.
type replyStep struct {
	send    []string // each a command, split on spaces
	publish string   // "channel message"
	want    string
}

// expectRaw reads exactly len(want) bytes from c and compares them.
func expectRaw(t *testing.T, c *RawConn, want string) {
	t.Helper()
	buf := make([]byte, len(want))
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c.reader, buf); err != nil {
		t.Fatalf("reading %q: got %q, %v", want, buf, err)
	}
	if string(buf) != want {
		t.Fatalf("got %q, want %q", buf, want)
	}
}

// CLIENT REPLY ON|OFF|SKIP byte for byte as Redis 7.0.15: pipelined,
// inside MULTI/EXEC (where Redis's array header may announce replies it
// then drops), in Pub/Sub (confirmations and messages are pushed through
// OFF; RESP2 refuses CLIENT REPLY while subscribed), with RESET; against
// redis-server too.
func TestClientReply(t *testing.T) {
	srv := StartServer(t)
	const (
		ok    = "+OK\r\n"
		pong  = "+PONG\r\n"
		qd    = "+QUEUED\r\n"
		sub   = "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
		msgHi = "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
	)
	cmds := func(s ...string) []string { return s }
	for _, tc := range []struct {
		name  string
		resp3 bool
		steps []replyStep
		// subscribed: RESP2 subscribed at the end, where only PING tells
		// that nothing more came.
		subscribed bool
	}{
		{"skip off on", false, []replyStep{{send: cmds("CLIENT REPLY SKIP", "SET a 1", "GET a", "CLIENT REPLY OFF", "GET a", "FOO", "CLIENT REPLY ON", "PING"), want: "$1\r\n1\r\n" + ok + pong}}, false},
		{"skip twice", false, []replyStep{{send: cmds("CLIENT REPLY SKIP", "CLIENT REPLY SKIP", "PING", "PING"), want: pong}}, false},
		{"skip while off", false, []replyStep{{send: cmds("CLIENT REPLY OFF", "CLIENT REPLY SKIP", "PING", "CLIENT REPLY ON", "PING"), want: ok + pong}}, false},
		{"on clears skip", false, []replyStep{{send: cmds("CLIENT REPLY SKIP", "CLIENT REPLY ON", "PING"), want: ok + pong}}, false},
		{"errors", false, []replyStep{{send: cmds("CLIENT REPLY FOO", "CLIENT REPLY"), want: "-ERR syntax error\r\n-ERR wrong number of arguments for 'client|reply' command\r\n"}}, false},
		{"reset", false, []replyStep{{send: cmds("CLIENT REPLY OFF", "RESET", "PING"), want: "+RESET\r\n" + pong}}, false},
		{"skip reset", false, []replyStep{{send: cmds("CLIENT REPLY SKIP", "RESET", "PING"), want: pong}}, false},
		{"skip multi", false, []replyStep{{send: cmds("CLIENT REPLY SKIP", "MULTI", "SET a 1", "EXEC"), want: qd + "*1\r\n" + ok}}, false},
		{"off in exec", false, []replyStep{{send: cmds("MULTI", "CLIENT REPLY OFF", "SET a 1", "EXEC", "CLIENT REPLY ON", "PING"), want: ok + qd + qd + "*2\r\n" + ok + pong}}, false},
		{"skip in exec", false, []replyStep{{send: cmds("MULTI", "CLIENT REPLY SKIP", "SET a 1", "GET a", "EXEC", "PING", "PING"), want: ok + qd + qd + qd + "*3\r\n" + ok + "$1\r\n1\r\n" + pong}}, false},
		{"on in exec", false, []replyStep{{send: cmds("CLIENT REPLY OFF", "MULTI", "SET a 1", "CLIENT REPLY ON", "EXEC", "PING"), want: ok + pong}}, false},
		{"off pubsub", false, []replyStep{
			{send: cmds("CLIENT REPLY OFF", "SUBSCRIBE ch"), want: sub},
			{publish: "ch hi", want: msgHi},
			{send: cmds("PING", "GET x", "CLIENT REPLY ON", "UNSUBSCRIBE ch", "PSUBSCRIBE p*"), want: "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:1\r\n"},
		}, false}, // still OFF: nothing to end with
		{"skip subscribe", false, []replyStep{{send: cmds("CLIENT REPLY SKIP", "SUBSCRIBE ch", "PING"), want: sub + "*2\r\n$4\r\npong\r\n$0\r\n\r\n"}}, true},
		{"refused subscribed", false, []replyStep{{send: cmds("SUBSCRIBE ch", "CLIENT REPLY OFF", "PING"), want: sub + "-ERR Can't execute 'client|reply': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n" + "*2\r\n$4\r\npong\r\n$0\r\n\r\n"}}, true},
		{"resp3 pubsub", true, []replyStep{
			{send: cmds("SUBSCRIBE ch", "CLIENT REPLY OFF"), want: strings.ReplaceAll(sub, "*3", ">3")},
			{publish: "ch hi", want: strings.ReplaceAll(msgHi, "*3", ">3")},
			{send: cmds("PING", "CLIENT REPLY ON", "PING"), want: ok + pong},
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := srv.Raw(t)
			if tc.resp3 {
				c.Do("HELLO", "3")
			}
			for _, st := range tc.steps {
				if st.publish != "" {
					ch, msg, _ := strings.Cut(st.publish, " ")
					expectReply(t, srv.Raw(t).Do("PUBLISH", ch, msg), "(integer) 1")
				}
				var raw strings.Builder
				for _, cmd := range st.send {
					raw.WriteString(EncodeCommand(strings.Fields(cmd)...))
				}
				c.Write(raw.String())
				expectRaw(t, c, st.want)
			}
			// Nothing more: the next reply is the next command's.
			switch {
			case tc.name == "off pubsub":
			case tc.subscribed:
				c.Write(EncodeCommand("PING", "end"))
				expectRaw(t, c, "*2\r\n$4\r\npong\r\n$3\r\nend\r\n")
			default:
				c.Write(EncodeCommand("CLIENT", "REPLY", "ON") + EncodeCommand("ECHO", "end"))
				expectRaw(t, c, ok+"$3\r\nend\r\n")
			}
		})
	}
}
