//go:build !linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// drive runs the SET load with a goroutine per client (load_linux.go has
// the cheaper one-thread loop).
func drive(addr string, clients int, rate float64, phase *atomic.Int32, hists [][phases]hist, keys int, value []byte) error {
	if rate > 0 {
		return errors.New("-rate needs Linux (load_linux.go)")
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			if err := load(conn, phase, &hists[i], rand.New(rand.NewPCG(uint64(i), 11)), keys, value); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// load sends SETs one at a time until the phase is done.
func load(conn net.Conn, phase *atomic.Int32, h *[phases]hist, rng *rand.Rand, keys int, value []byte) error {
	r := bufio.NewReader(conn)
	var req []byte
	for {
		p := phase.Load()
		if p == phaseDone {
			return nil
		}
		req = fmt.Appendf(req[:0], "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n", rng.IntN(keys), len(value))
		req = append(append(req, value...), "\r\n"...)
		t := time.Now()
		if _, err := conn.Write(req); err != nil {
			return err
		}
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(line, []byte("+OK")) {
			return fmt.Errorf("SET: %q", strings.TrimSpace(string(line)))
		}
		h[p][bucket(uint64(time.Since(t).Microseconds()))]++
	}
}
