package tests

import (
	"regexp"
	"strings"
	"testing"
)

// TestMonitor: MONITOR streams each command another client sends, in
// Redis's line format (time, database, client address, quoted arguments),
// including a script's calls ("lua"), MULTI's queued commands and EXEC,
// with AUTH's arguments redacted and admin commands left out; a monitor
// may not touch the keyspace, and RESET ends monitoring.
func TestMonitor(t *testing.T) {
	srv := StartServer(t)
	mon := srv.Raw(t)
	expectReply(t, mon.Do("MONITOR"), "OK")
	cl := srv.Raw(t)
	addr := cl.conn.LocalAddr().String()

	cl.Do("SET", "a b", "x\"y\n\x01")
	cl.Do("CONFIG", "GET", "maxmemory") // admin: not shown
	cl.Do("GET")                        // arity error: never ran, not shown
	cl.Do("EVAL", "return redis.call('incr', KEYS[1])", "1", "n")
	cl.Do("MULTI")
	cl.Do("SET", "q", "1")
	cl.Do("EXEC")
	cl.Do("AUTH", "user", "secret")
	cl.Do("SELECT", "3")
	cl.Do("PING")

	line := regexp.MustCompile(`^\d{10}\.\d{6} \[(\d+) ([^\]]+)\] (.*)$`)
	want := []struct{ db, from, args string }{
		{"0", addr, `"SET" "a b" "x\"y\n\x01"`},
		{"0", addr, `"EVAL" "return redis.call('incr', KEYS[1])" "1" "n"`},
		{"0", "lua", `"incr" "n"`},
		{"0", addr, `"MULTI"`},
		{"0", addr, `"SET" "q" "1"`},
		{"0", addr, `"EXEC"`},
		{"0", addr, `"AUTH" "(redacted)" "(redacted)"`},
		{"3", addr, `"SELECT" "3"`},
		{"3", addr, `"PING"`},
	}
	for i, w := range want {
		r := mon.MustRead()
		m := line.FindStringSubmatch(r.Str)
		if r.Kind != KindStatus || m == nil {
			t.Fatalf("line %d: %s is not a monitor line", i, r)
		}
		if m[1] != w.db || m[2] != w.from || m[3] != w.args {
			t.Fatalf("line %d: got [%s %s] %s, want [%s %s] %s", i, m[1], m[2], m[3], w.db, w.from, w.args)
		}
	}

	expectReply(t, mon.Do("GET", "a b"), "(error) ERR Replica can't interact with the keyspace")
	if r := mon.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING from a monitor: %s", r)
	}
	if r := mon.MustRead(); !strings.HasSuffix(r.Str, `"PING"`) { // its own PING, fed after it ran
		t.Fatalf("monitor's own PING: %s", r)
	}
	expectReply(t, mon.Do("RESET"), "RESET")
	expectReply(t, mon.Do("GET", "a b"), "\"x\\\"y\\n\\x01\"")
	expectReply(t, cl.Do("PING"), "PONG") // no longer fed: the next reply is GET's
	expectReply(t, mon.Do("EXISTS", "a b"), "(integer) 1")
}

// TestMonitorPipelineOnce: a pipeline whose commands go in several
// dispatch steps (single-shard commands, then a cross-shard script, then
// a multi-shard MSET) shows each command once, in order: dispatch stops
// before a command that must wait for the step before it, and takes it up
// again without feeding it twice.
func TestMonitorPipelineOnce(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	mon := srv.Raw(t)
	expectReply(t, mon.Do("MONITOR"), "OK")
	cl := srv.Raw(t)
	cmds := [][]string{
		{"GET", "a"},
		{"EVAL", "return 1", "2", "w", "n"},
		{"MSET", "w", "1", "n", "2"},
		{"GET", "b"},
		{"EVAL", "return 2", "2", "w", "n"},
	}
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(EncodeCommand(c...))
	}
	cl.Write(b.String())
	for range cmds {
		cl.MustRead()
	}
	cl.Do("PING")
	for i, c := range append(cmds, []string{"PING"}) {
		r := mon.MustRead()
		want := `"` + strings.Join(c, `" "`) + `"`
		if !strings.HasSuffix(r.Str, "] "+want) {
			t.Fatalf("monitor line %d: %s, want ... %s", i, r, want)
		}
	}
}
