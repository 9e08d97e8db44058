package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	startTimeout = 10 * time.Second // until the server answers PING
	stopTimeout  = 5 * time.Second  // between SIGTERM and SIGKILL
	logTail      = 64 << 10         // bytes of server output shown on failure
)

// dflyOnlyFlags are dfly flags that redis-server has no equivalent for; they
// are dropped when the target is redis. Every other flag is passed through
// unchanged, as dfly's flags are named after Redis's config parameters.
var dflyOnlyFlags = map[string]bool{"shards": true, "proactor_threads": true}

// Server is one running server process under test, dfly or redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	PID  int

	t       testing.TB
	cmd     *exec.Cmd
	output  *lockedBuffer
	exited  chan struct{} // closed when the process has exited
	waitErr error
	// terminated: the test itself stopped the server (Terminate).
	terminated bool
}

// Terminate sends SIGTERM and waits for the process to exit, returning
// its exit error (nil for status 0).
func (s *Server) Terminate(timeout time.Duration) error {
	s.terminated = true
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return s.waitErr
	case <-time.After(timeout):
		s.kill()
		return fmt.Errorf("still running %v after SIGTERM", timeout)
	}
}

// StartServer starts the server under test on a free port with the given
// flags ("--name", "value" pairs, dfly's spelling), waits until it answers
// PING, and stops it when the test ends. The server's output is logged if
// the test fails. With DFLY_TEST_TARGET=redis it starts redis-server with
// --save ” --appendonly no and the flags that redis understands.
func StartServer(t testing.TB, flags ...string) *Server {
	t.Helper()
	return startServer(t, true, flags)
}

// StartServerNoWait is StartServer without waiting for PING: the test
// polls the port itself (a server loading its dataset answers LOADING).
func StartServerNoWait(t testing.TB, flags ...string) *Server {
	t.Helper()
	return startServer(t, false, flags)
}

func startServer(t testing.TB, wait bool, flags []string) *Server {
	t.Helper()
	var binary string
	var args []string
	switch target {
	case targetRedis:
		path, err := exec.LookPath("redis-server")
		if err != nil {
			t.Skip("DFLY_TEST_TARGET=redis but redis-server is not installed")
		}
		binary = path
		// DEBUG is dfly's by default; Redis 7 refuses it unless enabled.
		args = append(args, "--save", "", "--appendonly", "no", "--enable-debug-command", "yes")
		args = append(args, redisFlags(flags)...)
	default:
		if buildErr != nil {
			t.Fatalf("dfly binary not available: %v", buildErr)
		}
		binary = dflyPath
		args = append(args, flags...)
	}
	if !hasFlag(flags, "dir") {
		args = append(args, "--dir", t.TempDir())
	}
	if !hasFlag(flags, "bind") {
		args = append(args, "--bind", "127.0.0.1")
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		s, err := launchWith(t, binary, append([]string{"--port", strconv.Itoa(port)}, args...), port, wait)
		if err == nil {
			return s
		}
		lastErr = err
		// Another process may have taken the port between our probe and the
		// server's bind; only that is worth another try.
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	t.Fatalf("start %s: %v", target, lastErr)
	return nil
}

func launch(t testing.TB, binary string, args []string, port int) (*Server, error) {
	return launchWith(t, binary, args, port, true)
}

// launchWith starts binary; with wait it returns once the server answers
// PING.
func launchWith(t testing.TB, binary string, args []string, port int, wait bool) (*Server, error) {
	statOnce.Do(statSources) // deps_test.go
	s := &Server{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port:   port,
		t:      t,
		output: &lockedBuffer{},
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout = s.output
	s.cmd.Stderr = s.output
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if !wait {
		t.Cleanup(s.stop)
		return s, nil
	}
	if err := s.waitReady(); err != nil {
		s.kill()
		return nil, fmt.Errorf("%s %s: %w\n--- server output ---\n%s", binary, strings.Join(args, " "), err, s.output.tail(logTail))
	}
	t.Cleanup(s.stop)
	return s, nil
}

// waitReady polls PING until the server answers; NOAUTH also proves it is up.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("exited before answering PING: %v", s.waitErr)
		default:
		}
		conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(time.Second))
			_, err = conn.Write([]byte("*1\r\n$4\r\nPING\r\n"))
			if err == nil {
				var line string
				line, err = bufio.NewReader(conn).ReadString('\n')
				if err == nil && !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
					err = fmt.Errorf("PING answered %q", line)
				}
			}
			conn.Close()
			if err == nil {
				return nil
			}
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PONG within %v: %v", startTimeout, lastErr)
}

// stop sends SIGTERM, then SIGKILL after stopTimeout. A server that died
// during the test fails it; the output is logged whenever the test failed.
func (s *Server) stop() {
	select {
	case <-s.exited:
		if !s.terminated {
			s.t.Errorf("%s exited during the test: %v", target, s.waitErr)
		}
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			s.t.Errorf("%s ignored SIGTERM for %v; killing it", target, stopTimeout)
			s.kill()
		}
	}
	failOnRace(s.t, s.output.String())
	if s.t.Failed() {
		s.t.Logf("--- %s output (pid %d, %s) ---\n%s", target, s.PID, s.Addr, s.output.tail(logTail))
	}
}

// failOnRace fails t when out, a server's output, holds a data race
// report: a server built with -race (DFLY_BUILD_FLAGS) prints one and
// goes on, so the race is the test's failure.
func failOnRace(t testing.TB, out string) {
	if i := strings.Index(out, "WARNING: DATA RACE"); i >= 0 {
		t.Errorf("%s reported a data race:\n%s", target, out[i:min(len(out), i+8<<10)])
	}
}

// Kill stops the server with SIGKILL, as a crash would; the test expects it.
func (s *Server) Kill() {
	s.terminated = true
	s.kill()
}

func (s *Server) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// Output returns everything the server has written to stdout and stderr.
func (s *Server) Output() string { return s.output.String() }

// Raw opens a raw RESP connection, closed at the end of the test.
func (s *Server) Raw(t testing.TB) *RawConn {
	t.Helper()
	return DialRaw(t, s.Addr)
}

// Client returns a go-redis client speaking RESP protocol 2 or 3, closed at
// the end of the test.
func (s *Server) Client(t testing.TB, protocol int) *redis.Client {
	return s.ClientWith(t, &redis.Options{Protocol: protocol})
}

// ClientWith is Client with more options; Addr is filled in.
func (s *Server) ClientWith(t testing.TB, opts *redis.Options) *redis.Client {
	t.Helper()
	o := *opts
	o.Addr = s.Addr
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	c := redis.NewClient(&o)
	t.Cleanup(func() { c.Close() })
	return c
}

// RSS is the server process's resident memory in bytes (VmRSS of
// /proc/PID/status); the test is skipped where /proc has none.
func (s *Server) RSS(t testing.TB) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", s.PID)
	return 0
}

// IsRedis reports whether the suite runs against redis-server.
func IsRedis() bool { return target == targetRedis }

func redisFlags(flags []string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		name, hasValue := flagName(flags[i])
		if dflyOnlyFlags[name] {
			if !hasValue && i+1 < len(flags) && !strings.HasPrefix(flags[i+1], "--") {
				i++
			}
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

// flagName returns the name of "--name" or "--name=value", and whether the
// value is inline.
func flagName(arg string) (string, bool) {
	name := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i], true
	}
	return name, false
}

func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if strings.HasPrefix(f, "-") {
			if n, _ := flagName(f); n == name {
				return true
			}
		}
	}
	return false
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output while tests read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) tail(n int) string {
	s := b.String()
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}
