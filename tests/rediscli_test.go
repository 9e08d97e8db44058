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

// TestRedisCLIMemkeys: redis-cli --memkeys sizes keys with MEMORY USAGE;
// the biggest string is the big one, at least its length.
func TestRedisCLIMemkeys(t *testing.T) {
	t.Parallel()
	cli := redisCLI(t)
	srv := StartServer(t)
	c := srv.Client(t, 2)
	ctx := context.Background()
	big := strings.Repeat("x", 10000)
	for k, v := range map[string]string{"small": "x", "big": big, "mid": big[:500]} {
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RPush(ctx, "lst", "a", "b", "c").Err(); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx2, cli, "-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port), "--memkeys").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --memkeys: %v\n%s", err, out)
	}
	var size int
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, `Biggest string found '"big"' has `); ok {
			size, _ = strconv.Atoi(strings.TrimSuffix(rest, " bytes"))
		}
	}
	if size < len(big) || size > 2*len(big) {
		t.Fatalf("redis-cli --memkeys: the biggest string is not \"big\" at about %d bytes:\n%s", len(big), out)
	}
	if !strings.Contains(string(out), "1 lists with ") || strings.Contains(string(out), "1 lists with 0 bytes") {
		t.Fatalf("redis-cli --memkeys: no size for the list:\n%s", out)
	}
}
