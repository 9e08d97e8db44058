// Command evict drives a cache workload against one server and reports
// its hit ratio and throughput: each client GETs keys drawn from a Zipf
// distribution of skew -skew over -keys keys (key:<rank>, ranks shuffled
// so that popular keys do not sit together), -P at a time, and SETs each
// key it missed with a -value byte value (SET-on-miss, as a read-through
// cache). The first -warm GETs fill the cache and are not counted; the
// next -gets are. It prints one line:
//
//	gets hits sets seconds used_memory dbsize
//
// (used_memory and DBSIZE read after the run.) evict.sh runs it against
// dfly's policies and redis-server's side by side.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	addr    = flag.String("addr", "127.0.0.1:6379", "server address")
	keys    = flag.Int("keys", 200000, "key space")
	skew    = flag.Float64("skew", 0.9, "Zipf exponent s (P(rank k) ∝ 1/k^s)")
	value   = flag.Int("value", 500, "value size, bytes")
	warm    = flag.Int("warm", 400000, "GETs before counting")
	gets    = flag.Int("gets", 1000000, "GETs counted")
	clients = flag.Int("clients", 4, "connections")
	depth   = flag.Int("P", 32, "GETs in flight per connection")
	seed    = flag.Uint64("seed", 1, "random seed")
)

// zipf draws ranks 0..n-1 with P(k) ∝ 1/(k+1)^s by inverting the CDF
// (math/rand's Zipf needs s > 1).
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) *zipf {
	z := &zipf{cdf: make([]float64, n)}
	sum := 0.0
	for k := range z.cdf {
		sum += 1 / math.Pow(float64(k+1), s)
		z.cdf[k] = sum
	}
	for k := range z.cdf {
		z.cdf[k] /= sum
	}
	return z
}

func (z *zipf) draw(r *rand.Rand) int {
	return min(sort.SearchFloat64s(z.cdf, r.Float64()), len(z.cdf)-1)
}

func main() {
	flag.Parse()
	z := newZipf(*keys, *skew)
	perm := rand.New(rand.NewPCG(*seed, 99)).Perm(*keys) // rank -> key id
	val := strings.Repeat("v", *value)
	var issued, hits, sets, counted atomic.Int64
	var start atomic.Int64 // unix ns when counting began
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			if err := run(c, z, perm, val, &issued, &hits, &sets, &counted, &start); err != nil {
				fmt.Fprintln(os.Stderr, "evict:", err)
				os.Exit(1)
			}
		}(c)
	}
	wg.Wait()
	secs := time.Since(time.Unix(0, start.Load())).Seconds()
	used, dbsize := stat()
	fmt.Println(counted.Load(), hits.Load(), sets.Load(), strconv.FormatFloat(secs, 'f', 3, 64), used, dbsize)
}

func run(c int, z *zipf, perm []int, val string, issued, hits, sets, counted, start *atomic.Int64) error {
	conn, err := net.Dial("tcp", *addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	r := rand.New(rand.NewPCG(*seed, uint64(c)+1))
	br, bw := bufio.NewReaderSize(conn, 1<<16), bufio.NewWriterSize(conn, 1<<16)
	batch := make([]string, *depth)
	var missed []string
	total := int64(*warm + *gets)
	for {
		n := issued.Add(int64(*depth))
		if n-int64(*depth) >= total {
			return nil
		}
		counting := n > int64(*warm)
		if counting && n-int64(*depth) <= int64(*warm) {
			start.CompareAndSwap(0, time.Now().UnixNano())
		}
		for i := range batch {
			batch[i] = "key:" + strconv.Itoa(perm[z.draw(r)])
			fmt.Fprintf(bw, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(batch[i]), batch[i])
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		missed = missed[:0]
		for i := range batch {
			hit, err := readBulk(br)
			if err != nil {
				return err
			}
			if !hit {
				missed = append(missed, batch[i])
			}
		}
		for _, k := range missed {
			fmt.Fprintf(bw, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(val), val)
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		for range missed {
			line, err := br.ReadString('\n')
			if err != nil {
				return err
			}
			if line[0] == '-' {
				return fmt.Errorf("SET: %s", strings.TrimSpace(line))
			}
		}
		if counting {
			counted.Add(int64(len(batch)))
			hits.Add(int64(len(batch) - len(missed)))
			sets.Add(int64(len(missed)))
		}
	}
}

// readBulk reads a GET's reply: true for a value, false for nil.
func readBulk(br *bufio.Reader) (bool, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return false, err
	}
	if line[0] != '$' {
		return false, fmt.Errorf("GET: %s", strings.TrimSpace(line))
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	if n < 0 {
		return false, nil
	}
	_, err = br.Discard(n + 2)
	return true, err
}

// stat reads used_memory and DBSIZE.
func stat() (used, dbsize int64) {
	conn, err := net.Dial("tcp", *addr)
	if err != nil {
		return 0, 0
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	fmt.Fprint(conn, "*2\r\n$4\r\nINFO\r\n$6\r\nmemory\r\n*1\r\n$6\r\nDBSIZE\r\n")
	line, _ := br.ReadString('\n')
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	body := make([]byte, n+2)
	if _, err := io.ReadFull(br, body); err == nil {
		for _, l := range strings.Split(string(body), "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				used, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	line, _ = br.ReadString('\n')
	dbsize, _ = strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
	return used, dbsize
}
