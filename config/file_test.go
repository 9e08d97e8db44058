package config

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		bad  bool
	}{
		{line: "save 900 1", want: []string{"save", "900", "1"}},
		{line: `requirepass "a b\"c"`, want: []string{"requirepass", `a b"c`}},
		{line: `x "\x41\n"`, want: []string{"x", "A\n"}},
		{line: `x 'it\'s'`, want: []string{"x", "it's"}},
		{line: `save ""`, want: []string{"save", ""}},
		{line: `x "ab"c`, bad: true},
		{line: `x "ab`, bad: true},
		{line: `x 'ab`, bad: true},
		{line: "   ", want: nil},
	} {
		got, err := SplitArgs(tc.line)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error, got %q", tc.line, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

// Any value quoteArg writes reads back the same (seed printed).
func TestQuoteArgRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		got, err := SplitArgs("name " + quoteArg(string(b)))
		if err != nil || len(got) != 2 || got[1] != string(b) {
			t.Fatalf("%q written %s read back %q, %v", b, quoteArg(string(b)), got, err)
		}
	}
}

func TestFlagArgs(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.conf")
	_ = os.WriteFile(inc, []byte("maxmemory-samples 9\n"), 0o644)
	main := filepath.Join(dir, "main.conf")
	_ = os.WriteFile(main, []byte("# c\nsave 900 1\nsave 300 10\nproactor-threads 2\ninclude inc.conf\nreplicaof 10.0.0.1 6379\n"), 0o644)
	ds, err := ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"save": true, "proactor_threads": true, "maxmemory-samples": true, "replicaof": true}
	got, err := FlagArgs(main, ds, func(n string) bool { return known[n] })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--proactor_threads", "2", "--maxmemory-samples", "9", "--replicaof", "10.0.0.1 6379", "--save", "900 1 300 10"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FlagArgs: %q, want %q", got, want)
	}
	if _, err := FlagArgs(main, []Directive{{Name: "bogus", Args: []string{"1"}}}, func(string) bool { return false }); err == nil ||
		!strings.Contains(err.Error(), "Bad directive") {
		t.Errorf("unknown directive: %v", err)
	}
}

// CONFIG REWRITE keeps comments and unknown lines, rewrites a parameter in
// its first place, drops its repeats, appends the changed ones after the
// marker, and writes replicaof from the state.
func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.conf")
	_ = os.WriteFile(path, []byte("# top\nhz 10\nshards 4\nhz 11\n  # indented comment\nslaveof 1.2.3.4 5\n"), 0o644)
	c := Default()
	c.Shards = 4 // as the server sets it at start
	if e := c.Set([]string{"hz", "33", "slowlog-max-len", "5"}); e != "" {
		t.Fatal(e)
	}
	if err := c.Rewrite(path, map[string]string{"replicaof": "127.0.0.1 7000"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "# top\nhz 33\nshards 4\n  # indented comment\nreplicaof 127.0.0.1 7000\n" + rewriteMarker + "\nslowlog-max-len 5\n"
	if string(b) != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", b, want)
	}
	if err := c.Rewrite(path, map[string]string{"replicaof": ""}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if strings.Contains(string(b), "replicaof") || !strings.Contains(string(b), "slowlog-max-len 5") {
		t.Errorf("after promotion:\n%s", b)
	}
}
