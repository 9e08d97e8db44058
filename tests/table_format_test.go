package tests

import (
	"bufio"
	"strings"
	"testing"
)

// TestTableMatcher checks the expectation language itself, without a
// server: a matcher that accepts everything would make every table green.
func TestTableMatcher(t *testing.T) {
	parse := func(raw string) Reply {
		t.Helper()
		r, err := readReply(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatalf("parse %q: %v", raw, err)
		}
		return r
	}
	cases := []struct {
		expect    string
		reply     string
		unordered bool
		want      bool
	}{
		{`OK`, "+OK\r\n", false, true},
		{`"OK"`, "+OK\r\n", false, false},
		{`"OK"`, "$2\r\nOK\r\n", false, true},
		{`(nil)`, "$-1\r\n", false, true},
		{`(nil)`, "_\r\n", false, true},
		{`(nil)`, "$0\r\n\r\n", false, false},
		{`""`, "$0\r\n\r\n", false, true},
		{`"a\x00\r\n"`, "$4\r\na\x00\r\n\r\n", false, true},
		{`(integer) 3`, ":3\r\n", false, true},
		{`(integer) 3`, ":4\r\n", false, false},
		{`(integer) 1..5`, ":5\r\n", false, true},
		{`(integer) 1..5`, ":6\r\n", false, false},
		{`(integer) -2..-1`, ":-2\r\n", false, true},
		{`(error) ERR x`, "-ERR x\r\n", false, true},
		{`(error) /^ERR unknown command 'a' $/`, "-ERR unknown command 'a' \r\n", false, true},
		{`(error) /^ERR unknown command 'a' $/`, "-ERR unknown command 'a'\r\n", false, false},
		{`(error) /^ERR/`, ":1\r\n", false, false},
		{`/^"[0-9]+"$/`, "$3\r\n123\r\n", false, true},
		{`/^"[0-9]+"$/`, ":123\r\n", false, false},
		{`~`, "*2\r\n:1\r\n:2\r\n", false, true},
		{"(array)\n  (integer) 1\n  (integer) 2", "*2\r\n:1\r\n:2\r\n", false, true},
		{"(array)\n  (integer) 2\n  (integer) 1", "*2\r\n:1\r\n:2\r\n", false, false},
		{"(array)\n  (integer) 2\n  (integer) 1", "*2\r\n:1\r\n:2\r\n", true, true},
		{"(array)\n  (integer) 1", "*2\r\n:1\r\n:2\r\n", false, false},
		{"(array)\n  (integer) 1", "~1\r\n:1\r\n", false, false},
		{"(set)\n  \"b\"\n  \"a\"", "~2\r\n$1\r\na\r\n$1\r\nb\r\n", false, true},
		{"(empty array)", "*0\r\n", false, true},
		{"(empty array)", "%0\r\n", false, false},
		{"(map)\n  \"b\" => (integer) 2\n  \"a\" => ~", "%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n", false, true},
		{"(map)\n  \"b\" => (integer) 3\n  \"a\" => ~", "%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n", false, false},
		{"(map)\n  \"a\" =>\n    (array)\n      (integer) 1", "%1\r\n$1\r\na\r\n*1\r\n:1\r\n", false, true},
		{"(map)\n  \"a\" =>\n    (array)\n      (integer) 2", "%1\r\n$1\r\na\r\n*1\r\n:1\r\n", false, false},
		{"(double) 1.5", ",1.5\r\n", false, true},
		{"(true)", "#t\r\n", false, true},
		{"(array)\n  (array)\n    \"x\"", "*1\r\n*1\r\n$1\r\nx\r\n", false, true},
	}
	for _, c := range cases {
		lines := strings.Split(c.expect, "\n")
		nums := make([]int, len(lines))
		e, err := parseExpect(lines, nums)
		if err != nil {
			t.Errorf("parseExpect(%q): %v", c.expect, err)
			continue
		}
		got := parse(c.reply)
		if m := matchReply(e, got, c.unordered); m != c.want {
			t.Errorf("expect %q vs reply %q (rendered %q): match = %v, want %v", c.expect, c.reply, got.String(), m, c.want)
		}
	}
}

// TestTableRendering pins the canonical rendering that tables are written in.
func TestTableRendering(t *testing.T) {
	r := Reply{Kind: KindMap, Elems: []Reply{
		{Kind: KindBulk, Str: "a"}, {Kind: KindArray, Elems: []Reply{{Kind: KindInt, Int: 1}, {Kind: KindNil}}},
		{Kind: KindBulk, Str: "b"}, {Kind: KindArray},
		{Kind: KindBulk, Str: "c"}, {Kind: KindStatus, Str: "OK"},
	}}
	want := "(map)\n  \"a\" =>\n    (array)\n      (integer) 1\n      (nil)\n  \"b\" => (empty array)\n  \"c\" => OK"
	if got := r.String(); got != want {
		t.Errorf("rendering:\n%s\nwant:\n%s", got, want)
	}
	args, err := splitArgs(`SET "a b\x00\n" 'c''' "" x`)
	if err == nil {
		t.Errorf("splitArgs accepted text glued to a closing quote: %q", args)
	}
	args, err = splitArgs(`SET "a b\x00\n" 'it\'s' "" x`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SET", "a b\x00\n", "it's", "", "x"}; strings.Join(args, "|") != strings.Join(want, "|") {
		t.Errorf("splitArgs = %q, want %q", args, want)
	}
}
