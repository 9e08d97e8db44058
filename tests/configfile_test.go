package tests

// A configuration file as redis-server's (issue 43): the first argument,
// redis.conf's syntax, flags after it win; CONFIG REWRITE writes the
// current values back in place, keeping comments and other lines, and
// replicaof from the replication state, so a restarted server comes back
// as what Sentinel made it. DFLY_TEST_TARGET=redis runs the same against
// redis-server.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startWithConfig starts the server under test with conf as its first
// argument, on port (written in the file by the caller).
func startWithConfig(t *testing.T, conf string, port int, extra ...string) *Server {
	t.Helper()
	binary := dflyPath
	if target == targetRedis {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			t.Skip("redis-server not installed")
		}
		binary = p
	} else if buildErr != nil {
		t.Fatalf("dfly binary not available: %v", buildErr)
	}
	s, err := launchWith(t, binary, append([]string{conf}, extra...), port, true)
	if err != nil {
		b, _ := os.ReadFile(conf)
		t.Fatalf("start with %s: %v\nthe file:\n%s", conf, err, b)
	}
	return s
}

func TestConfigFileRewrite(t *testing.T) {
	dir := t.TempDir()
	mport, rport := freePort(t), freePort(t)
	mconf := filepath.Join(dir, "master.conf")
	if err := os.WriteFile(mconf, []byte("port "+strconv.Itoa(mport)+"\nbind 127.0.0.1\nsave \"\"\ndir "+dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := startWithConfig(t, mconf, mport)
	rconf := filepath.Join(dir, "replica.conf")
	rdir := filepath.Join(dir, "r")
	_ = os.MkdirAll(rdir, 0o755)
	text := "# the replica's settings\n" +
		"port " + strconv.Itoa(rport) + "\n" +
		"bind 127.0.0.1\n" +
		"dir " + rdir + "\n" +
		"save 900 1\n" +
		"save 300 10\n" +
		"\n" +
		"# a comment that must stay\n" +
		"hz 15\n" +
		"replicaof 127.0.0.1 " + strconv.Itoa(mport) + "\n"
	if err := os.WriteFile(rconf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// A flag after the file wins over the file.
	r := startWithConfig(t, rconf, rport, "--maxmemory-samples", "7")
	rc := r.Raw(t)
	for name, want := range map[string]string{"save": "900 1 300 10", "hz": "15", "maxmemory-samples": "7"} {
		if got := rc.Do("CONFIG", "GET", name); len(got.Elems) != 2 || got.Elems[1].Str != want {
			t.Errorf("CONFIG GET %s: %v, want %q", name, got, want)
		}
	}
	if got := info(t, rc, "server")["config_file"]; got != rconf {
		t.Errorf("INFO config_file %q, want %q", got, rconf)
	}
	waitReplicaLinkUp(t, r, 30*time.Second)
	if got := m.Raw(t).Do("CONFIG", "REWRITE"); got.Str != "OK" {
		t.Fatalf("CONFIG REWRITE on the master: %v", got)
	}

	if got := rc.Do("CONFIG", "SET", "hz", "20"); got.Str != "OK" {
		t.Fatal(got)
	}
	if got := rc.Do("CONFIG", "SET", "slowlog-max-len", "77"); got.Str != "OK" {
		t.Fatal(got)
	}
	if got := rc.Do("CONFIG", "REWRITE"); got.Str != "OK" {
		t.Fatalf("CONFIG REWRITE: %v", got)
	}
	b, _ := os.ReadFile(rconf)
	out := string(b)
	for _, want := range []string{"# the replica's settings\n", "# a comment that must stay\n", "\nhz 20\n",
		"\nslowlog-max-len 77\n", "\nreplicaof 127.0.0.1 " + strconv.Itoa(mport) + "\n", "\nmaxmemory-samples 7\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "# a comment that must stay") > strings.Index(out, "hz 20") {
		t.Errorf("hz not rewritten in place:\n%s", out)
	}
	if strings.Count(out, "\nsave ") > 1 && !strings.Contains(out, "save 900 1\nsave 300 10") {
		t.Errorf("save lines:\n%s", out)
	}

	// Promoted and rewritten, then restarted: a master with the new values.
	if got := rc.Do("REPLICAOF", "NO", "ONE"); got.Str != "OK" {
		t.Fatal(got)
	}
	if got := rc.Do("CONFIG", "REWRITE"); got.Str != "OK" {
		t.Fatal(got)
	}
	b, _ = os.ReadFile(rconf)
	if strings.Contains(string(b), "replicaof") {
		t.Errorf("a master's rewritten file keeps replicaof:\n%s", b)
	}
	r.Kill()
	r = startWithConfig(t, rconf, rport)
	rc = r.Raw(t)
	if got := role(t, rc); got != "master" {
		t.Errorf("restarted after REPLICAOF NO ONE + REWRITE: role %s", got)
	}
	// Made a replica again, rewritten, restarted: a replica of the master.
	if got := rc.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(mport)); !strings.HasPrefix(got.Str, "OK") {
		t.Fatal(got)
	}
	if got := rc.Do("CONFIG", "REWRITE"); got.Str != "OK" {
		t.Fatal(got)
	}
	r.Kill()
	r = startWithConfig(t, rconf, rport)
	waitReplicaLinkUp(t, r, 30*time.Second)
	if got := r.Raw(t).Do("CONFIG", "GET", "slowlog-max-len"); len(got.Elems) != 2 || got.Elems[1].Str != "77" {
		t.Errorf("slowlog-max-len after the restart: %v", got)
	}
}

// A bad directive stops the start with an error naming it.
func TestConfigFileBadDirective(t *testing.T) {
	if target != targetDfly {
		t.Skip("dfly's start-up message")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.conf")
	_ = os.WriteFile(conf, []byte("port 0\nno-such-directive yes\n"), 0o644)
	out, err := exec.Command(dflyPath, conf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no-such-directive") || !strings.Contains(string(out), "Bad directive") {
		t.Errorf("start with a bad directive: err %v, output %s", err, out)
	}
	_ = os.WriteFile(conf, []byte("port 0\nbind \"127.0.0.1\n"), 0o644)
	out, err = exec.Command(dflyPath, conf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Unbalanced quotes") {
		t.Errorf("start with unbalanced quotes: err %v, output %s", err, out)
	}
}
