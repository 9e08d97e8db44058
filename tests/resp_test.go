package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Kind is the RESP2/RESP3 type of a reply.
type Kind int

const (
	KindStatus   Kind = iota // +OK
	KindError                // -ERR ... and !<len> blob errors
	KindInt                  // :1
	KindBulk                 // $3 foo
	KindNil                  // $-1, *-1, _
	KindArray                // *N
	KindMap                  // %N (RESP3)
	KindSet                  // ~N (RESP3)
	KindPush                 // >N (RESP3)
	KindDouble               // ,1.5 (RESP3)
	KindBool                 // #t (RESP3)
	KindBigNum               // (123 (RESP3)
	KindVerbatim             // =N txt:... (RESP3)
)

// Reply is one parsed RESP reply. Maps keep their pairs flattened in Elems
// (key, value, key, value...), in the order the server sent them.
type Reply struct {
	Kind  Kind
	Str   string // status, error, bulk, double, bignum and verbatim text; "t"/"f" for booleans
	Int   int64
	Elems []Reply
}

// String renders the reply canonically (see testdata/README.md), one line
// per scalar, containers as indented lists.
func (r Reply) String() string { return strings.Join(r.Lines(), "\n") }

// Lines renders the reply canonically, one entry per line.
func (r Reply) Lines() []string {
	var out []string
	r.render(&out, "")
	return out
}

func (r Reply) isContainer() bool {
	switch r.Kind {
	case KindArray, KindMap, KindSet, KindPush:
		return true
	}
	return false
}

func (r Reply) render(out *[]string, indent string) {
	if !r.isContainer() {
		*out = append(*out, indent+r.scalar())
		return
	}
	name := containerName(r.Kind)
	if len(r.Elems) == 0 {
		*out = append(*out, indent+"(empty "+name+")")
		return
	}
	*out = append(*out, indent+"("+name+")")
	child := indent + "  "
	if r.Kind != KindMap {
		for _, e := range r.Elems {
			e.render(out, child)
		}
		return
	}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		k, v := r.Elems[i], r.Elems[i+1]
		key := k.scalar()
		if k.isContainer() {
			key = strings.Join(k.Lines(), " ") // never expected in practice
		}
		if v.isContainer() && len(v.Elems) > 0 {
			*out = append(*out, child+key+" =>")
			v.render(out, child+"  ")
			continue
		}
		*out = append(*out, child+key+" => "+v.Lines()[0])
	}
}

func containerName(k Kind) string {
	switch k {
	case KindMap:
		return "map"
	case KindSet:
		return "set"
	case KindPush:
		return "push"
	}
	return "array"
}

// scalar renders a non-container reply as one line.
func (r Reply) scalar() string {
	switch r.Kind {
	case KindStatus:
		return r.Str
	case KindError:
		return "(error) " + r.Str
	case KindInt:
		return "(integer) " + strconv.FormatInt(r.Int, 10)
	case KindBulk:
		return Quote(r.Str)
	case KindNil:
		return "(nil)"
	case KindDouble:
		return "(double) " + r.Str
	case KindBool:
		if r.Str == "t" {
			return "(true)"
		}
		return "(false)"
	case KindBigNum:
		return "(bignum) " + r.Str
	case KindVerbatim:
		return "(verbatim) " + Quote(r.Str)
	}
	return fmt.Sprintf("(kind %d)", r.Kind)
}

// Quote renders s the way redis-cli does: printable ASCII as is, \" \\ \n
// \r \t \a \b escaped, every other byte as \xNN.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// IsError reports whether the reply is an error reply.
func (r Reply) IsError() bool { return r.Kind == KindError }

// RawConn is a bare RESP connection: it writes exactly the bytes it is given
// and parses replies of either protocol version, so tests can see what the
// server really sends.
type RawConn struct {
	t       testing.TB
	conn    net.Conn
	reader  *bufio.Reader
	Timeout time.Duration // per reply; 10 s unless changed
}

// DialRaw opens a raw connection to addr; the test closes it at cleanup.
func DialRaw(t testing.TB, addr string) *RawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &RawConn{t: t, conn: conn, reader: bufio.NewReader(conn), Timeout: 10 * time.Second}
}

// Close closes the connection.
func (c *RawConn) Close() error { return c.conn.Close() }

// Write sends raw bytes; the test fails if the write fails.
func (c *RawConn) Write(raw string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(c.Timeout))
	if _, err := io.WriteString(c.conn, raw); err != nil {
		c.t.Fatalf("write %q: %v", truncate(raw, 64), err)
	}
}

// Send writes one command as a RESP multibulk without reading the reply.
func (c *RawConn) Send(args ...string) {
	c.t.Helper()
	c.Write(EncodeCommand(args...))
}

// Do sends one command and returns its reply; I/O errors fail the test,
// error replies do not.
func (c *RawConn) Do(args ...string) Reply {
	c.t.Helper()
	c.Send(args...)
	return c.MustRead()
}

// MustRead reads one reply; I/O and protocol errors fail the test.
func (c *RawConn) MustRead() Reply {
	c.t.Helper()
	r, err := c.Read()
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return r
}

// Read reads one reply. RESP3 attributes are skipped.
func (c *RawConn) Read() (Reply, error) {
	c.conn.SetReadDeadline(time.Now().Add(c.Timeout))
	return readReply(c.reader)
}

// ExpectClosed asserts that the server closes the connection within d,
// discarding anything it still sends.
func (c *RawConn) ExpectClosed(d time.Duration) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c.reader)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("server did not close the connection within %v", d)
	}
}

// EncodeCommand encodes args as a RESP multibulk request.
func EncodeCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("resp: line not terminated by CRLF: %q", truncate(line, 64))
	}
	return line[:len(line)-2], nil
}

func readReply(r *bufio.Reader) (Reply, error) {
	line, err := readLine(r)
	if err != nil {
		return Reply{}, err
	}
	if line == "" {
		return Reply{}, errors.New("resp: empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return Reply{Kind: KindStatus, Str: body}, nil
	case '-':
		return Reply{Kind: KindError, Str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return Reply{}, fmt.Errorf("resp: bad integer %q", body)
		}
		return Reply{Kind: KindInt, Int: n}, nil
	case '_':
		return Reply{Kind: KindNil}, nil
	case ',':
		return Reply{Kind: KindDouble, Str: body}, nil
	case '#':
		if body != "t" && body != "f" {
			return Reply{}, fmt.Errorf("resp: bad boolean %q", body)
		}
		return Reply{Kind: KindBool, Str: body}, nil
	case '(':
		return Reply{Kind: KindBigNum, Str: body}, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return Reply{}, fmt.Errorf("resp: bad length %q", line)
		}
		if n == -1 {
			return Reply{Kind: KindNil}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Reply{}, errors.New("resp: bulk not terminated by CRLF")
		}
		s := string(buf[:n])
		switch line[0] {
		case '!':
			return Reply{Kind: KindError, Str: s}, nil
		case '=':
			if len(s) >= 4 && s[3] == ':' {
				s = s[4:]
			}
			return Reply{Kind: KindVerbatim, Str: s}, nil
		}
		return Reply{Kind: KindBulk, Str: s}, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return Reply{}, fmt.Errorf("resp: bad length %q", line)
		}
		if n == -1 {
			return Reply{Kind: KindNil}, nil
		}
		count := n
		if line[0] == '%' || line[0] == '|' {
			count = 2 * n
		}
		elems := make([]Reply, 0, count)
		for i := 0; i < count; i++ {
			e, err := readReply(r)
			if err != nil {
				return Reply{}, err
			}
			elems = append(elems, e)
		}
		switch line[0] {
		case '|': // an attribute precedes the real reply; drop it
			return readReply(r)
		case '%':
			return Reply{Kind: KindMap, Elems: elems}, nil
		case '~':
			return Reply{Kind: KindSet, Elems: elems}, nil
		case '>':
			return Reply{Kind: KindPush, Elems: elems}, nil
		}
		return Reply{Kind: KindArray, Elems: elems}, nil
	}
	return Reply{}, fmt.Errorf("resp: unknown type byte in %q", truncate(line, 64))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
