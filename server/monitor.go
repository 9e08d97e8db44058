package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// MONITOR streams every command the server accepts to the connections that
// asked, one line each, as Redis writes them:
//
//	+1700000000.123456 [0 127.0.0.1:50000] "SET" "k" "v"
//
// A command is fed when its connection's loop has checked it (known,
// arity, allowed) and before it runs, from the loop that read it, so the
// lines of one client keep its order; lines of different clients are in
// the order their loops got to them. A command queued by MULTI is fed
// when queued, the commands a script calls as "[db lua]" when called.
// Admin commands (CONFIG, DEBUG, MONITOR ...) are not fed, and AUTH's and
// HELLO's credentials are redacted, as in Redis. A monitor's output is
// bounded by client-output-buffer-limit's normal class, as in Redis
// (Conn.deliver, clientbuf.go).
type monitors struct {
	n   atomic.Int32 // len(set), read without the lock on every command
	mu  sync.RWMutex
	set map[*Conn]struct{}
}

func (m *monitors) add(c *Conn) {
	m.mu.Lock()
	if m.set == nil {
		m.set = map[*Conn]struct{}{}
	}
	m.set[c] = struct{}{}
	m.n.Store(int32(len(m.set)))
	m.mu.Unlock()
}

func (m *monitors) remove(c *Conn) {
	m.mu.Lock()
	delete(m.set, c)
	m.n.Store(int32(len(m.set)))
	m.mu.Unlock()
}

// active is the hot path's test: one atomic load.
func (m *monitors) active() bool { return m.n.Load() > 0 }

// feed sends one command line to every monitor; from is the client that
// sent it, nil for a script's call.
func (m *monitors) feed(from *Conn, db int, cmd *command.Command, args [][]byte) {
	if cmd.Flags&command.FlagAdmin != 0 {
		return
	}
	now := time.Now()
	b := make([]byte, 0, 64+16*len(args))
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.Itoa(now.Nanosecond() / 1000)
	b = append(b, "000000"[len(us):]...)
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, ' ')
	if from == nil {
		b = append(b, "lua"...)
	} else {
		from.info.Lock()
		b = append(b, from.info.addr...)
		from.info.Unlock()
	}
	b = append(b, ']')
	redactFrom, redactTo := redacted(cmd, args)
	for i, a := range args {
		b = append(b, ' ')
		if i >= redactFrom && i < redactTo {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, "\r\n"...)
	m.mu.RLock()
	for c := range m.set {
		c.deliver(b)
	}
	m.mu.RUnlock()
}

// redacted are the arguments MONITOR must not show, args[from:to]: every
// argument of AUTH, those after HELLO's AUTH, MIGRATE's credentials.
func redacted(cmd *command.Command, args [][]byte) (from, to int) {
	switch cmd.Name {
	case "auth":
		return 1, len(args)
	case "hello":
		for i, a := range args {
			if strings.EqualFold(string(a), "auth") {
				return i + 1, len(args)
			}
		}
	case "migrate":
		for i := 6; i < len(args); i++ {
			switch strings.ToLower(string(args[i])) {
			case "auth":
				return i + 1, min(i+2, len(args))
			case "auth2":
				return i + 1, min(i+3, len(args))
			case "keys":
				return len(args), len(args)
			}
		}
	}
	return len(args), len(args)
}

// appendRepr quotes a as Redis's sdscatrepr does: C escapes for \ " and
// the usual controls, \xHH for other bytes outside printable ASCII.
func appendRepr(b []byte, a []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range a {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c < 0x20 || c > 0x7e {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// cmdMonitor turns the connection into a monitor. A second MONITOR gets
// no reply, as in Redis; RESET or closing ends it.
func cmdMonitor(c *Conn, _ [][]byte, w *resp.Writer) {
	if c.inExec {
		w.Error("ERR MONITOR isn't allowed for DENY BLOCKING client") // Redis 7.0's text
		return
	}
	if c.monitor {
		return
	}
	c.monitor = true
	c.setInfo(func() { c.info.monitor = true })
	c.srv.monitors.add(c)
	w.SimpleString("OK")
}

// stopMonitor ends monitor mode (RESET, close).
func (c *Conn) stopMonitor() {
	if c.monitor {
		c.monitor = false
		c.setInfo(func() { c.info.monitor = false })
		c.srv.monitors.remove(c)
	}
}
