package tests

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientField is one field of the CLIENT LIST line of the client named name.
func clientField(t *testing.T, r *RawConn, name, field string) int64 {
	t.Helper()
	list := r.Do("CLIENT", "LIST").Str
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		m := regexp.MustCompile(` ` + regexp.QuoteMeta(field) + `=(\d+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no %s in %q", field, line)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	t.Fatalf("no client %s in %q", name, list)
	return 0
}

// A client that declares a 512 MB value and feeds it slowly costs the
// server what it sent, not what it declared, and each piece costs its own
// size once (receiving was quadratic: 2.6-5.1 GB of RSS after 166-300 MB).
func TestBigValueSlowFeeder(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$6\r\nfeeder\r\n")
	fmt.Fprintf(w, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", 512<<20)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("CLIENT SETNAME: %q %v", line, err)
	}
	before := s.RSS(t)
	const pieces, piece = 64, 1 << 20
	buf := []byte(strings.Repeat("x", piece))
	start := time.Now()
	for i := 0; i < pieces; i++ {
		if _, err := conn.Write(buf); err != nil {
			t.Fatalf("piece %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The server has taken every byte sent when CLIENT LIST counts them in
	// the client's query buffer (qbuf: the bulk received so far, as Redis).
	var qbuf int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if qbuf = clientField(t, admin, "feeder", "qbuf"); qbuf >= pieces*piece {
			break
		}
	}
	if qbuf < pieces*piece || qbuf > pieces*piece+1024 {
		t.Fatalf("qbuf %d after %d bytes of the bulk", qbuf, pieces*piece)
	}
	t.Logf("%d MB received in %v", pieces*piece>>20, time.Since(start).Round(time.Millisecond))
	time.Sleep(200 * time.Millisecond)
	growth := s.RSS(t) - before
	t.Logf("RSS grew %d MB for %d MB sent", growth>>20, pieces*piece>>20)
	// Each byte sent is held once; a piece in flight and the chunk being
	// filled are the overhead (Redis: 64 MB for 64 MB).
	limit := int64(pieces*piece + 32<<20)
	if raceBuild() {
		limit *= 3 // the race detector's shadow memory
	}
	if growth > limit {
		t.Errorf("RSS grew %d MB for %d MB sent (limit %d MB)", growth>>20, pieces*piece>>20, limit>>20)
	}
	if n := admin.Do("EXISTS", "big").Int; n != 0 {
		t.Errorf("EXISTS big = %d before the value completed", n)
	}
}
