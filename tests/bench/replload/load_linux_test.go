package main

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// okServer answers every request with +OK; after the 200th it stalls for
// stall, every connection (a server's event loop stopping). It counts the
// requests.
func okServer(t *testing.T, stall time.Duration) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	var until atomic.Int64 // unix ns: no reply before
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					// A SET is 7 lines: *3, $3, SET, $16, key, $N, value.
					for range 7 {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
					}
					if n.Add(1) == 200 {
						until.Store(time.Now().Add(stall).UnixNano())
					}
					time.Sleep(time.Until(time.Unix(0, until.Load())))
					if _, err := c.Write([]byte("+OK\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &n
}

// TestRateOpenLoop: with -rate, requests go out at the rate whatever the
// server does, and a stall counts against every request due during it
// (latency from the due time), not only the few in flight when it began.
func TestRateOpenLoop(t *testing.T) {
	const rate, clients, stall = 2000.0, 4, 100 * time.Millisecond
	addr, served := okServer(t, stall)
	var phase atomic.Int32
	hists := make([][phases]hist, clients)
	done := make(chan error, 1)
	go func() { done <- drive(addr, clients, rate, &phase, hists, 1000, []byte(strings.Repeat("x", 10))) }()
	time.Sleep(time.Second)
	phase.Store(phaseDone)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var h hist
	for i := range hists {
		h.add(&hists[i][phaseIdle])
	}
	// One second at 2000/s: the requests due then, less the stall's
	// backlog still draining at the end (none: the server is fast).
	if n := h.count(); n < 1700 || n > 2100 || int64(n) != served.Load() {
		t.Fatalf("%d requests counted, %d served; want about %v", n, served.Load(), rate)
	}
	// Requests due during the stall (about 200) waited for it: over 100
	// of them at 25 ms or more. A closed loop would show 4.
	var slow uint64
	for b, c := range h {
		if upper(b) >= 25000 {
			slow += c
		}
	}
	if slow < 100 {
		t.Fatalf("%d requests of %d saw the %v stall; want the ones due during it", slow, h.count(), stall)
	}
	if p := h.quantile(0.5); p > 5 {
		t.Fatalf("median %.3f ms against a server that answers at once", p)
	}
}
