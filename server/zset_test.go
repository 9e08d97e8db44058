package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// startZSetServer runs an in-process server with shards shards and returns
// its address.
func startZSetServer(t *testing.T, shards int) (*Server, string) {
	t.Helper()
	addr, srv := startWithCommands(t, shards)
	return srv, addr
}

// zconn is a minimal RESP client returning replies as raw protocol text.
type zconn struct {
	c net.Conn
	r *bufio.Reader
}

func dialZ(t *testing.T, addr string) *zconn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &zconn{c, bufio.NewReader(c)}
}

func (z *zconn) do(t *testing.T, args ...string) string {
	t.Helper()
	z.send(t, args...)
	var out strings.Builder
	z.read(t, &out)
	return out.String()
}

// send writes one command without reading its reply (a pipeline).
func (z *zconn) send(t *testing.T, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := z.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

func (z *zconn) read(t *testing.T, out *strings.Builder) {
	line, err := z.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString(line)
	var n int
	switch line[0] {
	case '$':
		fmt.Sscanf(line[1:], "%d", &n)
		if n >= 0 {
			buf := make([]byte, n+2)
			io.ReadFull(z.r, buf)
			out.Write(buf)
		}
	case '*':
		fmt.Sscanf(line[1:], "%d", &n)
		for i := 0; i < n; i++ {
			z.read(t, out)
		}
	}
}

// TestZRankWithScore covers Redis 7.2's ZRANK/ZREVRANK WITHSCORE, which the
// 7.0 tables cannot prove (7.0 rejects the extra argument).
func TestZRankWithScore(t *testing.T) {
	_, addr := startZSetServer(t, 1)
	c := dialZ(t, addr)
	c.do(t, "ZADD", "z", "1.5", "a", "2", "b")
	for _, tc := range []struct{ args, want string }{
		{"ZRANK z b WITHSCORE", "*2\r\n:1\r\n$1\r\n2\r\n"},
		{"ZREVRANK z b withscore", "*2\r\n:0\r\n$1\r\n2\r\n"},
		{"ZRANK z a WITHSCORE", "*2\r\n:0\r\n$3\r\n1.5\r\n"},
		{"ZRANK z nope WITHSCORE", "*-1\r\n"},
		{"ZRANK nokey a WITHSCORE", "*-1\r\n"},
		{"ZRANK z a WITHSCORES", "-ERR syntax error\r\n"},
		{"ZRANK z a WITHSCORE x", "-ERR wrong number of arguments for 'zrank' command\r\n"},
		{"ZRANK z nope", "$-1\r\n"},
	} {
		if got := c.do(t, strings.Fields(tc.args)...); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestZStoreAtomicAcrossShards checks that no reader sees a half-written
// cross-shard STORE: while ZUNIONSTORE rewrites dst from two sources on
// other shards (and DEL removes it), ZCARD dst is always 0 or complete.
func TestZStoreAtomicAcrossShards(t *testing.T) {
	srv, addr := startZSetServer(t, 4)
	keys := []string{"z1", "z2", "dst"}
	if srv.ShardOf([]byte("z1")) == srv.ShardOf([]byte("z2")) || srv.ShardOf([]byte("z2")) == srv.ShardOf([]byte("dst")) {
		t.Fatalf("test keys %v share a shard", keys)
	}
	setup := dialZ(t, addr)
	args1, args2 := []string{"ZADD", "z1"}, []string{"ZADD", "z2"}
	for i := 0; i < 300; i++ {
		args1 = append(args1, fmt.Sprint(i), fmt.Sprintf("a%d", i))
		args2 = append(args2, fmt.Sprint(i), fmt.Sprintf("b%d", i))
	}
	setup.do(t, args1...)
	setup.do(t, args2...)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := dialZ(t, addr)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				w.do(t, "ZUNIONSTORE", "dst", "2", "z1", "z2")
			} else {
				w.do(t, "DEL", "dst")
			}
		}
	}()
	r := dialZ(t, addr)
	for i := 0; i < 300; i++ {
		got := r.do(t, "ZCARD", "dst")
		if got != ":0\r\n" && got != ":600\r\n" {
			t.Errorf("ZCARD dst = %q mid-STORE", got)
			break
		}
	}
	close(stop)
	wg.Wait()
}
