package server

import (
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tracking"
)

// Client-side caching's wiring (package tracking holds the machinery):
// CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO; which keys a command
// registers, on which path; the connection as tracking reaches it.

// trackConn is a connection as package tracking reaches it.
type trackConn Conn

func (t *trackConn) Proto() int         { return (*Conn)(t).protoAtomic() }
func (t *trackConn) PubSub() bool       { return t.sub.subscribed.Load() }
func (t *trackConn) Deliver(msg []byte) { (*Conn)(t).deliver(msg) }

// trackHost finds redirect targets.
type trackHost Server

func (h *trackHost) Target(id int64) tracking.Conn {
	if c := (*Server)(h).connByID(id); c != nil && !c.closed.Load() {
		return (*trackConn)(c)
	}
	return nil
}

// messagesDue is how many of the messages delivered may go out now: all,
// except while a command is in flight for a client tracking keys for
// itself, whose invalidations (its own command's too) follow that
// command's reply, as in Redis.
func (c *Conn) messagesDue() uint64 {
	if o := c.tracker.Options(); o != nil && o.Redirect == 0 && c.inflight.Load() != 0 && c.readyUpTo < len(c.cmds) {
		return c.cmds[c.readyUpTo].msgMark
	}
	return c.sub.enq.Load()
}

// installTracking attaches every shard's table to the registry; at start.
func (s *Server) installTracking() {
	s.tracking = tracking.NewRegistry((*trackHost)(s))
	for _, sh := range s.shards {
		sh.Tracking().Attach(s.tracking)
	}
}

// stopTracking turns c's tracking off; gone: c disconnected, and every
// shard forgets what it read.
func (c *Conn) stopTracking(gone bool) {
	if c.tracker == nil {
		return
	}
	c.srv.tracking.Set(c.tracker, nil)
	if gone {
		t := c.tracker
		for _, sh := range c.srv.shards {
			sh.Send(shard.Func(func(s *shard.Shard) { s.Tracking().Drop(t) }))
		}
	}
}

// tracksNext decides whether cmd, about to run, registers the keys it
// reads, and consumes CLIENT CACHING's one-command flag.
func (c *Conn) tracksNext(cmd *command.Command) bool {
	o := c.tracker.Options()
	if o == nil || o.BCAST {
		return false
	}
	caching := c.caching
	if cmd.Name != "client" && cmd.Name != "multi" && (c.multi == nil || cmd.Name == "exec") {
		c.caching = false // it covers the next command (a transaction: up to EXEC)
	}
	return o.Tracks(caching) && (cmd.ReadsKeys() || cmd.Name == "exec")
}

// trackedKeys appends the keys p's command reads (EXEC: those of its
// read-only queued commands) to dst; a script's when it ran a read (read,
// or queued.read in EXEC), as Redis 7.0 tracks them then.
func (c *Conn) trackedKeys(dst [][]byte, p *pending, m *multiState, read bool) [][]byte {
	var pos []int
	if p.cmd.Name == "exec" {
		if m == nil {
			return dst
		}
		for _, q := range m.cmds {
			if !q.cmd.ReadsKeys() || !read && q.cmd.IsScript() && !q.read {
				continue
			}
			for _, i := range q.cmd.Keys(pos[:0], q.args) {
				dst = append(dst, q.args[i])
			}
		}
		return dst
	}
	if !read && p.cmd.IsScript() {
		return dst
	}
	for _, i := range p.cmd.Keys(pos, p.args) {
		dst = append(dst, p.args[i])
	}
	return dst
}

// trackOnShard registers the keys p read, on s, in the step that ran it
// (a connection's batch: they are all s's).
func (c *Conn) trackOnShard(s *shard.Shard, p *pending, m *multiState, read bool) {
	for _, k := range c.trackedKeys(nil, p, m, read) {
		s.Track(string(k), c.tracker)
	}
}

// trackAhead registers the keys p will read by a message to each of their
// shards, sent before the command's own messages (it runs on a
// coordinator or a hop group): each shard handles it first.
func (c *Conn) trackAhead(p *pending) {
	for _, k := range c.trackedKeys(nil, p, c.multi, true) {
		key := string(k)
		t := c.tracker
		c.srv.shards[c.srv.ShardOf(k)].Send(shard.Func(func(s *shard.Shard) { s.Track(key, t) }))
	}
}

// clientTracking is CLIENT TRACKING on|off [REDIRECT id] [BCAST]
// [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP].
func clientTracking(c *Conn, a [][]byte, w *resp.Writer) {
	exists := func(id int64) bool { return c.srv.connByID(id) != nil }
	o, e := tracking.Parse(a, c.tracker.Options(), exists)
	if e != "" {
		w.Error(e)
		return
	}
	if o == nil {
		c.stopTracking(false)
		c.caching = false
	} else {
		if c.tracker == nil {
			c.tracker = c.srv.tracking.NewClient((*trackConn)(c))
		}
		c.srv.tracking.Set(c.tracker, o)
	}
	w.SimpleString("OK")
}

// clientCaching is CLIENT CACHING yes|no.
func clientCaching(c *Conn, a [][]byte, w *resp.Writer) {
	if e := tracking.CheckCaching(c.tracker.Options(), a[2]); e != "" {
		w.Error(e)
		return
	}
	c.caching = true
	w.SimpleString("OK")
}

// clientGetRedir is CLIENT GETREDIR: -1 when not tracking.
func clientGetRedir(c *Conn, w *resp.Writer) {
	o := c.tracker.Options()
	if o == nil {
		w.Int(-1)
		return
	}
	w.Int(o.Redirect)
}
