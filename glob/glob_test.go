package glob

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// matchCases were checked against redis-server 7.0.15 with KEYS (see
// TestAgainstRedis); nocase cases follow the same code path with ASCII folding.
var matchCases = []struct {
	pattern, s string
	want       bool
}{
	{"", "", true},
	{"", "a", false},
	{"a", "", false},
	{"*", "", false}, // KEYS/SCAN short-cut "*" before matching; stringmatchlen itself says no
	{"**", "", false},
	{"*", "abc", true},
	{"**", "abc", true},
	{"a*", "a", true},
	{"a*", "abc", true},
	{"a*", "ba", false},
	{"*a", "ba", true},
	{"*a", "ab", false},
	{"*b*", "abc", true},
	{"a*b*c", "axxbyyc", true},
	{"a*b*c", "axxbyy", false},
	{"a**", "a", true},
	{"a*?", "a", false},
	{"a*?", "ab", true},
	{"?", "", false},
	{"?", "a", true},
	{"?", "ab", false},
	{"??", "ab", true},
	{"h?llo", "hello", true},
	{"h?llo", "hllo", false},
	{"h*llo", "hllo", true},
	{"h*llo", "heeeello", true},
	{"h[ae]llo", "hello", true},
	{"h[ae]llo", "hallo", true},
	{"h[ae]llo", "hillo", false},
	{"h[^e]llo", "hallo", true},
	{"h[^e]llo", "hello", false},
	{"h[a-b]llo", "hbllo", true},
	{"h[a-b]llo", "hcllo", false},
	{"h[b-a]llo", "hallo", true}, // reversed range is swapped
	{"[z-a]", "m", true},
	{"[a-]", "a", true}, // 'a-]' is the range ']'..'a', then the class is unterminated
	{"[a-]", "]", true},
	{"[a-]", "^", true},
	{"[]", "]", false}, // ']' right after '[' closes an empty class
	{"[]a]", "]a]", false},
	{"[]a]", "]", false},
	{"[]a]", "a", false},
	{"[-a]", "-", true},
	{"[a-c-e]", "d", false},
	{"[a-c-e]", "-", true},
	{"[a-c-e]", "e", true},
	{"[abc", "a", true}, // unterminated class ends the pattern
	{"[abc", "c", true},
	{"[abc", "d", false},
	{"[abc", "ab", false},
	{"[", "[", false},
	{"[", "", false},
	{"[^", "x", true},
	{"[^", "", false},
	{"[^]", "x", true},
	{"[^a]", "a", false},
	{"[\\]]", "]", true},
	{"[\\", "\\", true}, // a trailing '\' in a class is literal
	{"[\\a]", "a", true},
	{"[\\-a]", "-", true},
	{"\\*", "*", true},
	{"\\*", "a", false},
	{"\\?", "?", true},
	{"\\[a]", "[a]", true},
	{"\\", "\\", true},
	{"a\\", "a\\", true},
	{"\\a", "a", true},
	{"*\\*", "abc*", true},
	{"*\\*", "abc", false},
	{"[*]", "*", true},
	{"[?]", "a", false},
	{"a[", "a", false},
	{"a[", "a[", false},
	{"a*[", "ab", false},
	{"\xff", "\xff", true},
	{"[a-\xff]", "b", false}, // signed chars: the range is -1..'a'
	{"[a-\xff]", "\xff", true},
	{"[a-\xff]", "A", true},
	{"[\x80-\xff]", "\x90", true},
	{"[\x80-\xff]", "a", false},
	{"a\x00b", "a\x00b", true},
	{"*\x00", "x\x00", true},
	{"user:*:name", "user:1000:name", true},
	{"user:*:name", "user:1000:email", false},
	{"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 200), false},
	{"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*", strings.Repeat("a", 16), true},
	{"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*", strings.Repeat("a", 15), false},
	{strings.Repeat("a*", 1001), strings.Repeat("a", 1300), true},  // 1000 nested expansions: allowed
	{strings.Repeat("a*", 1002), strings.Repeat("a", 1300), false}, // 1001: over Redis's limit
}

var nocaseCases = []struct {
	pattern, s string
	want       bool
}{
	{"HELLO", "hello", true},
	{"h?LLo", "HeLlo", true},
	{"[A-C]x", "bX", true},
	{"[a-c]", "B", true},
	{"[^A]", "a", false},
	{"[X]", "x", true},
	{"\\A", "a", true},
	{"é", "É", false}, // ASCII folding only
	{"*MAXMEMORY*", "maxmemory-policy", true},
}

func TestMatch(t *testing.T) {
	for _, c := range matchCases {
		if got := MatchString(c.pattern, c.s, false); got != c.want {
			t.Errorf("MatchString(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
		if got := Match([]byte(c.pattern), []byte(c.s), false); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
		// Without letters in play, nocase must not change anything.
		if !strings.ContainsAny(c.pattern+c.s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			if got := MatchString(c.pattern, c.s, true); got != c.want {
				t.Errorf("MatchString(%q, %q, nocase) = %v, want %v", c.pattern, c.s, got, c.want)
			}
		}
	}
	for _, c := range nocaseCases {
		if got := MatchString(c.pattern, c.s, true); got != c.want {
			t.Errorf("MatchString(%q, %q, nocase) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestIsLiteral(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    bool
	}{
		{"", true}, {"user:1", true}, {"a]b^c-d", true},
		{"a*", false}, {"a?", false}, {"[a]", false}, {"a\\b", false},
	} {
		if got := IsLiteral([]byte(c.pattern)); got != c.want {
			t.Errorf("IsLiteral(%q) = %v, want %v", c.pattern, got, c.want)
		}
		if c.want && !Match([]byte(c.pattern), []byte(c.pattern), false) {
			t.Errorf("literal %q does not match itself", c.pattern)
		}
	}
}

// A pattern that backtracks exponentially in a naive matcher must return
// promptly; Redis bounds it with the skip-longer-matches rule.
func TestPathologicalPatternIsFast(t *testing.T) {
	s := strings.Repeat("a", 100_000)
	for _, pattern := range []string{
		"a*a*a*a*a*a*a*a*a*b",
		strings.Repeat("*a", 500) + "b",
		strings.Repeat("?*", 300) + "b",
		strings.Repeat("[a]*", 300) + "[b]",
	} {
		start := time.Now()
		if MatchString(pattern, s, false) {
			t.Errorf("%.30q matched", pattern)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%.30q took %v", pattern, d)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	p, s := []byte("user:*:[a-z]?me"), []byte("user:1000:name")
	if n := testing.AllocsPerRun(100, func() { Match(p, s, true) }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

// TestAgainstRedis compares the table and random patterns with a real
// redis-server's KEYS. It runs only when DFLY_TEST_REDIS names one
// (host:port); it uses and flushes DB 15.
func TestAgainstRedis(t *testing.T) {
	addr := os.Getenv("DFLY_TEST_REDIS")
	if addr == "" {
		t.Skip("set DFLY_TEST_REDIS=host:port to compare with redis-server")
	}
	c := dialRedis(t, addr)
	c.do(t, "SELECT", "15")

	// Table: the key must be in KEYS pattern exactly when the table says so.
	for _, tc := range matchCases {
		if tc.pattern == "*" {
			continue // KEYS short-cuts "*"
		}
		c.do(t, "FLUSHDB")
		c.do(t, "SET", tc.s, "1")
		got := c.do(t, "KEYS", tc.pattern)
		inKeys := len(got) == 1 && got[0] == tc.s
		if inKeys != tc.want {
			t.Errorf("redis KEYS %q on key %q: %v, table says %v", tc.pattern, tc.s, inKeys, tc.want)
		}
	}

	// Random: small alphabets so that special bytes meet often.
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	c.do(t, "FLUSHDB")
	keySet := map[string]bool{}
	for len(keySet) < 300 {
		keySet[randString(rng, "ab]-\\^*[\xe9", 6)] = true
	}
	keys := make([]string, 0, len(keySet))
	for k := range keySet {
		keys = append(keys, k)
		c.do(t, "SET", k, "1")
	}
	for n := 0; n < 3000; n++ {
		pattern := randString(rng, "ab*?[]^-\\\xe9", 8)
		if pattern == "*" {
			continue
		}
		want := map[string]bool{}
		for _, k := range c.do(t, "KEYS", pattern) {
			want[k] = true
		}
		for _, k := range keys {
			if got := MatchString(pattern, k, false); got != want[k] {
				t.Errorf("Match(%q, %q) = %v, redis says %v", pattern, k, got, want[k])
			}
		}
	}
	c.do(t, "FLUSHDB")
}

func randString(rng *rand.Rand, alphabet string, maxLen int) string {
	b := make([]byte, rng.Intn(maxLen+1))
	for i := range b {
		b[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(b)
}

type redisConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRedis(t *testing.T, addr string) *redisConn {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &redisConn{conn: conn, r: bufio.NewReader(conn)}
}

// do sends one command and returns the reply flattened to strings.
func (c *redisConn) do(t *testing.T, args ...string) []string {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	return c.reply(t)
}

func (c *redisConn) reply(t *testing.T) []string {
	t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}
	case '-':
		t.Fatalf("redis error: %s", line)
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			t.Fatal(err)
		}
		return []string{string(buf[:n])}
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, c.reply(t)...)
		}
		return out
	}
	t.Fatalf("unexpected reply %q", line)
	return nil
}
