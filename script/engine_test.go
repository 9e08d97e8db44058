package script

import (
	"time"

	"io"
	"log"
	"strings"
	"testing"

	"github.com/dfly/dfly/resp"
)

// fakeHost runs every call against a map of strings: GET and SET, the
// rest refused as a server would refuse an unknown command.
type fakeHost struct {
	data   map[string]string
	errors int
}

func (h *fakeHost) LeavesShard(name string) bool { return strings.EqualFold(name, "dbsize") }
func (h *fakeHost) CountError([]byte)            { h.errors++ }
func (h *fakeHost) NewCaller() Caller            { return fakeCaller{h} }
func (h *fakeHost) BusyThreshold() time.Duration { return 5 * time.Second }

type fakeCaller struct{ h *fakeHost }

func (c fakeCaller) Call(args [][]byte, w *resp.Writer) (string, bool) {
	switch strings.ToLower(string(args[0])) {
	case "get":
		if v, ok := c.h.data[string(args[1])]; ok {
			w.BulkString(v)
		} else {
			w.Null()
		}
	case "set":
		c.h.data[string(args[1])] = string(args[2])
		w.SimpleString("OK")
	case "fail":
		w.Error("ERR failed")
	default:
		return "Unknown Redis command called from script", false
	}
	return "", false
}

type quietLog struct{ *log.Logger }

func (l quietLog) Debugf(f string, a ...any)   { l.Printf(f, a...) }
func (l quietLog) Verbosef(f string, a ...any) { l.Printf(f, a...) }
func (l quietLog) Noticef(f string, a ...any)  { l.Printf(f, a...) }
func (l quietLog) Warnf(f string, a ...any)    { l.Printf(f, a...) }

func newTestEngine() (*Engine, *fakeHost) {
	h := &fakeHost{data: map[string]string{}}
	return New(h, quietLog{log.New(io.Discard, "", 0)}, "7.2.0"), h
}

// eval runs body as EVAL would, with keys and argv, and returns the reply.
func eval(t *testing.T, e *Engine, body string, keys, argv []string) string {
	t.Helper()
	sha, s, errText := e.Load([]byte(body))
	if errText != "" {
		return "-" + errText + "\r\n"
	}
	bs := func(ss []string) [][]byte {
		var b [][]byte
		for _, x := range ss {
			b = append(b, []byte(x))
		}
		return b
	}
	vm := e.VM()
	w := &resp.Writer{Proto: 2}
	vm.Begin([]byte(sha), nil, nil, false)
	vm.RunScript(s, bs(keys), bs(argv), w)
	vm.End()
	e.Release(vm)
	return string(w.Buf)
}

// TestEngineWithoutServer: scripts run, call commands and fail as in Redis
// through a Caller alone.
func TestEngineWithoutServer(t *testing.T) {
	e, h := newTestEngine()
	for _, c := range []struct{ body, want string }{
		{"return redis.call('SET', KEYS[1], ARGV[1])", "+OK\r\n"},
		{"return redis.call('GET', KEYS[1])", "$1\r\nv\r\n"},
		{"return {1, 'a', redis.call('GET', 'nokey')}", "*3\r\n:1\r\n$1\r\na\r\n$-1\r\n"},
		{"return redis.pcall('NOPE')", "-ERR Unknown Redis command called from script\r\n"},
		{"return redis.pcall('FAIL')", "-ERR failed\r\n"},
		{"return cjson.encode({a = 1})", "$7\r\n{\"a\":1}\r\n"},
		{"x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n"},
	} {
		got := eval(t, e, c.body, []string{"k"}, []string{"v"})
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.body, got, c.want)
		}
	}
	if h.data["k"] != "v" {
		t.Fatalf("SET through the caller: %q", h.data["k"])
	}
	_, s, _ := e.Load([]byte("return redis.call('DBSIZE')"))
	if !s.LeavesShard || s.MaySort {
		t.Errorf("DBSIZE script: leaves %v, may sort %v", s.LeavesShard, s.MaySort)
	}
}

// TestLibraries: FUNCTION LOAD, LIST and DUMP/RESTORE on the engine alone.
func TestLibraries(t *testing.T) {
	e, _ := newTestEngine()
	code := "#!lua name=mylib\nredis.register_function{function_name='hello', callback=function(keys, args) return 'hi ' .. args[1] end, flags={'no-writes'}}"
	w := &resp.Writer{Proto: 2}
	args := [][]byte{[]byte("FUNCTION"), []byte("LOAD"), []byte(code)}
	if !e.FunctionCommand(args, w) || !e.ChangeLibraries(args, w) || string(w.Buf) != "$5\r\nmylib\r\n" {
		t.Fatalf("FUNCTION LOAD: %q", w.Buf)
	}
	f := e.Function([]byte("HELLO"))
	if f == nil || !f.NoWrites() || f.RunID() != "f:hello" {
		t.Fatalf("function hello: %+v", f)
	}
	vm := e.VM()
	w.Reset()
	vm.Begin([]byte(f.RunID()), f, nil, false)
	vm.RunFunction(f, nil, [][]byte{[]byte("you")}, w)
	vm.End()
	e.Release(vm)
	if string(w.Buf) != "$6\r\nhi you\r\n" {
		t.Fatalf("FCALL: %q", w.Buf)
	}
	w.Reset()
	e.FunctionCommand([][]byte{[]byte("FUNCTION"), []byte("DUMP")}, w)
	dump := w.Buf[strings.Index(string(w.Buf), "\r\n")+2 : len(w.Buf)-2]
	e.FlushLibraries()
	w.Reset()
	restore := [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), dump}
	if !e.FunctionCommand(restore, w) || !e.ChangeLibraries(restore, w) || string(w.Buf) != "+OK\r\n" {
		t.Fatalf("FUNCTION RESTORE: %q", w.Buf)
	}
	if _, libs, fns := e.Counts(); libs != 1 || fns != 1 {
		t.Fatalf("after RESTORE: %d libraries, %d functions", libs, fns)
	}
}
