package server

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// A command that panics answers its client with an error, drops the part
// of its reply written so far, and leaves the server serving that client
// and every other (recover.go). Without the recovery the first panic ends
// the test binary.
func TestCommandPanicIsAnError(t *testing.T) {
	addr, _ := startWithCommands(t, 2,
		&command.Command{Name: "test.shardpanic", Arity: 2, FirstKey: 1, LastKey: 1, Step: 1, Flags: command.FlagWrite,
			Shard: func(x *command.Exec) {
				x.W.Array(2)
				x.W.BulkString("half")
				panic("shard boom")
			}},
		&command.Command{Name: "test.localpanic", Arity: 1,
			Local: viaConn(func(c *Conn, _ [][]byte, w *resp.Writer) {
				w.Array(3)
				panic(fmt.Errorf("local boom"))
			})},
	)
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

// startWithCommands starts an in-process server with shards shards and
// extra commands (registered before Serve: the table is read-only once
// clients come).
func startWithCommands(t *testing.T, shards int, cmds ...*command.Command) (string, *Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := config.Default()
	cfg.Port, cfg.Shards, cfg.Dir = port, shards, t.TempDir()
	srv := New(cfg, NewLogger(io.Discard, "warning"))
	srv.table.Add("server", cmds...)
	go srv.Serve()
	select {
	case <-srv.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	return fmt.Sprintf("127.0.0.1:%d", port), srv
}

// A coordinator command that panics — on its own goroutine between steps,
// in a step on a shard, or in the step that releases its locks — answers
// an error, and its locks are given back: its keys can be written at once
// by others, the shards keep serving. Without the recovery the panic ends
// the test binary; without the abort the later SET on its keys never
// answers.
func TestCoordinatorPanicReleasesLocks(t *testing.T) {
	addr, srv := startWithCommands(t, 2,
		&command.Command{Name: "test.coordpanic", Arity: -4, FirstKey: 2, LastKey: -1, Step: 1, Flags: command.FlagWrite,
			Shard: func(x *command.Exec) { x.W.SimpleString("one shard") },
			Multi: viaCoord(func(x *Coord) {
				t := x.LockKeys([]int{2, 3}, true)
				switch string(x.Args[1]) {
				case "coord":
					panic("coordinator boom")
				case "step":
					t.Run(x.ShardOf(x.Args[2]), func(*shard.Shard) {})
					t.Run(x.ShardOf(x.Args[3]), func(*shard.Shard) { panic("step boom") })
				case "finish":
					t.Finish(func(*shard.Shard) { panic("finish boom") })
				}
				t.Finish(nil)
				x.W.SimpleString("OK")
			})},
		&command.Command{Name: "test.allpanic", Arity: 1, Flags: command.FlagWrite,
			Multi: viaCoord(func(x *Coord) {
				t := x.Tx()
				t.AddAllShards()
				t.Lock()
				panic("all boom")
			})},
	)
	// Two keys on different shards.
	k1, k2 := "k1", ""
	for i := 2; k2 == ""; i++ {
		if k := "k" + strconv.Itoa(i); srv.ShardOf([]byte(k)) != srv.ShardOf([]byte(k1)) {
			k2 = k
		}
	}
	z, other := dialZ(t, addr), dialZ(t, addr)
	for _, c := range []*zconn{z, other} {
		c.c.SetDeadline(time.Now().Add(30 * time.Second)) // a lock left held: a failure, not a hang
	}
	before := commandPanics.Load()
	for _, stage := range []string{"coord", "step", "finish", "none"} {
		want := "+OK\r\n"
		if stage != "none" {
			want = "-ERR internal error in 'test.coordpanic' command: " + stage + " boom\r\n"
			if stage == "coord" {
				want = "-ERR internal error in 'test.coordpanic' command: coordinator boom\r\n"
			}
		}
		// Pipelined with commands on the same keys before and after.
		z.send(t, "SET", k1, "before")
		z.send(t, "test.coordpanic", stage, k1, k2)
		z.send(t, "MSET", k1, stage, k2, stage)
		var got []string
		for i := 0; i < 3; i++ {
			var out strings.Builder
			z.read(t, &out)
			got = append(got, out.String())
		}
		if got[0] != "+OK\r\n" || got[1] != want || got[2] != "+OK\r\n" {
			t.Fatalf("%s: replies %q, want OK, %q, OK", stage, got, want)
		}
		if r := other.do(t, "MGET", k2, k1); r != "*2\r\n$"+strconv.Itoa(len(stage))+"\r\n"+stage+"\r\n$"+strconv.Itoa(len(stage))+"\r\n"+stage+"\r\n" {
			t.Fatalf("%s: another client reads %q", stage, r)
		}
	}
	// A keyless command holding every shard, called directly and from a
	// keyless script (whose interpreter makes the panic the call's error).
	if r := z.do(t, "test.allpanic"); r != "-ERR internal error in 'test.allpanic' command: all boom\r\n" {
		t.Fatalf("test.allpanic: %q", r)
	}
	if r := z.do(t, "SET", k1, "x"); r != "+OK\r\n" {
		t.Fatalf("SET after test.allpanic: %q", r)
	}
	if r := z.do(t, "EVAL", "return redis.pcall('test.allpanic')", "0"); !strings.HasPrefix(r, "-") || !strings.Contains(r, "all boom") {
		t.Fatalf("test.allpanic from a script: %q", r)
	}
	if r := other.do(t, "MSET", k1, "y", k2, "y"); r != "+OK\r\n" {
		t.Fatalf("MSET after test.allpanic in a script: %q", r)
	}
	if n := commandPanics.Load() - before; n != 4 {
		t.Fatalf("command_panics grew by %d, want 4", n)
	}
}
