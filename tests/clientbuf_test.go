package tests

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dialNonReading connects with a small receive buffer and never reads:
// the server's replies pile up in its output buffer.
func dialNonReading(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		_ = rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return err
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// hasClient reports whether CLIENT LIST shows a client of that name.
func hasClient(r *RawConn, name string) bool {
	return strings.Contains(r.Do("CLIENT", "LIST").Str, " name="+name+" ")
}

// outputClosedLog is Redis's log line for a client closed at its output
// buffer limit (catClientInfoString, then the reason): "scheduled to be
// closed ASAP" when output is added, "closed" from the cron.
func outputClosedLog(name, how string) *regexp.Regexp {
	return regexp.MustCompile(`Client id=\d+ addr=\S+ .*\bname=` + name + ` .*\bomem=\d+ .* ` + how + ` for overcoming of output buffer limits\.`)
}

const asap, fromCron = "scheduled to be closed ASAP", "closed"

// A client that pipelines GETs of a big value and never reads: CLIENT
// LIST shows its output piling up (omem, oll), and once its class's hard
// limit is below that, its next reply closes it, with Redis's log line.
func TestOutputBufferHardLimit(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	admin.Do("SET", "bigkey", strings.Repeat("x", 1<<20))
	hog := dialNonReading(t, s.Addr)
	if _, err := hog.Write([]byte("CLIENT SETNAME hog\r\n" + strings.Repeat("GET bigkey\r\n", 20))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "client hog", func() bool { return hasClient(admin, "hog") })
	// The default normal class has no limit: the replies wait.
	waitFor(t, 10*time.Second, "hog's omem over 8 MB", func() bool {
		return clientField(t, admin, "hog", "omem") >= 8<<20
	})
	// Where the bytes wait differs: Redis's 16 KB buffer (obl) then a list
	// of blocks (oll); gnet's ring (obl), then a list past 64 KB.
	omem, obl, oll := clientField(t, admin, "hog", "omem"), clientField(t, admin, "hog", "obl"), clientField(t, admin, "hog", "oll")
	if tot := clientField(t, admin, "hog", "tot-mem"); obl+oll == 0 || tot < omem {
		t.Errorf("omem %d, obl %d, oll %d, tot-mem %d", omem, obl, oll, tot)
	}
	if r := admin.Do("CONFIG", "SET", "client-output-buffer-limit", "normal 10mb 5mb 2"); r.Str != "OK" {
		t.Fatal(r)
	}
	if !hasClient(admin, "hog") {
		t.Fatal("closed before new output")
	}
	if _, err := hog.Write([]byte("GET bigkey\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "hog closed", func() bool { return !hasClient(admin, "hog") })
	waitFor(t, 5*time.Second, "the log line", func() bool { return outputClosedLog("hog", asap).MatchString(s.Output()) })
	if !IsRedis() { // a Redis 7.2 field
		if n := infoField(admin, "stats", "client_output_buffer_limit_disconnections"); n != "1" {
			t.Errorf("client_output_buffer_limit_disconnections %q", n)
		}
	}
	if r := admin.Do("GET", "bigkey"); len(r.Str) != 1<<20 {
		t.Errorf("server unwell after: %v", r.Kind)
	}
}

// Over the soft limit for longer than its seconds, a client is closed
// even though no more output comes (Redis checks it in its cron).
func TestOutputBufferSoftLimit(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	admin.Do("SET", "bigkey", strings.Repeat("x", 1<<20))
	if r := admin.Do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 1mb 1"); r.Str != "OK" {
		t.Fatal(r)
	}
	hog := dialNonReading(t, s.Addr)
	if _, err := hog.Write([]byte("CLIENT SETNAME softhog\r\n" + strings.Repeat("GET bigkey\r\n", 20))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "client softhog", func() bool { return hasClient(admin, "softhog") })
	start := time.Now()
	waitFor(t, 10*time.Second, "softhog closed", func() bool { return !hasClient(admin, "softhog") })
	// Reached at once; closed once more than a whole second has passed.
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("closed after %v, before its soft seconds", d)
	}
	waitFor(t, 5*time.Second, "the log line", func() bool { return outputClosedLog("softhog", fromCron).MatchString(s.Output()) })
}

// A subscriber that does not read is held to the pubsub class's limit.
func TestOutputBufferPubsubLimit(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	if r := admin.Do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 2mb 0 0"); r.Str != "OK" {
		t.Fatal(r)
	}
	sub := dialNonReading(t, s.Addr)
	if _, err := sub.Write([]byte("CLIENT SETNAME subhog\r\nSUBSCRIBE ch\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "client subhog", func() bool { return hasClient(admin, "subhog") })
	waitFor(t, 5*time.Second, "subscribed", func() bool { return admin.Do("PUBSUB", "NUMSUB", "ch").Elems[1].Int == 1 })
	msg := strings.Repeat("m", 100<<10)
	for i := 0; i < 300 && hasClient(admin, "subhog"); i++ {
		admin.Do("PUBLISH", "ch", msg)
	}
	waitFor(t, 10*time.Second, "subhog closed", func() bool { return !hasClient(admin, "subhog") })
	waitFor(t, 5*time.Second, "the log line", func() bool { return outputClosedLog("subhog", asap).MatchString(s.Output()) })
}

// A query buffer over client-query-buffer-limit closes the client without
// a reply, with Redis's log line. Like Redis 7.0, what counts is the
// unparsed input and the bulk being received: a multibulk of many small
// arguments, as large, is not refused.
func TestQueryBufferLimit(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	if r := admin.Do("CONFIG", "SET", "client-query-buffer-limit", "1mb"); r.Str != "OK" {
		t.Fatal(r)
	}
	// Redis's minimum.
	if r := admin.Do("CONFIG", "SET", "client-query-buffer-limit", "1000"); !r.IsError() {
		t.Fatalf("1000 accepted: %v", r)
	}

	q := s.Raw(t)
	q.Do("CLIENT", "SETNAME", "bigquery")
	if !hasClient(admin, "bigquery") {
		t.Fatal("no client bigquery")
	}
	conn := q.conn
	_, _ = conn.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2097152\r\n"))
	piece := []byte(strings.Repeat("a", 64<<10))
	for i := 0; i < 24; i++ { // 1.5 MB of the 2 MB; the server may close meanwhile
		if _, err := conn.Write(piece); err != nil {
			break
		}
	}
	q.ExpectClosed(10 * time.Second)
	re := regexp.MustCompile(`Closing client that reached max query buffer length: id=\d+ addr=\S+ .*\bname=bigquery .*\bqbuf=\d+ .* \(qbuf initial bytes: "a{64}"\)`)
	waitFor(t, 5*time.Second, "the log line", func() bool { return re.MatchString(s.Output()) })
	if n := admin.Do("EXISTS", "k").Int; n != 0 {
		t.Errorf("EXISTS k = %d", n)
	}
	if !IsRedis() {
		if n := infoField(admin, "stats", "client_query_buffer_limit_disconnections"); n != "1" {
			t.Errorf("client_query_buffer_limit_disconnections %q", n)
		}
	}

	// 2 MB of small arguments, sent in pieces: parsed as they come.
	m := s.Raw(t)
	const pairs = 20000
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(1+2*pairs) + "\r\n$4\r\nMSET\r\n")
	for i := 0; i < pairs; i++ {
		k := "key:" + strconv.Itoa(i)
		b.WriteString("$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n$90\r\n" + strings.Repeat("v", 90) + "\r\n")
	}
	cmd := b.String()
	for off := 0; off < len(cmd); off += 32 << 10 {
		m.Write(cmd[off:min(off+32<<10, len(cmd))])
		time.Sleep(time.Millisecond)
	}
	if r := m.MustRead(); r.Str != "OK" {
		t.Fatalf("MSET of %d bytes: %v", len(cmd), r)
	}
	if n := admin.Do("DBSIZE").Int; n != pairs {
		t.Errorf("DBSIZE %d", n)
	}
}
