package server

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/master"
	"github.com/dfly/dfly/resp"
)

// FAILOVER [TO host port [FORCE]] [TIMEOUT ms] | FAILOVER ABORT, as Redis
// 6.2+: a coordinated hand-over of the master role to a replica without
// losing a write.
//
//  1. Writes are paused (CLIENT PAUSE WRITE, held until the failover ends:
//     pauseState.failover), so the replication stream stands still;
//     master_failover_state is waiting-for-sync.
//  2. A goroutine waits until a replica (the TO one, else the first) has
//     acknowledged everything: a Redis-protocol replica the stream's offset
//     past a barrier through every shard's journal (flushedOffset), a dfly
//     replica every shard's LSN on each of its flows. Past TIMEOUT it gives
//     up ("Replica never caught up before timeout") unless FORCE, which
//     hands over to the TO replica as it is.
//  3. failover-in-progress: the replica is told REPLICAOF NO ONE (with
//     masteruser/masterauth when set), and this server becomes its replica,
//     offering its own history (replid, offset) so that a redis-server
//     target, which keeps it as replid2, continues with a partial sync; a
//     dfly target full-syncs it. Then writes resume: they now get READONLY.
//
// Differences from Redis: the target is promoted with REPLICAOF NO ONE on a
// client connection, not with PSYNC ... FAILOVER on the replication link,
// so a target that accepts the promotion but then cannot be reached leaves
// two masters (Redis's target promotes only once the old master follows
// it); and the failover's write pause is the clients' pause (a CLIENT PAUSE
// given meanwhile ends with the failover's).
type failoverState struct {
	mu    sync.Mutex
	state int // foNone, foWaiting, foInProgress
	// abort asks the running failover to stop (FAILOVER ABORT), before it
	// promotes its target; closed once.
	abort chan struct{}
}

const (
	foNone = iota
	foWaiting
	foInProgress
)

// failoverTarget is the replica a failover hands over to.
type failoverTarget struct {
	host string
	port int
}

// failoverPoll is how often a failover looks at its replicas' offsets.
const failoverPoll = 10 * time.Millisecond

// failoverDial bounds each network step of the promotion.
const failoverDial = 5 * time.Second

// failingOver reports whether a FAILOVER is under way.
func (s *Server) failingOver() bool {
	s.failover.mu.Lock()
	defer s.failover.mu.Unlock()
	return s.failover.state != foNone
}

func (s *Server) failoverStateName() string {
	s.failover.mu.Lock()
	defer s.failover.mu.Unlock()
	switch s.failover.state {
	case foWaiting:
		return "waiting-for-sync"
	case foInProgress:
		return "failover-in-progress"
	}
	return "no-failover"
}

// cmdFailover parses and checks FAILOVER with Redis's errors, in its order,
// and starts the failover in the background.
func cmdFailover(c *Conn, a [][]byte, w *resp.Writer) {
	s := c.srv
	fo := &s.failover
	if len(a) == 2 && strings.EqualFold(string(a[1]), "abort") {
		fo.mu.Lock()
		defer fo.mu.Unlock()
		if fo.state == foNone {
			w.Error("ERR No failover in progress.")
			return
		}
		select {
		case <-fo.abort:
		default:
			close(fo.abort)
		}
		w.SimpleString("OK")
		return
	}
	var (
		timeout int64
		force   bool
		target  *failoverTarget
	)
	for j := 1; j < len(a); j++ {
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "timeout" && j+1 < len(a) && timeout == 0:
			n, err := strconv.ParseInt(string(a[j+1]), 10, 64)
			if err != nil {
				w.Error(command.ErrNotInt)
				return
			}
			if n <= 0 {
				w.Error("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeout = n
			j++
		case opt == "to" && j+2 < len(a) && target == nil:
			port, err := strconv.ParseInt(string(a[j+2]), 10, 64)
			if err != nil {
				w.Error(command.ErrNotInt)
				return
			}
			target = &failoverTarget{host: string(a[j+1]), port: int(port)}
			j += 2
		case opt == "force" && !force:
			force = true
		default:
			w.Error(command.ErrSyntax)
			return
		}
	}
	fo.mu.Lock()
	defer fo.mu.Unlock()
	switch {
	case fo.state != foNone:
		w.Error("ERR FAILOVER already in progress.")
		return
	case s.isReplica():
		w.Error("ERR FAILOVER is not valid when server is a replica.")
		return
	}
	replicas := s.master.Replicas(false)
	switch {
	case len(replicas) == 0:
		w.Error("ERR FAILOVER requires connected replicas.")
		return
	case force && (timeout == 0 || target == nil):
		w.Error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	}
	if target != nil {
		online, found := false, false
		for _, r := range replicas {
			if r.Host == target.host && r.Port == target.port {
				found, online = true, r.Online
			}
		}
		if !found {
			w.Error("ERR FAILOVER target HOST and PORT is not a replica.")
			return
		}
		if !online {
			w.Error("ERR FAILOVER target replica is not online.")
			return
		}
		s.log.Noticef("FAILOVER requested to %s:%d.", target.host, target.port)
	} else {
		s.log.Noticef("FAILOVER requested to any replica.")
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	fo.state = foWaiting
	fo.abort = make(chan struct{})
	s.holdWrites(true)
	go s.runFailover(target, force, deadline, fo.abort)
	w.SimpleString("OK")
}

// runFailover waits for a replica to catch up, then hands it the master
// role (see failoverState).
func (s *Server) runFailover(target *failoverTarget, force bool, deadline time.Time, abort chan struct{}) {
	fo := &s.failover
	// Redis-protocol replicas report their offset every second on their
	// own; ask them now.
	s.master.AskAcks()
	if !s.drainWrites(deadline, abort, nil) {
		s.endFailover("Failover manually aborted")
		return
	}
	var to *failoverTarget
	for to == nil {
		select {
		case <-abort:
			s.endFailover("Failover manually aborted")
			return
		default:
		}
		for _, r := range s.master.Replicas(true) {
			if r.Caught && (target == nil || r.Host == target.host && r.Port == target.port) {
				to = &failoverTarget{host: r.Host, port: r.Port}
				break
			}
		}
		if to != nil {
			break
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			if !force {
				s.endFailover("Replica never caught up before timeout")
				return
			}
			to = target
			break
		}
		time.Sleep(failoverPoll)
	}
	fo.mu.Lock()
	select {
	case <-abort:
		fo.mu.Unlock()
		s.endFailover("Failover manually aborted")
		return
	default:
	}
	fo.state = foInProgress
	fo.mu.Unlock()
	s.log.Noticef("Failover target %s:%d is synced, failing over.", to.host, to.port)
	s.cfg.Mu.RLock()
	user, pass := s.cfg.MasterUser, s.cfg.MasterAuth
	s.cfg.Mu.RUnlock()
	if err := master.PromoteReplica(net.JoinHostPort(to.host, strconv.Itoa(to.port)), user, pass, failoverDial); err != nil {
		s.endFailover("Failover target rejected the promotion: " + err.Error())
		return
	}
	replid, offset := s.master.Position()
	// In dfly's form: the data is at its journals' LSNs, which the target
	// acknowledged (writes and expiry have been paused since), so a dfly
	// target promoted at the same place lets this server continue with a
	// partial sync (DFLY HANDOVER).
	own := s.master.Here()
	s.replicaOfHistory(to.host, to.port, replid, offset, own)
	s.log.Noticef("Failover to %s:%d succeeded.", to.host, to.port)
	s.endFailover("")
}

// endFailover ends the failover, aborted for reason unless reason is "",
// and lets writes go on.
func (s *Server) endFailover(reason string) {
	if reason != "" {
		s.log.Warnf("FAILOVER aborted: %s", reason)
	}
	fo := &s.failover
	fo.mu.Lock()
	fo.state = foNone
	fo.mu.Unlock()
	s.holdWrites(false)
}

// drainWrites waits, once writes are paused, for the commands dispatched
// before the pause to finish: a connection busy then may still have a
// write on a shard or on a coordinator (a step of an EXEC, a script's
// next call), which would journal after the replica's offsets were
// compared — a write its client is told succeeded, which the promoted
// replica may never get. Each connection busy at the pause must end that
// batch, stop at a write the pause holds, or wait in a blocking command
// (which only a write could serve). Redis, single-threaded, has nothing in
// flight when a pause starts. It reports false if abort came first; past
// deadline (the failover's TIMEOUT) it stops waiting, and the offsets
// decide. CLIENT PAUSE waits the same way (except: its own connection).
func (s *Server) drainWrites(deadline time.Time, abort chan struct{}, except *Conn) bool {
	type busyConn struct {
		c   *Conn
		gen uint64 // its batchesDone when the pause began
	}
	var busy []busyConn
	for _, c := range s.clientList() {
		if c != except && c.busy.Load() {
			busy = append(busy, busyConn{c, c.batchesDone.Load()})
		}
	}
	for len(busy) > 0 {
		still := busy[:0]
		for _, p := range busy {
			c := p.c
			if c.busy.Load() && c.batchesDone.Load() == p.gen && !c.parked.Load() && !c.waiting.Load() && !c.draining.Load() && !c.closed.Load() {
				still = append(still, p)
			}
		}
		busy = still
		if len(busy) == 0 || !deadline.IsZero() && time.Now().After(deadline) {
			return true
		}
		select {
		case <-abort:
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

// holdWrites starts (on) or ends a failover's write pause: CLIENT PAUSE
// WRITE that neither its timer nor CLIENT UNPAUSE ends while it holds
// (unpauseLocked).
func (s *Server) holdWrites(on bool) {
	ps := &s.pause
	ps.mu.Lock()
	ps.failover = on
	ps.mu.Unlock()
	if on {
		s.pauseClients(pauseWrite, failoverPauseMax)
	} else {
		s.unpause()
	}
}

// failoverPauseMax is the failover pause's nominal length: it ends with
// the failover.
const failoverPauseMax = 100 * 365 * 24 * time.Hour
