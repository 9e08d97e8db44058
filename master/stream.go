package master

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// Master side of Redis-protocol replication (docs/DESIGN.md §6).
//
// A replica (a real redis-server, redis-cli --replica, dfly's replica)
// sends SYNC or PSYNC. Its connection leaves the event loop (the socket is
// handed to a goroutine of its own) and gets either a full resync — a
// point-in-time RDB of every shard, taken fork-less like BGSAVE, then the
// command stream from the cut — or, when its replication id and offset are
// still in the backlog, +CONTINUE and the stream from that offset.
//
// The command stream is the shards' journals merged by one feed goroutine
// (replFeed): it keeps each shard's order, emits a transaction as one
// MULTI/EXEC block once every shard's part arrived (later entries of those
// shards wait behind it), SELECTs when the database changes, and appends
// the bytes to the backlog and to every attached replica's output buffer.
// The replication offset is the byte count of that stream, as Redis counts
// it. The snapshot's cut, the start of journaling and a cut marker in each
// shard's feed queue happen in one step that holds every shard, so the
// stream a full sync gets starts exactly after the cut: nothing lost,
// nothing twice.
//
// The master never waits on a replica: a replica's output is a buffer
// bounded by --repl_client_buffer_limit, and a replica past it is
// disconnected (and logged). Shards only append to the feed's queues.

// Master is the master side of replication: the Redis-protocol command
// stream with its backlog and replicas, the dfly flows, WAIT's
// acknowledgements and the history a promoted replica continues.
type Master struct {
	shards []*shard.Shard
	host   Host
	log    Logger

	flows *flowMaster
	// acks tells WAIT that a replica acknowledged something.
	acks ackSignal
	// handover: where this server's own history began, when it was
	// promoted from a dfly master's replica (DFLY HANDOVER); nil when not.
	handover atomic.Pointer[handoverRecord]

	mu           sync.Mutex
	replID       string
	replID2      string
	secondOffset int64 // -1: no previous id
	offset       int64 // master_repl_offset
	// backlog is a ring of the stream's last bytes; backlogLen of them are
	// held, the newest ending at backlogPos.
	backlog    []byte
	backlogLen int
	backlogPos int
	replicas   map[*replicaConn]struct{}
	nextID     int
	// curDB is the database the stream last SELECTed (-1: SELECT next).
	curDB int
	// feedOn: the journals are subscribed and the feed runs.
	feedOn    bool
	feedStop  chan struct{}
	idleSince time.Time // last replica left (backlog TTL)

	syncFull, syncPartialOK, syncPartialErr atomic.Int64
	// attached mirrors len(replicas) > 0 for propagate's fast path.
	attached atomic.Bool

	// The feed's input: per shard, what the journal callback queued.
	qmu    sync.Mutex
	queues [][]feedItem
	wake   chan struct{}
	urgent chan struct{} // drain now (WAIT's barrier), not after flowFlushEvery
	subIDs []int         // journal subscription per shard (shard-owned)

	// cutMu serializes full syncs' cuts with the feed's start and stop.
	cutMu sync.Mutex
}

type feedItem struct {
	e       *journal.Entry
	cut     *cutMark
	barrier *barrier
}

// barrier reports the stream offset once the feed has emitted everything
// journaled on every shard before it (WAIT).
type barrier struct {
	left int
	done chan int64
}

// cutMark is a full sync's cut in every shard's queue; when the feed has
// emitted everything before it on all shards it hands the replica the
// offset its stream starts at. A snapshot's (r nil) only learns the
// offset.
type cutMark struct {
	r    *replicaConn
	done chan int64
}

// New returns the master side of shards, giving each shard its journal.
func New(shards []*shard.Shard, host Host, log Logger) *Master {
	m := &Master{shards: shards, host: host, log: log, replID: newReplID(), secondOffset: -1, curDB: -1,
		replicas: map[*replicaConn]struct{}{}, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		flows: &flowMaster{sessions: map[string]*flowSession{}, flows: map[*flow]struct{}{}}}
	m.queues = make([][]feedItem, len(shards))
	m.subIDs = make([]int, len(shards))
	st := host.Settings()
	cfg := journal.Config{BacklogBytes: int(st.ReplBacklogSize), BacklogAge: st.ReplBacklogTTL}
	for i, sh := range shards {
		c := cfg
		c.Now = sh.Now // appends run on the shard's goroutine
		sh.Journal = journal.New(i, c)
	}
	return m
}

// ID is the current replication id.
func (m *Master) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replID
}

// newReplID is a fresh 40-hex-digit replication id. The replica side
// calls it when a replica is promoted (REPLICAOF NO ONE) to start a new
// history, keeping the old id as replid2 (see shiftReplID).
func newReplID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Promote is for the replica side when this server stops replicating
// (REPLICAOF NO ONE): it continues the history it replicated — replid and
// offset of the master it followed — under a new id, keeping the old one
// as replid2 so that its own former sub-replicas could continue (Redis's
// shiftReplicationId). Call it before accepting writes.
func (m *Master) Promote(oldReplID string, offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replID2, m.secondOffset = oldReplID, offset+1
	m.replID = newReplID()
	m.offset = offset
	m.backlogLen, m.backlogPos = 0, 0
}

// ---- the feed: journals merged into the command stream ----

// push queues an item of shard sid; on the shard goroutine, never blocks.
func (m *Master) push(sid int, it feedItem) {
	m.qmu.Lock()
	m.queues[sid] = append(m.queues[sid], it)
	m.qmu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// startShard subscribes the feed to shard s's journal (in a step holding
// every shard).
func (m *Master) startShard(s *shard.Shard) {
	if m.subIDs[s.ID] != 0 {
		return
	}
	sid := s.ID
	m.subIDs[sid], _ = s.Journal.Subscribe(func(e *journal.Entry) {
		c := e.Clone() // the feed keeps it past the call
		m.push(sid, feedItem{e: &c})
	})
	s.Journal.Start()
}

func (m *Master) stopShard(s *shard.Shard) {
	if m.subIDs[s.ID] == 0 {
		return
	}
	s.Journal.Unsubscribe(m.subIDs[s.ID])
	m.subIDs[s.ID] = 0
	s.Journal.Stop()
}

// feedState is the feed goroutine's own view: items taken from the
// queues, and the transactions whose parts are arriving.
type feedState struct {
	local [][]feedItem
	txs   map[uint64]*feedTx
	// waiting[sid]: the shard's head is a complete part of a transaction
	// that waits for other shards.
	waiting []bool
	buf     []byte
}

type feedTx struct {
	shards []uint16
	parts  map[int]int // shard → number of items of its part at its head
}

func (m *Master) feed(stop chan struct{}) {
	st := &feedState{local: make([][]feedItem, len(m.queues)), txs: map[uint64]*feedTx{},
		waiting: make([]bool, len(m.queues))}
	ping := time.NewTicker(time.Second)
	defer ping.Stop()
	ticks := 0
	var drained time.Time
	gather := time.NewTimer(flowFlushEvery)
	defer gather.Stop()
	for {
		select {
		case <-m.wake:
			// Entries that arrive within flowFlushEvery of the last
			// drain go out together: one wake-up and one socket write
			// per replica for them, not one per write command.
			gatherFor(gather, drained, m.urgent)
			drained = time.Now()
		case <-ping.C:
			ticks++
			if ticks%10 == 0 && m.replicaCount() > 0 {
				m.emit(resp.AppendCommand(nil, "PING"))
			}
			m.expireBacklog()
		case <-stop:
			return
		}
		m.qmu.Lock()
		for i := range m.queues {
			st.local[i] = append(st.local[i], m.queues[i]...)
			clear(m.queues[i])
			m.queues[i] = m.queues[i][:0]
		}
		m.qmu.Unlock()
		m.drain(st)
	}
}

// drain emits everything the shards' heads allow.
func (m *Master) drain(st *feedState) {
	for progress := true; progress; {
		progress = false
		for sid := range st.local {
			for !st.waiting[sid] && len(st.local[sid]) > 0 {
				it := st.local[sid][0]
				if it.cut != nil {
					break
				}
				if b := it.barrier; b != nil {
					st.local[sid] = st.local[sid][1:]
					if b.left--; b.left == 0 {
						m.mu.Lock()
						b.done <- m.offset
						m.mu.Unlock()
					}
					progress = true
					continue
				}
				e := it.e
				if e.Op == journal.OpCommand {
					st.buf = m.appendSelect(st.buf[:0], e.DB)
					st.buf = resp.AppendArgs(st.buf, e.Args)
					m.emit(st.buf)
					st.local[sid] = st.local[sid][1:]
					progress = true
					continue
				}
				// A transaction's part: wait for its OpExec.
				end := -1
				for k, x := range st.local[sid] {
					if x.e != nil && x.e.Op == journal.OpExec {
						end = k
						break
					}
				}
				if end < 0 {
					break
				}
				exec := st.local[sid][end].e
				t := st.txs[exec.TxID]
				if t == nil {
					t = &feedTx{shards: exec.Shards, parts: map[int]int{}}
					st.txs[exec.TxID] = t
				}
				t.parts[sid] = end + 1
				st.waiting[sid] = true
				if len(t.parts) == len(t.shards) {
					m.emitTx(st, t)
					delete(st.txs, exec.TxID)
				}
				progress = true
			}
		}
		if m.cutReady(st) {
			progress = true
		}
	}
}

// emitTx emits a transaction whose parts are all at their shards' heads:
// its commands in Seq order, in MULTI/EXEC when there are several.
func (m *Master) emitTx(st *feedState, t *feedTx) {
	var cmds []*journal.Entry
	for sid, n := range t.parts {
		for _, it := range st.local[sid][:n] {
			if it.e.Op == journal.OpMulti {
				cmds = append(cmds, it.e)
			}
		}
		clear(st.local[sid][:n])
		st.local[sid] = st.local[sid][n:]
		st.waiting[sid] = false
	}
	if len(cmds) == 0 {
		return
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Seq < cmds[j].Seq })
	b := st.buf[:0]
	if len(cmds) > 1 {
		b = m.appendSelect(b, cmds[0].DB)
		b = resp.AppendCommand(b, "MULTI")
	}
	for _, e := range cmds {
		b = m.appendSelect(b, e.DB)
		b = resp.AppendArgs(b, e.Args)
	}
	if len(cmds) > 1 {
		b = resp.AppendCommand(b, "EXEC")
	}
	st.buf = b
	m.emit(b)
}

// cutReady handles a full sync's cut once it heads every shard's queue:
// the replica attaches at the current offset.
func (m *Master) cutReady(st *feedState) bool {
	var c *cutMark
	for sid := range st.local {
		if len(st.local[sid]) == 0 || st.local[sid][0].cut == nil {
			return false
		}
		if c == nil {
			c = st.local[sid][0].cut
		} else if st.local[sid][0].cut != c {
			return false
		}
	}
	if c == nil {
		return false
	}
	for sid := range st.local {
		st.local[sid][0] = feedItem{}
		st.local[sid] = st.local[sid][1:]
	}
	m.mu.Lock()
	if c.r != nil { // nil: a snapshot's cut (PositionCut), no replica
		m.curDB = -1 // the replica's stream starts with a SELECT
		c.r.attachLocked(nil)
	}
	off := m.offset
	m.mu.Unlock()
	c.done <- off
	return true
}

// appendSelect emits SELECT when the stream is not in db.
func (m *Master) appendSelect(b []byte, db int) []byte {
	if m.curDB == db {
		return b
	}
	m.curDB = db
	return resp.AppendArgs(b, [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, int64(db), 10)})
}

// emit appends stream bytes: offset, backlog, every attached replica.
func (m *Master) emit(b []byte) {
	m.mu.Lock()
	m.emitLocked(b)
	m.mu.Unlock()
}

func (m *Master) emitLocked(b []byte) {
	m.offset += int64(len(b))
	m.appendBacklog(b)
	for r := range m.replicas {
		r.write(b)
	}
}

func (m *Master) appendBacklog(b []byte) {
	n := len(m.backlog)
	if n == 0 {
		return
	}
	if len(b) >= n {
		copy(m.backlog, b[len(b)-n:])
		m.backlogPos, m.backlogLen = 0, n
		return
	}
	k := copy(m.backlog[m.backlogPos:], b)
	copy(m.backlog, b[k:])
	m.backlogPos = (m.backlogPos + len(b)) % n
	m.backlogLen = min(n, m.backlogLen+len(b))
}

// backlogFrom copies the backlog's bytes from 1-based stream offset off to
// the end; ok=false when the backlog does not hold off.
func (m *Master) backlogFrom(off int64) ([]byte, bool) {
	first := m.offset - int64(m.backlogLen) + 1
	if len(m.backlog) == 0 || off < first || off > m.offset+1 {
		return nil, false
	}
	n := int(m.offset + 1 - off)
	out := make([]byte, n)
	start := (m.backlogPos - n + len(m.backlog)) % len(m.backlog)
	k := copy(out, m.backlog[start:min(len(m.backlog), start+n)])
	copy(out[k:], m.backlog[:n-k])
	return out, true
}

func (m *Master) replicaCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replicas)
}

// expireBacklog frees the backlog and stops journaling once no replica
// has been attached for --repl_backlog_ttl (Redis's repl-backlog-ttl).
func (m *Master) expireBacklog() {
	m.mu.Lock()
	idle := len(m.replicas) == 0 && m.feedOn && !m.idleSince.IsZero() &&
		time.Since(m.idleSince) >= m.host.Settings().ReplBacklogTTL
	m.mu.Unlock()
	if idle {
		go m.stopFeed()
	}
}

// ensureFeedLocked allocates the backlog and starts the feed goroutine
// (m.mu held); the shards' journals are subscribed in the cut step that
// follows (fullSync's replicationCut).
func (m *Master) ensureFeedLocked() {
	if m.feedOn {
		return
	}
	m.feedOn = true
	m.backlog = make([]byte, max(1<<20, int(m.host.Settings().ReplBacklogSize)*len(m.shards)))
	m.backlogLen, m.backlogPos = 0, 0
	m.feedStop = make(chan struct{})
	go m.feed(m.feedStop)
}

// StartFeed starts the feed (journals into the command stream and its
// backlog) with no replica yet: a promoted replica's, so that replicas of
// its old master can continue here (replicaNoOne). Its one step over every
// shard runs in t, a transaction nested in the caller's that holds them
// (REPLICAOF NO ONE inside EXEC), or in one of its own when t is nil.
func (m *Master) StartFeed(t *tx.Tx) {
	m.cutMu.Lock()
	defer m.cutMu.Unlock()
	m.mu.Lock()
	on := m.feedOn
	m.ensureFeedLocked()
	m.mu.Unlock()
	if on {
		return
	}
	if t == nil {
		t = tx.New(m.shards)
	}
	t.AddAllShards()
	t.Lock()
	t.Finish(func(s *shard.Shard) { m.startShard(s) })
}

func (m *Master) stopFeed() {
	m.cutMu.Lock()
	defer m.cutMu.Unlock()
	m.mu.Lock()
	if !m.feedOn || len(m.replicas) > 0 {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	t := tx.New(m.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(s *shard.Shard) { m.stopShard(s) })
	m.mu.Lock()
	m.feedOn = false
	close(m.feedStop)
	m.backlog, m.backlogLen, m.backlogPos = nil, 0, 0
	m.mu.Unlock()
	m.newHistory()
	m.qmu.Lock()
	for i := range m.queues {
		m.queues[i] = nil
	}
	m.qmu.Unlock()
	m.log.Noticef("Replication backlog freed after %v without replicas", m.host.Settings().ReplBacklogTTL)
}

// newHistory starts a new replication id once the backlogs are gone: no
// replica can continue the old history here.
func (m *Master) newHistory() {
	m.mu.Lock()
	m.replID2, m.secondOffset = m.replID, m.offset+1
	m.replID = newReplID()
	m.mu.Unlock()
}

// Propagate sends a command that belongs to no shard (PUBLISH) to the
// replicas as it is.
func (m *Master) Propagate(args [][]byte) {
	if !m.attached.Load() {
		return
	}
	b := resp.AppendArgs(nil, args)
	m.mu.Lock()
	m.emitLocked(b)
	m.mu.Unlock()
}

// ---- replicas ----

// ReplConf is what REPLCONF told on a connection before SYNC/PSYNC.
type ReplConf struct {
	Port    int
	IP      string
	CapaEOF bool
	// REPLCONF rdb-only 1 (redis-cli --rdb, --functions-rdb): the client
	// wants the RDB only, not to be a replica. rdb-filter-only: no keys in
	// it (NoData), and no libraries unless it names "functions".
	RDBOnly, NoData, NoFunctions bool
}

type replicaConn struct {
	m    *Master
	id   int
	conn net.Conn
	ip   string
	port int
	eof  bool

	state atomic.Value // string: wait_bgsave, send_bulk, online
	// start is the offset the replica's stream started at.
	ack     atomic.Int64
	ackTime atomic.Int64 // unix seconds of the last ACK

	// out is the stream not yet written, bounded by the replica class of
	// client-output-buffer-limit (over: Host.ReplicaOutputLimit).
	omu      sync.Mutex
	out      []byte
	over     func(pending int64) bool
	attached bool
	dead     bool
	notify   chan struct{}
	// acked is closed at the first REPLCONF ACK. After an RDB in the EOF
	// form the stream waits for it: Redis finds the end mark only at the
	// end of what it read, so nothing may follow the mark until the
	// replica has loaded (Redis's repl_put_online_on_ack).
	acked     chan struct{}
	ackedOnce sync.Once
	waitAck   bool
}

// attachLocked makes r receive the stream from now on, after pre (the
// backlog bytes of a partial resync); m.mu is held.
func (r *replicaConn) attachLocked(pre []byte) {
	m := r.m
	r.omu.Lock()
	r.out = append(r.out, pre...)
	r.attached = true
	r.omu.Unlock()
	m.replicas[r] = struct{}{}
	m.attached.Store(true)
	m.idleSince = time.Time{}
}

// write queues stream bytes; past the limit the replica is dropped.
func (r *replicaConn) write(b []byte) {
	r.omu.Lock()
	if r.dead {
		r.omu.Unlock()
		return
	}
	if r.over(int64(len(r.out) + len(b))) {
		r.dead = true
		r.out = nil
		r.omu.Unlock()
		r.m.log.Warnf("Client id=%d addr=%s (replica) scheduled to be closed ASAP for overcoming of output buffer limits.", r.id, r.conn.RemoteAddr())
		go r.close()
		return
	}
	r.out = append(r.out, b...)
	r.omu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *replicaConn) close() {
	m := r.m
	m.mu.Lock()
	delete(m.replicas, r)
	m.attached.Store(len(m.replicas) > 0)
	if len(m.replicas) == 0 && m.idleSince.IsZero() {
		m.idleSince = time.Now()
	}
	m.mu.Unlock()
	r.omu.Lock()
	r.dead = true
	r.out = nil
	r.omu.Unlock()
	_ = r.conn.Close()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// PSync is a SYNC or PSYNC as received.
type PSync struct {
	Sync   bool // SYNC: no replication id or offset
	ReplID string
	Offset int64
	Conf   ReplConf
}

// ServeReplica serves a replica's SYNC or PSYNC on nc, the connection
// taken off its event loop; it runs on the replica's own goroutine for the
// connection's lifetime.
func (m *Master) ServeReplica(nc net.Conn, req PSync) {
	if req.Conf.RDBOnly {
		m.serveRDBOnly(nc, req)
		return
	}
	r := &replicaConn{m: m, conn: nc, port: req.Conf.Port, ip: req.Conf.IP, eof: req.Conf.CapaEOF,
		notify: make(chan struct{}, 1), acked: make(chan struct{}), over: m.host.ReplicaOutputLimit()}
	if host, _, err := net.SplitHostPort(nc.RemoteAddr().String()); err == nil && r.ip == "" {
		r.ip = host
	}
	r.ack.Store(-1)
	m.mu.Lock()
	m.nextID++
	r.id = m.nextID
	m.mu.Unlock()
	defer r.close()
	if !req.Sync && m.tryPartial(r, req) {
		m.log.Noticef("Partial resynchronization request from %s:%d accepted, continuing from offset %d.", r.ip, r.port, req.Offset)
	} else if !m.fullSync(r, req) {
		return
	}
	go r.readAcks()
	r.stream()
}

// serveRDBOnly answers a client that asked for the RDB only (REPLCONF
// rdb-only 1): a snapshot — of the libraries alone, or of nothing, when
// it filters the keys out — after +FULLRESYNC for a PSYNC, then the
// connection closes. It is no replica: no journal feed starts, INFO does
// not list it.
func (m *Master) serveRDBOnly(nc net.Conn, req PSync) {
	defer nc.Close()
	var outs []chan snapshot.Chunk
	var free chan []byte
	if req.Conf.NoData {
		outs = m.filteredSnapshot(!req.Conf.NoFunctions)
	} else {
		defer reclaim.HoldCollections()() // while the RDB goes out
		outs, free = m.replicationCut(func(*shard.Shard) {})
	}
	addr := nc.RemoteAddr().String()
	m.log.Noticef("Client %s asks for an RDB only (keys: %v, functions: %v)", addr, !req.Conf.NoData, !req.Conf.NoFunctions)
	if !req.Sync {
		m.mu.Lock()
		id := m.replID
		m.mu.Unlock()
		line := "+FULLRESYNC " + id + " " + strconv.FormatInt(m.flushedOffset(), 10) + "\r\n"
		if _, err := nc.Write([]byte(line)); err != nil {
			persist.DrainChunks(outs, free, len(m.shards))
			return
		}
	}
	if err := m.sendRDB(nc, req.Conf.CapaEOF && !req.Sync, outs, free); err != nil {
		m.log.Warnf("RDB to %s failed: %v", addr, err)
	}
}

// tryPartial answers +CONTINUE when the backlog holds the requested
// offset of this history (or of the previous one, up to its end).
func (m *Master) tryPartial(r *replicaConn, req PSync) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	known := m.feedOn && (req.ReplID == m.replID ||
		(req.ReplID == m.replID2 && req.Offset <= m.secondOffset))
	if !known {
		if req.ReplID != "?" {
			m.syncPartialErr.Add(1)
		}
		return false
	}
	pre, ok := m.backlogFrom(req.Offset)
	if !ok {
		m.syncPartialErr.Add(1)
		return false
	}
	// +CONTINUE goes first: the stream goroutine starts after this returns.
	r.out = append(r.out, "+CONTINUE "+m.replID+"\r\n"...)
	r.state.Store("online")
	r.ack.Store(req.Offset - 1)
	r.attachLocked(pre)
	m.syncPartialOK.Add(1)
	return true
}

// fullSync takes the cut, answers +FULLRESYNC and sends the RDB; the
// stream from the cut waits in the replica's buffer meanwhile.
func (m *Master) fullSync(r *replicaConn, req PSync) bool {
	r.state.Store("wait_bgsave")
	m.syncFull.Add(1)
	cut := &cutMark{r: r, done: make(chan int64, 1)}
	// No collection starts while the RDB goes out (see HoldCollections).
	defer reclaim.HoldCollections()()
	m.cutMu.Lock()
	m.mu.Lock()
	m.ensureFeedLocked()
	m.mu.Unlock()
	out, free := m.replicationCut(func(s *shard.Shard) {
		m.startShard(s)
		m.push(s.ID, feedItem{cut: cut})
	})
	m.cutMu.Unlock()
	offset := <-cut.done
	m.mu.Lock()
	id := m.replID
	m.mu.Unlock()
	m.log.Noticef("Replica %s:%d asks for synchronization; starting point-in-time sync at offset %d", r.ip, r.port, offset)
	if !req.Sync {
		if _, err := r.conn.Write([]byte("+FULLRESYNC " + id + " " + strconv.FormatInt(offset, 10) + "\r\n")); err != nil {
			persist.DrainChunks(out, free, len(m.shards))
			return false
		}
	}
	r.state.Store("send_bulk")
	start := time.Now()
	if err := m.sendRDB(r.conn, r.eof && !req.Sync, out, free); err != nil {
		m.log.Warnf("Full sync to replica %s:%d failed: %v", r.ip, r.port, err)
		return false
	}
	m.log.Noticef("Synchronization with replica %s:%d succeeded (RDB sent in %.3f s)", r.ip, r.port, time.Since(start).Seconds())
	r.ack.Store(offset)
	if r.eof && !req.Sync {
		r.waitAck = true
	} else {
		r.state.Store("online")
	}
	return true
}

// stream writes the replica's buffered stream until it is closed.
func (r *replicaConn) stream() {
	if r.waitAck {
		for waiting := true; waiting; {
			select {
			case <-r.acked:
				waiting = false
			case <-r.notify:
				r.omu.Lock()
				dead := r.dead
				r.omu.Unlock()
				if dead {
					return
				}
			}
		}
		r.state.Store("online")
	}
	var buf []byte
	for {
		r.omu.Lock()
		if r.dead {
			r.omu.Unlock()
			return
		}
		buf, r.out = r.out, buf[:0]
		r.omu.Unlock()
		if len(buf) == 0 {
			<-r.notify
			continue
		}
		if _, err := r.conn.Write(buf); err != nil {
			return
		}
		if cap(buf) > 4<<20 {
			buf = nil
		}
	}
}

// readAcks reads what the replica sends: REPLCONF ACK <offset> (others
// are ignored). An error ends the replica.
func (r *replicaConn) readAcks() {
	defer r.close()
	p := resp.NewParser(1<<20, 1<<20)
	p.SetAuthenticated(true)
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for {
		n, err := r.conn.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		for {
			args, used, ok, perr := p.Next(buf)
			if perr != nil {
				return
			}
			if !ok {
				break
			}
			if len(args) >= 3 && strings.EqualFold(string(args[0]), "replconf") && strings.EqualFold(string(args[1]), "ack") {
				if off, err := strconv.ParseInt(string(args[2]), 10, 64); err == nil {
					r.ack.Store(off)
					r.m.acks.fire()
					r.ackTime.Store(time.Now().Unix())
					r.ackedOnce.Do(func() { close(r.acked) })
				}
			}
			buf = buf[used:]
		}
		buf = append(tmp[:0:0], buf...)
	}
}

// ackSignal tells WAIT that a replica acknowledged something: wait's
// channel is closed by the next fire.
type ackSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (a *ackSignal) wait() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = make(chan struct{})
	}
	return a.ch
}

func (a *ackSignal) fire() {
	a.mu.Lock()
	if a.ch != nil {
		close(a.ch)
		a.ch = nil
	}
	a.mu.Unlock()
}

// flushedOffset is the stream offset that covers every write applied
// before the call: a barrier passes through each shard's journal queue.
func (m *Master) flushedOffset() int64 {
	m.cutMu.Lock()
	m.mu.Lock()
	on := m.feedOn
	off := m.offset
	m.mu.Unlock()
	if !on {
		m.cutMu.Unlock()
		return off
	}
	b := &barrier{left: len(m.queues), done: make(chan int64, 1)}
	m.onEachShard(func(s *shard.Shard) { m.push(s.ID, feedItem{barrier: b}) })
	m.cutMu.Unlock()
	select { // the feed drains now, not after flowFlushEvery
	case m.urgent <- struct{}{}:
	default:
	}
	select {
	case off := <-b.done:
		return off
	case <-time.After(time.Second): // the feed stopped meanwhile
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.offset
	}
}

// acked counts the online replicas that acknowledged offset.
func (m *Master) acked(offset int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for r := range m.replicas {
		if r.ack.Load() >= offset {
			n++
		}
	}
	return n
}

// ---- INFO and ROLE ----

func (m *Master) sortedReplicas() []*replicaConn {
	rs := make([]*replicaConn, 0, len(m.replicas))
	for r := range m.replicas {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].id < rs[j].id })
	return rs
}

// GoodReplicas counts the replicas online whose last acknowledgement is
// at most maxLag seconds old: Redis's good replicas, which
// min-replicas-to-write asks for.
func (m *Master) GoodReplicas(maxLag int64) int {
	now := time.Now().Unix()
	n := 0
	for _, r := range m.flowReplicas() {
		if r.online && r.lag(now) <= maxLag {
			n++
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.sortedReplicas() {
		st, _ := r.state.Load().(string)
		if t := r.ackTime.Load(); st == "online" && t > 0 && now-t <= maxLag {
			n++
		}
	}
	return n
}

// Info writes INFO replication's fields for a master; failover is
// master_failover_state (read before m.mu: FAILOVER takes them the other
// way).
func (m *Master) Info(field func(k string, v any), failover string) {
	flows := m.flowReplicas() // dfly replicas, listed after Redis-protocol ones
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.sortedReplicas()
	field("role", "master")
	field("connected_slaves", len(rs)+len(flows))
	now := time.Now().Unix()
	for i, r := range rs {
		st, _ := r.state.Load().(string)
		off := max(r.ack.Load(), 0)
		lag := int64(0)
		if t := r.ackTime.Load(); t > 0 {
			lag = now - t
		}
		field("slave"+strconv.Itoa(i), "ip="+r.ip+",port="+strconv.Itoa(r.port)+",state="+st+
			",offset="+strconv.FormatInt(off, 10)+",lag="+strconv.FormatInt(lag, 10))
	}
	for i, r := range flows {
		field("slave"+strconv.Itoa(len(rs)+i), r.info(now))
	}
	m.flowInfo(field)
	field("master_failover_state", failover)
	field("master_replid", m.replID)
	replID2 := m.replID2
	if replID2 == "" {
		replID2 = strings.Repeat("0", 40)
	}
	field("master_replid2", replID2)
	field("master_repl_offset", m.offset)
	field("second_repl_offset", m.secondOffset)
	active := 0
	if m.feedOn {
		active = 1
	}
	field("repl_backlog_active", active)
	size := len(m.backlog)
	if size == 0 {
		size = max(1<<20, int(m.host.Settings().ReplBacklogSize)*len(m.shards))
	}
	field("repl_backlog_size", size)
	first := int64(0)
	if m.feedOn {
		first = m.offset - int64(m.backlogLen) + 1
	}
	field("repl_backlog_first_byte_offset", first)
	field("repl_backlog_histlen", m.backlogLen)
}

// SyncStats are INFO stats' sync_full, sync_partial_ok and
// sync_partial_err.
func (m *Master) SyncStats(field func(k string, v any)) {
	field("sync_full", m.syncFull.Load())
	field("sync_partial_ok", m.syncPartialOK.Load())
	field("sync_partial_err", m.syncPartialErr.Load())
}

// Role answers ROLE on a master: "master", offset, replicas.
func (m *Master) Role(w *resp.Writer) {
	flows := m.flowReplicas()
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.sortedReplicas()
	w.Array(3)
	w.BulkString("master")
	w.Int(m.offset)
	w.Array(len(rs) + len(flows))
	for _, r := range rs {
		w.Array(3)
		w.BulkString(r.ip)
		w.BulkString(strconv.Itoa(r.port))
		w.BulkString(strconv.FormatInt(max(r.ack.Load(), 0), 10))
	}
	for _, r := range flows {
		w.Array(3)
		w.BulkString(r.ip)
		w.BulkString(strconv.Itoa(r.port))
		w.BulkString(strconv.FormatUint(r.acked, 10))
	}
}

// ChangeID gives the server a new replication id and forgets the second
// one (DEBUG CHANGE-REPL-ID, Redis's changeReplicationId and
// clearReplicationId2).
func (m *Master) ChangeID() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replID = newReplID()
	m.replID2, m.secondOffset = "", -1
}
