// Command memload measures a server's resident memory at rest and under a
// mixed write load, as bytes per key and as a multiple of the data's size.
//
// It loads -small keys with -small-size byte values and -big keys with
// -big-size byte values (pipelined, over -clients connections), waits
// -settle and samples the server's RSS (VmRSS of -pid) as "rest"; then
// runs -dur of load that keeps the dataset the same size (every write
// replaces a value with one of the same length): SETs of small and big
// values at random, GETs, and MULTI/DECRBY/INCRBY/EXEC transfers between
// -accounts keys, each client keeping -P requests in flight; RSS is sampled
// every 100 ms for its maximum; after the load, -settle more and one last
// sample ("after"). It prints one line:
//
//	keys data_bytes rest_rss max_rss after_rss ops cpu_us_per_op
//
// (cpu_us_per_op: the server's CPU time over the load, utime+stime, per
// request.)
//
// memload.sh runs it against redis-server and dfly and prints the ratios.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	addr      = flag.String("addr", "127.0.0.1:6379", "server address")
	pid       = flag.Int("pid", 0, "the server's process id (RSS from /proc/PID/status)")
	small     = flag.Int("small", 1_000_000, "keys with small values")
	smallSize = flag.Int("small-size", 16, "bytes of a small value")
	big       = flag.Int("big", 100_000, "keys with big values")
	bigSize   = flag.Int("big-size", 1024, "bytes of a big value")
	accounts  = flag.Int("accounts", 2000, "keys the transactions move amounts between")
	nclients  = flag.Int("clients", 8, "connections")
	depth     = flag.Int("P", 8, "requests in flight per connection during the load")
	dur       = flag.Duration("dur", 60*time.Second, "length of the load")
	settle    = flag.Duration("settle", 3*time.Second, "wait before the rest and after samples")
)

func main() {
	flag.Parse()
	if *pid == 0 {
		fail(errors.New("-pid is required"))
	}
	if err := populate(); err != nil {
		fail(err)
	}
	time.Sleep(*settle)
	rest := rss()
	var maxRSS atomic.Int64
	maxRSS.Store(rest)
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := rss(); r > maxRSS.Load() {
					maxRSS.Store(r)
				}
			}
		}
	}()
	cpu0 := cpuTicks()
	ops, err := load()
	cpu := cpuTicks() - cpu0
	close(stop)
	sampler.Wait()
	if err != nil {
		fail(err)
	}
	time.Sleep(*settle)
	after := rss()
	keys := *small + *big + *accounts
	data := int64(*small)*int64(len(key("s", *small-1))+*smallSize) +
		int64(*big)*int64(len(key("b", *big-1))+*bigSize) +
		int64(*accounts)*int64(len(key("a", *accounts-1))+6)
	// CLK_TCK is 100 on Linux.
	fmt.Println(keys, data, rest, maxRSS.Load(), after, ops, float64(cpu)*1e4/float64(ops))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "memload:", err)
	os.Exit(1)
}

// key names keys of one fixed width per kind, so that the data's size is
// known.
func key(kind string, i int) string {
	return kind + ":" + fmt.Sprintf("%09d", i)
}

func rss() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(*pid) + "/status")
	if err != nil {
		fail(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	fail(errors.New("no VmRSS in /proc/PID/status"))
	return 0
}

// cpuTicks is the server's utime+stime in clock ticks.
func cpuTicks() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(*pid) + "/stat")
	if err != nil {
		fail(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

type conn struct {
	c *net.TCPConn
	r *bufio.Reader
	w []byte
}

func dial() (*conn, error) {
	c, err := net.Dial("tcp", *addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c.(*net.TCPConn), r: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (c *conn) cmd(args ...string) {
	c.w = append(c.w, '*')
	c.w = strconv.AppendInt(c.w, int64(len(args)), 10)
	c.w = append(c.w, "\r\n"...)
	for _, a := range args {
		c.w = append(c.w, '$')
		c.w = strconv.AppendInt(c.w, int64(len(a)), 10)
		c.w = append(c.w, "\r\n"...)
		c.w = append(c.w, a...)
		c.w = append(c.w, "\r\n"...)
	}
}

// flush sends what cmd queued and reads n replies, failing on an error
// reply.
func (c *conn) flush(n int) error {
	if _, err := c.c.Write(c.w); err != nil {
		return err
	}
	c.w = c.w[:0]
	for ; n > 0; n-- {
		if err := c.skip(); err != nil {
			return err
		}
	}
	return nil
}

// skip reads one reply.
func (c *conn) skip() error {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("short reply %q", line)
	}
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return fmt.Errorf("server: %s", strings.TrimSpace(string(line)))
	case '$':
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		if n < 0 {
			return nil
		}
		_, err := c.r.Discard(n + 2)
		return err
	case '*':
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		for ; n > 0; n-- {
			if err := c.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}

// clients runs f on each of -clients connections at once and returns the
// first error.
func clients(f func(c *conn, k int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, *nclients)
	for k := 0; k < *nclients; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			c, err := dial()
			if err == nil {
				err = f(c, k)
				c.c.Close()
			}
			if err != nil {
				errs <- err
			}
		}(k)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// each queues f(conn, i) for i in [0, n), spread over the clients, 256
// requests a round trip.
func each(n int, f func(c *conn, i int)) error {
	return clients(func(c *conn, k int) error {
		queued := 0
		for i := k; i < n; i += *nclients {
			f(c, i)
			if queued++; queued == 256 {
				if err := c.flush(queued); err != nil {
					return err
				}
				queued = 0
			}
		}
		return c.flush(queued)
	})
}

func value(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(rng.IntN(26))
	}
	return string(b)
}

func populate() error {
	rng := rand.New(rand.NewPCG(1, 2))
	sv, bv := value(rng, *smallSize), value(rng, *bigSize)
	return each(*small+*big+*accounts, func(c *conn, i int) {
		switch {
		case i < *small:
			c.cmd("SET", key("s", i), sv)
		case i < *small+*big:
			c.cmd("SET", key("b", i-*small), bv)
		default:
			c.cmd("SET", key("a", i-*small-*big), "100000")
		}
	})
}

// load runs the mixed load for -dur and returns the requests it completed
// (a transaction counts as one).
func load() (int64, error) {
	var ops atomic.Int64
	deadline := time.Now().Add(*dur)
	err := clients(func(c *conn, k int) error {
		rng := rand.New(rand.NewPCG(uint64(k), 7))
		svs := []string{value(rng, *smallSize), value(rng, *smallSize)}
		bvs := []string{value(rng, *bigSize), value(rng, *bigSize)}
		for time.Now().Before(deadline) {
			replies := 0
			for j := 0; j < *depth; j++ {
				switch p := rng.IntN(100); {
				case p < 45 && *small > 0:
					c.cmd("SET", key("s", rng.IntN(*small)), svs[rng.IntN(2)])
					replies++
				case p < 70 && *big > 0:
					c.cmd("SET", key("b", rng.IntN(*big)), bvs[rng.IntN(2)])
					replies++
				case p < 90 && *small > 0:
					c.cmd("GET", key("s", rng.IntN(*small)))
					replies++
				default:
					c.cmd("MULTI")
					c.cmd("DECRBY", key("a", rng.IntN(*accounts)), "1")
					c.cmd("INCRBY", key("a", rng.IntN(*accounts)), "1")
					c.cmd("EXEC")
					replies += 4
				}
			}
			if err := c.flush(replies); err != nil {
				return err
			}
			ops.Add(int64(*depth))
		}
		return nil
	})
	return ops.Load(), err
}
