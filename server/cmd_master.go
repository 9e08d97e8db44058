package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/master"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

// The master side's commands over package master: SYNC, PSYNC, REPLCONF,
// WAIT, DFLY (HELLO, FLOW, HANDOVER), and the hand-off of a replica's
// socket from its event loop.

func replMasterCommands() []*command.Command {
	return []*command.Command{
		{Name: "sync", Arity: 1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoMulti, InfoFlags: command.FlagNoAsyncLoading, Local: viaConn(cmdSync)},
		{Name: "psync", Arity: -3, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoMulti, InfoFlags: command.FlagNoAsyncLoading, Local: viaConn(cmdSync)},
		{Name: "replconf", Arity: -1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdReplconf)},
		{Name: "wait", Tips: "request_policy:all_shards response_policy:agg_min", Arity: 3, Flags: command.FlagNoScript, ACLCats: "connection", Multi: viaCoord(cmdWait)},
	}
}

func init() { command.Register("server", replMasterCommands) }

func cmdSync(c *Conn, a [][]byte, w *resp.Writer) {
	// PSYNC replid offset FAILOVER: this server's master is failing over
	// to it (Redis 6.2's FAILOVER) and asks it to take over, if it follows
	// that history; it becomes a master, then serves the PSYNC (a partial
	// sync: the old master is where it left off).
	failover := len(a) > 3 && strings.EqualFold(string(a[0]), "psync") && strings.EqualFold(string(a[3]), "failover")
	if failover {
		if st, _, _, ok := c.srv.replicaStatus(); !ok || st.ReplID != string(a[1]) {
			w.Error("ERR PSYNC FAILOVER replid must match my replid.")
			return
		}
	} else if c.srv.isReplica() {
		w.Error(c.srv.chainedRefusal())
		return
	}
	if c.srv.failingOver() {
		w.Error("NOMASTERLINK Can't SYNC while failing over")
		return
	}
	req := master.PSync{Sync: len(a) == 1}
	if !req.Sync {
		off, err := strconv.ParseInt(string(a[2]), 10, 64)
		if err != nil {
			w.Error(command.ErrNotInt)
			return
		}
		req.ReplID, req.Offset = string(a[1]), off
	}
	if c.repl != nil {
		req.Conf = *c.repl
	}
	m := c.srv.master
	c.handoff = func(nc net.Conn) {
		if failover {
			// Here, not on the loop: stopping the link waits for its last
			// apply, which may need this loop's shards.
			c.srv.replicaNoOne("failover request from "+nc.RemoteAddr().String(), nil)
		}
		m.ServeReplica(nc, req)
	}
	c.closing = true
}

// chainedRefusal is the error a replica gives a would-be replica of its
// own: Redis's NOMASTERLINK while its link is down, else the truth: dfly
// replicas serve no replicas (no chained replication), so the sub-replica
// should follow the master itself. A dfly sub-replica does
// (replica.Link.redirected).
func (s *Server) chainedRefusal() string {
	st, host, port, ok := s.replicaStatus()
	if !ok || st.State != replica.StateConnected {
		return "NOMASTERLINK Can't SYNC while not connected with my master"
	}
	return replica.RefusalText + net.JoinHostPort(host, strconv.Itoa(port))
}

func cmdReplconf(c *Conn, a [][]byte, w *resp.Writer) {
	if len(a)%2 == 0 {
		w.Error(command.ErrSyntax)
		return
	}
	if c.repl == nil {
		c.repl = &master.ReplConf{}
	}
	for i := 1; i+1 < len(a); i += 2 {
		v := string(a[i+1])
		switch strings.ToLower(string(a[i])) {
		case "listening-port":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 65535 {
				w.Error("ERR value is out of range")
				return
			}
			c.repl.Port = n
		case "ip-address":
			c.repl.IP = v
		case "capa":
			if strings.EqualFold(v, "eof") {
				c.repl.CapaEOF = true
			}
		case "ack", "getack":
			return // no reply, as Redis
		case "rdb-only":
			switch v {
			case "0", "1":
				c.repl.RDBOnly = v == "1"
			default:
				if _, err := strconv.ParseInt(v, 10, 64); err != nil {
					w.Error(command.ErrNotInt)
				} else {
					w.Error("ERR value is out of range, value must between 0 and 1")
				}
				return
			}
		case "rdb-filter-only":
			// As Redis: a filter includes parts of the RDB; keys are never
			// among them, "functions" the only one there is.
			c.repl.NoData, c.repl.NoFunctions = true, true
			for _, f := range strings.Fields(v) {
				if !strings.EqualFold(f, "functions") {
					w.Error("ERR Unsupported rdb-filter-only option: " + f)
					return
				}
				c.repl.NoFunctions = false
			}
		case "rdb-channel":
		default:
			w.Error("ERR Unrecognized REPLCONF option: " + command.TruncArg(a[i]))
			return
		}
	}
	w.SimpleString("OK")
}

// cmdWait answers WAIT numreplicas timeout: how many replicas acknowledged
// the stream up to the offset at the call.
func cmdWait(x *Coord) {
	n, err1 := strconv.ParseInt(string(x.Args[1]), 10, 64)
	ms, err2 := strconv.ParseInt(string(x.Args[2]), 10, 64)
	if err1 != nil || err2 != nil {
		x.W.Error(command.ErrNotInt)
		return
	}
	if ms < 0 {
		x.W.Error("ERR timeout is negative")
		return
	}
	if x.Srv.isReplica() {
		x.W.Error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	m := x.Srv.master
	target := m.FlushedOffset()
	// dfly replicas (flows) count when every flow acknowledged its
	// shard's LSN as of now.
	var lsns []uint64
	if m.FlowsAttached() {
		lsns = make([]uint64, x.NumShards())
		x.OnEach(func(sh *shard.Shard) { lsns[sh.ID] = sh.Journal.LSN() })
	}
	acked := func() int {
		n := m.Acked(target)
		if lsns != nil {
			n += m.AckedSessions(lsns)
		}
		return n
	}
	var deadline time.Time
	if ms > 0 {
		deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	if x.InTx { // in EXEC it answers at once, as Redis 7.0
		x.W.Int(int64(acked()))
		return
	}
	asked := false
	x.Conn.startWaiting() // CLIENT UNBLOCK may end the wait (blocking.go)
	defer x.Conn.waiting.Store(false)
	m.Hurry() // the flows write what they hold now
	for {
		ackedNow := m.AckSignal() // before the count: no ACK missed
		got := acked()
		if int64(got) >= n || (!deadline.IsZero() && time.Now().After(deadline)) {
			x.W.Int(int64(got))
			return
		}
		if !asked {
			asked = true
			m.AskAcks()
		}
		select {
		case <-x.Conn.gone:
			x.W.Int(int64(acked()))
			return
		case asError := <-x.Conn.unblock:
			if asError {
				x.W.Error(command.ErrUnblocked)
			} else {
				x.W.Int(int64(acked()))
			}
			return
		case <-ackedNow:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func init() {
	command.Register("server", func() []*command.Command {
		return []*command.Command{{Name: "dfly", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoMulti | command.FlagStale, Local: viaConn(cmdDfly)}}
	})
}

func cmdDfly(c *Conn, a [][]byte, w *resp.Writer) {
	s := c.srv
	switch sub := strings.ToLower(string(a[1])); {
	case sub == "hello" && len(a) == 2:
		if s.isReplica() {
			w.Error(s.chainedRefusal())
			return
		}
		// The replica as INFO replication shows it: the address of its
		// DFLY HELLO and the port it announced (REPLCONF listening-port,
		// or ip-address).
		var ip string
		var port int
		if a := c.gc.RemoteAddr(); a != nil {
			ip, _, _ = net.SplitHostPort(a.String())
		}
		if c.repl != nil {
			port = c.repl.Port
			if c.repl.IP != "" {
				ip = c.repl.IP
			}
		}
		id, shards, session, mode := s.master.Hello(ip, port)
		w.Array(4)
		w.BulkString(id)
		w.Int(int64(shards))
		w.BulkString(session)
		w.BulkString(mode)
	case sub == "flow" && len(a) == 6 && !strings.EqualFold(string(a[5]), "blobs"):
		w.Error(command.ErrSyntax)
	case sub == "flow" && (len(a) == 5 || len(a) == 6):
		// DFLY FLOW <session> <shard> <next> [BLOBS]
		attach, err := s.master.Flow(string(a[2]), string(a[3]), string(a[4]), len(a) == 6)
		if err != nil {
			w.Error(err.Error())
			return
		}
		c.handoff = attach
		c.closing = true
	case sub == "handover" && len(a) >= 3:
		// DFLY HANDOVER <replid> <lsn>...: see handover (replica side).
		if s.isReplica() {
			w.Error(s.chainedRefusal())
			return
		}
		offer := &master.History{ReplID: string(a[2]), LSNs: make([]uint64, 0, len(a)-3)}
		for _, x := range a[3:] {
			n, err := strconv.ParseUint(string(x), 10, 64)
			if err != nil {
				w.Error("ERR bad LSN")
				return
			}
			offer.LSNs = append(offer.LSNs, n)
		}
		lsns, ok := s.master.Handover(offer)
		if !ok {
			w.Error("ERR this server's history does not start there")
			return
		}
		w.Array(len(lsns))
		for _, n := range lsns {
			w.Int(int64(n))
		}
	default:
		w.Error(fmt.Sprintf("ERR unknown subcommand '%s'. Try DFLY HELLO.", command.TruncArg(a[1])))
	}
}

// handoffConn gives a SYNC/PSYNC connection's socket to c.handoff on a
// goroutine of its own; the event loop closes its copy of the descriptor.
func (s *Server) handoffConn(c *Conn) {
	fd, err := c.gc.Dup()
	if err != nil {
		s.log.Warnf("replica handoff: %v", err)
		return
	}
	f := os.NewFile(uintptr(fd), "replica")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		s.log.Warnf("replica handoff: %v", err)
		return
	}
	go c.handoff(nc)
}

// masterHost is the Server as package master sees it.
type masterHost Server

func (h *masterHost) Settings() master.Settings {
	s := (*Server)(h)
	s.cfg.Mu.RLock()
	defer s.cfg.Mu.RUnlock()
	return master.Settings{Dir: s.cfg.Dir, ReplBacklogSize: s.cfg.ReplBacklogSize, ReplBacklogTTL: s.cfg.ReplBacklogTTL,
		ReplTimeout: time.Duration(s.cfg.ReplTimeout) * time.Second, PointInTime: s.cfg.PointInTime,
		FlowBufferLimit: s.cfg.ReplicaHardLimit(), SerializationMaxChunk: int(s.cfg.SerializationMaxChunk)}
}

func (h *masterHost) Functions() []byte { return (*Server)(h).cutFunctions() }

func (h *masterHost) FunctionsAtCut(sh *shard.Shard, out chan<- snapshot.Chunk, tagged bool) {
	(*Server)(h).functionsAtCut(sh, out, tagged)
}

func (h *masterHost) TierLoader(sh *shard.Shard) snapshot.Loader { return offload.Loader(sh) }

func (h *masterHost) WriteRDB(w io.Writer, outs []chan snapshot.Chunk, free chan<- []byte) error {
	return h.persist.WriteRDB(w, outs, free)
}

func (h *masterHost) ReplicaOutputLimit() func(pending int64) bool {
	cfg := h.cfg
	var obuf outputLimiter
	return func(pending int64) bool {
		if !obuf.exceeded(cfg, config.ClassReplica, pending) {
			return false
		}
		cfg.Limits.OutClosed.Add(1)
		return true
	}
}

func (h *masterHost) IsReplica() bool {
	_, _, _, replica := (*Server)(h).replicaStatus()
	return replica
}

func (h *masterHost) Stopping() bool { return h.stopping.Load() }
