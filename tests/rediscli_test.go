package tests

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func redisCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed; install redis-tools to run this test")
	}
	return path
}

// TestRedisCLI drives the server with redis-cli, which uses RESP2 and
// issues COMMAND DOCS only in interactive mode.
func TestRedisCLI(t *testing.T) {
	t.Parallel()
	cli := redisCLI(t)
	srv := StartServer(t)
	port := strconv.Itoa(srv.Port)

	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append([]string{"-h", "127.0.0.1", "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	if out := run("", "ping"); out != "PONG" {
		t.Fatalf("redis-cli ping = %q, want PONG", out)
	}
	if out := run("", "set", "a b", "c d"); out != "OK" {
		t.Fatalf("redis-cli set = %q, want OK", out)
	}
	if out := run("", "get", "a b"); out != "c d" {
		t.Fatalf("redis-cli get = %q, want \"c d\"", out)
	}

	// --pipe: 10k commands as RESP on stdin; redis-cli appends an ECHO
	// marker and counts replies and errors.
	const n = 10000
	var b strings.Builder
	for i := range n {
		b.WriteString(EncodeCommand("SET", "pipe:"+strconv.Itoa(i), strconv.Itoa(i)))
	}
	out := run(b.String(), "--pipe")
	if !strings.Contains(out, "errors: 0, replies: 10000") {
		t.Fatalf("redis-cli --pipe:\n%s\nwant \"errors: 0, replies: 10000\"", out)
	}
	if out := run("", "dbsize"); out != strconv.Itoa(n+1) {
		t.Fatalf("DBSIZE after --pipe = %s, want %d", out, n+1)
	}
	if out := run("", "get", "pipe:9999"); out != "9999" {
		t.Fatalf("GET pipe:9999 = %q, want 9999", out)
	}
}
