package family

// MIGRATE: move keys to another server as Redis does — DUMP payloads sent
// as RESTORE commands over a connection kept for the next MIGRATE to the
// same target — with Redis 7.0's options, replies and errors.
//
// The keys are locked exclusively (shards hold only them, not the whole
// server as Redis does) while the payloads go out and the target answers;
// a key the target took is then deleted here unless COPY, journaled as
// DEL. The network exchange runs on the command's coordinator goroutine,
// never on an event loop (MIGRATE has no shard function, and scripts may
// not call it).

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

// migrateIdle is how long an unused connection to a target stays open
// (Redis: MIGRATE_SOCKET_CACHE_TTL), migrateMaxConns how many are kept
// (MIGRATE_SOCKET_CACHE_ITEMS).
const (
	migrateIdle     = 10 * time.Second
	migrateMaxConns = 64
)

// migrateConn is a connection to a target, with the database its last
// successful MIGRATE selected (-1: unknown, SELECT again).
type migrateConn struct {
	conn  net.Conn
	r     *bufio.Reader
	db    int
	timer *time.Timer // closes it after migrateIdle unused
}

// migrateConns caches connections by "host:port"; a MIGRATE takes its
// target's out while it uses it. One cache for the process, as Redis's.
var migrations migrateConns

type migrateConns struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
}

// take returns the cached connection to addr, or dials one within timeout.
func (m *migrateConns) take(addr string, timeout time.Duration) (*migrateConn, error) {
	m.mu.Lock()
	mc := m.conns[addr]
	if mc != nil {
		delete(m.conns, addr)
		mc.timer.Stop()
	}
	m.mu.Unlock()
	if mc != nil {
		return mc, nil
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &migrateConn{conn: c, r: bufio.NewReaderSize(c, 4096), db: -1}, nil
}

// put caches mc for the next MIGRATE to addr.
func (m *migrateConns) put(addr string, mc *migrateConn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = map[string]*migrateConn{}
	}
	if old := m.conns[addr]; old != nil || len(m.conns) >= migrateMaxConns {
		mc.conn.Close() // another MIGRATE cached one meanwhile, or full
		return
	}
	m.conns[addr] = mc
	mc.timer = time.AfterFunc(migrateIdle, func() {
		m.mu.Lock()
		if m.conns[addr] == mc {
			delete(m.conns, addr)
			mc.conn.Close()
		}
		m.mu.Unlock()
	})
}

// migrateArgs are MIGRATE's parsed arguments.
type migrateArgs struct {
	addr               string
	db                 int
	timeout            time.Duration
	copy, replace      bool
	user, password     []byte
	auth, auth2        bool
	firstKey, lastKeys int // the keys are Args[firstKey:lastKeys]
}

// parseMigrate reads MIGRATE host port key db timeout [COPY] [REPLACE]
// [AUTH password] [AUTH2 username password] [KEYS key ...] with Redis's
// checks and errors, in its order.
func parseMigrate(a [][]byte) (migrateArgs, string) {
	m := migrateArgs{firstKey: 3, lastKeys: 4}
	for j := 6; j < len(a); j++ {
		more := len(a) - 1 - j
		switch strings.ToLower(string(a[j])) {
		case "copy":
			m.copy = true
		case "replace":
			m.replace = true
		case "auth":
			if more < 1 {
				return m, command.ErrSyntax
			}
			j++
			m.auth, m.password = true, a[j]
		case "auth2":
			if more < 2 {
				return m, command.ErrSyntax
			}
			m.auth2, m.user, m.password = true, a[j+1], a[j+2]
			j += 2
		case "keys":
			if len(a[3]) != 0 {
				return m, "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
			}
			m.firstKey, m.lastKeys = j+1, len(a)
			j = len(a)
		default:
			return m, command.ErrSyntax
		}
	}
	timeout, ok := num.ParseInt(a[5])
	if !ok {
		return m, command.ErrNotInt
	}
	db, ok := num.ParseInt(a[4])
	if !ok {
		return m, command.ErrNotInt
	}
	if timeout <= 0 {
		timeout = 1000
	}
	m.timeout = time.Duration(min(timeout, 1<<40)) * time.Millisecond
	m.db = int(max(min(db, 1<<31-1), -1<<31))
	m.addr = net.JoinHostPort(string(a[1]), string(a[2]))
	return m, ""
}

// migrateKeyPositions are MIGRATE's keys: the key argument, or those after
// KEYS.
func migrateKeyPositions(dst []int, args [][]byte) []int {
	if len(args) < 6 {
		return dst
	}
	m, e := parseMigrate(args)
	if e != "" && m.firstKey == 3 {
		return append(dst, 3)
	}
	for i := m.firstKey; i < m.lastKeys; i++ {
		dst = append(dst, i)
	}
	return dst
}

// migrateItem is a key to send: its payload and TTL in ms (0: none).
type migrateItem struct {
	pos     int // the key's argument position
	ttl     int64
	payload []byte
}

func cmdMigrate(x *command.Coord) {
	m, e := parseMigrate(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	pos := migrateKeyPositions(nil, x.Args)
	t, parts := x.LockSplit(pos, true)
	// The payloads, in argument order: each shard fills the slots of its
	// keys (a missing or expired key stays empty).
	found := make([]migrateItem, len(x.Args))
	t.RunAll(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		for _, i := range parts[s.ID] {
			it, v := db.Find(x.Args[i])
			if v == nil {
				continue
			}
			var ttl int64
			if at, ok := db.ExpireAt(it); ok {
				if ttl = at - s.Now(); ttl < 1 {
					ttl = 1
				}
			}
			payload, err := rdbvalue.Dump(v)
			if err == nil {
				found[i] = migrateItem{pos: i, ttl: ttl, payload: payload}
			}
		}
	})
	items := found[:0]
	for _, it := range found {
		if it.payload != nil {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		t.Finish(nil)
		x.W.SimpleString("NOKEY")
		return
	}
	moved, reply := migrateSend(m, x.Args, items)
	if m.copy || len(moved) == 0 {
		t.Finish(nil)
	} else {
		del := [][]byte{[]byte("DEL")}
		for _, i := range moved {
			del = append(del, x.Args[i])
		}
		x.Propagate(del...) // replicas delete what left, as Redis propagates
		t.Finish(func(s *shard.Shard) {
			db := s.DBs[x.DB]
			for _, i := range moved {
				if x.ShardOf(x.Args[i]) == s.ID {
					delOn(db, x.Args[i])
				}
			}
		})
	}
	if reply[0] == '+' {
		x.W.SimpleString(reply[1:])
	} else {
		x.W.Error(reply[1:])
	}
}

// migrateSend sends the items to m's target, as Redis's MIGRATE does: AUTH
// and SELECT when needed, then a RESTORE per key, pipelined. It returns the
// positions of the keys the target took and the reply ("+OK" or "-..."). A
// failure to write or read on a cached connection before any reply is
// retried once on a new one (the target may have closed it meanwhile).
func migrateSend(m migrateArgs, args [][]byte, items []migrateItem) ([]int, string) {
	for attempt := 0; ; attempt++ {
		mc, err := migrations.take(m.addr, m.timeout)
		if err != nil {
			if errIsTimeout(err) {
				return nil, "-IOERR error or timeout connecting to the client"
			}
			// Redis connects without blocking and learns of a refused
			// connection when it writes.
			return nil, "-IOERR error or timeout writing to target instance"
		}
		moved, reply, replies, ioErr := mc.exchange(m, args, items)
		if reply[0] == '+' {
			mc.db = m.db
			migrations.put(m.addr, mc)
			return moved, reply
		}
		if ioErr != nil {
			mc.conn.Close()
			if replies == 0 && attempt == 0 && !errIsTimeout(ioErr) {
				continue
			}
			return moved, reply
		}
		mc.db = -1 // the target refused something: SELECT again next time
		migrations.put(m.addr, mc)
		return moved, reply
	}
}

func errIsTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// exchange writes the commands and reads their replies: the positions of
// the keys the target took, the reply, how many RESTORE replies were read
// and the I/O error that ended it, if one did.
func (mc *migrateConn) exchange(m migrateArgs, args [][]byte, items []migrateItem) (moved []int, reply string, replies int, ioErr error) {
	var b []byte
	cmd := func(parts ...[]byte) { b = resp.AppendArgs(b, parts) }
	switch {
	case m.auth2:
		cmd([]byte("AUTH"), m.user, m.password)
	case m.auth:
		cmd([]byte("AUTH"), m.password)
	}
	sel := mc.db != m.db
	if sel {
		cmd([]byte("SELECT"), []byte(strconv.Itoa(m.db)))
	}
	for _, it := range items {
		ttl := []byte(strconv.FormatInt(it.ttl, 10))
		if m.replace {
			cmd([]byte("RESTORE"), args[it.pos], ttl, it.payload, []byte("REPLACE"))
		} else {
			cmd([]byte("RESTORE"), args[it.pos], ttl, it.payload)
		}
	}
	_ = mc.conn.SetWriteDeadline(time.Now().Add(m.timeout))
	if _, err := mc.conn.Write(b); err != nil {
		return nil, "-IOERR error or timeout writing to target instance", 0, err
	}
	const readErr = "-IOERR error or timeout reading to target instance"
	read := func() string {
		_ = mc.conn.SetReadDeadline(time.Now().Add(m.timeout))
		line, err := mc.r.ReadSlice('\n')
		if err == nil && (len(line) < 3 || line[len(line)-2] != '\r') {
			err = errMigrateReply
		}
		if err != nil {
			ioErr = err
			return ""
		}
		return string(bytes.TrimSuffix(line, []byte("\r\n")))
	}
	// As Redis: the first error of AUTH, SELECT or a RESTORE is the reply;
	// after a failed AUTH or SELECT no key counts as taken.
	var targetErr string
	failed := func(line string) bool {
		if line[0] != '-' {
			return false
		}
		if targetErr == "" {
			targetErr = "-ERR Target instance replied with error: " + line[1:]
		}
		return true
	}
	pre := false // AUTH or SELECT failed
	if m.auth || m.auth2 {
		line := read()
		if ioErr != nil {
			return nil, readErr, 0, ioErr
		}
		pre = failed(line)
	}
	if sel {
		line := read()
		if ioErr != nil {
			return nil, readErr, 0, ioErr
		}
		pre = failed(line) || pre
	}
	for _, it := range items {
		line := read()
		if ioErr != nil {
			return moved, readErr, replies, ioErr
		}
		replies++
		if !failed(line) && !pre {
			moved = append(moved, it.pos)
		}
	}
	if targetErr != "" {
		return moved, targetErr, replies, nil
	}
	return moved, "+OK", replies, nil
}

var errMigrateReply = errors.New("malformed reply line")
