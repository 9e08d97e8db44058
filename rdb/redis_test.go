package rdb

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Helpers to drive a real redis-server 7.0 from tests.

func needRedis(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"redis-server"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: skipping the check against real Redis", tool)
		}
	}
}

type redisServer struct {
	t    testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
	conn net.Conn
	rd   *bufio.Reader
}

// startRedis runs redis-server in dir, loading dbfile if it exists.
func startRedis(t testing.TB, dir, dbfile string, args ...string) *redisServer {
	t.Helper()
	needRedis(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--dbfilename", dbfile, "--save", "", "--appendonly", "no", "--logfile", "redis.log",
		"--enable-debug-command", "yes"}, args...)
	cmd := exec.Command("redis-server", all...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &redisServer{t: t, dir: dir, port: port, cmd: cmd}
	t.Cleanup(s.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			s.conn, s.rd = c, bufio.NewReader(c)
			if r, err := s.try("PING"); err == nil && r == "PONG" {
				return s
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server did not come up: %v\n%s", err, tail(string(log)))
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

func (s *redisServer) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return tail(string(b))
}

func (s *redisServer) stop() {
	if s.conn != nil {
		s.conn.Close()
	}
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// try sends a command and returns its reply: string, int64, nil, []any;
// an error reply is returned as error.
func (s *redisServer) try(args ...string) (any, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	s.conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := s.conn.Write(b.Bytes()); err != nil {
		return nil, err
	}
	return s.reply()
}

type redisError string

func (e redisError) Error() string { return string(e) }

func (s *redisServer) reply() (any, error) {
	line, err := s.rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, redisError(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(s.rd, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			v, err := s.reply()
			if err != nil {
				if _, ok := err.(redisError); !ok {
					return nil, err
				}
				v = err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// do runs a command that must succeed.
func (s *redisServer) do(args ...string) any {
	s.t.Helper()
	v, err := s.try(args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// save makes Redis write its RDB and returns the file's bytes.
func (s *redisServer) save() []byte {
	s.t.Helper()
	s.do("SAVE")
	dbfile := s.do("CONFIG", "GET", "dbfilename").([]any)[1].(string)
	b, err := os.ReadFile(filepath.Join(s.dir, dbfile))
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// checkRDB runs redis-check-rdb on a file.
func checkRDB(t testing.TB, path string) {
	t.Helper()
	if _, err := exec.LookPath("redis-check-rdb"); err != nil {
		t.Logf("redis-check-rdb not installed: not checking %s", path)
		return
	}
	out, err := exec.Command("redis-check-rdb", path).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("RDB looks OK")) {
		t.Fatalf("redis-check-rdb %s: %v\n%s", path, err, tail(string(out)))
	}
}
