package tests

// The replication checker's recorder: a raw PSYNC connection to the master
// that skips the RDB and keeps every command of the stream that follows,
// with its database, so that a failure can show a key's history as the
// replicas received it.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamLine is one command of the recorded stream.
type streamLine struct {
	offset int64 // the master's replication offset where it starts
	db     string
	args   []string
	inTx   bool // between MULTI and EXEC
}

// streamRecorder keeps the master's replication stream.
type streamRecorder struct {
	conn net.Conn
	mu   sync.Mutex
	cmds []streamLine
	err  error // why the recording stopped early
	done chan struct{}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// recordStream connects to master as a replica (PSYNC ? -1) and records
// its stream until the test ends. It acknowledges what it read, as a
// replica does, once a second.
func recordStream(t *testing.T, master *Server) *streamRecorder {
	t.Helper()
	conn, err := net.DialTimeout("tcp", master.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("recorder: dial %s: %v", master.Addr, err)
	}
	s := &streamRecorder{conn: conn, done: make(chan struct{})}
	t.Cleanup(func() { conn.Close(); <-s.done })
	counter := &countingReader{r: conn}
	br := bufio.NewReader(counter)
	consumed := func() int64 { return counter.n - int64(br.Buffered()) }

	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, EncodeCommand("REPLCONF", "listening-port", "1")+EncodeCommand("PSYNC", "?", "-1")); err != nil {
		t.Fatalf("recorder: %v", err)
	}
	if r, err := readReply(br); err != nil || r.IsError() {
		t.Fatalf("recorder: REPLCONF: %v %s", err, r.Str)
	}
	line, err := br.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("recorder: PSYNC answered %q %v", line, err)
	}
	start, _ := strconv.ParseInt(f[2], 10, 64)
	for {
		line, err = br.ReadString('\n')
		if err != nil {
			t.Fatalf("recorder: RDB header: %v", err)
		}
		if line != "\n" { // newlines keep the link alive while the RDB is made
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "$")), 10, 64)
	if err != nil || !strings.HasPrefix(line, "$") {
		t.Fatalf("recorder: RDB header %q", line)
	}
	if _, err := io.CopyN(io.Discard, br, n); err != nil {
		t.Fatalf("recorder: RDB payload: %v", err)
	}
	base := consumed() // stream offset start is here
	conn.SetDeadline(time.Time{})
	go s.read(br, func() int64 { return start + consumed() - base })
	return s
}

func (s *streamRecorder) read(br *bufio.Reader, offset func() int64) {
	defer close(s.done)
	db := "0"
	inTx := false
	lastAck := time.Now()
	for {
		at := offset()
		r, err := readReply(br)
		if err != nil {
			s.mu.Lock()
			if !strings.Contains(err.Error(), "use of closed network connection") {
				s.err = err
			}
			s.mu.Unlock()
			return
		}
		args := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			args[i] = e.Str
		}
		if len(args) == 2 && strings.EqualFold(args[0], "SELECT") {
			db = args[1]
		}
		if len(args) > 0 && !strings.EqualFold(args[0], "PING") && !strings.EqualFold(args[0], "REPLCONF") {
			switch strings.ToUpper(args[0]) {
			case "MULTI":
				inTx = true
			case "EXEC":
				inTx = false
			}
			s.mu.Lock()
			s.cmds = append(s.cmds, streamLine{offset: at, db: db, args: args, inTx: inTx})
			s.mu.Unlock()
		}
		if time.Since(lastAck) > time.Second {
			lastAck = time.Now()
			io.WriteString(s.conn, EncodeCommand("REPLCONF", "ACK", strconv.FormatInt(offset(), 10)))
		}
	}
}

// lines returns the recorded commands so far.
func (s *streamRecorder) lines() ([]streamLine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmds[:len(s.cmds):len(s.cmds)], s.err
}

// naming returns the recorded commands that name key (in any database:
// MOVE, COPY ... DB and SWAPDB cross them), the last limit of them, and
// how many there were in all.
func (s *streamRecorder) naming(key string, limit int) ([]string, int) {
	cmds, _ := s.lines()
	var out []string
	n := 0
	for _, c := range cmds {
		if !argsName(c.args, key) {
			continue
		}
		n++
		tx := ""
		if c.inTx {
			tx = " (in MULTI)"
		}
		out = append(out, fmt.Sprintf("@%d db%s %s%s", c.offset, c.db, rcLine(c.args), tx))
		if len(out) > limit {
			out = out[1:]
		}
	}
	return out, n
}

// argsName reports whether a command names key among its arguments, or
// is a SWAPDB (which moves every key).
func argsName(args []string, key string) bool {
	if len(args) > 0 && strings.EqualFold(args[0], "SWAPDB") {
		return true
	}
	for _, a := range args[min(1, len(args)):] {
		if a == key {
			return true
		}
	}
	return false
}
