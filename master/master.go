package master

import (
	"bufio"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// Host is what the master side needs of the server around it.
type Host interface {
	// Settings are the current values of the replication settings.
	Settings() Settings
	// Functions are the function libraries as RDB FUNCTION2 records; the
	// caller holds shard 0.
	Functions() []byte
	// FunctionsAtCut puts the libraries first on shard 0's output of a
	// snapshot (tagged: as a main-stream fragment), at the cut, on sh's
	// goroutine.
	FunctionsAtCut(sh *shard.Shard, out chan<- snapshot.Chunk, tagged bool)
	// TierLoader is a snapshot's Loader of offloaded values, nil without
	// tiered storage.
	TierLoader(sh *shard.Shard) snapshot.Loader
	// WriteRDB writes a snapshot's chunks as one RDB stream (persist's).
	WriteRDB(w io.Writer, outs []chan snapshot.Chunk, free chan<- []byte) error
	// ReplicaOutputLimit is a new replica's output bound: over reports
	// whether pending unsent bytes break client-output-buffer-limit's
	// replica class now (and counts the replica as closed for it).
	ReplicaOutputLimit() (over func(pending int64) bool)
	// IsReplica reports whether this server replicates from a master.
	IsReplica() bool
	// Stopping reports whether the server is shutting down.
	Stopping() bool
}

// Settings are the configuration the master side reads.
type Settings struct {
	// Dir is where a full sync's RDB waits when the replica cannot take
	// the EOF form.
	Dir string
	// ReplBacklogSize and ReplBacklogTTL bound the backlogs
	// (--repl_backlog_size per shard, --repl_backlog_ttl).
	ReplBacklogSize int64
	ReplBacklogTTL  time.Duration
	// ReplTimeout is repl-timeout: a flow whose ACKs stopped for as long
	// is dropped.
	ReplTimeout time.Duration
	// PointInTime selects PIT baselines for dfly flows.
	PointInTime bool
	// FlowBufferLimit bounds a flow's queued journal bytes
	// (client-output-buffer-limit's replica hard limit; 0: none).
	FlowBufferLimit int64
	// SerializationMaxChunk is --serialization_max_chunk_size.
	SerializationMaxChunk int
}

// Logger is where the master side reports, in Redis's words.
type Logger interface {
	Noticef(format string, args ...any)
	Warnf(format string, args ...any)
}

// onEachShard runs fn on every shard's goroutine and waits for them.
func (m *Master) onEachShard(fn func(*shard.Shard)) {
	var wg sync.WaitGroup
	wg.Add(len(m.shards))
	for _, sh := range m.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) { fn(sh); wg.Done() }))
	}
	wg.Wait()
}

// Buffered is what the master holds for its replicas beyond their
// snapshots (snapshot.Held): the journal queued on dfly flows, the
// baseline's chunks on their way to the socket, and the Redis-protocol
// replicas' output not written yet: their output buffers.
// Eviction does not count it as the dataset's, as Redis's
// mem_not_counted_for_evict.
func (m *Master) Buffered() int64 {
	var n int64
	m.flows.mu.Lock()
	for f := range m.flows.flows {
		f.mu.Lock()
		n += int64(cap(f.queue))
		f.mu.Unlock()
		n += f.buffers.Load()
	}
	m.flows.mu.Unlock()
	m.mu.Lock()
	for r := range m.replicas {
		r.omu.Lock()
		n += int64(cap(r.out))
		r.omu.Unlock()
	}
	m.mu.Unlock()
	return n
}

// ---- WAIT and FAILOVER ----

// FlushedOffset is the Redis-protocol stream offset that covers every
// write applied before the call.
func (m *Master) FlushedOffset() int64 { return m.flushedOffset() }

// Acked counts the Redis-protocol replicas that acknowledged offset.
func (m *Master) Acked(offset int64) int { return m.acked(offset) }

// FlowsAttached reports whether any dfly flow is connected.
func (m *Master) FlowsAttached() bool { return m.flows.attached() }

// AckedSessions counts the dfly replicas whose every flow acknowledged
// its shard's LSN in lsns.
func (m *Master) AckedSessions(lsns []uint64) int { return m.flows.ackedSessions(lsns) }

// Hurry makes every flow write what it holds now, followed by a ping the
// replica acknowledges once it has applied everything before it.
func (m *Master) Hurry() { m.flows.hurry() }

// AckSignal is closed when a replica next acknowledges something.
func (m *Master) AckSignal() <-chan struct{} { return m.acks.wait() }

// AskAcks asks the Redis-protocol replicas for their offsets now
// (REPLCONF GETACK *), rather than at their next second.
func (m *Master) AskAcks() {
	m.mu.Lock()
	if len(m.replicas) > 0 {
		m.emitLocked(resp.AppendCommand(nil, "REPLCONF", "GETACK", "*"))
	}
	m.mu.Unlock()
}

// Position is the Redis-protocol stream's replication id and offset.
func (m *Master) Position() (replID string, offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replID, m.offset
}

// Replica is a replica as FAILOVER chooses among them.
type Replica struct {
	Host   string
	Port   int
	Online bool
	Caught bool // it acknowledged everything (Replicas' check)
}

// Replicas lists the replicas (Redis-protocol ones first, then dfly
// ones); with check it marks with Caught those that acknowledged every
// write applied so far, which costs a barrier through the shards.
func (m *Master) Replicas(check bool) []Replica {
	var out []Replica
	var offset int64
	var lsns []uint64
	if check {
		offset = m.flushedOffset()
		lsns = make([]uint64, len(m.shards))
		m.onEachShard(func(sh *shard.Shard) { lsns[sh.ID] = sh.Journal.LSN() })
	}
	m.mu.Lock()
	for _, r := range m.sortedReplicas() {
		st, _ := r.state.Load().(string)
		out = append(out, Replica{Host: r.ip, Port: r.port, Online: st == "online",
			Caught: check && st == "online" && r.ack.Load() >= offset})
	}
	m.mu.Unlock()
	var caught map[string]bool
	if check {
		caught = m.flows.ackedAddrs(lsns)
	}
	for _, r := range m.flowReplicas() {
		out = append(out, Replica{Host: r.ip, Port: r.port, Online: r.online,
			Caught: r.online && caught[net.JoinHostPort(r.ip, strconv.Itoa(r.port))]})
	}
	return out
}

// DropReplicas disconnects every replica, dfly and Redis-protocol ones,
// and returns how many connections it closed.
func (m *Master) DropReplicas() int {
	m.mu.Lock()
	rs := m.sortedReplicas()
	m.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
	fm := m.flows
	fm.mu.Lock()
	fs := fm.sortedFlows()
	fm.mu.Unlock()
	for _, f := range fs {
		f.close()
	}
	return len(rs) + len(fs)
}

// ---- histories ----

// History is a dataset's place in a dfly master's history: the master's
// replication id and, per master shard, the last LSN the data holds. Two
// datasets at the same place hold the same data.
type History struct {
	ReplID string
	LSNs   []uint64
}

// Equal reports whether h and o are the same place.
func (h *History) Equal(o *History) bool {
	return h != nil && o != nil && h.ReplID == o.ReplID && slices.Equal(h.LSNs, o.LSNs)
}

// Here is this server's place in its own history: its replication id and
// its shards' journal LSNs now.
func (m *Master) Here() *History {
	h := &History{ReplID: m.ID(), LSNs: make([]uint64, len(m.shards))}
	m.onEachShard(func(sh *shard.Shard) { h.LSNs[sh.ID] = sh.Journal.LSN() })
	return h
}

// handoverRecord is where a promoted replica's history began: the data it
// held at the promotion, at place from in its old master's history, is its
// own history at lsns (its shards' journal LSNs then) under replication id
// id. A server whose data is at from (the old master after a FAILOVER, a
// fellow replica as far along) continues here with a partial sync.
type handoverRecord struct {
	from *History
	id   string
	lsns []uint64
}

// StartHandover starts this server's history as a master at from, where
// its data is (a promoted replica): every shard journals from now on —
// before any client can write — and the record keeps each shard's LSN
// here, from which a server whose data is at from continues (DFLY
// HANDOVER). One step holds every shard, so the LSNs are one cut: t's,
// a transaction nested in the one that runs the promotion when there is
// one (REPLICAOF NO ONE inside EXEC, as Sentinel sends it, whose EXEC
// holds every shard already), else nil for a transaction of its own.
func (m *Master) StartHandover(from *History, t *tx.Tx) {
	m.cutMu.Lock() // with expireJournals
	defer m.cutMu.Unlock()
	lsns := make([]uint64, len(m.shards))
	if t == nil {
		t = tx.New(m.shards)
	}
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		sh.Journal.Start()
		lsns[sh.ID] = sh.Journal.LSN()
	})
	m.handover.Store(&handoverRecord{from: from, id: m.ID(), lsns: lsns})
	m.keepJournals(true)
}

// ClearHandover forgets where a promotion's history began (this server
// follows a master again).
func (m *Master) ClearHandover() { m.handover.Store(nil) }

// Handover answers DFLY HANDOVER: the shards' LSNs where a server whose
// data is at offer continues, ok=false when this server's history does
// not start there.
func (m *Master) Handover(offer *History) (lsns []uint64, ok bool) {
	rec := m.handover.Load()
	if rec == nil || rec.id != m.ID() || !rec.from.Equal(offer) {
		return nil, false
	}
	return rec.lsns, true
}

// PromoteReplica tells the replica at addr to become a master (REPLICAOF
// NO ONE, after AUTH as user with password when one is set), each network
// step bounded by timeout: FAILOVER's promotion of its target.
func PromoteReplica(addr, user, password string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	var req []byte
	n := 1
	switch {
	case password != "" && user != "":
		req, n = resp.AppendCommand(req, "AUTH", user, password), 2
	case password != "":
		req, n = resp.AppendCommand(req, "AUTH", password), 2
	}
	req = resp.AppendCommand(req, "REPLICAOF", "NO", "ONE")
	if _, err := c.Write(req); err != nil {
		return err
	}
	r := bufio.NewReaderSize(c, 512)
	for ; n > 0; n-- {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line = strings.TrimRight(line, "\r\n"); !strings.HasPrefix(line, "+") {
			return errors.New(strings.TrimPrefix(line, "-"))
		}
	}
	return nil
}

// CaughtUp waits until every online replica acknowledged every write
// applied so far, or until deadline, and returns those that did not (a
// shutdown's wait, Redis 7.0's shutdown-timeout).
func (m *Master) CaughtUp(deadline time.Time) []Replica {
	m.AskAcks()
	m.Hurry()
	for {
		var lagging []Replica
		for _, r := range m.Replicas(true) {
			if r.Online && !r.Caught {
				lagging = append(lagging, r)
			}
		}
		if len(lagging) == 0 || !time.Now().Before(deadline) {
			return lagging
		}
		time.Sleep(10 * time.Millisecond)
	}
}
