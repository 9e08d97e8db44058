package server

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE, as Redis 7.0: for
// timeout milliseconds no client's command runs (ALL), or none that may
// change the dataset or propagate (WRITE: write commands, EXEC of a
// transaction holding one, EVAL, EVALSHA, PUBLISH, SPUBLISH, PFCOUNT). A
// paused command is not refused: its connection stops before it, with
// the replies before it sent, and goes on when the pause ends (timeout or
// CLIENT UNPAUSE), in order. In ALL mode that includes CLIENT UNPAUSE
// itself, as in Redis. Pauses combine: the more restrictive mode and the
// later end. Failover uses it: pause writes, let the replica's offset
// reach the master's, promote it. So its OK comes once every command
// running when the pause began has finished (or waits, held by it): after
// it nothing writes until the pause ends.
//
// While a pause holds, the shards expire nothing, actively or on access
// (shard.Shard.Paused: an expired key reads as missing, as on a replica,
// and is deleted once the pause ends), so the dataset and the replication
// stream stand still as Redis's do.
//
// Invariant: a connection parks only with nothing else in flight (it sets
// inflight to 1 and is completed exactly once: by unpause, or at once if
// the pause ended before it was listed), so its order is kept.
type pauseState struct {
	mode    atomic.Int32 // pauseNone, pauseWrite, pauseAll; read per command
	mu      sync.Mutex
	end     time.Time
	timer   *time.Timer
	waiters []*Conn
	// failover: a FAILOVER holds writes (holdWrites): neither a timer nor
	// CLIENT UNPAUSE ends its WRITE pause, only the failover's end.
	failover bool
}

const (
	pauseNone int32 = iota
	pauseWrite
	pauseAll
)

// mayReplicate are the commands without the write flag that WRITE pauses
// (Redis's may-replicate).
var mayReplicate = map[string]bool{"eval": true, "evalsha": true, "publish": true, "spublish": true, "pfcount": true}

// pausedFor reports whether the pause holds p's command (prepared).
func (c *Conn) pausedFor(p *pending) bool {
	switch c.srv.pause.mode.Load() {
	case pauseNone:
		return false
	case pauseAll:
		return true
	}
	cmd := p.cmd
	if cmd.Flags&command.FlagWrite != 0 || mayReplicate[cmd.Name] {
		return true
	}
	if cmd.Name == "exec" && c.multi != nil {
		for _, q := range c.multi.cmds {
			if q.cmd.Flags&command.FlagWrite != 0 || mayReplicate[q.cmd.Name] {
				return true
			}
		}
	}
	return false
}

// park holds c until the pause ends (see the invariant above).
func (c *Conn) park() {
	c.inflight.Store(1)
	c.holdReplies = false // the replies before the held command go out now
	ps := &c.srv.pause
	ps.mu.Lock()
	if ps.mode.Load() == pauseNone {
		ps.mu.Unlock()
		c.complete(false)
		return
	}
	c.parked.Store(true)
	ps.waiters = append(ps.waiters, c)
	ps.mu.Unlock()
}

// release completes the connections a pause held.
func release(waiters []*Conn) {
	for _, c := range waiters {
		c.parked.Store(false)
		c.complete(false)
	}
}

// pauseClients starts or extends a pause.
func (s *Server) pauseClients(mode int32, d time.Duration) {
	ps := &s.pause
	ps.mu.Lock()
	defer ps.mu.Unlock()
	was := ps.mode.Load()
	if mode > was {
		ps.mode.Store(mode)
	}
	if end := time.Now().Add(d); end.After(ps.end) || was == pauseNone {
		ps.end = end
		if ps.timer != nil {
			ps.timer.Stop()
		}
		ps.timer = time.AfterFunc(d, func() { s.unpauseAt(end) })
	}
	if was == pauseNone {
		s.setShardsPaused(true)
	}
}

// unpauseAt ends the pause that was to end at end (a timer's; a later
// extension has its own timer).
func (s *Server) unpauseAt(end time.Time) {
	s.pause.mu.Lock()
	if !s.pause.end.Equal(end) {
		s.pause.mu.Unlock()
		return
	}
	s.unpauseLocked()
}

// unpause ends any pause (CLIENT UNPAUSE).
func (s *Server) unpause() {
	s.pause.mu.Lock()
	s.unpauseLocked()
}

func (s *Server) unpauseLocked() {
	ps := &s.pause
	if ps.mode.Load() == pauseNone {
		ps.mu.Unlock()
		return
	}
	if ps.failover {
		// Only the failover's WRITE pause stays: connections held by an
		// ALL pause go on, and those at a write park again.
		ps.mode.Store(pauseWrite)
		waiters := ps.waiters
		ps.waiters = nil
		ps.mu.Unlock()
		release(waiters)
		return
	}
	ps.mode.Store(pauseNone)
	ps.end = time.Time{}
	if ps.timer != nil {
		ps.timer.Stop()
		ps.timer = nil
	}
	waiters := ps.waiters
	ps.waiters = nil
	s.setShardsPaused(false)
	ps.mu.Unlock()
	release(waiters)
}

// setShardsPaused posts the expiry switch to every shard (the caller may
// be on a loop that owns one: it does not wait).
func (s *Server) setShardsPaused(on bool) {
	for _, sh := range s.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) { sh.Paused = on }))
	}
}

// clientPause is CLIENT PAUSE timeout [WRITE|ALL].
func clientPause(c *Conn, a [][]byte, w *resp.Writer) {
	ms, err := strconv.ParseInt(string(a[2]), 10, 64)
	if err != nil {
		w.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		w.Error("ERR timeout is negative")
		return
	}
	mode := pauseAll
	if len(a) == 4 {
		switch strings.ToLower(string(a[3])) {
		case "write":
			mode = pauseWrite
		case "all":
		default:
			w.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	} else if len(a) > 4 {
		command.SubcommandSyntaxErr(w, a, "client")
		return
	}
	d := time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	c.srv.pauseClients(mode, d)
	if !c.mayDefer {
		// Inside EXEC or a script: the transaction is itself in flight.
		w.SimpleString("OK")
		return
	}
	// The OK waits for the commands already running (drainWrites): a
	// client that pauses writes and then reads the replication offset
	// must not see a write land after it — Redis, single-threaded, has
	// none in flight. Bounded by the pause itself.
	end := time.Now().Add(d)
	c.deferred = func(w *resp.Writer) {
		c.srv.drainWrites(end, nil, c)
		w.SimpleString("OK")
	}
}

// defersReply reports whether args are CLIENT PAUSE ... or SHUTDOWN ...,
// which go after the commands gathered before them (dispatch): their
// replies may wait off the loop (Conn.deferred) for everything dispatched
// before (the pause's drain, the final save).
func defersReply(args [][]byte) bool {
	return len(args) > 1 && strings.EqualFold(string(args[0]), "client") && strings.EqualFold(string(args[1]), "pause") ||
		strings.EqualFold(string(args[0]), "shutdown")
}
