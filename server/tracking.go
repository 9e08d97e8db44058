package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO.
//
// A tracking client (default mode) is told when a key it read changed:
// the keys of its read-only commands (and of its scripts: their declared
// keys, a superset of what they read) are registered on their shards
// (shard/tracking.go), in the step that reads them when the command runs
// in the connection's batch, or by a message sent ahead of the command on
// the other paths (coordinated commands, EXEC across shards), which the
// shard handles first. A write, deletion, expiry or eviction of the key
// then sends one invalidation and forgets the registration; a flush tells
// every tracking client to drop everything (a null key). OPTIN tracks only
// the command after CLIENT CACHING YES, OPTOUT all but the one after
// CLIENT CACHING NO. BCAST tracks nothing per client: every change of a
// key under one of its prefixes (all keys without one) is sent.
//
// Invalidations go to the client itself as a RESP3 push, or, with
// REDIRECT, to that client: a RESP3 push, or a RESP2 message on channel
// __redis__:invalidate if it subscribed to it. They are queued like
// Pub/Sub messages (Conn.deliver), bounded the same way.
//
// NOLOOP: a client is not told of changes its own commands made, when they
// run in its connection's batch (the shard knows the writer: SetWriter);
// a command run by a coordinator (one spanning shards, EXEC across shards,
// a script on a coordinator) still tells it: an extra invalidation, never
// a stale cache.
//
// Not done: BCAST sends each key as it changes instead of batching a
// loop's keys; PREFIX collisions between a client's prefixes are not
// refused.

const trackingChannel = "__redis__:invalidate"

// trackState is a connection's tracking configuration; replaced whole
// (Conn.track), read from shard goroutines.
type trackState struct {
	on, bcast, optin, optout, noloop bool
	redirect                         int64
	prefixes                         []string
}

// connTracker is a connection as shards see it (shard.Tracker).
type connTracker struct{ c *Conn }

func (t *connTracker) Tracking() bool {
	st := t.c.track.Load()
	return st != nil && st.on && !st.bcast && !t.c.closed.Load()
}

func (t *connTracker) Invalidate(key string, writer shard.Tracker) {
	if st := t.c.track.Load(); st != nil && st.noloop && writer == shard.Tracker(t) {
		return // NOLOOP: its own write
	}
	t.c.srv.invalidate(t.c, key, false)
}

// trackingRegistry is the server's list of tracking clients (flushes tell
// them all) and of BCAST ones (every change is checked against them).
type trackingRegistry struct {
	mu    sync.RWMutex
	conns map[*Conn]struct{}
	bcast atomic.Int32
}

func (r *trackingRegistry) set(c *Conn, st *trackState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		r.conns = map[*Conn]struct{}{}
	}
	old := c.track.Swap(st)
	if old != nil && old.on && old.bcast {
		r.bcast.Add(-1)
	}
	if st != nil && st.on {
		r.conns[c] = struct{}{}
		if st.bcast {
			r.bcast.Add(1)
		}
	} else {
		delete(r.conns, c)
	}
}

// installTracking gives every shard the BCAST hook; called once at start.
func (s *Server) installTracking() {
	for _, sh := range s.shards {
		sh.SetTrackingHook(s.bcastChanged)
	}
}

// bcastChanged tells the BCAST clients whose prefixes match that key
// changed; on the shard goroutine, for every changed key.
func (s *Server) bcastChanged(key string, writer shard.Tracker) {
	r := &s.tracking
	if r.bcast.Load() == 0 {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for c := range r.conns {
		st := c.track.Load()
		if st == nil || !st.bcast || c.closed.Load() || st.noloop && writer == shard.Tracker(c.tracker) {
			continue
		}
		match := len(st.prefixes) == 0
		for _, p := range st.prefixes {
			if strings.HasPrefix(key, p) {
				match = true
				break
			}
		}
		if match {
			s.invalidate(c, key, false)
		}
	}
}

// trackingFlushed tells every tracking client to drop its cache (after
// FLUSHDB or FLUSHALL).
func (s *Server) trackingFlushed() {
	r := &s.tracking
	r.mu.RLock()
	defer r.mu.RUnlock()
	for c := range r.conns {
		s.invalidate(c, "", true)
	}
}

// invalidate sends one invalidation (all = a flush: a null key) for the
// tracking client c, to c or its redirect target.
func (s *Server) invalidate(c *Conn, key string, all bool) {
	st := c.track.Load()
	if st == nil {
		return
	}
	target := c
	if st.redirect > 0 {
		if target = s.connByID(st.redirect); target == nil {
			return
		}
	}
	w := resp.Writer{Proto: target.protoAtomic()}
	if w.Proto == 3 {
		w.Push(2)
		w.BulkString("invalidate")
	} else {
		s.pubsub.mu.RLock()
		_, subscribed := s.pubsub.reg[subChannel][trackingChannel][target]
		s.pubsub.mu.RUnlock()
		if !subscribed {
			return
		}
		w.Array(3)
		w.BulkString("message")
		w.BulkString(trackingChannel)
	}
	if all {
		w.Null()
	} else {
		w.Array(1)
		w.BulkString(key)
	}
	target.deliver(w.Buf)
}

// tracksNext decides whether cmd, about to run, registers the keys it
// reads, and consumes CLIENT CACHING's one-command flag.
func (c *Conn) tracksNext(cmd *command.Command) bool {
	st := c.track.Load()
	if st == nil || !st.on || st.bcast {
		return false
	}
	caching := c.caching
	if cmd.Name != "client" && cmd.Name != "multi" && (c.multi == nil || cmd.Name == "exec") {
		c.caching = false // it covers the next command (a transaction: up to EXEC)
	}
	if st.optin && !caching || st.optout && caching {
		return false
	}
	return tracksKeys(cmd) || cmd.Name == "exec"
}

// tracksKeys: cmd reads the keys it names (a script: may read them).
func tracksKeys(cmd *command.Command) bool {
	if cmd.Flags&command.FlagReadonly != 0 {
		return true
	}
	switch cmd.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// trackedKeys appends the keys p's command reads (EXEC: those of its
// read-only queued commands) to dst.
func (c *Conn) trackedKeys(dst [][]byte, p *pending, m *multiState) [][]byte {
	var pos []int
	if p.cmd.Name == "exec" {
		if m == nil {
			return dst
		}
		for _, q := range m.cmds {
			if !tracksKeys(q.cmd) {
				continue
			}
			for _, i := range q.cmd.Keys(pos[:0], q.args) {
				dst = append(dst, q.args[i])
			}
		}
		return dst
	}
	for _, i := range p.cmd.Keys(pos, p.args) {
		dst = append(dst, p.args[i])
	}
	return dst
}

// trackOnShard registers the keys p read, on s, in the step that ran it
// (a connection's batch: they are all s's).
func (c *Conn) trackOnShard(s *shard.Shard, p *pending, m *multiState) {
	for _, k := range c.trackedKeys(nil, p, m) {
		s.Track(string(k), c.tracker)
	}
}

// trackAhead registers the keys p will read by a message to each of their
// shards, sent before the command's own messages (it runs on a
// coordinator or a hop group): each shard handles it first.
func (c *Conn) trackAhead(p *pending) {
	for _, k := range c.trackedKeys(nil, p, c.multi) {
		key := string(k)
		t := c.tracker
		c.srv.shards[c.srv.ShardOf(k)].Send(shard.Func(func(s *shard.Shard) { s.Track(key, t) }))
	}
}

// clientTracking is CLIENT TRACKING on|off [REDIRECT id] [BCAST]
// [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP], with Redis's checks.
func clientTracking(c *Conn, a [][]byte, w *resp.Writer) {
	st := &trackState{}
	for j := 3; j < len(a); j++ {
		more := j+1 < len(a)
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "redirect" && more:
			j++
			if st.redirect != 0 {
				w.Error("ERR A client can only redirect to a single other client")
				return
			}
			id, err := strconv.ParseInt(string(a[j]), 10, 64)
			if err != nil {
				w.Error(command.ErrNotInt)
				return
			}
			st.redirect = id
		case opt == "bcast":
			st.bcast = true
		case opt == "optin":
			st.optin = true
		case opt == "optout":
			st.optout = true
		case opt == "noloop":
			st.noloop = true
		case opt == "prefix" && more:
			j++
			st.prefixes = append(st.prefixes, string(a[j]))
		default:
			w.Error(command.ErrSyntax)
			return
		}
	}
	switch strings.ToLower(string(a[2])) {
	case "on":
	case "off":
		c.srv.tracking.set(c, nil)
		c.caching = false
		w.SimpleString("OK")
		return
	default:
		w.Error(command.ErrSyntax)
		return
	}
	old := c.track.Load()
	switch {
	case !st.bcast && len(st.prefixes) > 0:
		w.Error("ERR PREFIX option requires BCAST mode to be enabled")
		return
	case old != nil && old.on && old.bcast != st.bcast:
		w.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	case st.bcast && (st.optin || st.optout):
		w.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
		return
	case st.optin && st.optout:
		w.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
		return
	case old != nil && old.on && (st.optin && old.optout || st.optout && old.optin):
		w.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	}
	if st.redirect != 0 {
		if c.srv.connByID(st.redirect) == nil {
			w.Error("ERR The client ID you want redirect to does not exist")
			return
		}
	}
	if old != nil && old.on && old.bcast {
		st.prefixes = append(append([]string(nil), old.prefixes...), st.prefixes...) // Redis adds them
	}
	st.on = true
	if c.tracker == nil {
		c.tracker = &connTracker{c: c}
	}
	c.srv.tracking.set(c, st)
	w.SimpleString("OK")
}

// clientCaching is CLIENT CACHING yes|no.
func clientCaching(c *Conn, a [][]byte, w *resp.Writer) {
	st := c.track.Load()
	if st == nil || !st.on {
		w.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(a[2])) {
	case "yes":
		if !st.optin {
			w.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !st.optout {
			w.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		w.Error(command.ErrSyntax)
		return
	}
	c.caching = true
	w.SimpleString("OK")
}

// clientGetRedir is CLIENT GETREDIR: -1 when not tracking.
func clientGetRedir(c *Conn, w *resp.Writer) {
	st := c.track.Load()
	if st == nil || !st.on {
		w.Int(-1)
		return
	}
	w.Int(st.redirect)
}

// clientTrackingInfo is CLIENT TRACKINGINFO.
func clientTrackingInfo(c *Conn, w *resp.Writer) {
	st := c.track.Load()
	var flags []string
	redirect := int64(-1)
	var prefixes []string
	if st == nil || !st.on {
		flags = []string{"off"}
	} else {
		flags = []string{"on"}
		for _, f := range []struct {
			on   bool
			name string
		}{{st.bcast, "bcast"}, {st.optin, "optin"}, {st.optout, "optout"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		if c.caching && st.optin {
			flags = append(flags, "caching-yes")
		}
		if c.caching && st.optout {
			flags = append(flags, "caching-no")
		}
		if st.noloop {
			flags = append(flags, "noloop")
		}
		redirect = st.redirect
		if redirect > 0 {
			if c.srv.connByID(redirect) == nil {
				flags = append(flags, "broken_redirect")
			}
		}
		prefixes = st.prefixes
	}
	w.Map(3)
	w.BulkString("flags")
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	w.Int(redirect)
	w.BulkString("prefixes")
	w.Array(len(prefixes))
	for _, p := range prefixes {
		w.BulkString(p)
	}
}
