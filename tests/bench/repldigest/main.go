// Command repldigest prints a digest of every string key of a server (a
// count and an order-independent hash of key, value and absolute expiry),
// so that a master and its replica can be compared after a full sync.
// Keys of other types make it fail: the replication benchmark only writes
// strings.
//
//	repldigest -addr 127.0.0.1:6379
package main

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	flag.Parse()
	n, sum, err := digest(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "repldigest:", err)
		os.Exit(1)
	}
	fmt.Printf("%d %016x\n", n, sum)
}

type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func (c *conn) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply reads one reply: a bulk/status/int as string, an array as items.
func (c *conn) reply() (string, []string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", nil, err
	}
	if len(line) < 3 {
		return "", nil, fmt.Errorf("short line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ':':
		return body, nil, nil
	case '-':
		return "", nil, fmt.Errorf("server error: %s", body)
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return "", nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return "", nil, err
		}
		return string(b[:n]), nil, nil
	case '*':
		n, _ := strconv.Atoi(body)
		items := make([]string, 0, max(n, 0))
		for i := 0; i < n; i++ {
			s, sub, err := c.reply()
			if err != nil {
				return "", nil, err
			}
			if sub != nil {
				items = append(items, sub...) // SCAN's key array
				continue
			}
			items = append(items, s)
		}
		return "", items, nil
	}
	return "", nil, fmt.Errorf("unexpected reply %q", line)
}

func digest(addr string) (int, uint64, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, 0, err
	}
	defer nc.Close()
	c := &conn{nc: nc, r: bufio.NewReaderSize(nc, 1<<20), w: bufio.NewWriterSize(nc, 1<<20)}
	cursor := "0"
	count := 0
	var sum uint64
	for {
		c.send("SCAN", cursor, "COUNT", "5000")
		c.w.Flush()
		_, items, err := c.reply()
		if err != nil {
			return 0, 0, err
		}
		if len(items) < 1 {
			return 0, 0, fmt.Errorf("bad SCAN reply")
		}
		cursor = items[0]
		keys := items[1:]
		for _, k := range keys {
			c.send("TYPE", k)
			c.send("GET", k)
			c.send("PEXPIRETIME", k)
		}
		c.w.Flush()
		for _, k := range keys {
			typ, _, err := c.reply()
			if err != nil {
				return 0, 0, err
			}
			val, _, err := c.reply()
			if err != nil {
				return 0, 0, err
			}
			at, _, err := c.reply()
			if err != nil {
				return 0, 0, err
			}
			if typ == "none" {
				continue // deleted or expired between SCAN and GET
			}
			if typ != "string" {
				return 0, 0, fmt.Errorf("key %q has type %s; only strings are digested", k, typ)
			}
			h := fnv.New64a()
			h.Write([]byte(k))
			h.Write([]byte{0})
			h.Write([]byte(val))
			h.Write([]byte{0})
			h.Write([]byte(at))
			sum += h.Sum64()
			count++
		}
		if cursor == "0" {
			return count, sum, nil
		}
	}
}
