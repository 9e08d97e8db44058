package replica

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dfly/dfly/resp"
)

// recorder is an Applier that keeps what it is given.
type recorder struct {
	mu      sync.Mutex
	payload [][]byte
	ops     []string
	fail    error
}

func (r *recorder) FullSync(rd io.Reader, size int64) error {
	b, err := io.ReadAll(rd)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.payload = append(r.payload, b)
	r.ops = nil
	if err != nil {
		return err
	}
	return r.fail
}

func (r *recorder) Apply(ops []Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range ops {
		r.ops = append(r.ops, render(op))
	}
	return nil
}

func render(op Op) string {
	if op.Tx != nil {
		var parts []string
		for _, o := range op.Tx {
			parts = append(parts, render(o))
		}
		return "TX[" + strings.Join(parts, ";") + "]"
	}
	var a []string
	for _, x := range op.Args {
		a = append(a, string(x))
	}
	return fmt.Sprintf("%d:%s", op.DB, strings.Join(a, " "))
}

func (r *recorder) snapshot() ([][]byte, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.payload...), append([]string(nil), r.ops...)
}

// fakeMaster accepts links and runs handle on each, in order.
type fakeMaster struct {
	ln     net.Listener
	conns  chan net.Conn
	closed chan struct{}
}

func newFakeMaster(t *testing.T) *fakeMaster {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMaster{ln: ln, conns: make(chan net.Conn, 16), closed: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(m.closed)
				return
			}
			m.conns <- c
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return m
}

func (m *fakeMaster) accept(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	select {
	case c := <-m.conns:
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	case <-time.After(5 * time.Second):
		t.Fatal("replica did not connect")
	}
	return nil, nil
}

// readCmd reads one RESP array command.
func readCmd(t *testing.T, r *bufio.Reader) []string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d\r\n", &n); err != nil {
		t.Fatalf("bad command header %q", line)
	}
	out := make([]string, n)
	for i := range out {
		line, _ = r.ReadString('\n')
		var l int
		fmt.Sscanf(line, "$%d\r\n", &l)
		b := make([]byte, l+2)
		io.ReadFull(r, b)
		out[i] = string(b[:l])
	}
	return out
}

func cmd(args ...string) string { return string(resp.AppendCommand(nil, args...)) }

const replid1 = "0123456789012345678901234567890123456789"
const replid2 = "abcdefabcdefabcdefabcdefabcdefabcdefabcd"

// handshake answers PING and the REPLCONFs and returns the PSYNC args.
func handshake(t *testing.T, c net.Conn, r *bufio.Reader) []string {
	t.Helper()
	if got := readCmd(t, r); got[0] != "PING" {
		t.Fatalf("want PING, got %v", got)
	}
	c.Write([]byte("+PONG\r\n"))
	if got := readCmd(t, r); strings.Join(got, " ") != "REPLCONF listening-port 7777" {
		t.Fatalf("got %v", got)
	}
	c.Write([]byte("+OK\r\n"))
	if got := readCmd(t, r); strings.Join(got, " ") != "REPLCONF capa eof capa psync2" {
		t.Fatalf("got %v", got)
	}
	c.Write([]byte("+OK\r\n"))
	return readCmd(t, r)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expectAckAfter is expectAck skipping ACKs of the stale offset (sent
// while a diskless master had not started the stream).
func expectAckAfter(t *testing.T, r *bufio.Reader, stale string) string {
	t.Helper()
	for {
		if ack := expectAck(t, r); ack != stale {
			return ack
		}
	}
}

// expectAck reads commands until a REPLCONF ACK and returns its offset.
func expectAck(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	got := readCmd(t, r)
	if len(got) != 3 || got[0] != "REPLCONF" || got[1] != "ACK" {
		t.Fatalf("want REPLCONF ACK, got %v", got)
	}
	return got[2]
}

func TestFullSyncStreamAndPartialResync(t *testing.T) {
	for _, diskless := range []bool{false, true} {
		t.Run(fmt.Sprintf("diskless=%v", diskless), func(t *testing.T) {
			m := newFakeMaster(t)
			rec := &recorder{}
			cl := Start(Config{Addr: m.ln.Addr().String(), ListenPort: 7777, Applier: rec, AckEvery: time.Hour})
			defer cl.Stop()
			c, r := m.accept(t)
			if got := handshake(t, c, r); strings.Join(got, " ") != "PSYNC ? -1" {
				t.Fatalf("got %v", got)
			}
			payload := "REDIS0011-some-payload-bytes"
			// Keepalive newlines precede the payload.
			c.Write([]byte("+FULLRESYNC " + replid1 + " 1000\r\n\n\n"))
			if diskless {
				mark := strings.Repeat("m", 40)
				// Bytes resembling the mark's start must not end the payload.
				payload += "mmmmm" + strings.Repeat("x", 100)
				c.Write([]byte("$EOF:" + mark + "\r\n" + payload[:10]))
				time.Sleep(10 * time.Millisecond)
				c.Write([]byte(payload[10:] + mark[:20]))
				time.Sleep(10 * time.Millisecond)
				c.Write([]byte(mark[20:]))
				if ack := expectAck(t, r); ack != "1000" {
					t.Fatalf("first ACK %s, want 1000", ack)
				}
			} else {
				c.Write([]byte(fmt.Sprintf("$%d\r\n%s", len(payload), payload)))
			}
			stream := cmd("SET", "a", "1") + cmd("PING") + cmd("SELECT", "2") + cmd("MULTI") +
				cmd("INCR", "x") + cmd("SET", "y", "2") + cmd("EXEC") + cmd("del", "a")
			getack := cmd("REPLCONF", "GETACK", "*")
			c.Write([]byte(stream[:7])) // a split command
			time.Sleep(10 * time.Millisecond)
			c.Write([]byte(stream[7:] + getack))
			want := fmt.Sprint(1000 + len(stream))
			if ack := expectAckAfter(t, r, "1000"); ack != want {
				t.Fatalf("ACK %s, want %s", ack, want)
			}
			pl, ops := rec.snapshot()
			if len(pl) != 1 || string(pl[0]) != payload {
				t.Fatalf("payload %q", pl)
			}
			wantOps := "0:SET a 1|TX[2:INCR x;2:SET y 2]|2:del a"
			if strings.Join(ops, "|") != wantOps {
				t.Fatalf("ops %q, want %q", strings.Join(ops, "|"), wantOps)
			}
			st := cl.Status()
			if st.State != StateConnected || st.ReplID != replid1 || st.FullSyncs != 1 {
				t.Fatalf("status %+v", st)
			}
			// A block cut by a disconnect is not counted: the resync asks
			// for the bytes from its MULTI again.
			c.Write([]byte(cmd("SET", "b", "1") + cmd("MULTI") + cmd("SET", "z", "1")))
			waitFor(t, "SET b applied", func() bool {
				return cl.Status().ReadOffset >= int64(1000+len(stream)+len(getack)+len(cmd("SET", "b", "1")))
			})
			c.Close()
			offset := 1000 + len(stream) + len(getack) + len(cmd("SET", "b", "1"))
			c, r = m.accept(t)
			got := handshake(t, c, r)
			if strings.Join(got, " ") != fmt.Sprintf("PSYNC %s %d", replid1, offset+1) {
				t.Fatalf("got %v, want offset %d", got, offset+1)
			}
			c.Write([]byte("+CONTINUE " + replid2 + "\r\n"))
			c.Write([]byte(cmd("MULTI") + cmd("SET", "z", "1") + cmd("EXEC") + getack))
			want = fmt.Sprint(offset + len(cmd("MULTI")+cmd("SET", "z", "1")+cmd("EXEC")))
			if ack := expectAck(t, r); ack != want {
				t.Fatalf("ACK after CONTINUE %s, want %s", ack, want)
			}
			_, ops = rec.snapshot()
			wantOps += "|2:SET b 1|TX[2:SET z 1]"
			if strings.Join(ops, "|") != wantOps {
				t.Fatalf("ops %q, want %q", strings.Join(ops, "|"), wantOps)
			}
			if st := cl.Status(); st.ReplID != replid2 || st.PartialSyncs != 1 {
				t.Fatalf("status after CONTINUE %+v", st)
			}
		})
	}
}

func TestPeriodicAck(t *testing.T) {
	m := newFakeMaster(t)
	cl := Start(Config{Addr: m.ln.Addr().String(), ListenPort: 7777, Applier: &recorder{}, AckEvery: 50 * time.Millisecond})
	defer cl.Stop()
	c, r := m.accept(t)
	handshake(t, c, r)
	c.Write([]byte("+FULLRESYNC " + replid1 + " 5\r\n$0\r\n" + cmd("SET", "k", "v")))
	want := fmt.Sprint(5 + len(cmd("SET", "k", "v")))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if expectAck(t, r) == want {
			return
		}
	}
	t.Fatalf("no ACK %s", want)
}

// TestHostileMaster feeds malformed replies and streams: each ends the
// link with an error (the client reconnects), never a panic or a hang.
func TestHostileMaster(t *testing.T) {
	cases := []string{
		"+FULLRESYNC short 1\r\n",
		"+FULLRESYNC " + replid1 + " -5\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$-3\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$EOF:short\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$99999999999\r\nabc",
		"+FULLRESYNC " + replid1 + " 1\r\nxyz\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n-ERR oops\r\n",
		"+CONTINUE a b c\r\n",
		"-ERR no\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$0\r\n*2\r\n$3\r\nSET\r\n$-7\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$0\r\n*1\r\n$4\r\nEXEC\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$0\r\n*2\r\n$6\r\nSELECT\r\n$2\r\n-1\r\n",
		"+FULLRESYNC " + replid1 + " 1\r\n$0\r\n*3000000000\r\n",
		"+CONTINUE\r\n" + strings.Repeat("x", maxLine*2),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 30; i++ {
		b := make([]byte, rng.IntN(200))
		for j := range b {
			b[j] = "+-$*:\r\n0123456789abcFULLRESYNC "[rng.IntN(30)]
		}
		cases = append(cases, string(b))
	}
	for i, input := range cases {
		m := newFakeMaster(t)
		cl := Start(Config{Addr: m.ln.Addr().String(), ListenPort: 7777, Applier: &recorder{}, Timeout: 300 * time.Millisecond})
		c, r := m.accept(t)
		handshake(t, c, r)
		c.Write([]byte(input))
		// The link must fail (a new connection arrives) or stay idle
		// within the timeout; either way Stop returns.
		select {
		case c2 := <-m.conns:
			c2.Close()
		case <-time.After(time.Second):
			if st := cl.Status(); st.State == StateConnected && len(input) > 0 && i < 14 {
				t.Errorf("case %d %q: still connected", i, input)
			}
		}
		cl.Stop()
	}
}

func TestEOFReaderMarkAcrossReads(t *testing.T) {
	mark := []byte(strings.Repeat("Z", 39) + "Y")
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		payload := make([]byte, rng.IntN(3000))
		for i := range payload {
			payload[i] = "ZYab"[rng.IntN(4)]
		}
		if bytes.Contains(payload, mark) {
			continue
		}
		// A payload ending in a near-mark must still be found.
		whole := append(append(append([]byte{}, payload...), mark...), "after"...)
		a, b := net.Pipe()
		go func() {
			for len(whole) > 0 {
				n := 1 + rng.IntN(64)
				n = min(n, len(whole))
				a.Write(whole[:n])
				whole = whole[n:]
			}
		}()
		w := newWire(b, time.Second, 1<<20)
		got, err := io.ReadAll(newEOFReader(w, mark))
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("trial %d: got %d bytes (%v), want %d", trial, len(got), err, len(payload))
		}
		rest := make([]byte, 5)
		if _, err := io.ReadFull(w, rest); err != nil || string(rest) != "after" {
			t.Fatalf("trial %d: after the mark %q %v", trial, rest, err)
		}
		a.Close()
		b.Close()
	}
}

// TestOpenBlockBounded: a master that opens MULTI and never closes it
// cannot make the replica buffer without bound.
func TestOpenBlockBounded(t *testing.T) {
	m := newFakeMaster(t)
	cl := Start(Config{Addr: m.ln.Addr().String(), ListenPort: 7777, Applier: &recorder{}, MaxQueryBuf: 1 << 16})
	defer cl.Stop()
	c, r := m.accept(t)
	handshake(t, c, r)
	c.Write([]byte("+FULLRESYNC " + replid1 + " 0\r\n$0\r\n" + cmd("MULTI")))
	big := cmd("SET", "k", strings.Repeat("v", 1000))
	go func() {
		for i := 0; i < 200; i++ {
			if _, err := c.Write([]byte(big)); err != nil {
				return
			}
		}
	}()
	select {
	case c2 := <-m.conns: // the link failed and was retried
		c2.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("an endless MULTI block did not end the link")
	}
}

// TestBurstLargerThanABatch: a burst of more commands than one Apply
// takes is applied at once, not when the next bytes arrive.
func TestBurstLargerThanABatch(t *testing.T) {
	m := newFakeMaster(t)
	rec := &recorder{}
	cl := Start(Config{Addr: m.ln.Addr().String(), ListenPort: 7777, Applier: rec, AckEvery: time.Hour})
	defer cl.Stop()
	c, r := m.accept(t)
	handshake(t, c, r)
	var b strings.Builder
	b.WriteString("+FULLRESYNC " + replid1 + " 0\r\n$0\r\n")
	const n = 3*maxOpsPerApply + 17
	for i := 0; i < n; i++ {
		b.WriteString(cmd("SET", fmt.Sprint(i), "v"))
	}
	c.Write([]byte(b.String()))
	waitFor(t, "the burst applied", func() bool { _, ops := rec.snapshot(); return len(ops) == n })
}
