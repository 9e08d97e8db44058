// Command waitlat measures what a client waits for a write to reach its
// replicas: N times SET then WAIT numreplicas timeout on one connection,
// one request in flight. It prints the mean and p99 of the SET+WAIT round
// trip in milliseconds, and fails if a WAIT counted fewer replicas.
//
//	waitlat -addr 127.0.0.1:6379 -n 2000 -replicas 1
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "master address")
	n := flag.Int("n", 2000, "SET+WAIT rounds")
	replicas := flag.Int("replicas", 1, "WAIT's numreplicas")
	flag.Parse()
	if err := run(*addr, *n, *replicas); err != nil {
		fmt.Fprintln(os.Stderr, "waitlat:", err)
		os.Exit(1)
	}
}

func run(addr string, n, replicas int) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	want := ":" + strconv.Itoa(replicas) + "\r\n"
	lat := make([]time.Duration, 0, n)
	for i := range n {
		key := "waitlat:" + strconv.Itoa(i)
		req := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n*3\r\n$4\r\nWAIT\r\n$%d\r\n%d\r\n$4\r\n1000\r\n",
			len(key), key, len(strconv.Itoa(replicas)), replicas)
		start := time.Now()
		if _, err := nc.Write([]byte(req)); err != nil {
			return err
		}
		set, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		got, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
		if set != "+OK\r\n" || got != want {
			return fmt.Errorf("round %d: SET %q, WAIT %q (want %q)", i, set, got, want)
		}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("%.3f %.3f\n", ms(sum/time.Duration(len(lat))), ms(lat[len(lat)*99/100]))
	return nil
}
