package tests

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGracefulShutdown: SIGTERM while a command is in flight lets it
// finish and write its reply, then the server exits with status 0.
func TestGracefulShutdown(t *testing.T) {
	if IsRedis() {
		t.Skip("DEBUG SLEEP is disabled in a default redis-server")
	}
	srv := StartServer(t)
	c := srv.Raw(t)
	c.Send("DEBUG", "SLEEP", "0.5")
	time.Sleep(100 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- srv.Terminate(10 * time.Second) }()
	expectReply(t, c.MustRead(), "OK")
	if err := <-done; err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestFlagErrors: an unknown flag or a bad value is refused with a clear
// message and exit status 2, before anything listens.
func TestFlagErrors(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly's own flags")
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--port", "abc"}, `invalid value "abc" for flag -port`},
		{[]string{"--port", "70000"}, "invalid --port 70000"},
		{[]string{"--shards", "0"}, "invalid --shards 0"},
		{[]string{"--maxmemory", "lots"}, `invalid value "lots" for flag -maxmemory`},
		{[]string{"--loglevel", "chatty"}, `invalid --loglevel "chatty"`},
		{[]string{"stray"}, `can't open config file`}, // the first argument is a config file, as redis-server's
		{[]string{"--port", "0", "stray"}, `unexpected argument "stray"`},
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		cmd := exec.Command(dflyPath, tc.args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%v: err %v, want exit status 2", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not say %q", tc.args, stderr.String(), tc.want)
		}
		failOnRace(t, stderr.String())
	}
}

// TestPortInUse: a port another process listens on makes dfly exit at
// once with a non-zero status and the reason, not hang.
func TestPortInUse(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly's own start-up")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var out bytes.Buffer
	cmd := exec.Command(dflyPath, "--port", port, "--bind", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("exit: %v, want a non-zero status", err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("dfly did not exit with its port taken; output: %s", out.String())
	}
	if !strings.Contains(out.String(), "address already in use") {
		t.Fatalf("output does not give the reason: %q", out.String())
	}
	failOnRace(t, out.String())
}

// TestMaxClients: a client past --maxclients gets Redis's error and is
// closed; the others keep working.
func TestMaxClients(t *testing.T) {
	srv := StartServer(t, "--maxclients", "2")
	a := srv.Raw(t)
	expectReply(t, a.Do("PING"), "PONG")
	// The start-up probe's connection closes asynchronously: until the
	// server has seen it go, it still counts.
	waitFor(t, 5*time.Second, "the start-up probe to leave", func() bool {
		return infoField(a, "clients", "connected_clients") == "1"
	})
	b := srv.Raw(t)
	expectReply(t, b.Do("PING"), "PONG")
	c := srv.Raw(t)
	expectReply(t, c.MustRead(), "(error) ERR max number of clients reached")
	expectReply(t, a.Do("PING"), "PONG")
}

// CONFIG RESETSTAT runs on a connection's event loop, which owns shards:
// it must not wait for them (it once did, and hung the server).
func TestConfigResetStatDoesNotHang(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	c := srv.Raw(t)
	for i := 0; i < 3; i++ {
		mustOK(t, c.Do("SET", "k", "v"), "set")
		if r := c.Do("CONFIG", "RESETSTAT"); r.Str != "OK" {
			t.Fatalf("CONFIG RESETSTAT = %s", r.String())
		}
		if r := c.Do("DBSIZE"); r.Int != 1 {
			t.Fatalf("DBSIZE after RESETSTAT = %s", r.String())
		}
	}
	if r := c.Do("INFO", "stats"); r.IsError() || !strings.Contains(r.Str, "keyspace_hits") {
		t.Fatalf("INFO stats after RESETSTAT: %s", r.String())
	}
}

// An idle server's event loops wait parked in Go's netpoller, not each in
// an epoll_wait of its own (third_party/gnet's patch, README.dfly.md): at
// most one thread — the Go runtime's own netpoller — sleeps in
// epoll_wait. With upstream gnet every loop's thread would.
func TestIdleLoopsParkInNetpoller(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly's event loops")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/task/*/wchan")
	}
	srv := StartServer(t, "--proactor_threads", "4")
	c := srv.Raw(t)
	if r := c.Do("SET", "k", "v"); r.Str != "OK" {
		t.Fatalf("SET = %s", r.String())
	}
	var last []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", srv.PID))
		if err != nil || len(tasks) == 0 {
			t.Skipf("no /proc/%d/task: %v", srv.PID, err)
		}
		last = last[:0]
		inEpoll, known := 0, 0
		for _, p := range tasks {
			b, err := os.ReadFile(p)
			w := string(b)
			if err != nil || w == "" || w == "0" {
				continue // hidden from this user, or the thread just ended
			}
			known++
			last = append(last, w)
			if w == "do_epoll_wait" || w == "ep_poll" {
				inEpoll++
			}
		}
		if known == 0 {
			t.Skip("thread wait channels are hidden here")
		}
		if inEpoll <= 1 {
			return
		}
	}
	t.Fatalf("after 10 s idle, the server's threads wait in %q: more than one in epoll_wait", last)
}

// TestShutdownSave: SHUTDOWN SAVE writes the dataset before the server
// exits (with cross-shard scripts' shards lent between loops just before);
// SHUTDOWN NOSAVE does not, even with save points; plain SHUTDOWN and
// SIGTERM save when save points are configured; a save that fails refuses
// SHUTDOWN with an error and the server goes on, unless FORCE. ABORT has
// nothing to abort; bad options are syntax errors.
func TestShutdownSave(t *testing.T) {
	dir := t.TempDir()
	shutdown := func(srv *Server, c *RawConn, args ...string) {
		t.Helper()
		srv.terminated = true
		c.Send(append([]string{"SHUTDOWN"}, args...)...)
		select {
		case <-srv.exited:
		case <-time.After(20 * time.Second):
			t.Fatalf("SHUTDOWN %v: still running", args)
		}
	}
	get := func(c *RawConn, key string) string { return c.Do("GET", key).Str }

	srv := StartServer(t, "--dir", dir, "--shards", "2")
	c := srv.Raw(t)
	for _, tc := range []struct{ args, want []string }{
		{[]string{"ABORT"}, []string{"ERR No shutdown in progress."}},
		{[]string{"BOGUS"}, []string{"ERR syntax error"}},
		{[]string{"SAVE", "NOSAVE"}, []string{"ERR syntax error"}},
	} {
		if r := c.Do(append([]string{"SHUTDOWN"}, tc.args...)...); r.Kind != KindError || !slices.Contains(tc.want, r.Str) {
			t.Fatalf("SHUTDOWN %v: %s", tc.args, r)
		}
	}
	c.Do("SET", "k", "v1")
	c.Do("RPUSH", "l", "a", "b")
	for range 20 {
		c.Do("EVAL", "redis.call('incr', KEYS[1]); return redis.call('incr', KEYS[2])", "2", "w", "n")
	}
	shutdown(srv, c, "SAVE")

	srv = StartServer(t, "--dir", dir, "--shards", "2")
	c = srv.Raw(t)
	if k, l, w := get(c, "k"), c.Do("LRANGE", "l", "0", "-1"), get(c, "w"); k != "v1" || len(l.Elems) != 2 || w != "20" {
		t.Fatalf("after SHUTDOWN SAVE and a restart: k %q, l %s, w %q", k, l, w)
	}
	c.Do("CONFIG", "SET", "save", "3600 1")
	c.Do("SET", "k", "v2")
	shutdown(srv, c, "NOSAVE")

	srv = StartServer(t, "--dir", dir, "--save", "3600 1")
	c = srv.Raw(t)
	if k := get(c, "k"); k != "v1" {
		t.Fatalf("after SHUTDOWN NOSAVE: k %q, want v1", k)
	}
	c.Do("SET", "k", "v3")
	shutdown(srv, c)

	srv = StartServer(t, "--dir", dir, "--save", "3600 1")
	c = srv.Raw(t)
	if k := get(c, "k"); k != "v3" {
		t.Fatalf("after SHUTDOWN with save points: k %q, want v3", k)
	}
	c.Do("SET", "k", "v4")
	if err := srv.Terminate(20 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}

	sub := filepath.Join(dir, "gone")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	srv = StartServer(t, "--dir", sub)
	c = srv.Raw(t)
	c.Do("SET", "k", "v5")
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if r := c.Do("SHUTDOWN", "SAVE"); r.Kind != KindError || r.Str != "ERR Errors trying to SHUTDOWN. Check logs." {
		t.Fatalf("SHUTDOWN SAVE into a removed directory: %s", r)
	}
	if r := c.Do("GET", "k"); r.Str != "v5" {
		t.Fatalf("after a refused SHUTDOWN: %s", r)
	}
	shutdown(srv, c, "SAVE", "FORCE")

	srv = StartServer(t, "--dir", dir)
	c = srv.Raw(t)
	if k := get(c, "k"); k != "v4" {
		t.Fatalf("after SIGTERM with save points: k %q, want v4", k)
	}
}
