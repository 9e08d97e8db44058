package server

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dfly/dfly/resp"
)

// A command that panics answers its client with an error, drops the part
// of its reply written so far, and leaves the server serving that client
// and every other (recover.go). Without the recovery the first panic ends
// the test binary.
func TestCommandPanicIsAnError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := DefaultConfig()
	cfg.Port, cfg.Shards, cfg.Dir = port, 2, t.TempDir()
	srv := New(cfg, NewLogger(io.Discard, "warning"))
	// Registered before Serve: the table is read-only once clients come.
	srv.table.add("server",
		&Command{Name: "test.shardpanic", Arity: 2, FirstKey: 1, LastKey: 1, Step: 1, Flags: FlagWrite,
			Shard: func(x *Exec) {
				x.W.Array(2)
				x.W.BulkString("half")
				panic("shard boom")
			}},
		&Command{Name: "test.localpanic", Arity: 1,
			Local: func(c *Conn, _ [][]byte, w *resp.Writer) {
				w.Array(3)
				panic(fmt.Errorf("local boom"))
			}},
	)
	go srv.Serve()
	select {
	case <-srv.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	z := dialZ(t, addr)
	other := dialZ(t, addr)
	before := commandPanics.Load()

	z.do(t, "SET", "k", "v")
	// Pipelined: the commands around the panicking one keep their replies
	// and their order.
	for _, key := range []string{"k", "a", "b", "c", "d"} { // both shards
		z.send(t, "GET", "k")
		z.send(t, "test.shardpanic", key)
		z.send(t, "test.localpanic")
		z.send(t, "INCR", "n")
		var got []string
		for i := 0; i < 4; i++ {
			var out strings.Builder
			z.read(t, &out)
			got = append(got, out.String())
		}
		want := []string{"$1\r\nv\r\n", "-ERR internal error in 'test.shardpanic' command: shard boom\r\n",
			"-ERR internal error in 'test.localpanic' command: local boom\r\n"}
		for i, w := range want {
			if got[i] != w {
				t.Fatalf("key %s, reply %d = %q, want %q (all: %q)", key, i, got[i], w, got)
			}
		}
		if !strings.HasPrefix(got[3], ":") {
			t.Fatalf("INCR after the panics: %q", got[3])
		}
	}
	if r := other.do(t, "GET", "k"); r != "$1\r\nv\r\n" {
		t.Fatalf("another client after the panics: %q", r)
	}
	if n := commandPanics.Load() - before; n != 10 {
		t.Fatalf("command_panics grew by %d, want 10", n)
	}
	if info := z.do(t, "INFO", "stats"); !strings.Contains(info, "command_panics:") {
		t.Fatalf("INFO stats has no command_panics")
	}
}
