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

// TestRedisCLIRDB: redis-cli --rdb fetches a snapshot of every key and
// library (REPLCONF rdb-only), --functions-rdb one of the libraries alone
// (rdb-filter-only functions); a server started on each file holds what it
// should, and the client was never listed as a replica.
func TestRedisCLIRDB(t *testing.T) {
	cli := redisCLI(t)
	srv := StartServer(t, "--shards", "3")
	c := srv.Raw(t)
	for i := 0; i < 500; i++ {
		mustOK(t, c.Do("SET", "k"+strconv.Itoa(i), strconv.Itoa(i)), "set")
	}
	mustOK(t, c.Do("HSET", "h", "f", "v"), "hset")
	lib := "#!lua name=clilib\nredis.register_function('clif', function() return 7 end)"
	mustOK(t, c.Do("FUNCTION", "LOAD", lib), "function load")
	dir := t.TempDir()
	for _, tc := range []struct {
		flag, file string
		keys       int64
	}{
		{"--rdb", "all.rdb", 501},
		{"--functions-rdb", "functions.rdb", 0},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, cli, "-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port), tc.flag, dir+"/"+tc.file).CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "Transfer finished with success") {
			t.Fatalf("redis-cli %s: %v\n%s", tc.flag, err, out)
		}
		loaded := StartServer(t, "--dir", dir, "--dbfilename", tc.file).Raw(t)
		if n := loaded.Do("DBSIZE").Int; n != tc.keys {
			t.Fatalf("%s: %d keys loaded, want %d", tc.flag, n, tc.keys)
		}
		if r := loaded.Do("FCALL", "clif", "0"); r.Int != 7 {
			t.Fatalf("%s: the library did not come along: %s", tc.flag, r.String())
		}
		if tc.keys > 0 && loaded.Do("GET", "k499").Str != "499" {
			t.Fatalf("%s: k499 = %q", tc.flag, loaded.Do("GET", "k499").Str)
		}
	}
	if n := infoField(c, "replication", "connected_slaves"); n != "0" {
		t.Fatalf("connected_slaves:%s after the RDB-only clients left", n)
	}
}
