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
func drive(addr string, clients int, rate float64, phase *atomic.Int32, hists [][phases]hist, keys int, value []byte) error {
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
	}
	var s sender
	if rate > 0 {
		if err := s.openTimer(ep, int32(clients), rate); err != nil {
			return err
		}
		defer unix.Close(s.timer)
	}
	for _, c := range conns {
		if err := s.ready(c, phase.Load()); err != nil {
			return err
		}
	}
	if err := s.pump(phase.Load()); err != nil {
		return err
	}
	events := make([]unix.EpollEvent, clients+1)
	buf := make([]byte, 64<<10)
	for s.inFlight > 0 || phase.Load() != phaseDone {
		n, err := unix.EpollWait(ep, events, 100)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			if int(ev.Fd) == clients {
				var tick [8]byte
				_, _ = unix.Read(s.timer, tick[:]) // drain the expiry count
				continue
			}
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
				lat := uint64(time.Since(c.sent).Microseconds())
				c.h[c.phase][bucket(lat)]++
				timeline.note(lat)
				s.inFlight--
				if err := s.ready(c, phase.Load()); err != nil {
					return err
				}
			}
		}
		if err := s.pump(phase.Load()); err != nil {
			return err
		}
	}
	return nil
}

// sender decides when a client sends. Without a rate (closed loop) a
// client sends its next request as soon as its reply arrives, so the
// throughput is the server's capacity and latency is mostly queueing:
// clients / throughput. With a rate (open loop) requests are due at fixed
// times, rate per second whatever the server does, each on a client with
// none in flight; a request due while every client waits is sent when one
// is free, and its latency counts from the time it was due (no coordinated
// omission), so a server that stalls pays for every request it delayed.
type sender struct {
	rate     float64
	timer    int // timerfd waking the loop when the next request is due
	free     []*client
	start    time.Time
	issued   int64
	inFlight int
}

func (s *sender) openTimer(ep int, id int32, rate float64) error {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: id}); err != nil {
		unix.Close(fd)
		return err
	}
	s.rate, s.timer, s.start = rate, fd, time.Now()
	return nil
}

// ready takes c, whose reply arrived (or which just connected): it sends
// again at once in a closed loop, else waits for the next due request.
func (s *sender) ready(c *client, p int32) error {
	if p == phaseDone {
		return nil
	}
	if s.rate == 0 {
		s.inFlight++
		return c.send(p, time.Now())
	}
	s.free = append(s.free, c)
	return nil
}

// pump sends the requests due by now on free clients and arms the timer
// for the next one.
func (s *sender) pump(p int32) error {
	if s.rate == 0 || p == phaseDone {
		return nil
	}
	for len(s.free) > 0 {
		due := s.start.Add(time.Duration(float64(s.issued) * 1e9 / s.rate))
		if wait := time.Until(due); wait > 0 {
			return unix.TimerfdSettime(s.timer, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(wait.Nanoseconds())}, nil)
		}
		c := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		s.issued++
		s.inFlight++
		if err := c.send(p, due); err != nil {
			return err
		}
	}
	return nil // every client waits for a reply, which runs pump again
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

// send sends a SET; its latency counts from due.
func (c *client) send(p int32, due time.Time) error {
	c.req = fmt.Appendf(c.req[:0], "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n", c.rng.IntN(c.keys), len(c.value))
	c.req = append(append(c.req, c.value...), "\r\n"...)
	c.phase, c.sent = p, due
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
