package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/resp"
)

// Op is one unit the Applier applies: a command (Args, run in database DB)
// or, when Tx is set, a MULTI/EXEC block whose commands must be applied
// atomically (no reader may observe part of it).
type Op struct {
	DB   int
	Args [][]byte // valid only during the Apply call
	Tx   []Op     // a block; its ops' Args are owned by the block (copies)
}

// Applier owns the dataset the link replicates into.
type Applier interface {
	// FullSync replaces the whole dataset with the RDB payload r yields;
	// r ends where the payload ends. size is its length, -1 when unknown
	// (diskless). An error leaves the dataset partial; the client then
	// asks for a new full sync.
	FullSync(r io.Reader, size int64) error
	// Apply applies ops in order and returns once they are all applied.
	Apply(ops []Op) error
}

// Config configures a Client.
type Config struct {
	Addr       string // the master's host:port
	ListenPort int    // announced with REPLCONF listening-port
	AnnounceIP string // announced with REPLCONF ip-address ("" = none: the master sees the connection's)
	Applier    Applier
	// Logf logs notable events (connects, syncs, errors); nil logs nothing.
	Logf func(format string, args ...any)
	// MaxBulkLen and MaxQueryBuf bound a command from the master (Redis's
	// proto-max-bulk-len and client-query-buffer-limit); <= 0: defaults.
	MaxBulkLen  int64
	MaxQueryBuf int
	// User and Password authenticate the link (masteruser, masterauth):
	// AUTH is sent after PING when Password is set.
	User, Password string
	// ReplID and Offset resume a previous link (psync2); "" for none.
	ReplID string
	Offset int64
	// Timeout is repl-timeout (default 60 s); AckEvery the ACK period
	// (default 1 s).
	Timeout  time.Duration
	AckEvery time.Duration
}

// State is where the link is, with the names ROLE reports.
type State int32

const (
	StateConnect    State = iota // waiting to (re)connect
	StateConnecting              // dialing
	StateHandshake               // PING, REPLCONF, PSYNC
	StateSync                    // receiving the RDB payload
	StateConnected               // streaming commands
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateHandshake:
		return "handshake"
	case StateSync:
		return "sync"
	case StateConnected:
		return "connected"
	}
	return "connect"
}

// Status is a snapshot of the link for INFO and ROLE.
type Status struct {
	State          State
	LastIO         time.Time // last byte received from the master
	LinkDownSince  time.Time // zero while connected
	SyncTotal      int64     // payload size (-1 diskless) while syncing
	SyncRead       int64     // payload bytes read so far
	ReadOffset     int64     // slave_read_repl_offset
	Offset         int64     // slave_repl_offset: processed and applied
	ReplID         string    // the master's replication id ("" before the first sync)
	FullSyncs      int64
	PartialSyncs   int64
	SyncInProgress bool
}

// Client follows one master until Stop.
type Client struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	nc     net.Conn // the current link, closed by Stop
	replid string
	offset int64
	db     int // the database selected at offset (a partial resync keeps it)

	state         atomic.Int32
	lastIO        atomic.Int64 // unix ns
	linkDownSince atomic.Int64 // unix ns
	syncing       atomic.Bool
	syncTotal     atomic.Int64
	syncRead      atomic.Int64
	readOffset    atomic.Int64
	appliedOffset atomic.Int64
	fullSyncs     atomic.Int64
	partialSyncs  atomic.Int64
	// awaitStream: after a diskless payload, until the first stream byte.
	// The master starts the stream on an ACK that arrives after its
	// child exits, so the client ACKs more often than AckEvery meanwhile.
	// Only the link's goroutine touches it.
	awaitStream bool
}

// Start begins following the master on a goroutine.
func Start(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.AckEvery <= 0 {
		cfg.AckEvery = time.Second
	}
	if cfg.MaxQueryBuf <= 0 {
		cfg.MaxQueryBuf = resp.DefaultMaxQueryBuf
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	c := &Client{cfg: cfg, done: make(chan struct{}), replid: cfg.ReplID, offset: cfg.Offset}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.appliedOffset.Store(cfg.Offset)
	c.readOffset.Store(cfg.Offset)
	c.linkDownSince.Store(time.Now().UnixNano())
	go c.run()
	return c
}

// Stop ends the link and waits until the client no longer calls the
// Applier. It returns the replication id and offset reached, for a later
// partial resync (or promotion).
func (c *Client) Stop() (replid string, offset int64) {
	c.cancel()
	c.mu.Lock()
	if c.nc != nil {
		c.nc.Close()
	}
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replid, c.offset
}

// Addr is the master's address.
func (c *Client) Addr() string { return c.cfg.Addr }

// Status reports the link's state.
func (c *Client) Status() Status {
	c.mu.Lock()
	replid := c.replid
	c.mu.Unlock()
	st := Status{
		State:          State(c.state.Load()),
		SyncTotal:      c.syncTotal.Load(),
		SyncRead:       c.syncRead.Load(),
		ReadOffset:     c.readOffset.Load(),
		Offset:         c.appliedOffset.Load(),
		ReplID:         replid,
		FullSyncs:      c.fullSyncs.Load(),
		PartialSyncs:   c.partialSyncs.Load(),
		SyncInProgress: c.syncing.Load(),
	}
	if t := c.lastIO.Load(); t != 0 {
		st.LastIO = time.Unix(0, t)
	}
	if t := c.linkDownSince.Load(); t != 0 {
		st.LinkDownSince = time.Unix(0, t)
	}
	return st
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = time.Second
)

func (c *Client) run() {
	defer close(c.done)
	backoff := minBackoff
	for c.ctx.Err() == nil {
		streamed, err := c.session()
		c.state.Store(int32(StateConnect))
		c.syncing.Store(false)
		c.linkDownSince.Store(time.Now().UnixNano())
		if c.ctx.Err() != nil {
			return
		}
		c.cfg.Logf("replica: link with master %s lost: %v", c.cfg.Addr, err)
		if streamed {
			backoff = minBackoff
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session runs one link: connect, handshake, sync, stream. streamed
// reports that it reached the command stream (the backoff then resets).
func (c *Client) session() (streamed bool, err error) {
	c.state.Store(int32(StateConnecting))
	c.awaitStream = false
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(c.ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		nc.Close()
		return false, c.ctx.Err()
	}
	c.nc = nc
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.nc = nil
		c.mu.Unlock()
		nc.Close()
	}()
	w := newWire(nc, c.cfg.Timeout, c.cfg.MaxQueryBuf)
	w.onRead = func(int) { c.lastIO.Store(time.Now().UnixNano()) }
	c.state.Store(int32(StateHandshake))
	c.cfg.Logf("replica: connecting to master %s", c.cfg.Addr)

	// PING: anything but an error other than an auth complaint is fine.
	line, err := c.request(w, "PING")
	if err != nil {
		return false, err
	}
	if len(line) > 0 && line[0] == '-' && !bytes.HasPrefix(line, []byte("-NOAUTH")) &&
		!bytes.HasPrefix(line, []byte("-NOPERM")) && !bytes.HasPrefix(line, []byte("-ERR operation not permitted")) {
		return false, fmt.Errorf("replica: master answered PING with %q", clip(line))
	}
	if c.cfg.Password != "" {
		args := []string{"AUTH", c.cfg.Password}
		if c.cfg.User != "" {
			args = []string{"AUTH", c.cfg.User, c.cfg.Password}
		}
		if line, err = c.request(w, args...); err != nil {
			return false, err
		}
		if len(line) > 0 && line[0] == '-' {
			return false, fmt.Errorf("replica: unable to AUTH to master: %s", clip(line))
		}
	}
	// REPLCONF errors are not fatal: an old master ignores what it lacks.
	if line, err = c.request(w, "REPLCONF", "listening-port", strconv.Itoa(c.cfg.ListenPort)); err != nil {
		return false, err
	} else if len(line) > 0 && line[0] == '-' {
		c.cfg.Logf("replica: master refused REPLCONF listening-port: %s", clip(line))
	}
	if c.cfg.AnnounceIP != "" {
		if line, err = c.request(w, "REPLCONF", "ip-address", c.cfg.AnnounceIP); err != nil {
			return false, err
		} else if len(line) > 0 && line[0] == '-' {
			c.cfg.Logf("replica: master refused REPLCONF ip-address: %s", clip(line))
		}
	}
	if line, err = c.request(w, "REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return false, err
	} else if len(line) > 0 && line[0] == '-' {
		c.cfg.Logf("replica: master refused REPLCONF capa: %s", clip(line))
	}

	c.mu.Lock()
	replid, offset := c.replid, c.offset
	c.mu.Unlock()
	psyncID, psyncOff := "?", "-1"
	if replid != "" {
		psyncID, psyncOff = replid, strconv.FormatInt(offset+1, 10)
	}
	if line, err = c.request(w, "PSYNC", psyncID, psyncOff); err != nil {
		return false, err
	}
	switch {
	case bytes.HasPrefix(line, []byte("+FULLRESYNC")):
		f := bytes.Fields(line)
		if len(f) != 3 || len(f[1]) != 40 {
			return false, fmt.Errorf("replica: bad FULLRESYNC reply %q", clip(line))
		}
		off, perr := strconv.ParseInt(string(f[2]), 10, 64)
		if perr != nil || off < 0 {
			return false, fmt.Errorf("replica: bad FULLRESYNC offset %q", clip(line))
		}
		if err := c.fullSync(w, string(f[1]), off); err != nil {
			return false, err
		}
	case bytes.HasPrefix(line, []byte("+CONTINUE")):
		f := bytes.Fields(line)
		if len(f) > 2 || (len(f) == 2 && len(f[1]) != 40) {
			return false, fmt.Errorf("replica: bad CONTINUE reply %q", clip(line))
		}
		if len(f) == 2 && string(f[1]) != replid {
			c.cfg.Logf("replica: master replication id changed to %s", f[1])
			c.mu.Lock()
			c.replid = string(f[1])
			c.mu.Unlock()
		}
		c.partialSyncs.Add(1)
		c.cfg.Logf("replica: partial resync with master %s accepted, offset %d", c.cfg.Addr, offset)
	default:
		return false, fmt.Errorf("replica: master answered PSYNC with %q", clip(line))
	}
	c.state.Store(int32(StateConnected))
	c.linkDownSince.Store(0)
	return true, c.stream(w)
}

// request sends a command and reads its one-line reply, skipping the
// empty lines a master sends as keepalives.
func (c *Client) request(w *wire, args ...string) ([]byte, error) {
	if err := w.write(resp.AppendCommand(nil, args...)); err != nil {
		return nil, err
	}
	return readReply(w)
}

func readReply(w *wire) ([]byte, error) {
	for {
		line, err := w.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}

func clip(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// fullSync reads the payload header and hands the payload to the Applier.
func (c *Client) fullSync(w *wire, replid string, offset int64) error {
	// The dataset is about to be replaced: until the load succeeds there
	// is nothing to resume from.
	c.mu.Lock()
	c.replid = ""
	c.mu.Unlock()
	c.state.Store(int32(StateSync))
	line, err := readReply(w)
	if err != nil {
		return err
	}
	if line[0] == '-' {
		return fmt.Errorf("replica: master aborted the sync: %q", clip(line))
	}
	if line[0] != '$' {
		return fmt.Errorf("replica: bad payload header %q", clip(line))
	}
	var payload io.Reader
	var eof *eofReader
	size := int64(-1)
	if bytes.HasPrefix(line, []byte("$EOF:")) {
		mark := line[5:]
		if len(mark) != eofMarkLen {
			return fmt.Errorf("replica: bad payload end mark %q", clip(line))
		}
		eof = newEOFReader(w, mark)
		payload = eof
	} else {
		n, perr := strconv.ParseInt(string(line[1:]), 10, 64)
		if perr != nil || n < 0 {
			return fmt.Errorf("replica: bad payload length %q", clip(line))
		}
		size = n
		payload = io.LimitReader(w, n)
	}
	c.syncTotal.Store(size)
	c.syncRead.Store(0)
	c.syncing.Store(true)
	defer c.syncing.Store(false)
	c.cfg.Logf("replica: full resync from master %s: replid %s offset %d, payload %d bytes", c.cfg.Addr, replid, offset, size)
	start := time.Now()
	cr := &countingReader{r: payload, n: &c.syncRead}
	if err := c.cfg.Applier.FullSync(cr, size); err != nil {
		return fmt.Errorf("replica: loading the master's payload: %w", err)
	}
	// Whatever the loader left unread belongs to the payload.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return err
	}
	if eof == nil && c.syncRead.Load() != size {
		return fmt.Errorf("replica: payload ended after %d of %d bytes: %w", c.syncRead.Load(), size, io.ErrUnexpectedEOF)
	}
	c.mu.Lock()
	c.replid, c.offset, c.db = replid, offset, 0
	c.mu.Unlock()
	c.readOffset.Store(offset)
	c.appliedOffset.Store(offset)
	c.fullSyncs.Add(1)
	c.cfg.Logf("replica: MASTER <-> REPLICA sync: finished with success in %.3f seconds", time.Since(start).Seconds())
	if eof != nil {
		// A diskless master starts the stream after the first ACK.
		c.awaitStream = true
		return c.sendAck(w, offset)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (c *Client) sendAck(w *wire, offset int64) error {
	return w.write(resp.AppendCommand(nil, "REPLCONF", "ACK", strconv.FormatInt(offset, 10)))
}

// maxOpsPerApply bounds the ops gathered before they are applied.
const maxOpsPerApply = 4096

// streamState is the command stream's parsing state.
type streamState struct {
	db int
	// inTx: inside MULTI; tx collects the block (copied arguments).
	inTx bool
	tx   []Op
	// txBytes is the size of the open block, bounded by maxTx.
	txBytes int
	maxTx   int
	ops     []Op
	args    [][]byte // backing store for ops' argument slices
}

// stream applies the command stream until the link fails or Stop.
func (c *Client) stream(w *wire) error {
	p := resp.NewParser(c.cfg.MaxBulkLen, c.cfg.MaxQueryBuf)
	c.mu.Lock()
	committed := c.offset // offset after the last command outside a block
	st := &streamState{db: c.db, maxTx: c.cfg.MaxQueryBuf}
	c.mu.Unlock()
	committedDB := st.db
	pos := committed // offset of the last byte parsed
	lastAck := time.Now()
	flush := func() error {
		if len(st.ops) == 0 {
			return nil
		}
		err := c.cfg.Applier.Apply(st.ops)
		for i := range st.ops {
			st.ops[i] = Op{}
		}
		st.ops, st.args = st.ops[:0], st.args[:0]
		return err
	}
	commit := func() {
		c.mu.Lock()
		c.offset, c.db = committed, committedDB
		c.mu.Unlock()
		c.appliedOffset.Store(committed)
	}
	// On the way out, whatever was parsed but not applied is dropped: the
	// offset stays at the last applied command, and an open block is
	// discarded (a partial resync replays it from its MULTI).
	for {
		needMore := false
		for len(st.ops) < maxOpsPerApply {
			args, n, ok, err := p.Next(w.buffered())
			if err != nil {
				return fmt.Errorf("replica: offset %d: %w", pos, err)
			}
			if !ok {
				needMore = true
				break
			}
			w.discard(n)
			if len(args) == 0 {
				pos += int64(n)
				if !st.inTx {
					committed, committedDB = pos, st.db
				}
				continue
			}
			if isCmd(args[0], "replconf") && len(args) >= 2 && isCmd(args[1], "getack") {
				// The ACK covers what precedes GETACK, applied.
				if err := flush(); err != nil {
					return err
				}
				commit()
				if err := c.sendAck(w, committed); err != nil {
					return err
				}
				lastAck = time.Now()
			} else if err := c.streamCommand(st, args); err != nil {
				return fmt.Errorf("replica: offset %d: %w", pos, err)
			}
			pos += int64(n)
			c.readOffset.Store(pos)
			if !st.inTx {
				committed, committedDB = pos, st.db
			}
		}
		if err := flush(); err != nil {
			return err
		}
		commit()
		if time.Since(lastAck) >= c.cfg.AckEvery {
			if err := c.sendAck(w, committed); err != nil {
				return err
			}
			lastAck = time.Now()
		}
		if !needMore {
			continue // a full batch was applied; more commands are buffered
		}
		if err := c.fillStream(w, &lastAck, committed); err != nil {
			return err
		}
	}
}

// awaitStreamAck is the ACK period while a diskless master has not yet
// started the stream.
const awaitStreamAck = 50 * time.Millisecond

// fillStream waits for more stream bytes, sending an ACK every AckEvery
// while it waits, and fails after Timeout of silence.
func (c *Client) fillStream(w *wire, lastAck *time.Time, committed int64) error {
	silentSince := time.Now()
	saved := w.timeout
	defer func() { w.timeout = saved }()
	for {
		every := c.cfg.AckEvery
		if c.awaitStream {
			every = min(every, awaitStreamAck)
		}
		wait := every - time.Since(*lastAck)
		if wait < 10*time.Millisecond {
			wait = 10 * time.Millisecond
		}
		w.timeout = wait
		err := w.fill()
		if err == nil {
			c.awaitStream = false
			return nil
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return err
		}
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		if time.Since(silentSince) > c.cfg.Timeout {
			return fmt.Errorf("replica: no data from master for %v (repl-timeout)", c.cfg.Timeout)
		}
		w.timeout = saved
		if err := c.sendAck(w, committed); err != nil {
			return err
		}
		*lastAck = time.Now()
	}
}

// streamCommand takes one command of the stream: protocol commands are
// handled here, the rest become ops.
func (c *Client) streamCommand(st *streamState, args [][]byte) error {
	name := args[0]
	switch {
	case isCmd(name, "ping"), isCmd(name, "replconf"):
		return nil // keepalives and other REPLCONFs need no action
	case isCmd(name, "select"):
		if len(args) != 2 {
			return errors.New("bad SELECT from master")
		}
		db, err := strconv.Atoi(string(args[1]))
		if err != nil || db < 0 || db > 1<<16 {
			return fmt.Errorf("bad SELECT %q from master", clip(args[1]))
		}
		st.db = db
		return nil
	case isCmd(name, "multi"):
		if st.inTx {
			return errors.New("nested MULTI from master")
		}
		st.inTx, st.tx, st.txBytes = true, nil, 0
		return nil
	case isCmd(name, "exec"):
		if !st.inTx {
			return errors.New("EXEC without MULTI from master")
		}
		st.inTx = false
		if len(st.tx) > 0 {
			st.ops = append(st.ops, Op{DB: st.db, Tx: st.tx})
		}
		st.tx = nil
		return nil
	case isCmd(name, "discard"):
		st.inTx, st.tx = false, nil
		return nil
	}
	if st.inTx {
		for _, a := range args {
			st.txBytes += len(a) + 16
		}
		if st.txBytes > st.maxTx {
			return fmt.Errorf("a MULTI block from master exceeds %d bytes", st.maxTx)
		}
		st.tx = append(st.tx, Op{DB: st.db, Args: cloneArgs(args)})
		return nil
	}
	start := len(st.args)
	st.args = append(st.args, args...)
	st.ops = append(st.ops, Op{DB: st.db, Args: st.args[start:len(st.args):len(st.args)]})
	return nil
}

// cloneArgs copies args into one allocation.
func cloneArgs(args [][]byte) [][]byte {
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}

// isCmd compares a command name, ASCII case-insensitively, with a
// lower-case name.
func isCmd(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != lower[i] {
			return false
		}
	}
	return true
}
