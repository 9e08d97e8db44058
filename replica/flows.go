package replica

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/master"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/resp"
)

// dfly-native replication, replica side (master/flows.go is the master's).
// A Link asks the master DFLY HELLO; a master that does not know it
// (Redis) gets the Redis protocol instead (a Client, which the link then
// runs). Against a dfly master it opens one flow per master shard and
// applies each flow's stream on its own goroutine: baseline records are
// routed to this server's shards by key (the shard counts may differ),
// journal entries go through an Applier per flow (Host.NewApplier). Flows of different
// master shards hold different keys, so they apply in parallel; a
// multi-shard transaction waits at a barrier until every shard's part has
// arrived and is then applied as one transaction (no reader sees half of
// it). After a disconnect the link asks to continue each flow from its last
// applied LSN; the master answers with a full sync when a backlog no longer
// holds it.

// Host is what a Link needs of the server it replicates into.
type Host interface {
	// NewApplier is an Applier of one flow's journal commands.
	NewApplier() Applier
	// NewLoader is a Loader of a baseline whose batches go to the shards
	// asynchronously (pending counts those not yet applied) and which
	// loads keys whatever their expiry (the master decides).
	NewLoader(pending *sync.WaitGroup) *rdbvalue.Loader
	// FlushForSync starts a full sync: every database emptied, the shards
	// in replica mode, the function libraries dropped.
	FlushForSync()
	// SetLoading tells clients that a full sync is replacing the dataset
	// (LOADING), or no longer.
	SetLoading(loading bool)
	// Follow makes the server follow host:port instead of link's master,
	// which named it (a redirect); nothing when link is no longer the
	// server's.
	Follow(link *Link, host string, port int)
}

// Link is a replica's link to a master: dfly flows, or, when the master
// does not speak them, the Redis protocol through a Client.
type Link struct {
	h    Host
	addr string
	cfg  Config
	stop chan struct{}
	done chan struct{}

	fallback atomic.Pointer[Client]

	mu     sync.Mutex
	conns  []net.Conn
	replID string
	lsns   []atomic.Uint64 // per master shard: last applied LSN
	shards int
	// complete: the last full sync reached every flow's cut, so the LSNs
	// describe the dataset; until then only a full sync is valid.
	complete atomic.Bool
	state    atomic.Int32
	lastIO   atomic.Int64
	downAt   atomic.Int64
	syncing  atomic.Bool
	fulls    atomic.Int64
	partial  atomic.Int64
	// noBlobs: the master refused DFLY FLOW ... BLOBS (a build before
	// blob chunks); the flows then ask without it.
	noBlobs atomic.Bool
	// redirecting: a switch to the master a refusal named is under way.
	redirecting atomic.Bool
	// offer: the history this server's data is at, offered to the master
	// in the first session (DFLY HANDOVER); nil when none.
	offer *master.History
}

// StartLink starts a link to cfg.Addr (cfg.Applier applies a Redis
// master's stream); offer, when not nil, is where this server's data is in
// some dfly master's history (see handover).
func StartLink(h Host, cfg Config, offer *master.History) *Link {
	l := &Link{h: h, addr: cfg.Addr, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), offer: offer}
	l.downAt.Store(time.Now().UnixNano())
	go l.run()
	return l
}

// Fallback reports whether the master spoke only the Redis protocol (the
// link runs a Client).
func (l *Link) Fallback() bool { return l.fallback.Load() != nil }

// Stop ends the link after its last apply.
func (l *Link) Stop() (string, int64) {
	close(l.stop)
	l.closeConns()
	<-l.done
	if c := l.fallback.Load(); c != nil {
		return c.Stop()
	}
	return l.position()
}

// position is the master's replication id and the sum of the applied
// LSNs; safe on any goroutine (session replaces both under mu).
func (l *Link) position() (string, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for i := range l.lsns {
		n += int64(l.lsns[i].Load())
	}
	return l.replID, n
}

// History is where the replica's data is in its dfly master's history,
// nil when it is not all of one (a full sync unfinished, or a Redis
// master). Call it once the link has stopped.
func (l *Link) History() *master.History {
	if l.fallback.Load() != nil || !l.complete.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := &master.History{ReplID: l.replID, LSNs: make([]uint64, len(l.lsns))}
	for i := range l.lsns {
		h.LSNs[i] = l.lsns[i].Load()
	}
	return h
}

// Status reports the link for INFO and ROLE.
func (l *Link) Status() Status {
	if c := l.fallback.Load(); c != nil {
		return c.Status()
	}
	id, off := l.position()
	st := Status{State: State(l.state.Load()), ReplID: id,
		FullSyncs: l.fulls.Load(), PartialSyncs: l.partial.Load(), SyncInProgress: l.syncing.Load(),
		SyncTotal: -1}
	if t := l.lastIO.Load(); t > 0 {
		st.LastIO = time.Unix(0, t)
	}
	if t := l.downAt.Load(); t > 0 && st.State != StateConnected {
		st.LinkDownSince = time.Unix(0, t)
	}
	st.Offset = off
	st.ReadOffset = st.Offset
	return st
}

func (l *Link) closeConns() {
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
}

func (l *Link) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *Link) run() {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for !l.stopped() {
		err := l.session()
		if errors.Is(err, errNotDfly) {
			l.cfg.Logf("MASTER is not dfly: replicating with the Redis protocol")
			l.fallback.Store(Start(l.cfg))
			return
		}
		var rd *masterRedirect
		if errors.As(err, &rd) {
			l.redirected(rd)
		}
		l.state.Store(int32(StateConnect))
		l.downAt.Store(time.Now().UnixNano())
		l.syncing.Store(false)
		if l.stopped() {
			return
		}
		l.cfg.Logf("MASTER <-> REPLICA flows: %v; reconnecting", err)
		select {
		case <-l.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

var errNotDfly = errors.New("master does not speak DFLY")

// handover asks the master whether the data here, at offer in some dfly
// master's history, is where its own history started: it was that
// master's replica, or its master, when it was promoted (a FAILOVER, a
// REPLICAOF NO ONE) with exactly that data. If so it answers with its
// shards' LSNs at the promotion, from which the flows continue (DFLY
// HANDOVER <replid> <lsn>..., answered with an array of shards integers).
func handover(c net.Conn, r *bufio.Reader, offer *master.History, shards int) ([]uint64, error) {
	args := []string{"DFLY", "HANDOVER", offer.ReplID}
	for _, n := range offer.LSNs {
		args = append(args, strconv.FormatUint(n, 10))
	}
	if err := writeCommand(c, args...); err != nil {
		return nil, err
	}
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line != "*"+strconv.Itoa(shards) {
		if strings.HasPrefix(line, "-") {
			return nil, errors.New(line[1:])
		}
		return nil, fmt.Errorf("DFLY HANDOVER: unexpected reply %q", line)
	}
	elems, err := readElems(r, "DFLY HANDOVER", shards)
	if err != nil {
		return nil, err
	}
	lsns := make([]uint64, shards)
	for i, e := range elems {
		if lsns[i], err = strconv.ParseUint(e, 10, 64); err != nil {
			return nil, fmt.Errorf("DFLY HANDOVER: bad LSN %q", e)
		}
	}
	return lsns, nil
}

// RefusalText starts the error a replica gives a would-be replica of its
// own while its link is up (no chained replication); its master's
// host:port follows it, and a Link follows that master instead.
const RefusalText = "ERR this server is a replica and does not serve replicas of its own (no chained replication): replicate from its master "

// masterRedirect is a master's refusal to serve this replica because it is
// a replica itself (RefusalText), naming its own master.
type masterRedirect struct {
	host string
	port int
	text string
}

func (e *masterRedirect) Error() string { return e.text }

// parseRedirect recognizes RefusalText's error line (without its '-').
func parseRedirect(line string) *masterRedirect {
	hp, ok := strings.CutPrefix(line, RefusalText)
	if !ok {
		return nil
	}
	host, ps, err := net.SplitHostPort(hp)
	port, perr := strconv.Atoi(ps)
	if err != nil || perr != nil || host == "" || port <= 0 || port > 65535 {
		return nil
	}
	return &masterRedirect{host: host, port: port, text: line}
}

// redirected follows the master a refusal named: this link's master has
// become a replica (REPLICAOF, FAILOVER) and serves none, so the server
// follows its master instead — the data Redis's chained replica would get
// through it, minus the hop. A loopback host there is the refusing
// server's own machine, which this one reaches at the link's host. The
// switch runs on a goroutine of its own: it stops this link, which waits
// for this goroutine to return.
func (l *Link) redirected(rd *masterRedirect) {
	host := redirectHost(l.addr, rd.host)
	if !l.redirecting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.redirecting.Store(false)
		l.h.Follow(l, host, rd.port)
	}()
}

// redirectHost is the host to reach a master that the server at linkAddr
// names as host: a loopback name is linkAddr's machine.
func redirectHost(linkAddr, host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || strings.EqualFold(host, "localhost") {
		if h, _, err := net.SplitHostPort(linkAddr); err == nil {
			return h
		}
	}
	return host
}

// readLine reads one reply line, bounded by the reader's buffer: a master
// that sends no newline gets an error, not unbounded memory.
func readLine(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func writeCommand(w io.Writer, args ...string) error {
	_, err := w.Write(resp.AppendCommand(nil, args...))
	return err
}

// auth authenticates a connection to the master with masterauth (and
// masteruser) when set, as the Redis-protocol link does.
func (l *Link) auth(c net.Conn, r *bufio.Reader) error {
	if l.cfg.Password == "" {
		return nil
	}
	args := []string{"AUTH", l.cfg.Password}
	if l.cfg.User != "" {
		args = []string{"AUTH", l.cfg.User, l.cfg.Password}
	}
	if err := writeCommand(c, args...); err != nil {
		return err
	}
	line, err := readLine(r)
	if err != nil {
		return err
	}
	if line = strings.TrimRight(line, "\r\n"); line != "+OK" {
		return fmt.Errorf("unable to AUTH to master: %s", line)
	}
	return nil
}

// readHello reads DFLY HELLO's reply: replid, shards, session, mode.
func readHello(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		if strings.Contains(strings.ToLower(line), "unknown command") {
			return nil, errNotDfly
		}
		if rd := parseRedirect(line[1:]); rd != nil {
			return nil, rd
		}
		return nil, errors.New(line[1:])
	}
	if line != "*4" {
		return nil, fmt.Errorf("DFLY HELLO: unexpected reply %q", line)
	}
	return readElems(r, "DFLY HELLO", 4)
}

// readElems reads the n elements of an array reply whose header was read:
// integers (their digits) or bulk strings of up to 1 KiB.
func readElems(r *bufio.Reader, what string, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		h, err := readLine(r)
		if err != nil {
			return nil, err
		}
		h = strings.TrimRight(h, "\r\n")
		switch {
		case strings.HasPrefix(h, ":"):
			out[i] = h[1:]
		case strings.HasPrefix(h, "$"):
			n, err := strconv.Atoi(h[1:])
			if err != nil || n < 0 || n > 1024 {
				return nil, fmt.Errorf("%s: bad length %q", what, h)
			}
			b := make([]byte, n+2)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, err
			}
			out[i] = string(b[:n])
		default:
			return nil, fmt.Errorf("%s: unexpected element %q", what, h)
		}
	}
	return out, nil
}

// session runs one connection of the link: HELLO, the flows, until one
// fails or the link stops.
func (l *Link) session() error {
	l.state.Store(int32(StateConnecting))
	main, err := net.DialTimeout("tcp", l.addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer main.Close()
	_ = main.SetDeadline(time.Now().Add(10 * time.Second))
	mr := bufio.NewReader(main)
	hello, shards, err := l.hello(main, mr)
	if err != nil {
		return err
	}
	l.state.Store(int32(StateHandshake))
	l.adoptHistory(main, mr, hello[0], shards)
	l.mu.Lock()
	l.conns = l.conns[:0]
	l.mu.Unlock()
	defer l.closeConns()
	conns, readers, err := l.openFlows(hello[2], shards)
	if err != nil {
		return err
	}
	full, cutLSN, err := l.flowReplies(conns, readers)
	if err != nil {
		return err
	}
	_ = main.SetDeadline(time.Time{})
	return l.runFlows(conns, readers, full, cutLSN, hello[3])
}

// hello authenticates on the main connection, announces the listening
// port and asks DFLY HELLO: its reply (replid, shards, session, mode) and
// the master's shard count.
func (l *Link) hello(main net.Conn, mr *bufio.Reader) ([]string, int, error) {
	if err := l.auth(main, mr); err != nil {
		return nil, 0, err
	}
	// The port INFO replication shows on the master (slaveN's port=), as a
	// Redis replica announces it; any answer will do.
	if err := writeCommand(main, "REPLCONF", "listening-port", strconv.Itoa(l.cfg.ListenPort)); err != nil {
		return nil, 0, err
	}
	if _, err := readLine(mr); err != nil {
		return nil, 0, err
	}
	if ip := l.cfg.AnnounceIP; ip != "" { // replica-announce-ip: slaveN's ip=
		if err := writeCommand(main, "REPLCONF", "ip-address", ip); err != nil {
			return nil, 0, err
		}
		if _, err := readLine(mr); err != nil {
			return nil, 0, err
		}
	}
	if err := writeCommand(main, "DFLY", "HELLO"); err != nil {
		return nil, 0, err
	}
	hello, err := readHello(mr)
	if err != nil {
		return nil, 0, err
	}
	shards, err := strconv.Atoi(hello[1])
	if err != nil || shards < 1 || shards > 1024 {
		return nil, 0, fmt.Errorf("DFLY HELLO: bad shard count %q", hello[1])
	}
	return hello, shards, nil
}

// adoptHistory decides where the flows continue from: the offered
// history when the master (replID, of shards shards) takes it over
// (DFLY HANDOVER) or when it is this master's own (a restarted replica's
// saved position: its flows continue when the backlogs still hold the
// next LSNs), the LSNs the link holds when it is the same master,
// otherwise nowhere (a full sync).
func (l *Link) adoptHistory(main net.Conn, mr *bufio.Reader, replID string, shards int) {
	if offer := l.offer; offer != nil {
		l.offer = nil // one try: a refusal means a full sync
		lsns, err := handover(main, mr, offer, shards)
		switch {
		case err == nil:
			l.cfg.Logf("MASTER continues this server's history: partial sync")
		case offer.ReplID == replID && len(offer.LSNs) == shards:
			lsns = offer.LSNs
			l.cfg.Logf("MASTER is the one this server's data follows: its flows continue where they were")
		default:
			l.cfg.Logf("MASTER did not take this server's history as its own (%v): full sync", err)
		}
		if lsns != nil {
			l.mu.Lock()
			l.lsns = make([]atomic.Uint64, shards)
			for i, n := range lsns {
				l.lsns[i].Store(n)
			}
			l.shards = shards
			l.replID = replID
			l.complete.Store(true)
			l.mu.Unlock()
		}
	}
	if replID != l.replID || shards != l.shards {
		// Another master, or another shape of it: LSNs mean nothing, and
		// the data is none of its history: only a full sync will do.
		// Written under mu: Status reads them from other goroutines.
		l.mu.Lock()
		l.lsns = make([]atomic.Uint64, shards)
		l.shards = shards
		l.replID = replID
		l.complete.Store(false)
		l.mu.Unlock()
	}
}

// openFlows opens one connection per master shard and asks each for its
// flow of session, from the first LSN the link lacks. The connections are
// in l.conns, which the caller closes.
func (l *Link) openFlows(session string, shards int) ([]net.Conn, []*bufio.Reader, error) {
	conns := make([]net.Conn, shards)
	readers := make([]*bufio.Reader, shards)
	for i := range conns {
		c, err := net.DialTimeout("tcp", l.addr, 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		if l.stopped() {
			return nil, nil, errors.New("stopped")
		}
		conns[i] = c
		readers[i] = bufio.NewReaderSize(c, 1<<20)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if err := l.auth(c, readers[i]); err != nil {
			return nil, nil, err
		}
		_ = c.SetDeadline(time.Time{})
		// The first LSN this replica lacks: also after a full sync that
		// ended before the shard journaled anything (LSN 0), so a quiet
		// shard resumes with a partial sync too.
		next := l.lsns[i].Load() + 1
		if !l.complete.Load() {
			next = 0 // an interrupted full sync: start again
		}
		args := []string{"DFLY", "FLOW", session, strconv.Itoa(i), strconv.FormatUint(next, 10), "BLOBS"}
		if l.noBlobs.Load() {
			args = args[:5]
		}
		if err := writeCommand(c, args...); err != nil {
			return nil, nil, err
		}
	}
	return conns, readers, nil
}

// flowReplies reads every flow's answer: full when any starts a full sync,
// cutLSN the LSN of each shard's baseline then.
func (l *Link) flowReplies(conns []net.Conn, readers []*bufio.Reader) (full bool, cutLSN []uint64, err error) {
	cutLSN = make([]uint64, len(conns))
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := readLine(readers[i])
		if err != nil {
			return false, nil, fmt.Errorf("flow %d: %w", i, err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "+FULLSYNC"):
			full = true
			// The baseline is the shard at this LSN: entries follow it.
			cutLSN[i], _ = strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "+FULLSYNC")), 10, 64)
		case line == "+CONTINUE":
		case strings.HasPrefix(line, "-ERR unknown subcommand") && !l.noBlobs.Load():
			// A master that predates BLOBS: the next session asks without.
			l.noBlobs.Store(true)
			return false, nil, fmt.Errorf("flow %d: %s (retrying without BLOBS)", i, line)
		default:
			return false, nil, fmt.Errorf("flow %d: %s", i, line)
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return full, cutLSN, nil
}

// runFlows applies every flow on a goroutine of its own until one fails,
// and ends the session.
func (l *Link) runFlows(conns []net.Conn, readers []*bufio.Reader, full bool, cutLSN []uint64, mode string) error {
	shards := len(conns)
	synced := make(chan struct{})
	var pending atomic.Int32
	if full {
		l.cfg.Logf("MASTER <-> REPLICA flows: full sync of %d shards (%s)", shards, mode)
		l.fulls.Add(1)
		l.complete.Store(false)
		l.syncing.Store(true)
		l.state.Store(int32(StateSync))
		l.h.SetLoading(true)
		for i := range l.lsns {
			l.lsns[i].Store(cutLSN[i])
		}
		l.h.FlushForSync() // the master's data comes with the sync
		pending.Store(int32(shards))
	} else {
		l.cfg.Logf("MASTER <-> REPLICA flows: partial sync of %d shards", shards)
		l.partial.Add(1)
		close(synced)
	}
	start := time.Now()
	bar := &txBarrier{waits: map[uint64]*txWait{}, abort: make(chan struct{})}
	errs := make(chan error, shards)
	// seen: when each flow last read anything (the master sends a heartbeat
	// each idle second); one silent for repl-timeout is a lost master.
	seen := make([]atomic.Int64, shards)
	for i := range seen {
		seen[i].Store(start.UnixNano())
	}
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conns[i]
			errs <- l.applyFlow(i, readers[i], &seen[i], bar, !full, func() {
				if pending.Add(-1) == 0 {
					close(synced)
				}
			}, func(lsn uint64) { _, _ = fmt.Fprintf(c, "ACK %d\n", lsn) })
		}()
	}
	go l.tendFlows(conns, seen, synced, full, start, bar.abort)
	err := <-errs
	bar.mu.Lock() // see commitPart: no transaction completes after this
	close(bar.abort)
	bar.mu.Unlock()
	l.closeConns()
	wg.Wait()
	if full {
		l.h.SetLoading(false)
	}
	return err
}

// tendFlows acknowledges every flow's LSN every 100 ms (often enough for
// WAIT), ends the full sync once synced is closed, and closes the flows
// when one was silent for repl-timeout; it returns on abort.
func (l *Link) tendFlows(conns []net.Conn, seen []atomic.Int64, synced chan struct{}, full bool, start time.Time, abort chan struct{}) {
	timeout := l.cfg.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	up := false
	for {
		select {
		case <-synced:
			if !up {
				up = true
				l.complete.Store(true)
				if full {
					l.h.SetLoading(false)
					l.syncing.Store(false)
					l.cfg.Logf("MASTER <-> REPLICA flows: full sync done in %.3f s", time.Since(start).Seconds())
				}
				l.state.Store(int32(StateConnected))
				l.downAt.Store(0)
			}
			synced = nil
		case <-t.C:
			for i, c := range conns {
				_, _ = fmt.Fprintf(c, "ACK %d\n", l.lsns[i].Load())
			}
			for i := range seen {
				if silent := time.Since(time.Unix(0, seen[i].Load())); silent > timeout {
					// Redis's words; the flows fail and the link reconnects.
					l.cfg.Logf("MASTER timeout: no data nor PING received on flow %d for %.0f s", i, silent.Seconds())
					l.closeConns()
					return
				}
			}
		case <-abort:
			return
		}
	}
}

// txBarrier gathers the parts of multi-shard transactions from the flows.
type txBarrier struct {
	mu    sync.Mutex
	waits map[uint64]*txWait
	abort chan struct{}
}

type txWait struct {
	need  int
	parts []journal.Entry
	done  chan struct{}
}

// applyFlow applies one flow's stream until it fails. In stable sync
// (stable, or from the full sync's cut on) a ping from the master asks for
// an acknowledgement (ack) once everything before it is applied: the
// master's WAIT sends one (master.Master.Hurry), and then hears of a write
// within a round trip, where the ACK ticker's 100 ms made every WAIT take
// 50 ms on average (Redis's replicas answer the master's GETACK at once).
// Acknowledging every batch instead cost the master 10% of its stable
// sync throughput in wake-ups (tests/bench/repl.sh).
func (l *Link) applyFlow(sid int, r *bufio.Reader, seen *atomic.Int64, bar *txBarrier, stable bool, fullSyncCut func(), ack func(lsn uint64)) error {
	f := l.newFlowApply(sid)
	defer f.blobs.Close()
	cr := rdb.NewChunkReader(r)
	ackDue := false
	for {
		ch, err := cr.NextItem()
		if err != nil {
			return fmt.Errorf("flow %d: %w", sid, err)
		}
		now := time.Now().UnixNano()
		l.lastIO.Store(now)
		seen.Store(now)
		switch ch.Op {
		case rdb.OpFlowPing: // the master is there; it may want an ACK
			ackDue = stable
		case rdb.OpChunkEnd: // a baseline item: whole records
			if err := f.baseline(ch.Payload); err != nil {
				return err
			}
		case rdb.OpS2Blob, rdb.OpZstdBlob: // baseline records compressed whole
			if err := f.blob(ch.Op, ch.Payload); err != nil {
				return err
			}
		case rdb.OpJournal:
			if err := f.journal(ch.Payload, bar); err != nil {
				return err
			}
		case rdb.OpFullSyncCut:
			if err := f.apply(); err != nil {
				return err
			}
			f.settle()
			fullSyncCut()
			stable = true
			continue
		default:
			return fmt.Errorf("flow %d: unexpected chunk opcode %#x", sid, ch.Op)
		}
		// Apply what arrived once nothing more is buffered, in cr or in r
		// (or a batch is big): batches without delaying anything. cr
		// reads ahead into a buffer of its own, so r alone is empty after
		// nearly every entry: checking only r applied stable sync one
		// command per round trip to the shards (about 1.05 per apply
		// under redis-benchmark's SET load), 4x Redis's replica CPU.
		drained := cr.Buffered() == 0 && r.Buffered() == 0
		if len(f.ops) > 0 && (drained || len(f.ops) >= 512) {
			if err := f.apply(); err != nil {
				return err
			}
		}
		if ackDue && drained && len(f.ops) == 0 && len(f.part) == 0 {
			ackDue = false
			ack(l.lsns[sid].Load())
		}
	}
}

// flowApply is what one flow applies: the baseline's records, through a
// loader whose batches go to the shards asynchronously, and the journal's
// commands, gathered into batches, and transaction parts.
type flowApply struct {
	l     *Link
	sid   int
	a     Applier
	ld    *rdbvalue.Loader
	loads sync.WaitGroup // baseline batches not yet applied
	dec   *rdb.Decoder
	blobs rdb.Blobs
	ops   []Op   // commands not yet applied
	opLSN uint64 // the LSN of the last of them
	part  []journal.Entry
}

func (l *Link) newFlowApply(sid int) *flowApply {
	f := &flowApply{l: l, sid: sid, a: l.h.NewApplier(), dec: rdb.NewDecoder(nil)}
	f.ld = l.h.NewLoader(&f.loads)
	return f
}

// apply applies the gathered commands, after the baseline records
// before them.
func (f *flowApply) apply() error {
	if len(f.ops) == 0 {
		return nil
	}
	f.ld.Flush()
	err := f.a.Apply(f.ops)
	f.ops = f.ops[:0]
	f.l.lsns[f.sid].Store(f.opLSN)
	return err
}

// settle dispatches the loader's batches and waits until the shards
// applied them.
func (f *flowApply) settle() {
	f.ld.Flush()
	f.loads.Wait()
}

// baseline loads an item of whole records. Journal entries before it
// apply first: stream order is apply order (non-PIT sends a key's
// baseline after entries that changed it).
func (f *flowApply) baseline(item []byte) error {
	if err := f.apply(); err != nil {
		return err
	}
	// In place, as a dfly file's items (loadShardFile): no copy into the
	// decoder's buffer and no running CRC-64, which a fragment never
	// checks (it has no trailer).
	f.dec.ResetBytes(item)
	if err := f.dec.DecodeFragment(f.ld); err != nil {
		return fmt.Errorf("flow %d: baseline: %w", f.sid, err)
	}
	return nil
}

// blob loads baseline records compressed whole.
func (f *flowApply) blob(op byte, payload []byte) error {
	if err := f.apply(); err != nil {
		return err
	}
	frag, err := f.blobs.Decompress(op, payload)
	if err != nil {
		return fmt.Errorf("flow %d: baseline: %w", f.sid, err)
	}
	// The loader copies keys and values: frag's buffer is reused.
	f.dec.ResetBytes(frag)
	if err := f.dec.DecodeFragment(f.ld); err != nil {
		return fmt.Errorf("flow %d: baseline: %w", f.sid, err)
	}
	return nil
}

// journal takes a journal entry: a command joins the batch, a
// transaction's part is gathered until its EXEC, then committed.
func (f *flowApply) journal(payload []byte, bar *txBarrier) error {
	e, _, err := journal.Decode(append([]byte(nil), payload...))
	if err != nil {
		return fmt.Errorf("flow %d: %w", f.sid, err)
	}
	switch e.Op {
	case journal.OpCommand:
		f.ops = append(f.ops, Op{DB: e.DB, Args: e.Args})
		f.opLSN = e.LSN
	case journal.OpMulti:
		f.part = append(f.part, e)
	case journal.OpExec:
		if err := f.apply(); err != nil {
			return err
		}
		// This flow's baseline records must be in the shards before the
		// transaction runs, which may happen on another flow's goroutine:
		// dispatch them and wait.
		f.settle()
		if err := f.l.commitPart(bar, f.a, f.ld.Flush, append(f.part, e)); err != nil {
			return err
		}
		f.part = nil
		f.l.lsns[f.sid].Store(e.LSN)
	}
	return nil
}

// commitPart hands one shard's part of a transaction to the barrier; the
// flow bringing the last part applies the whole transaction, in Seq order,
// and the others wait for it, so no later entry of theirs overtakes it.
func (l *Link) commitPart(bar *txBarrier, a Applier, flushLoad func(), part []journal.Entry) error {
	exec := part[len(part)-1]
	bar.mu.Lock()
	select {
	case <-bar.abort: // the session ends: no transaction completes now
		bar.mu.Unlock()
		return errors.New("link closed")
	default:
	}
	w := bar.waits[exec.TxID]
	if w == nil {
		w = &txWait{need: len(exec.Shards), done: make(chan struct{})}
		if w.need > l.shards {
			w.need = 1 // a part naming shards we do not have: apply alone
		}
		bar.waits[exec.TxID] = w
	}
	w.parts = append(w.parts, part...)
	w.need--
	last := w.need <= 0
	if last {
		delete(bar.waits, exec.TxID)
	}
	bar.mu.Unlock()
	if !last {
		select {
		case <-w.done:
			return nil
		case <-bar.abort:
			// Leave only while the transaction is incomplete: once its last
			// part arrived it is being applied, and this flow's LSN must
			// then move past it too, or the next session would wait for a
			// part the applying flow will not send again.
			bar.mu.Lock()
			incomplete := bar.waits[exec.TxID] == w
			bar.mu.Unlock()
			if incomplete {
				return errors.New("link closed")
			}
			<-w.done
			return nil
		}
	}
	defer close(w.done)
	var cmds []journal.Entry
	for _, e := range w.parts {
		if e.Op == journal.OpMulti {
			cmds = append(cmds, e)
		}
	}
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].Seq < cmds[j].Seq })
	if len(cmds) == 0 {
		return nil
	}
	block := make([]Op, len(cmds))
	for i, e := range cmds {
		block[i] = Op{DB: e.DB, Args: e.Args}
	}
	flushLoad()
	return a.Apply([]Op{{Tx: block}})
}
