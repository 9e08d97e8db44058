// Command bigset measures what a server pays to receive one large value:
// it sends SET key <size bytes> on one connection and prints the seconds
// from the first byte written to the reply. The value is built before the
// clock starts. bigvalue.sh runs it against dfly and redis-server.
//
//	bigset -addr 127.0.0.1:6379 -size 64mb
//
// With -declare larger than -size it plays a slow client instead: it
// declares that length, sends -size bytes in pieces of -piece with -pause
// between them, prints "sent", and holds the connection open for -hold
// (the value never completes), so that the server's memory can be read
// meanwhile.
//
//	bigset -declare 512mb -size 64mb -piece 1mb -pause 10ms -hold 5s
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	size := flag.String("size", "16mb", "bytes to send: bytes, or with a kb, mb or gb suffix")
	declare := flag.String("declare", "", "the length to declare, when more than -size (a slow client)")
	piece := flag.String("piece", "1mb", "a slow client's writes")
	pause := flag.Duration("pause", 10*time.Millisecond, "a slow client's pause between writes")
	hold := flag.Duration("hold", 5*time.Second, "how long a slow client keeps the connection after sending")
	key := flag.String("key", "bigvalue", "key")
	flag.Parse()
	n, err := parseSize(*size)
	if err != nil {
		fail(err)
	}
	if *declare == "" {
		err = run(*addr, *key, n)
	} else {
		var d, p int
		if d, err = parseSize(*declare); err == nil {
			if p, err = parseSize(*piece); err == nil {
				err = slow(*addr, *key, d, n, p, *pause, *hold)
			}
		}
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bigset:", err)
	os.Exit(1)
}

func parseSize(s string) (int, error) {
	s = strings.ToLower(s)
	mul := 1
	for _, u := range []struct {
		suffix string
		mul    int
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mul, nil
}

func header(key string, n int) []byte {
	return fmt.Appendf(nil, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", len(key), key, n)
}

func run(addr, key string, n int) error {
	msg := header(key, n)
	for i := 0; i < n; i++ {
		msg = append(msg, 'a'+byte(i%26))
	}
	msg = append(msg, "\r\n"...)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if line != "+OK\r\n" {
		return fmt.Errorf("reply %q", line)
	}
	fmt.Printf("%.3f\n", elapsed.Seconds())
	return nil
}

func slow(addr, key string, declared, n, piece int, pause, hold time.Duration) error {
	if n >= declared {
		return fmt.Errorf("-size %d must be under -declare %d", n, declared)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write(header(key, declared)); err != nil {
		return err
	}
	buf := make([]byte, piece)
	for i := range buf {
		buf[i] = 'x'
	}
	for sent := 0; sent < n; sent += piece {
		if _, err := conn.Write(buf[:min(piece, n-sent)]); err != nil {
			return err
		}
		time.Sleep(pause)
	}
	fmt.Println("sent")
	time.Sleep(hold)
	return nil
}
