package tests

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestMissingFromRedis keeps testdata/missing.list true: the Redis 7.0
// commands, subcommands and CONFIG parameters dfly lacks are exactly those
// it lists, from COMMAND INFO and CONFIG GET * of both servers.
func TestMissingFromRedis(t *testing.T) {
	if IsRedis() {
		t.Skip("compares dfly with redis-server; it runs with the dfly target only")
	}
	ref, d := startRedis(t).Raw(t), StartServer(t).Raw(t)
	text, err := os.ReadFile("testdata/missing.list")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(text), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	commands := func(c *RawConn) map[string]bool {
		out := map[string]bool{}
		var walk func(e Reply)
		walk = func(e Reply) {
			out[e.Elems[0].Str] = true
			for _, s := range e.Elems[9].Elems {
				walk(s)
			}
		}
		for _, e := range c.Do("COMMAND", "INFO").Elems {
			walk(e)
		}
		return out
	}
	params := func(c *RawConn) map[string]bool {
		out := map[string]bool{}
		r := c.Do("CONFIG", "GET", "*")
		for i := 0; i < len(r.Elems); i += 2 {
			out[r.Elems[i].Str] = true
		}
		return out
	}
	var missing []string
	have := commands(d)
	for name := range commands(ref) {
		if !have[name] {
			missing = append(missing, "command "+name)
		}
	}
	have = params(d)
	for name := range params(ref) {
		if !have[name] {
			missing = append(missing, "config "+name)
		}
	}
	slices.Sort(missing)
	slices.Sort(listed)
	if !slices.Equal(missing, listed) {
		t.Errorf("dfly lacks %d of Redis 7.0's commands and parameters, testdata/missing.list lists %d:\nlacking:\n  %s\nlisted:\n  %s",
			len(missing), len(listed), strings.Join(missing, "\n  "), strings.Join(listed, "\n  "))
	}
	t.Logf("%d missing", len(missing))
}
