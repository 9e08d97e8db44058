package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClientPause: CLIENT PAUSE WRITE holds writes (and EVAL) but not
// reads, on every connection, keeping each connection's order; UNPAUSE or
// the timeout releases them; ALL holds every command, CLIENT UNPAUSE
// included; a key that expires during a pause reads as missing but stays
// counted until the pause ends. Checked against redis-server too.
func TestClientPause(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	admin := srv.Raw(t)
	c := srv.Raw(t)
	expectReply(t, c.Do("SET", "a", "0"), "OK")
	expectReply(t, c.Do("SET", "exp", "v", "PX", "150"), "OK")

	expectReply(t, admin.Do("CLIENT", "PAUSE", "5000", "WRITE"), "OK")
	// A pipeline: the read before the write is answered at once, the write
	// and the read after it wait (in order) for the end of the pause.
	c.Send("GET", "a")
	c.Send("SET", "a", "1")
	c.Send("GET", "a")
	expectReply(t, c.MustRead(), `"0"`)
	held := make(chan [2]Reply, 1)
	go func() {
		r1, err1 := c.Read()
		r2, err2 := c.Read()
		if err1 != nil || err2 != nil {
			r1.Str, r2.Str = "read failed", "read failed"
		}
		held <- [2]Reply{r1, r2}
	}()
	other := srv.Raw(t)
	expectReply(t, other.Do("GET", "a"), `"0"`) // reads go on
	expectReply(t, other.Do("PING"), "PONG")
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-held:
		t.Fatalf("a write ran during CLIENT PAUSE WRITE: %v", r)
	default:
	}
	// The key expired meanwhile: hidden from reads, not deleted.
	expectReply(t, other.Do("EXISTS", "exp"), "(integer) 0")
	expectReply(t, other.Do("DBSIZE"), "(integer) 2")
	expectReply(t, admin.Do("CLIENT", "UNPAUSE"), "OK")
	select {
	case r := <-held:
		expectReply(t, r[0], "OK")
		expectReply(t, r[1], `"1"`)
	case <-time.After(5 * time.Second):
		t.Fatal("the held write did not run after CLIENT UNPAUSE")
	}
	deadline := time.Now().Add(5 * time.Second)
	for other.Do("DBSIZE").Int != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the key that expired during the pause was not deleted after it")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// ALL, ended by its timeout: even PING and CLIENT UNPAUSE wait.
	expectReply(t, admin.Do("CLIENT", "PAUSE", "400", "ALL"), "OK")
	start := time.Now()
	expectReply(t, other.Do("CLIENT", "UNPAUSE"), "OK")
	expectReply(t, other.Do("PING"), "PONG")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("CLIENT PAUSE 400 ALL let a command through after %v", d)
	}

	// EVAL is held by a WRITE pause; the timeout ends it.
	expectReply(t, admin.Do("CLIENT", "PAUSE", "300", "WRITE"), "OK")
	start = time.Now()
	expectReply(t, other.Do("EVAL", "return 1", "0"), "(integer) 1")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("EVAL ran %v into CLIENT PAUSE 300 WRITE", d)
	}

	expectReply(t, admin.Do("CLIENT", "PAUSE", "abc"), "(error) ERR timeout is not an integer or out of range")
	expectReply(t, admin.Do("CLIENT", "PAUSE", "-1"), "(error) ERR timeout is negative")
	expectReply(t, admin.Do("CLIENT", "PAUSE", "10", "foo"), "(error) ERR CLIENT PAUSE mode must be WRITE or ALL")
	expectReply(t, admin.Do("CLIENT", "PAUSE", "10", "write", "x"), "(error) ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.")
	expectReply(t, admin.Do("CLIENT", "PAUSE"), "(error) ERR wrong number of arguments for 'client|pause' command")
	expectReply(t, admin.Do("CLIENT", "UNPAUSE", "x"), "(error) ERR wrong number of arguments for 'client|unpause' command")
}

// TestClientPauseWaitsForWritesInFlight: CLIENT PAUSE WRITE answers only
// once the writes already running have finished — here a script on two
// shards that writes, computes for about a second, and writes again — so a
// client that pauses and then reads the data (or the replication offset)
// sees everything that will be written before the pause ends. Redis,
// single-threaded, runs the script to its end before it reads CLIENT
// PAUSE; checked against redis-server too.
func TestClientPauseWaitsForWritesInFlight(t *testing.T) {
	t.Parallel()
	srv := StartServer(t, "--shards", "2")
	admin := srv.Raw(t)
	w := srv.Raw(t)
	sendSlowWrites(w)                  // failover_test.go
	time.Sleep(200 * time.Millisecond) // its first write made
	expectReply(t, admin.Do("CLIENT", "PAUSE", "20000", "WRITE"), "OK")
	// Nothing that started before the pause writes after its OK: the
	// script has run to its end (its later writes, if still to come,
	// would land during the pause). INFO does not wait for the script's
	// key locks, as a GET would.
	if info := admin.Do("INFO", "keyspace").Str; !strings.Contains(info, "db0:keys=8,") {
		t.Errorf("CLIENT PAUSE WRITE answered before a running script wrote all its keys: %q", info)
	}
	for i := 2; i <= 8; i++ {
		if got := admin.Do("GET", "w"+strconv.Itoa(i)); got.Str != "last" {
			t.Errorf("CLIENT PAUSE WRITE answered before a running script's write: w%d = %v", i, got)
		}
	}
	expectReply(t, w.MustRead(), `"done"`)
	// Writes sent now wait for the pause's end.
	c := srv.Raw(t)
	c.Send("SET", "w1", "after")
	time.Sleep(100 * time.Millisecond)
	expectReply(t, admin.Do("GET", "w1"), `"first"`)
	expectReply(t, admin.Do("CLIENT", "UNPAUSE"), "OK")
	expectReply(t, c.MustRead(), "OK")
	// Two connections pausing at once do not wait for each other.
	done := make(chan Reply, 1)
	other := srv.Raw(t)
	go func() { done <- other.Do("CLIENT", "PAUSE", "5000", "WRITE") }()
	start := time.Now()
	expectReply(t, admin.Do("CLIENT", "PAUSE", "5000", "WRITE"), "OK")
	expectReply(t, <-done, "OK")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("two CLIENT PAUSEs took %v", d)
	}
	expectReply(t, admin.Do("CLIENT", "UNPAUSE"), "OK")
}

// TestClientUnblock: CLIENT UNBLOCK ends a blocking command as its timeout
// would, or with an UNBLOCKED error; a client not waiting is not
// affected. Checked against redis-server too.
func TestClientUnblock(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	admin := srv.Raw(t)
	c := srv.Raw(t)
	id := strconv.FormatInt(c.Do("CLIENT", "ID").Int, 10)
	// unblock retries until c is waiting (UNBLOCK answers 0 before).
	unblock := func(args ...string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for admin.Do(append([]string{"CLIENT", "UNBLOCK", id}, args...)...).Int != 1 {
			if time.Now().After(deadline) {
				t.Fatal("CLIENT UNBLOCK never found the client waiting")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, tc := range []struct {
		cmd  []string
		mode []string
		want string
	}{
		{[]string{"BLPOP", "nolist", "0"}, nil, "(nil)"},
		{[]string{"BLPOP", "nolist", "0"}, []string{"TIMEOUT"}, "(nil)"},
		{[]string{"BLPOP", "nolist", "0"}, []string{"ERROR"}, "(error) UNBLOCKED client unblocked via CLIENT UNBLOCK"},
		{[]string{"BZPOPMIN", "nozset", "0"}, []string{"error"}, "(error) UNBLOCKED client unblocked via CLIENT UNBLOCK"},
		{[]string{"XREAD", "BLOCK", "0", "STREAMS", "nostream", "$"}, nil, "(nil)"},
		{[]string{"WAIT", "1", "0"}, nil, "(integer) 0"},
		{[]string{"WAIT", "1", "0"}, []string{"ERROR"}, "(error) UNBLOCKED client unblocked via CLIENT UNBLOCK"},
	} {
		c.Send(tc.cmd...)
		unblock(tc.mode...)
		expectReply(t, c.MustRead(), tc.want)
	}
	// The client goes on normally; not waiting, it is not unblocked.
	expectReply(t, c.Do("RPUSH", "nolist", "x"), "(integer) 1")
	expectReply(t, admin.Do("CLIENT", "UNBLOCK", id), "(integer) 0")
	expectReply(t, c.Do("BLPOP", "nolist", "0"), "(array)\n  \"nolist\"\n  \"x\"")
	expectReply(t, admin.Do("CLIENT", "UNBLOCK", "999999"), "(integer) 0")
	expectReply(t, admin.Do("CLIENT", "UNBLOCK", "abc"), "(error) ERR value is not an integer or out of range")
	expectReply(t, admin.Do("CLIENT", "UNBLOCK", id, "foo"), "(error) ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
	expectReply(t, admin.Do("CLIENT", "UNBLOCK"), "(error) ERR wrong number of arguments for 'client|unblock' command")
}
