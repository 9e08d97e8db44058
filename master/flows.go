package master

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// dfly-native replication, master side (docs/DESIGN.md §6): one connection (flow)
// per master shard. A replica asks DFLY HELLO for the shard count and a
// session, opens one connection per shard with DFLY FLOW, and once every
// flow of the session is attached the master either continues each from
// the LSN the replica has (partial sync, when every shard's backlog still
// holds it) or takes one global cut and starts every shard's snapshot
// (full sync). A flow's stream is tagged chunks (rdb.AppendChunk): the
// shard's baseline (PIT, or non-PIT by --point_in_time_snapshot=false)
// interleaved with its journal entries (rdb.OpJournal, journal.Encode)
// under the snapshot's ordering invariant, then rdb.OpFullSyncCut, then the
// journal as it grows (stable sync). The replica writes "ACK <lsn>" lines
// back on the same socket.
//
// The shard never waits for a flow: journal entries are queued, bounded by
// --repl_client_buffer_limit; a flow past it is dropped (the replica
// reconnects and syncs again).
//
// Wire, after the DFLY FLOW command (DFLY FLOW <session> <shard> <next>
// [BLOBS], next being the first LSN the replica lacks — its last applied
// LSN + 1 — or 0 for a full sync; a replica whose full sync ended at LSN
// 0, before the shard journaled anything, asks for 1):
//
//	"+FULLSYNC <lsn>\r\n"  chunks ... OpFullSyncCut, journal chunks ...
//	"+CONTINUE\r\n"        journal chunks from next on
//	"-ERR ...\r\n"         refused
//
// Between HELLO and the flows a replica whose data is at a place in some
// dfly master's history (a replica switching masters, the old master after
// a FAILOVER) may offer it: DFLY HANDOVER <replid> <lsn>... (the last LSN
// it holds of each of that master's shards). A master that was promoted
// from a replica holding exactly that data (replicaState.handover) answers
// with its shards' LSNs at the promotion, and the flows continue from
// there; anything else is refused and the replica syncs in full.
//
// In stable sync an idle flow sends a heartbeat (rdb.OpFlowPing) every
// second; the replica gives up a flow silent for repl-timeout, and the
// master one whose ACKs stopped for as long.
//
// BLOBS is the replica's word that it decodes blob chunks (OpS2Blob,
// OpZstdBlob): the baseline then goes out as main-stream fragments
// compressed whole. A replica that does not say it (a build before blob
// chunks) gets its baseline as before, strings LZF value by value, so a
// master can be upgraded before its replicas.

type flowSession struct {
	id    string
	mode  snapshot.Mode
	flows []*flow
	n     int
	ready chan struct{}
	// ip and port are the replica's, as INFO replication shows them: the
	// address of its DFLY HELLO and the port it announced (REPLCONF
	// listening-port, or ip-address).
	ip   string
	port int
	// dropped: the session will never start (the replica said HELLO
	// again, or a minute passed); guarded by flowMaster.mu.
	dropped bool
}

type flow struct {
	m    *Master
	sess *flowSession
	sid  int
	conn net.Conn
	lsn  uint64 // the first LSN the replica lacks (0: it needs a full sync)
	// blobs: the replica decodes blob chunks (DFLY FLOW ... BLOBS).
	blobs bool

	slice *snapshot.Slice
	jbuf  []byte // onEntry's encoding of an entry for the Slice (shard goroutine)
	out   chan snapshot.Chunk
	free  chan []byte // chunk buffers back to the Slice (snapshot.Options.Free)
	subID int

	mu     sync.Mutex
	queue  []byte // journal frames after the snapshot, not yet written
	limit  int64  // the queue's bound (--repl_client_buffer_limit)
	wake   chan struct{}
	urgent chan struct{} // write now, not after flowFlushEvery (WAIT)
	dead   atomic.Bool
	acked  atomic.Uint64
	ackAt  atomic.Int64  // unix seconds of the last ACK (the replica ACKs every 100 ms)
	sent   atomic.Uint64 // LSN of the last entry queued
	fullAt uint64        // LSN at the cut (full sync)
	synced atomic.Bool   // the baseline is sent (or there was none)
	bytes  atomic.Int64  // stream bytes written (full-sync progress)
	// buffers: what the baseline's chunks and buffers take between the
	// Slice and the socket (Buffered), as serve last saw them.
	buffers atomic.Int64
}

type flowMaster struct {
	fullSyncs, partialSyncs atomic.Int64

	mu       sync.Mutex
	sessions map[string]*flowSession
	flows    map[*flow]struct{}
	next     int
	// kept: the shards' journals keep a backlog for dfly replicas (a flow
	// session started them, or a promotion did: startHandover), since
	// idleSince with no flow attached (zero while one is). After
	// --repl_backlog_ttl of that they stop (expireJournals), as Redis
	// frees its backlog: a master that once had a replica no longer pays
	// the journal on every write.
	kept      bool
	idleSince time.Time
	expiry    sync.Once
}

// Hello answers DFLY HELLO from a replica at ip, announcing port: a new
// flow session, forgotten unless completed within a minute. It returns
// the replication id, the shard count, the session and the baseline's
// mode ("pit" or "nonpit").
func (m *Master) Hello(ip string, port int) (replID string, shards int, session, mode string) {
	fm := m.flows
	sm := snapshot.PIT
	if !m.host.Settings().PointInTime {
		sm = snapshot.NonPIT
	}
	fm.mu.Lock()
	fm.next++
	sess := &flowSession{id: strconv.Itoa(fm.next), mode: sm, flows: make([]*flow, len(m.shards)), ready: make(chan struct{}),
		ip: ip, port: port}
	// A replica that says HELLO again gave up its unfinished sessions (a
	// link cut while it opened their flows): their attached flows, which
	// nothing reads until every flow is there, would stay listed (INFO,
	// ROLE) and hold their sockets.
	var gone []*flowSession
	for id, old := range fm.sessions {
		if old.ip == ip && old.port == port {
			delete(fm.sessions, id)
			gone = append(gone, old)
		}
	}
	fm.sessions[sess.id] = sess
	fm.mu.Unlock()
	for _, old := range gone {
		fm.dropUnfinished(old)
	}
	// A session nobody completes is forgotten, with the flows it has.
	time.AfterFunc(time.Minute, func() {
		fm.mu.Lock()
		_, pending := fm.sessions[sess.id]
		delete(fm.sessions, sess.id)
		fm.mu.Unlock()
		if pending {
			fm.dropUnfinished(sess)
		}
	})
	return m.ID(), len(m.shards), sess.id, map[snapshot.Mode]string{snapshot.PIT: "pit", snapshot.NonPIT: "nonpit"}[sm]
}

// Flow answers DFLY FLOW <session> <shard> <next> [BLOBS]: attach, given
// the connection taken off its event loop, serves the flow of the shard
// from LSN next (0: a full sync); blobs: the replica decodes blob chunks.
// The error is the reply when the flow is refused.
func (m *Master) Flow(session, shard, next string, blobs bool) (attach func(net.Conn), err error) {
	fm := m.flows
	fm.mu.Lock()
	sess := fm.sessions[session]
	fm.mu.Unlock()
	sid, err1 := strconv.Atoi(shard)
	lsn, err2 := strconv.ParseUint(next, 10, 64)
	switch {
	case sess == nil:
		return nil, errors.New("ERR unknown replication session")
	case err1 != nil || sid < 0 || sid >= len(m.shards) || err2 != nil:
		return nil, errors.New("ERR bad flow arguments")
	}
	f := &flow{m: m, sess: sess, sid: sid, lsn: lsn, blobs: blobs, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		limit: m.flowBufferLimit()}
	f.ackAt.Store(time.Now().Unix()) // a replica silent from the start lags from here
	return func(nc net.Conn) { f.conn = nc; f.attach() }, nil
}

// dropUnfinished closes the flows attached to sess, a session that will
// never start (no longer in fm.sessions).
func (fm *flowMaster) dropUnfinished(sess *flowSession) {
	fm.mu.Lock()
	var attached []*flow
	for _, f := range sess.flows {
		if f != nil {
			attached = append(attached, f)
		}
	}
	sess.dropped = true
	fm.mu.Unlock()
	for _, f := range attached {
		f.close()
	}
}

// attach adds f to its session; the last flow to attach starts them all.
func (f *flow) attach() {
	fm := f.m.flows
	fm.mu.Lock()
	sess := f.sess
	if sess.dropped {
		fm.mu.Unlock()
		_, _ = f.conn.Write([]byte("-ERR unknown replication session\r\n"))
		f.conn.Close()
		return
	}
	if sess.flows[f.sid] != nil {
		fm.mu.Unlock()
		_, _ = f.conn.Write([]byte("-ERR flow already attached\r\n"))
		f.conn.Close()
		return
	}
	sess.flows[f.sid] = f
	sess.n++
	fm.idleSince = time.Time{}
	all := sess.n == len(sess.flows)
	if all {
		delete(fm.sessions, sess.id)
	}
	fm.flows[f] = struct{}{}
	fm.mu.Unlock()
	if all {
		f.m.startSession(sess)
	}
}

// startSession continues every flow from its LSN when every shard's
// backlog holds it, else takes one cut on every shard and starts their
// snapshots: in one step holding every shard, so no multi-shard
// transaction is half on either side of it and no entry is lost or sent
// twice (each shard subscribes in the same step that reads its backlog or
// takes its cut).
func (m *Master) startSession(sess *flowSession) {
	// With the Redis feed's start and stop and expireJournals: the
	// journals' state is decided in one order.
	m.cutMu.Lock()
	defer m.cutMu.Unlock()
	m.keepJournals(false)
	t := tx.New(m.shards)
	t.AddAllShards()
	t.Lock()
	partial := true
	var mu sync.Mutex
	t.RunAll(func(sh *shard.Shard) {
		f := sess.flows[sh.ID]
		ok := f.lsn > 0 && sh.Journal.ReadFrom(f.lsn, func(*journal.Entry) {})
		mu.Lock()
		partial = partial && ok
		mu.Unlock()
	})
	chunk := m.host.Settings().SerializationMaxChunk
	t.Finish(func(sh *shard.Shard) {
		f := sess.flows[sh.ID]
		sh.Journal.Start()
		if partial {
			sh.Journal.ReadFrom(f.lsn, f.onEntry)
		} else {
			f.fullAt = sh.Journal.LSN()
			f.out = make(chan snapshot.Chunk, 16)
			f.free = make(chan []byte, 32)
			m.host.FunctionsAtCut(sh, f.out, true)
			f.slice = snapshot.DeferredSelf(sh, snapshot.Options{Mode: sess.mode, Tagged: true, Journal: true,
				FullSyncCut: true, Sizes: true, NoLZF: f.blobs, Encode: rdbvalue.EncodeForSnapshot, Out: f.out, Free: f.free, MaxChunk: chunk, Load: m.host.TierLoader(sh)})
		}
		f.subID, _ = sh.Journal.Subscribe(f.onEntry)
	})
	what := "full"
	if partial {
		what = "partial"
		m.flows.partialSyncs.Add(1)
	} else {
		m.flows.fullSyncs.Add(1)
	}
	m.log.Noticef("Replica flows (%d shards): %s sync starts", len(sess.flows), what)
	for _, f := range sess.flows {
		go f.serve(partial)
		go f.readAcks()
	}
}

// onEntry runs on the shard goroutine for every journal entry.
func (f *flow) onEntry(e *journal.Entry) {
	if f.dead.Load() {
		return
	}
	f.sent.Store(e.LSN)
	if f.slice != nil && !f.slice.Done() {
		// Encoded into the flow's scratch buffer: Slice.Journal copies
		// what it keeps (an entry a write made per command was garbage
		// the size of the writes during a sync).
		f.jbuf = e.Encode(f.jbuf[:0])
		je := snapshot.JournalEntry{Data: f.jbuf, DB: e.DB}
		if e.Op == journal.OpCommand && len(e.Args) == 2 && strings.EqualFold(string(e.Args[0]), "DEL") {
			// Possibly an expiry: a command's DEL of a key whose value is
			// half written cannot come (see Slice.Journal).
			je.Expired, je.Expiry = string(e.Args[1]), true
		}
		f.slice.Journal(je)
		return
	}
	f.mu.Lock()
	// The entry is encoded in place, after a header whose length is
	// filled in then (no buffer of its own per entry).
	at := len(f.queue)
	f.queue = rdb.AppendChunk(f.queue, rdb.OpJournal, snapshot.JournalStream, nil)
	f.queue = e.Encode(f.queue)
	binary.LittleEndian.PutUint32(f.queue[at+5:], uint32(len(f.queue)-at-rdb.ChunkHeaderSize))
	over := int64(len(f.queue)) > f.limit
	f.mu.Unlock()
	if over {
		f.m.log.Warnf("Replica flow %d fell %d bytes behind: dropped", f.sid, len(f.queue))
		f.close()
		return
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// flowBufferLimit bounds a flow's queue (Settings.FlowBufferLimit).
func (m *Master) flowBufferLimit() int64 {
	if n := m.host.Settings().FlowBufferLimit; n > 0 {
		return n
	}
	return 1 << 62
}

// serve writes the flow's stream: the snapshot's chunks to its last one,
// then the journal queue as it fills.
func (f *flow) serve(partial bool) {
	bw := bufio.NewWriterSize(f.conn, 256<<10)
	if partial {
		_, _ = bw.WriteString("+CONTINUE\r\n")
		f.synced.Store(true)
	} else {
		_, _ = fmt.Fprintf(bw, "+FULLSYNC %d\r\n", f.fullAt)
		start := time.Now()
		// Sending the baseline yields to the shards like a BGSAVE's file
		// writer; the journal stream after it does not.
		foreground := snapshot.BackgroundSection()
		// No collection starts while the baseline goes out (a cycle
		// then has the flows' Ps too); the one owed runs after it.
		release := reclaim.HoldCollections()
		m := snapshot.NewMaterializer(!f.blobs, f.free) // the Slice's deferred records (DeferredSelf)
		// With BLOBS the baseline's records go out without LZF
		// (Options.NoLZF), a main-stream fragment compressed whole with S2
		// (persist.BlobFrames): LZF value by value was 28% of the master's CPU
		// during a full sync of repl.sh's 1M keys of 100 bytes.
		var blobs rdb.Blobs
		var werr error
		put := func(b []byte) {
			if werr == nil {
				_, werr = bw.Write(b)
				f.bytes.Add(int64(len(b)))
			}
		}
		var pace snapshot.Pacer // shares the CPU with the loops in small steps
		for {
			c := <-f.out // read to the end even when the replica is gone
			pace.Step()
			f.buffers.Store(int64(len(f.out)+len(f.free)+1)*int64(cap(c.Data)) + int64(bw.Size()))
			m.Materialize(&c)
			if c.Err != nil && !f.dead.Load() {
				// The baseline is incomplete (an encoding failed): the last
				// chunk would still end it with the full-sync marker, and
				// the replica would miss keys for good. It syncs again.
				f.m.log.Warnf("Replica flow %d: the baseline failed: %v", f.sid, c.Err)
				f.close()
			}
			if !f.dead.Load() {
				if f.blobs {
					persist.BlobFrames(c.Data, &blobs, put)
				} else {
					put(c.Data)
				}
				if werr != nil {
					f.close()
				}
			}
			if c.Last {
				break
			}
			select {
			case f.free <- c.Data[:0]: // bw copied it
			default:
			}
		}
		foreground()
		release()
		f.buffers.Store(0)
		f.synced.Store(true)
		if !f.dead.Load() {
			f.m.log.Noticef("Replica flow %d: baseline sent in %.3f s", f.sid, time.Since(start).Seconds())
		}
	}
	var buf []byte
	// One timer for every wait (a time.After per wait was a timer per
	// batch of journal entries); since Go 1.23 Reset needs no draining.
	idle := time.NewTimer(time.Second)
	defer idle.Stop()
	var flushed time.Time
	hurried := false
	gather := time.NewTimer(flowFlushEvery)
	defer gather.Stop()
	for !f.dead.Load() {
		f.mu.Lock()
		buf, f.queue = f.queue, buf[:0]
		f.mu.Unlock()
		if len(buf) > 0 {
			if _, err := bw.Write(buf); err != nil {
				break
			}
			f.bytes.Add(int64(len(buf)))
			if cap(buf) > 4<<20 {
				buf = nil // a burst's queue is not kept for good (Buffered)
			}
			continue
		}
		if bw.Buffered() > 0 && !hurried {
			if waited, h := gatherFor(gather, flushed, f.urgent); waited {
				hurried = h
				continue
			}
		}
		if hurried {
			// A WAIT: the ping after the entries asks the replica to
			// acknowledge once it has applied them (applyFlow).
			hurried = false
			_, _ = bw.Write(flowPing)
		}
		if bw.Buffered() > 0 {
			flushed = time.Now()
		}
		if err := bw.Flush(); err != nil {
			break
		}
		idle.Reset(time.Second)
		select {
		case <-f.wake:
		case <-f.urgent:
			hurried = true
		case <-idle.C:
			// A second without entries: a heartbeat, so the replica can
			// tell a quiet master from a lost one (replica.Link's repl-timeout)
			// and INFO's master_last_io_seconds_ago stays small.
			_, _ = bw.Write(flowPing)
		}
	}
	f.close()
}

// flowFlushEvery bounds how often a flow in stable sync writes to its
// socket (and the Redis-protocol feed drains its queues): entries that
// arrive within it go out in one write, as Redis writes a replica's
// buffer once per event-loop turn. Writing each entry as it came cost the
// master a wake-up and a write per SET: tests/bench/repl.sh's stable phase,
// dfly>dfly, master CPU per SET 1.22-1.27x of idle (throughput 0.68-0.72x)
// before, 0.93-1.06x (0.84-0.94x) with it; the replica's 7.1-8.2 us per SET
// fell to 4.3-5.0. A replica lags by at most this much more.
const flowFlushEvery = time.Millisecond

// gatherFor waits on t until flowFlushEvery has passed since last, so that
// what arrives meanwhile goes out together, or until urgent; waited is
// false when that time had passed already, hurried true when urgent ended
// the wait.
func gatherFor(t *time.Timer, last time.Time, urgent <-chan struct{}) (waited, hurried bool) {
	d := flowFlushEvery - time.Since(last)
	if d <= 0 {
		return false, false
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true, false
	case <-urgent:
		return true, true
	}
}

// flowPing is the heartbeat chunk (rdb.OpFlowPing).
var flowPing = rdb.AppendChunk(nil, rdb.OpFlowPing, 0, nil)

// readAcks reads the replica's "ACK <lsn>" lines. A replica sends one
// every 100 ms; one silent for repl-timeout is gone (the network lost it
// without closing anything), and its flow is dropped, as Redis drops a
// replica that stopped acknowledging.
func (f *flow) readAcks() {
	r := bufio.NewReaderSize(f.conn, 4096)
	timeout := f.m.host.Settings().ReplTimeout
	for {
		_ = f.conn.SetReadDeadline(time.Now().Add(timeout))
		b, err := r.ReadSlice('\n') // bounded by the buffer
		line := string(b)
		if err != nil || len(line) > 64 {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !f.dead.Load() {
				f.m.log.Warnf("Disconnecting timedout replica flow %d: no ACK for %v", f.sid, timeout)
			}
			f.close()
			return
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ACK "); ok {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				f.acked.Store(n)
				f.ackAt.Store(time.Now().Unix())
				f.m.acks.fire()
			}
		}
	}
}

// close drops the flow: the socket, its subscription (on the shard) and
// its entry in the flow table. Safe to call more than once.
func (f *flow) close() {
	if f.dead.Swap(true) {
		return
	}
	f.conn.Close()
	sh := f.m.shards[f.sid]
	sh.Send(shard.Func(func(sh *shard.Shard) {
		sh.Journal.Unsubscribe(f.subID)
	}))
	fm := f.m.flows
	fm.mu.Lock()
	delete(fm.flows, f)
	if len(fm.flows) == 0 {
		fm.idleSince = time.Now()
	}
	fm.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// keepJournals records that the journals now keep a backlog for dfly
// replicas (handover: for a promotion's) and starts their expiry.
func (m *Master) keepJournals(handover bool) {
	fm := m.flows
	fm.mu.Lock()
	fm.kept = true
	if handover {
		if len(fm.flows) == 0 {
			fm.idleSince = time.Now()
		}
	}
	fm.mu.Unlock()
	fm.expiry.Do(func() { go m.expireJournals() })
}

// expireJournals stops the journals kept for dfly replicas once none has
// been attached for --repl_backlog_ttl (while the Redis feed runs, its
// own expiry stops them: stopFeed). The journals skip an LSN as they
// stop (journal.Journal.update) and the replication id changes, so a
// replica that comes back later syncs in full: the writes from now on
// are in no backlog.
func (m *Master) expireJournals() {
	fm := m.flows
	ttl := m.host.Settings().ReplBacklogTTL
	tick := time.NewTicker(min(time.Second, max(ttl/4, 10*time.Millisecond)))
	defer tick.Stop()
	due := func() bool {
		return fm.kept && len(fm.flows) == 0 && !fm.idleSince.IsZero() && time.Since(fm.idleSince) >= ttl
	}
	for range tick.C {
		if m.host.Stopping() {
			return
		}
		fm.mu.Lock()
		d := due()
		fm.mu.Unlock()
		if d {
			m.stopKeptJournals(due)
		}
	}
}

// stopKeptJournals is expireJournals' stop, when due still holds.
func (m *Master) stopKeptJournals(due func() bool) {
	fm := m.flows
	m.cutMu.Lock()
	defer m.cutMu.Unlock()
	fm.mu.Lock()
	if !due() {
		fm.mu.Unlock()
		return
	}
	fm.kept = false
	fm.mu.Unlock()
	m.mu.Lock()
	feed := m.feedOn
	m.mu.Unlock()
	t := tx.New(m.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		if !feed {
			sh.Journal.Stop()
		}
	})
	m.handover.Store(nil)
	if feed {
		return
	}
	if !m.host.IsReplica() {
		// As Redis when it frees its backlog. (A replica's id is its
		// master's history, which it goes on following.)
		m.newHistory()
	}
	m.log.Noticef("Journals stopped after %v without dfly replicas", m.host.Settings().ReplBacklogTTL)
}

// hurry makes every flow write what it holds now, followed by a ping
// that the replica acknowledges once it has applied everything before it
// (WAIT).
func (fm *flowMaster) hurry() {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for f := range fm.flows {
		select {
		case f.urgent <- struct{}{}:
		default:
		}
	}
}

// attached reports whether any flow is connected.
func (fm *flowMaster) attached() bool {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	return len(fm.flows) > 0
}

// ackedSessions counts the dfly replicas (sessions) whose flows are all
// connected and acknowledged at least lsns[shard].
func (fm *flowMaster) ackedSessions(lsns []uint64) int { return len(fm.acked(lsns)) }

// acked lists the replicas (sessions) whose every flow acknowledged its
// shard's LSN in lsns.
func (fm *flowMaster) acked(lsns []uint64) []*flowSession {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	ok := map[*flowSession]int{}
	for f := range fm.flows {
		if f.sid < len(lsns) && f.acked.Load() >= lsns[f.sid] {
			ok[f.sess]++
		}
	}
	var out []*flowSession
	for sess, k := range ok {
		if k == len(sess.flows) {
			out = append(out, sess)
		}
	}
	return out
}

// ackedAddrs is acked by the replicas' "ip:port" (FAILOVER).
func (fm *flowMaster) ackedAddrs(lsns []uint64) map[string]bool {
	out := map[string]bool{}
	for _, sess := range fm.acked(lsns) {
		out[net.JoinHostPort(sess.ip, strconv.Itoa(sess.port))] = true
	}
	return out
}

// flowInfo writes INFO replication lines for the attached flows.
func (m *Master) flowInfo(field func(k string, v any)) {
	fm := m.flows
	field("dfly_flow_syncs_full", fm.fullSyncs.Load())
	field("dfly_flow_syncs_partial", fm.partialSyncs.Load())
	journaling := 0
	for _, sh := range m.shards {
		if sh.Journal.Active() {
			journaling = 1
		}
	}
	field("dfly_journal_active", journaling)
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for i, f := range fm.sortedFlows() {
		state := "stable_sync"
		if !f.synced.Load() {
			state = "full_sync"
		}
		field("dfly_flow"+strconv.Itoa(i), fmt.Sprintf("shard=%d,state=%s,sent_bytes=%d,sent_lsn=%d,acked_lsn=%d",
			f.sid, state, f.bytes.Load(), f.sent.Load(), f.acked.Load()))
	}
}

// sortedFlows are the attached flows by session, then shard, so INFO
// lists them in a stable order; fm.mu is held.
func (fm *flowMaster) sortedFlows() []*flow {
	fs := make([]*flow, 0, len(fm.flows))
	for f := range fm.flows {
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b *flow) int {
		if c := cmp.Compare(len(a.sess.id), len(b.sess.id)); c != 0 {
			return c // numeric ids: shorter is older
		}
		if c := cmp.Compare(a.sess.id, b.sess.id); c != 0 {
			return c
		}
		return cmp.Compare(a.sid, b.sid)
	})
	return fs
}

// flowReplica is a dfly replica (a flow session with a flow attached),
// as INFO replication and ROLE show it: online once every flow finished
// its full sync; acked is the LSNs it acknowledged, summed over its flows
// (its offset).
type flowReplica struct {
	ip     string
	port   int
	online bool
	acked  uint64
	ackAt  int64 // unix seconds of its flows' oldest last ACK
}

// lag is the seconds since the replica's flows all acknowledged, as
// Redis's lag (seconds since the last REPLCONF ACK).
func (r flowReplica) lag(now int64) int64 { return max(now-r.ackAt, 0) }

// info is the replica's INFO replication slaveN value.
func (r flowReplica) info(now int64) string {
	state := "send_bulk"
	if r.online {
		state = "online"
	}
	return "ip=" + r.ip + ",port=" + strconv.Itoa(r.port) + ",state=" + state +
		",offset=" + strconv.FormatUint(r.acked, 10) + ",lag=" + strconv.FormatInt(r.lag(now), 10)
}

// flowReplicas are the attached dfly replicas, oldest first.
func (m *Master) flowReplicas() []flowReplica {
	fm := m.flows
	fm.mu.Lock()
	defer fm.mu.Unlock()
	var out []flowReplica
	var cur *flowSession
	for _, f := range fm.sortedFlows() {
		if f.sess != cur {
			cur = f.sess
			out = append(out, flowReplica{ip: cur.ip, port: cur.port, online: true})
		}
		r := &out[len(out)-1]
		r.online = r.online && f.synced.Load()
		r.acked += f.acked.Load()
		if at := f.ackAt.Load(); r.ackAt == 0 || at < r.ackAt {
			r.ackAt = at // the flow acknowledged longest ago
		}
	}
	return out
}

// FlowFigures is one attached flow as metrics report it.
type FlowFigures struct {
	Replica string // the replica's ip:port
	Shard   int
	Synced  bool // its baseline is sent: stable sync
	// AckedLSN is the last entry it acknowledged; QueuedBytes the journal
	// frames queued and not yet written to its socket; SentBytes all it
	// was sent.
	AckedLSN               uint64
	QueuedBytes, SentBytes int64
}

// Flows are the attached flows, in INFO's order; it reads their
// counters, never a shard.
func (m *Master) Flows() []FlowFigures {
	fm := m.flows
	fm.mu.Lock()
	defer fm.mu.Unlock()
	var out []FlowFigures
	for _, f := range fm.sortedFlows() {
		f.mu.Lock()
		queued := len(f.queue)
		f.mu.Unlock()
		out = append(out, FlowFigures{Replica: net.JoinHostPort(f.sess.ip, strconv.Itoa(f.sess.port)), Shard: f.sid,
			Synced: f.synced.Load(), AckedLSN: f.acked.Load(),
			QueuedBytes: int64(queued), SentBytes: f.bytes.Load()})
	}
	return out
}
