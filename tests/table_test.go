package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTable runs every testdata/*.txt command table (format in
// testdata/README.md) against its own server: all blocks over RESP2, then
// the blocks tagged [resp3] again over RESP3.
func TestTable(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txt tables")
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			table, err := parseTable(path)
			if err != nil {
				t.Fatal(err)
			}
			srv := StartServer(t)
			for _, proto := range []int{2, 3} {
				t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
					for _, b := range table.blocks {
						if proto == 3 && !b.resp3 {
							continue
						}
						if b.dflyOnly && IsRedis() {
							continue
						}
						t.Run(b.title, func(t *testing.T) { runBlock(t, srv, table, b, proto) })
					}
				})
			}
		})
	}
}

// runBlock runs one block on a fresh connection over an empty dataset.
func runBlock(t *testing.T, srv *Server, table *table, b *block, proto int) {
	conn := srv.Raw(t)
	if proto == 3 {
		if r := conn.Do("HELLO", "3"); r.IsError() {
			t.Fatalf("HELLO 3: %s", r)
		}
	}
	if r := conn.Do("FLUSHALL"); r.Kind != KindStatus {
		t.Fatalf("FLUSHALL: %s", r)
	}
	for _, s := range b.steps {
		if s.proto != 0 && s.proto != proto {
			continue
		}
		if s.sleep > 0 {
			time.Sleep(s.sleep)
			continue
		}
		var got Reply
		switch s.mode {
		case modeScan:
			got = scanAll(t, conn, s.args)
		default:
			got = conn.Do(s.args...)
		}
		if !matchReply(s.expect, got, s.mode != modeOrdered) {
			t.Errorf("%s:%d: %s\nwant:\n%s\ngot:\n%s", table.path, s.line, s.source,
				indentLines(s.expect.lines(), "  "), indentLines(got.Lines(), "  "))
		}
	}
}

// scanAll runs a SCAN-family command from cursor 0 until the cursor returns
// to 0 and returns every element seen, once each, as an array.
func scanAll(t *testing.T, conn *RawConn, args []string) Reply {
	t.Helper()
	cursorAt := scanCursorIndex(args)
	args = append([]string(nil), args...)
	args[cursorAt] = "0"
	seen := map[string]bool{}
	var all []Reply
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatalf("%s: cursor never returned to 0", strings.Join(args, " "))
		}
		r := conn.Do(args...)
		if r.Kind != KindArray || len(r.Elems) != 2 || r.Elems[0].Kind != KindBulk || r.Elems[1].Kind != KindArray {
			return r // not a scan page: let the expectation judge it
		}
		for _, e := range r.Elems[1].Elems {
			if !seen[e.Str] {
				seen[e.Str] = true
				all = append(all, e)
			}
		}
		args[cursorAt] = r.Elems[0].Str
		if args[cursorAt] == "0" {
			return Reply{Kind: KindArray, Elems: all}
		}
	}
}

// scanCursorIndex is where the cursor is: SCAN cursor, or HSCAN/SSCAN/ZSCAN
// key cursor.
func scanCursorIndex(args []string) int {
	if strings.EqualFold(args[0], "SCAN") {
		return 1
	}
	return 2
}

func indentLines(lines []string, indent string) string {
	return indent + strings.Join(lines, "\n"+indent)
}

// table is one parsed testdata file.
type table struct {
	path   string
	blocks []*block
}

type block struct {
	title string
	resp3 bool // also run over RESP3
	// dflyOnly: dfly's own commands, or Redis's newer than 7.0 (tag
	// [dfly]); skipped against redis-server.
	dflyOnly bool
	steps    []*step
}

type stepMode int

const (
	modeOrdered   stepMode = iota
	modeUnordered          // !unordered: compare the top-level array as a set
	modeScan               // !scan: iterate the cursor, compare all elements as a set
)

type step struct {
	line   int
	source string        // the command line as written
	proto  int           // 0: both protocols; 2 or 3: that one only
	sleep  time.Duration // a !sleep directive, not a command
	args   []string
	mode   stepMode
	expect *expect
}

// expect is one node of an expected reply: a scalar pattern or a container
// header with children. Children of a (map) are entries with a key.
type expect struct {
	line     int
	text     string // the pattern, or the map entry's value pattern
	key      string // map entries only
	children []*expect
	re       *regexp.Regexp // for "/re/" and "(type) /re/" patterns
	prefix   string         // the "(type) " before a regexp
}

func (e *expect) lines() []string {
	var out []string
	var walk func(e *expect, indent string)
	walk = func(e *expect, indent string) {
		text := e.text
		if e.key != "" {
			text = e.key + " => " + e.text
			if e.text == "" {
				text = e.key + " =>"
			}
		}
		out = append(out, indent+text)
		for _, c := range e.children {
			walk(c, indent+"  ")
		}
	}
	walk(e, "")
	return out
}

var (
	titleRE   = regexp.MustCompile(`^===\s*(.*?)\s*(\[[a-z0-9, ]+\])?\s*$`)
	patternRE = regexp.MustCompile(`^(\([a-z ]+\) )?/(.*)/$`)
	rangeRE   = regexp.MustCompile(`^\(integer\) (-?\d+)\.\.(-?\d+)$`)
)

func parseTable(path string) (*table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tb := &table{path: path}
	lines := strings.Split(string(data), "\n")
	var cur *block
	mode := modeOrdered
	fail := func(n int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, args...))
	}
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimRight(lines[i], " \t\r")
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "==="):
			m := titleRE.FindStringSubmatch(line)
			cur = &block{title: m[1]}
			for _, tag := range strings.Split(strings.Trim(m[2], "[]"), ",") {
				switch strings.TrimSpace(tag) {
				case "":
				case "resp3":
					cur.resp3 = true
				case "dfly":
					cur.dflyOnly = true
				default:
					return nil, fail(n, "unknown block tag %q", tag)
				}
			}
			if cur.title == "" {
				return nil, fail(n, "block without a title")
			}
			tb.blocks = append(tb.blocks, cur)
			continue
		}
		if cur == nil {
			return nil, fail(n, "%q before the first === block", line)
		}
		if strings.HasPrefix(line, "!") {
			fields := strings.Fields(line[1:])
			switch {
			case len(fields) == 2 && fields[0] == "sleep":
				d, err := time.ParseDuration(fields[1])
				if err != nil || d <= 0 {
					return nil, fail(n, "bad sleep %q", fields[1])
				}
				cur.steps = append(cur.steps, &step{line: n, sleep: d})
			case len(fields) == 1 && fields[0] == "unordered":
				mode = modeUnordered
			case len(fields) == 1 && fields[0] == "scan":
				mode = modeScan
			default:
				return nil, fail(n, "unknown directive %q", line)
			}
			continue
		}
		proto, cmdline, ok := commandLine(line)
		if !ok {
			return nil, fail(n, "expected a command (> ...), a directive (!...) or a block (=== ...), got %q", line)
		}
		if proto == 3 && !cur.resp3 {
			return nil, fail(n, "3> in block %q, which is not tagged [resp3]", cur.title)
		}
		args, err := splitArgs(cmdline)
		if err != nil {
			return nil, fail(n, "%v", err)
		}
		if len(args) == 0 {
			return nil, fail(n, "empty command")
		}
		s := &step{line: n, source: line, proto: proto, args: args, mode: mode}
		if mode == modeScan && len(args) <= scanCursorIndex(args) {
			return nil, fail(n, "!scan needs a SCAN-family command with a cursor")
		}
		mode = modeOrdered
		// The expected reply: the following lines up to a blank line or
		// the next command, directive or block.
		var body []string
		var bodyLines []int
		for i+1 < len(lines) {
			next := strings.TrimRight(lines[i+1], " \t\r")
			if next == "" || strings.HasPrefix(next, "===") || strings.HasPrefix(next, "!") {
				break
			}
			if _, _, isCmd := commandLine(next); isCmd {
				break
			}
			i++
			if strings.HasPrefix(next, "#") {
				continue
			}
			body = append(body, next)
			bodyLines = append(bodyLines, i+1)
		}
		if len(body) == 0 {
			return nil, fail(n, "command without an expected reply (write ~ to accept any)")
		}
		s.expect, err = parseExpect(body, bodyLines)
		if err != nil {
			return nil, fmt.Errorf("%s:%v", path, err)
		}
		cur.steps = append(cur.steps, s)
	}
	return tb, nil
}

// commandLine recognizes "> cmd", "2> cmd" and "3> cmd".
func commandLine(line string) (proto int, cmd string, ok bool) {
	for _, p := range []struct {
		prefix string
		proto  int
	}{{"> ", 0}, {"2> ", 2}, {"3> ", 3}} {
		if strings.HasPrefix(line, p.prefix) {
			return p.proto, strings.TrimSpace(line[len(p.prefix):]), true
		}
	}
	return 0, "", false
}

// parseExpect builds the tree of an expected reply from its indented lines.
func parseExpect(body []string, lineNos []int) (*expect, error) {
	type frame struct {
		node   *expect
		indent int
	}
	var root *expect
	var stack []frame
	for i, raw := range body {
		n := lineNos[i]
		text := strings.TrimLeft(raw, " ")
		indent := len(raw) - len(text)
		if indent%2 != 0 || strings.ContainsRune(raw[:indent], '\t') {
			return nil, fmt.Errorf("%d: indent by two spaces per level", n)
		}
		node := &expect{line: n, text: text}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			if root != nil || indent != 0 {
				return nil, fmt.Errorf("%d: one reply per command; children must be indented under a container", n)
			}
			root = node
		} else {
			parent := stack[len(stack)-1]
			if indent != parent.indent+2 {
				return nil, fmt.Errorf("%d: indent children by exactly two spaces", n)
			}
			if parent.node.text == "(map)" {
				key, value, ok := splitMapEntry(text)
				if !ok {
					return nil, fmt.Errorf("%d: map entries are written key => value", n)
				}
				node.key, node.text = key, value
			} else if parent.node.key != "" && parent.node.text == "" {
				// the value of "key =>" on the following, deeper lines
				if len(parent.node.children) > 0 {
					return nil, fmt.Errorf("%d: a map entry has one value", n)
				}
			} else if !isContainerHeader(parent.node.text) {
				return nil, fmt.Errorf("%d: %q cannot have children", n, parent.node.text)
			}
			parent.node.children = append(parent.node.children, node)
		}
		if m := patternRE.FindStringSubmatch(node.text); m != nil {
			re, err := regexp.Compile(m[2])
			if err != nil {
				return nil, fmt.Errorf("%d: %v", n, err)
			}
			node.prefix, node.re = m[1], re
		}
		stack = append(stack, frame{node, indent})
	}
	return root, nil
}

func isContainerHeader(s string) bool {
	switch s {
	case "(array)", "(map)", "(set)", "(push)":
		return true
	}
	return false
}

// splitMapEntry splits `key => value` (value may be empty: it then follows
// on deeper lines). A quoted key may contain " => ".
func splitMapEntry(s string) (key, value string, ok bool) {
	end := 0
	if strings.HasPrefix(s, `"`) {
		end = 1
		for end < len(s) && s[end] != '"' {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		end++
	}
	i := strings.Index(s[min(end, len(s)):], " =>")
	if i < 0 {
		return "", "", false
	}
	i += min(end, len(s))
	key = s[:i]
	value = strings.TrimSpace(s[i+3:])
	return key, value, key != ""
}

// matchReply reports whether got matches the expected tree. unordered
// compares a top-level array as a set.
func matchReply(e *expect, got Reply, unordered bool) bool {
	if e.text == "~" {
		return true
	}
	if e.key != "" && e.text == "" { // "key =>" with the value below
		return len(e.children) == 1 && matchReply(e.children[0], got, false)
	}
	if isContainerHeader(e.text) {
		if !got.isContainer() || containerName(got.Kind) != strings.Trim(e.text, "()") {
			return false
		}
		switch got.Kind {
		case KindMap:
			return matchMap(e.children, got.Elems)
		case KindSet:
			return matchSet(e.children, got.Elems)
		}
		if unordered {
			return matchSet(e.children, got.Elems)
		}
		if len(e.children) != len(got.Elems) {
			return false
		}
		for i, c := range e.children {
			if !matchReply(c, got.Elems[i], false) {
				return false
			}
		}
		return true
	}
	lines := got.Lines()
	if len(lines) != 1 {
		return false
	}
	return matchScalar(e, lines[0])
}

func matchScalar(e *expect, got string) bool {
	if e.text == "~" || e.text == got {
		return true
	}
	if e.re != nil {
		if !strings.HasPrefix(got, e.prefix) {
			return false
		}
		return e.re.MatchString(got[len(e.prefix):])
	}
	if m := rangeRE.FindStringSubmatch(e.text); m != nil {
		v, ok := strings.CutPrefix(got, "(integer) ")
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		lo, _ := strconv.ParseInt(m[1], 10, 64)
		hi, _ := strconv.ParseInt(m[2], 10, 64)
		return err == nil && lo <= n && n <= hi
	}
	return false
}

// matchSet matches children to elements in any order, each element once.
func matchSet(want []*expect, got []Reply) bool {
	if len(want) != len(got) {
		return false
	}
	used := make([]bool, len(got))
	var try func(i int) bool
	try = func(i int) bool {
		if i == len(want) {
			return true
		}
		for j := range got {
			if !used[j] && matchReply(want[i], got[j], false) {
				used[j] = true
				if try(i + 1) {
					return true
				}
				used[j] = false
			}
		}
		return false
	}
	return try(0)
}

// matchMap matches entries to key/value pairs in any order.
func matchMap(want []*expect, flat []Reply) bool {
	if len(want)*2 != len(flat) {
		return false
	}
	used := make([]bool, len(flat)/2)
	for _, w := range want {
		keyPattern := &expect{text: w.key}
		if m := patternRE.FindStringSubmatch(w.key); m != nil {
			keyPattern.prefix, keyPattern.re = m[1], regexp.MustCompile(m[2])
		}
		found := false
		for j := range used {
			k, v := flat[2*j], flat[2*j+1]
			if used[j] || k.isContainer() || !matchScalar(keyPattern, k.Lines()[0]) {
				continue
			}
			if matchReply(w, v, false) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// splitArgs splits a command line like redis-cli: words separated by
// spaces; "double quotes" with \n \r \t \b \a \\ \" \xHH escapes; 'single
// quotes' with only \' escaped.
func splitArgs(line string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		var b strings.Builder
		switch line[i] {
		case '"':
			i++
			for {
				if i >= len(line) {
					return nil, fmt.Errorf("unbalanced double quote in %q", line)
				}
				c := line[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						b.WriteByte('\n')
					case 'r':
						b.WriteByte('\r')
					case 't':
						b.WriteByte('\t')
					case 'b':
						b.WriteByte('\b')
					case 'a':
						b.WriteByte('\a')
					case 'x':
						if i+2 >= len(line) {
							return nil, fmt.Errorf("short \\x escape in %q", line)
						}
						v, err := strconv.ParseUint(line[i+1:i+3], 16, 8)
						if err != nil {
							return nil, fmt.Errorf("bad \\x escape in %q", line)
						}
						b.WriteByte(byte(v))
						i += 2
					default:
						b.WriteByte(line[i])
					}
					i++
					continue
				}
				b.WriteByte(c)
				i++
			}
		case '\'':
			i++
			for {
				if i >= len(line) {
					return nil, fmt.Errorf("unbalanced single quote in %q", line)
				}
				c := line[i]
				if c == '\'' {
					i++
					break
				}
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					c = '\''
				}
				b.WriteByte(c)
				i++
			}
		default:
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				b.WriteByte(line[i])
				i++
			}
			args = append(args, b.String())
			continue
		}
		if i < len(line) && line[i] != ' ' && line[i] != '\t' {
			return nil, fmt.Errorf("closing quote must be followed by a space in %q", line)
		}
		args = append(args, b.String())
	}
}
