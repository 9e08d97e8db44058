package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// drive runs the SET load of every client on one thread with epoll, the way
// redis-benchmark does: the servers under test share the machine's cores
// with it. A goroutine per client (a read, a park and a netpoll wake-up
// per request) cost 8.9-9.1 µs of CPU per request against 6.0-6.2 µs here
// (against one dfly master, two runs each, alternating).
func drive(addr string, clients int, phase *atomic.Int32, hists [][phases]hist, keys int, value []byte) error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	conns := make([]*client, clients)
	for i := range conns {
		c, err := dialRaw(addr)
		if err != nil {
			return err
		}
		defer unix.Close(c.fd)
		c.rng, c.h, c.value, c.keys = rand.New(rand.NewPCG(uint64(i), 11)), &hists[i], value, keys
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}); err != nil {
			return err
		}
		conns[i] = c
		if err := c.send(phase.Load()); err != nil {
			return err
		}
	}
	events := make([]unix.EpollEvent, clients)
	buf := make([]byte, 64<<10)
	for running := clients; running > 0; {
		n, err := unix.EpollWait(ep, events, 100)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			c := conns[ev.Fd]
			m, err := unix.Read(c.fd, buf)
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			if err != nil || m == 0 {
				return fmt.Errorf("read: %v (connection closed)", err)
			}
			c.in = append(c.in, buf[:m]...)
			for {
				i := bytes.IndexByte(c.in, '\n')
				if i < 0 {
					break
				}
				line := c.in[:i+1]
				if !bytes.HasPrefix(line, []byte("+OK")) {
					return fmt.Errorf("SET: %q", strings.TrimSpace(string(line)))
				}
				c.in = c.in[:copy(c.in, c.in[i+1:])]
				c.h[c.phase][bucket(uint64(time.Since(c.sent).Microseconds()))]++
				p := phase.Load()
				if p == phaseDone {
					running--
					break
				}
				if err := c.send(p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// client is one connection with one request in flight.
type client struct {
	fd    int
	rng   *rand.Rand
	h     *[phases]hist
	value []byte
	keys  int
	req   []byte
	in    []byte
	sent  time.Time
	phase int32 // of the request in flight: a request counts in the phase it started in
}

func (c *client) send(p int32) error {
	c.req = fmt.Appendf(c.req[:0], "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n", c.rng.IntN(c.keys), len(c.value))
	c.req = append(append(c.req, c.value...), "\r\n"...)
	c.phase, c.sent = p, time.Now()
	for b := c.req; len(b) > 0; {
		n, err := unix.Write(c.fd, b)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue // a request is far smaller than the socket buffer: rare
		}
		if err != nil {
			return fmt.Errorf("write: %v", err)
		}
		b = b[n:]
	}
	return nil
}

// dialRaw opens a non-blocking TCP connection (IPv4) with TCP_NODELAY.
func dialRaw(addr string) (*client, error) {
	ta, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	sa := &unix.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect %s: %v", addr, err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &client{fd: fd}, nil
}
