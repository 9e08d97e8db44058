package resp

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// parseAll runs p over buf until it needs more bytes or fails, the way a
// connection does, and returns the commands (copied), the bytes used, and
// the error.
func parseAll(p *Parser, buf []byte) (cmds [][]string, used int, err error) {
	for {
		args, n, ok, err := p.Next(buf[used:])
		if err != nil || !ok {
			if err == nil && n > 0 && !p.assembly {
				panic(fmt.Sprintf("consumed %d without a command", n))
			}
			return cmds, used + n, err
		}
		if n <= 0 || used+n > len(buf) {
			panic(fmt.Sprintf("consumed %d of %d", n, len(buf)-used))
		}
		cmd := []string{}
		for _, a := range args {
			cmd = append(cmd, string(a))
		}
		cmds = append(cmds, cmd)
		used += n
	}
}

// stream feeds chunks one by one into a connection-like buffer, which is
// copied on every append to catch any aliasing of stale memory, and parses
// after each chunk.
func stream(p *Parser, chunks [][]byte) ([][]string, error) {
	var all [][]string
	var pending []byte
	for _, c := range chunks {
		pending = append(append([]byte(nil), pending...), c...)
		cmds, used, err := parseAll(p, pending)
		all = append(all, cmds...)
		if err != nil {
			return all, err
		}
		pending = pending[used:]
	}
	return all, nil
}

var validCases = []struct {
	name, in string
	want     [][]string
}{
	{"set", "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", [][]string{{"SET", "key", "value"}}},
	{"empty bulk", "*2\r\n$4\r\necho\r\n$0\r\n\r\n", [][]string{{"echo", ""}}},
	{"only empty bulk", "*1\r\n$0\r\n\r\n", [][]string{{""}}},
	{"zero count", "*0\r\n", [][]string{{}}},
	{"minus one count", "*-1\r\n", [][]string{{}}},
	{"negative count", "*-5\r\n", [][]string{{}}},
	{"zero count then command", "*0\r\n*1\r\n$4\r\nPING\r\n", [][]string{{}, {"PING"}}},
	{"binary bulk", "*1\r\n$6\r\na\r\nb\x00\n\r\n", [][]string{{"a\r\nb\x00\n"}}},
	{"max count header", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", [][]string{{"a", "b"}}},
	{"inline", "PING\r\n", [][]string{{"PING"}}},
	{"inline lf", "PING\n", [][]string{{"PING"}}},
	{"inline args", "set  k\tv\r\n", [][]string{{"set", "k", "v"}}},
	{"blank line", "\r\n", [][]string{{}}},
	{"lf line", "\n", [][]string{{}}},
	{"spaces line", "   \t \r\n", [][]string{{}}},
	{"blank lines around", "\r\n*1\r\n$4\r\nPING\r\n\r\n  \r\nPING\r\n", [][]string{{}, {"PING"}, {}, {}, {"PING"}}},
	{"dollar is inline", "$4 PING\r\n", [][]string{{"$4", "PING"}}},
	{"double quotes", "set \"a b\" c\r\n", [][]string{{"set", "a b", "c"}}},
	{"escapes", `echo "a\x41\x4g\a\b\q\"\n\r\t\\z"` + "\r\n", [][]string{{"echo", "aAx4g\a\bq\"\n\r\t\\z"}}},
	{"single quotes", `echo 'x\'y\n\x41'` + "\r\n", [][]string{{"echo", `x'y\n\x41`}}},
	{"quote mid word", "echo a\"b c\"\r\n", [][]string{{"echo", "ab c"}}},
	{"single quote mid word", "echo a'b c'\r\n", [][]string{{"echo", "ab c"}}},
	{"empty quotes", "echo \"\" ''\r\n", [][]string{{"echo", "", ""}}},
	{"bad hex", `echo "\x" "\xA" "\xzz"` + "\r\n", [][]string{{"echo", "x", "xA", "xzz"}}},
	{"escape outside quotes", `echo a\x41` + "\r\n", [][]string{{"echo", `a\x41`}}},
	{"cr inside line", "echo\tx\r\r\n", [][]string{{"echo", "x"}}},
	{"cr splits", "echo a\rb\r\n", [][]string{{"echo", "a", "b"}}},
	{"vt inside word", "echo a\vb\r\n", [][]string{{"echo", "a\vb"}}},
	{"vt leading", "\vecho\va\r\n", [][]string{{"echo\va"}}},
	{"vt after quote", "echo \"a\"\vb\r\n", [][]string{{"echo", "a", "b"}}},
	{"quote at end of line", "echo \"a\"\r\n", [][]string{{"echo", "a"}}},
	{"nul in inline", "echo a\x00b\r\n", [][]string{{"echo", "a\x00b"}}},
	{"mixed pipeline", "PING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nECHO 'x y'\n", [][]string{{"PING"}, {"GET", "k"}, {"ECHO", "x y"}}},
}

func TestParseValid(t *testing.T) {
	for _, c := range validCases {
		t.Run(c.name, func(t *testing.T) {
			got, used, err := parseAll(NewParser(0, 0), []byte(c.in))
			if err != nil || used != len(c.in) || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %q used %d/%d err %v, want %q", got, used, len(c.in), err, c.want)
			}
		})
	}
}

var errorCases = []struct {
	name, in      string
	unauth        bool
	maxBulk       int64
	want          error
	differsRedis  bool // see the package doc; redis accepts the input
	needsPassword bool // checked by hand against a redis with requirepass
}{
	{name: "count over INT_MAX", in: "*2147483648\r\n", want: ErrInvalidMultibulkLength},
	{name: "count leading zero", in: "*01\r\n$4\r\nPING\r\n", want: ErrInvalidMultibulkLength},
	{name: "count minus zero", in: "*-0\r\n", want: ErrInvalidMultibulkLength},
	{name: "count plus", in: "*+1\r\n", want: ErrInvalidMultibulkLength},
	{name: "count empty", in: "*\r\n", want: ErrInvalidMultibulkLength},
	{name: "count junk", in: "*1x\r\n", want: ErrInvalidMultibulkLength},
	{name: "count overflow", in: "*99999999999999999999\r\n", want: ErrInvalidMultibulkLength},
	{name: "count with lf only", in: "*1\n$4\r\nPING\r\n", want: ErrInvalidMultibulkLength},
	{name: "bulk minus one", in: "*1\r\n$-1\r\n", want: ErrInvalidBulkLength},
	{name: "bulk minus two", in: "*1\r\n$-2\r\nxx\r\n", want: ErrInvalidBulkLength}, // panics in redcon
	{name: "bulk leading zero", in: "*1\r\n$01\r\nx\r\n", want: ErrInvalidBulkLength},
	{name: "bulk empty", in: "*1\r\n$\r\n", want: ErrInvalidBulkLength},
	{name: "bulk over max", in: "*1\r\n$536870913\r\n", want: ErrInvalidBulkLength},
	{name: "bulk over custom max", in: "*1\r\n$11\r\n", maxBulk: 10, want: ErrInvalidBulkLength},
	{name: "bulk overflow", in: "*1\r\n$111111111111111111111\r\n", want: ErrInvalidBulkLength},
	{name: "bulk int64 wrap", in: "*1\r\n$18446744073709551619\r\nabc\r\n", want: ErrInvalidBulkLength},
	{name: "expected dollar", in: "*1\r\nX4\r\nPING\r\n", want: expectedDollar('X')},
	{name: "expected dollar second", in: "*2\r\n$3\r\nfoo\r\n:1\r\n", want: expectedDollar(':')},
	{name: "expected dollar got star", in: "*1\r\n*1\r\n", want: expectedDollar('*')},
	{name: "closing quote then word", in: "echo \"a\"b\r\n", want: ErrUnbalancedQuotes},
	{name: "closing quote mid word", in: "echo a\"b c\"d\r\n", want: ErrUnbalancedQuotes},
	{name: "unterminated double", in: "echo \"abc\r\n", want: ErrUnbalancedQuotes},
	{name: "closing single then word", in: "echo 'a'b\r\n", want: ErrUnbalancedQuotes},
	{name: "adjacent quotes", in: "echo \"a\"\"b\"\r\n", want: ErrUnbalancedQuotes},
	{name: "escaped last quote", in: "echo \"a\\\"\r\n", want: ErrUnbalancedQuotes},
	{name: "unterminated single", in: "echo 'a\r\n", want: ErrUnbalancedQuotes},
	{name: "too big inline", in: strings.Repeat("x", 65537), want: ErrTooBigInlineRequest},
	{name: "too big mbulk count", in: "*" + strings.Repeat("1", 65536), want: ErrTooBigMultibulkCount},
	{name: "too big bulk count", in: "*1\r\n$" + strings.Repeat("1", 65536), want: ErrTooBigBulkCount},
	{name: "unauth count", in: "*11\r\n", unauth: true, want: ErrUnauthMultibulkLength, needsPassword: true},
	{name: "unauth bulk", in: "*1\r\n$16385\r\n", unauth: true, want: ErrUnauthBulkLength, needsPassword: true},
	{name: "cr not lf in header", in: "*1\rX$4\r\nPING\r\n", want: ErrInvalidMultibulkLength, differsRedis: true},
	{name: "bulk without crlf", in: "*1\r\n$4\r\nPINGxy*1\r\n$4\r\nPING\r\n", want: ErrInvalidBulkLength, differsRedis: true},
}

func TestParseErrors(t *testing.T) {
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser(c.maxBulk, 0)
			p.SetAuthenticated(!c.unauth)
			_, _, err := parseAll(p, []byte(c.in))
			if err == nil || err.Error() != c.want.Error() {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
}

// Just under each limit the parser waits for more instead of failing.
func TestParseLimitsEdges(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("x", 65536),
		"*" + strings.Repeat("1", 65535),
		"*1\r\n$" + strings.Repeat("1", 65535),
		"*2147483647\r\n",
		"*1\r\n$536870912\r\n",
		"*1\r\n$4\r\nPING\r", // a CR, but not yet the byte after it
		"*1\r\nX",            // Redis waits for the line before checking '$'
	} {
		args, n, ok, err := NewParser(0, 0).Next([]byte(in))
		if args != nil || n != 0 || ok || err != nil {
			t.Errorf("%.20q: got %q %d %v %v, want need-more", in, args, n, ok, err)
		}
	}
	p := NewParser(0, 0)
	for _, in := range []string{"*10\r\n", "*1\r\n$16384\r\n", "*11\r\n", "*1\r\n$16385\r\n"} {
		unauthOK := !strings.Contains(in, "11") && !strings.Contains(in, "16385")
		for _, authenticated := range []bool{false, true} {
			p.SetAuthenticated(authenticated)
			p.Reset()
			_, _, _, err := p.Next([]byte(in))
			if (err == nil) != (authenticated || unauthOK) {
				t.Errorf("%q authenticated=%v: %v", in, authenticated, err)
			}
		}
	}
	p.Reset()
	if p.QueryBufLimit() != DefaultMaxQueryBuf || p.Overflow(DefaultMaxQueryBuf) || !p.Overflow(DefaultMaxQueryBuf+1) {
		t.Error("query buffer limit")
	}
	if q := NewParser(0, 1<<20); !q.Overflow(1<<20+1) || q.Overflow(1<<20) {
		t.Error("custom query buffer limit")
	}
}

// Every split of a stream into two reads parses to the same commands, and an
// error stays the same error.
func TestSplitAtEveryByte(t *testing.T) {
	var whole []byte
	var want [][]string
	for _, c := range validCases {
		whole = append(whole, c.in...)
		want = append(want, c.want...)
	}
	for k := 0; k <= len(whole); k++ {
		got, err := stream(NewParser(0, 0), [][]byte{whole[:k], whole[k:]})
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("split at %d: got %q, %v", k, got, err)
		}
	}
	// And byte by byte, which exercises resuming every header.
	chunks := make([][]byte, len(whole))
	for i := range whole {
		chunks[i] = whole[i : i+1]
	}
	if got, err := stream(NewParser(0, 0), chunks); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("byte by byte: got %q, %v", got, err)
	}
	for _, c := range errorCases {
		if len(c.in) > 1000 {
			continue // the 64 KiB limits depend on how much has arrived, as in Redis
		}
		for k := 0; k <= len(c.in); k++ {
			p := NewParser(c.maxBulk, 0)
			p.SetAuthenticated(!c.unauth)
			_, err := stream(p, [][]byte{[]byte(c.in[:k]), []byte(c.in[k:])})
			if err == nil || err.Error() != c.want.Error() {
				t.Fatalf("%s split at %d: err %v, want %v", c.name, k, err, c.want)
			}
		}
	}
}

func TestPipelineRandomChunks(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	var whole []byte
	var want [][]string
	for i := 0; i < 5000; i++ {
		switch i % 4 {
		case 0:
			k, v := fmt.Sprintf("key:%d", i), strings.Repeat("v", rng.Intn(100))
			whole = fmt.Appendf(whole, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
			want = append(want, []string{"SET", k, v})
		case 1:
			whole = append(whole, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n"...)
			want = append(want, []string{"GET", ""})
		case 2:
			whole = fmt.Appendf(whole, "GET \"k\\x%02x\"\r\n", i%256)
			want = append(want, []string{"GET", "k" + string([]byte{byte(i % 256)})})
		case 3:
			whole = append(whole, "*1\r\n$4\r\nPING\r\n"...)
			want = append(want, []string{"PING"})
		}
	}
	var chunks [][]byte
	for rest := whole; len(rest) > 0; {
		n := min(1+rng.Intn(300), len(rest))
		chunks, rest = append(chunks, rest[:n]), rest[n:]
	}
	got, err := stream(NewParser(0, 0), chunks)
	if err != nil || len(got) != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %d commands, err %v; want %d", len(got), err, len(want))
	}
}

// A command with many arguments arriving in small reads is parsed in time
// linear in its size: the parser resumes instead of rescanning its headers.
func TestManyArgumentsResume(t *testing.T) {
	const n = 300_000
	whole := fmt.Appendf(nil, "*%d\r\n", n)
	for i := 0; i < n; i++ {
		whole = append(whole, "$1\r\nx\r\n"...)
	}
	p := NewParser(0, 0)
	start := time.Now()
	var buf []byte
	for i := 0; i < len(whole); i += 1024 {
		buf = append(buf, whole[i:min(i+1024, len(whole))]...)
		args, used, ok, err := p.Next(buf)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if len(args) != n || used != len(whole) {
				t.Fatalf("got %d args, used %d", len(args), used)
			}
			break
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	// The huge args buffer is not kept for the next command.
	if _, _, ok, _ := p.Next([]byte("*1\r\n$4\r\nPING\r\n")); !ok || cap(p.args) > maxRetainedArgs {
		t.Errorf("args buffer kept: cap %d", cap(p.args))
	}
}

func TestResetDropsProgress(t *testing.T) {
	p := NewParser(0, 0)
	if _, _, ok, _ := p.Next([]byte("*2\r\n$3\r\nGET\r\n$3\r\nk")); ok {
		t.Fatal("complete too early")
	}
	p.Reset()
	got, _, err := parseAll(p, []byte("*1\r\n$4\r\nPING\r\n"))
	if err != nil || fmt.Sprint(got) != "[[PING]]" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestHugeBulkDoesNotAllocate(t *testing.T) {
	p := NewParser(0, 0)
	buf := append([]byte("*2\r\n$3\r\nSET\r\n$536870912\r\n"), make([]byte, 4096)...)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, ok, err := p.Next(buf); ok || err != nil {
			t.Fatal("expected need-more")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}

func TestNoAllocs(t *testing.T) {
	for name, in := range map[string]string{
		"set":      "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
		"inline":   "SET key value\r\n",
		"quoted":   "SET \"k\\x41y\" 'v a l'\r\n",
		"pipeline": strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", 16),
	} {
		p := NewParser(0, 0)
		buf := []byte(in)
		work := make([]byte, len(buf))
		allocs := testing.AllocsPerRun(100, func() {
			copy(work, buf) // quoted inline arguments are unescaped in place
			for used := 0; used < len(work); {
				_, n, ok, err := p.Next(work[used:])
				if !ok || err != nil {
					t.Fatal(name, err)
				}
				used += n
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations", name, allocs)
		}
	}
}

func TestArgsCapacityIsCut(t *testing.T) {
	for _, in := range []string{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", "a b\r\n", "\"a\" b\r\n"} {
		buf := []byte(in)
		args, _, ok, _ := NewParser(0, 0).Next(buf)
		if !ok {
			t.Fatal(in)
		}
		_ = append(args[0], 'X', 'X', 'X', 'X')
		if args[1][0] != 'b' {
			t.Errorf("%q: append to an argument overwrote the next", in)
		}
	}
}

// A line with unbalanced quotes is rejected before any byte is rewritten.
func TestRejectedInlineLineUntouched(t *testing.T) {
	in := []byte(`set "a\x41" "b` + "\r\n")
	orig := bytes.Clone(in)
	if _, _, _, err := NewParser(0, 0).Next(in); err != ErrUnbalancedQuotes {
		t.Fatal(err)
	}
	if !bytes.Equal(in, orig) {
		t.Errorf("line rewritten: %q", in)
	}
}

// TestErrorsAgainstRedis sends each error case to a real redis-server and
// checks its reply is "-ERR " + our error text, and that it closes the
// connection. It runs only when DFLY_TEST_REDIS names one (host:port,
// without a password).
func TestErrorsAgainstRedis(t *testing.T) {
	addr := os.Getenv("DFLY_TEST_REDIS")
	if addr == "" {
		t.Skip("set DFLY_TEST_REDIS=host:port to compare with redis-server")
	}
	for _, c := range errorCases {
		if c.differsRedis || c.needsPassword || c.maxBulk != 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte(c.in)); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			reply, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("redis did not close the connection: %v (read %q)", err, reply)
			}
			// Redis replaces CR/LF in error texts, as Writer.Error does.
			var w Writer
			w.Error("ERR " + c.want.Error())
			if !bytes.HasSuffix(reply, w.Buf) {
				t.Errorf("redis replied %q, want %q", reply, w.Buf)
			}
		})
	}
}
