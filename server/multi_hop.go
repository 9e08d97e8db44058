package server

import (
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// A hop group runs a run of a connection's pipelined commands that touch
// the shards of the connection's own event loop ("local") and at most one
// other shard ("remote") — single-shard commands, and EXECs whose queued
// commands each live on one of those shards — from the loop itself, with
// one round trip to the remote shard for the whole run instead of one per
// EXEC and a coordinator's lock and run rounds:
//
//  1. On the loop, in dispatch: as each command of the run is gathered, the
//     local keys of the run so far are locked if they are free now (try,
//     never wait); a command whose keys are not free ends the run before it.
//     The remote commands, and the remote parts of the EXECs, go into the
//     remote shard's batch.
//  2. One message to the remote shard: it runs the batch in order; a
//     command whose keys are taken (or an EXEC part meeting a recording
//     journal or tiered storage) is refused, not parked, and the batch
//     stops there. Then it posts step 3 to the connection's loop.
//  3. On the loop: the local commands and EXEC parts before the refused
//     command run, in order, and the local locks are released; the EXECs
//     are answered. The commands from the refused one on are dispatched
//     again (pending.kind), an EXEC among them by a coordinator, which takes
//     every lock in shard order.
//
// Atomicity (docs/DESIGN.md §8.2): every local key of the run is locked from before
// the remote message until after the local commands ran, and the remote
// part runs as one message, inside which nothing else runs on that shard.
// A reader that saw a remote key's new value can only reach a local key
// after step 3 (it waits on the lock); a transaction that holds both
// shards' keys at once holds them either before step 1 (step 2 then finds
// its keys taken) or after step 3. So the run is one atomic unit, and each
// EXEC in it too, in the connection's order. With two or more remote shards
// their parts would become visible at different times with nothing held
// between them, so a second remote shard ends the run.
//
// No deadlock: nothing in a group waits for a lock while the group holds
// one — the local locks are tried, never waited for; the remote shard
// refuses instead of parking, so the local locks are never held while
// waiting for another lock; a refusal releases them before anything waits.
// A command that may wait in another way (blocking commands, scripts that
// may hand themselves to a coordinator) is not part of a group.
//
// A journal cannot start recording on a shard while its keys are locked
// (recording starts in a step holding every shard), so a local shard found
// not recording in step 1 stays so for the group; hence no snapshot
// streaming with a journal needs to see the local keys first either
// (shard.Capture). Groups are not formed with WATCH (EXEC checks it), nor
// on a local shard with tiered storage (values may need loading first).
type hopGroup struct {
	c      *Conn
	remote int // -1: none (yet)
	// keys: per shard id, the local keys the group holds (each once,
	// exclusively if any command writes it); local: the shards with keys.
	keys  [][]shard.KeyLock
	local []int
	// hops are the EXECs of the group (command indices).
	hops []int32
	// end: the first command after the group; stop: the first command that
	// did not run (the refused one), end when all ran.
	end, stop int
	// free: hopExecs to reuse; one, sid, lockBuf: scratch for hold.
	free    []*hopExec
	one     [][]shard.KeyLock
	sid     [1]int
	lockBuf []shard.KeyLock
}

// hopExec is an EXEC in a hop group: its queued commands' shards and the
// replies they write, assembled into EXEC's array in step 3.
type hopExec struct {
	m       *multiState
	sids    []int // per queued command: its shard, -1 for a connection command
	replies []resp.Writer
	keys    [][]shard.KeyLock // per involved shard id (nil if not involved)
	local   []int             // the local shards involved
	remote  int               // -1: none
	// conn: it queued connection commands, which run when it is answered
	// (step 3) and may change what the commands after it see (SELECT):
	// the group ends after it.
	conn bool
}

// pendingKind is what dispatch made of a command, so that the commands a
// hop group gave back can be dispatched again without running their
// connection commands (or queuing them in MULTI) twice.
type pendingKind uint8

const (
	kindNew   pendingKind = iota
	kindDone              // answered while gathered (connection command, queued, error)
	kindShard             // single-shard work (pending.sid)
	kindCoord             // an EXEC a hop group (or a script a forwarded run) gave back: a coordinator runs it
	kindFwd               // a script in a forwarded run (forward.go)
)

// hopExecOf describes the EXEC in p as a hop group member, or returns nil
// when it cannot be one: WATCH, a queuing error, over maxmemory (oom.go), a command spanning shards
// or without keys or needing a coordinator, more than one remote shard, or
// no local shard.
func (c *Conn) hopExecOf(p *pending) *hopExec {
	m := c.multi
	if m == nil || m.dirty || c.srv.oom.Load() || c.watch != nil || c.loop < 0 || len(c.srv.shards) == 1 {
		return nil
	}
	g := c.hopGroup()
	h := g.newHop(m)
	for _, q := range m.cmds {
		if q.cmd.Local != nil {
			if q.cmd.Name == "exec" || q.cmd.Name == "multi" {
				g.free = append(g.free, h)
				return nil
			}
			h.sids = append(h.sids, -1)
			h.conn = true
			continue
		}
		sid := c.srv.singleShard(q.cmd, q.args, &c.keyPos)
		if sid < 0 || len(c.keyPos) == 0 || q.cmd.Flags&command.FlagBlocking != 0 ||
			c.srv.shardLoop[sid] != c.loop && h.remote >= 0 && h.remote != sid { // two remote shards
			g.free = append(g.free, h)
			return nil
		}
		h.sids = append(h.sids, sid)
		if c.srv.shardLoop[sid] != c.loop {
			h.remote = sid
		} else if !h.involves(sid) {
			h.local = append(h.local, sid)
		}
		excl := q.cmd.Flags&command.FlagWrite != 0
		for _, ki := range c.keyPos {
			h.keys[sid] = addKeyLock(h.keys[sid], q.db, string(q.args[ki]), excl)
		}
	}
	if len(h.local) == 0 {
		g.free = append(g.free, h)
		return nil
	}
	return h
}

// newHop is a hopExec for m, reused from the group's free list: a
// connection's EXECs cost no allocations of their own once it has run a
// few.
func (g *hopGroup) newHop(m *multiState) *hopExec {
	var h *hopExec
	if n := len(g.free); n > 0 {
		h, g.free = g.free[n-1], g.free[:n-1]
		for _, sid := range h.local {
			h.keys[sid] = h.keys[sid][:0]
		}
		if h.remote >= 0 {
			h.keys[h.remote] = h.keys[h.remote][:0]
		}
	} else {
		h = &hopExec{keys: make([][]shard.KeyLock, len(g.keys))}
	}
	h.m, h.remote, h.conn = m, -1, false
	h.sids, h.local = h.sids[:0], h.local[:0]
	return h
}

// recycle drops what the EXEC refers to before the hopExec is reused.
func (h *hopExec) recycle() {
	h.m = nil
	for i := range h.replies {
		if cap(h.replies[i].Buf) > replyKeepCap {
			h.replies[i].Buf = nil
		}
	}
}

// involves reports whether local shard sid has a part of the EXEC.
func (h *hopExec) involves(sid int) bool {
	for _, l := range h.local {
		if l == sid {
			return true
		}
	}
	return false
}

// addKeyLock adds a key to a shard's lock list: a key named twice is
// locked once, exclusively if either use writes.
func addKeyLock(keys []shard.KeyLock, db int, key string, excl bool) []shard.KeyLock {
	for i := range keys {
		if keys[i].DB == db && keys[i].Key == key {
			keys[i].Excl = keys[i].Excl || excl
			return keys
		}
	}
	return append(keys, shard.KeyLock{DB: db, Key: key, Excl: excl})
}

// hopGroup is the connection's hop group (one at a time).
func (c *Conn) hopGroup() *hopGroup {
	if c.group == nil {
		n := len(c.srv.shards)
		c.group = &hopGroup{c: c, keys: make([][]shard.KeyLock, n), one: make([][]shard.KeyLock, n)}
	}
	return c.group
}

// newGroup returns the connection's hop group, reset.
func (c *Conn) newGroup() *hopGroup {
	g := c.hopGroup()
	g.remote, g.end, g.stop = -1, 0, 0
	g.local, g.hops = g.local[:0], g.hops[:0]
	return g
}

// hold takes the local keys of one command of the group (keys[sid] for
// each local shard sid in sids) if all are free now; it takes nothing and reports
// false otherwise. A key the group holds already counts as free unless the
// command needs it exclusively and the group holds it shared.
func (g *hopGroup) hold(keys [][]shard.KeyLock, sids []int) bool {
	srv := g.c.srv
	var one [1]shard.KeyLock
	for _, sid := range sids {
		s := srv.shards[sid]
		if s.Lent() || s.Journal.Active() || s.Tier() != nil {
			s.Recall()   // (if lent) kept by its borrower: wanted back
			return false // Lent first: a lent shard's state is its borrower's
		}
		for _, k := range keys[sid] {
			held, ok := g.holds(sid, k)
			one[0] = k
			if held && !ok || !held && !s.Available(one[:]) {
				return false
			}
		}
	}
	for _, sid := range sids {
		if !g.isLocal(sid) {
			g.local = append(g.local, sid)
			g.keys[sid] = g.keys[sid][:0]
		}
		for _, k := range keys[sid] {
			if held, _ := g.holds(sid, k); !held {
				g.keys[sid] = append(g.keys[sid], k)
				one[0] = k
				srv.shards[sid].Acquire(one[:], false)
			}
		}
	}
	return true
}

func (g *hopGroup) isLocal(sid int) bool {
	for _, l := range g.local {
		if l == sid {
			return true
		}
	}
	return false
}

// holds reports whether the group holds k's key on shard sid, and if so
// whether that covers k (exclusive, or k only reads).
func (g *hopGroup) holds(sid int, k shard.KeyLock) (held, covers bool) {
	if !g.isLocal(sid) {
		return false, false
	}
	for _, h := range g.keys[sid] {
		if h.DB == k.DB && h.Key == k.Key {
			return true, h.Excl || !k.Excl
		}
	}
	return false, false
}

// addHop adds the EXEC in c.cmds[i], described by h, to the group; false
// (nothing done) when its remote shard is not the group's or its local
// keys are not free.
func (g *hopGroup) addHop(i int, p *pending, h *hopExec) bool {
	c := g.c
	if h.remote >= 0 && g.remote >= 0 && h.remote != g.remote {
		return false
	}
	if !g.hold(h.keys, h.local) {
		return false
	}
	if h.remote >= 0 {
		g.remote = h.remote
	}
	if cap(h.replies) < len(h.m.cmds) {
		h.replies = make([]resp.Writer, len(h.m.cmds))
	}
	h.replies = h.replies[:len(h.m.cmds)]
	for j := range h.replies {
		h.replies[j].Proto = c.proto
		h.replies[j].Buf = h.replies[j].Buf[:0]
	}
	p.hop, p.multi, p.kind = h, h.m, kindCoord
	c.multi = nil
	for _, sid := range h.local {
		c.batches[sid].idx = append(c.batches[sid].idx, int32(i))
	}
	if h.remote >= 0 {
		c.addToBatch(h.remote, i)
	}
	g.hops = append(g.hops, int32(i))
	return true
}

// addCommand adds the single-shard command c.cmds[i] to the group; false
// (nothing done) when it cannot be part of it.
func (g *hopGroup) addCommand(i int, p *pending) bool {
	c := g.c
	if c.srv.shardLoop[p.sid] != c.loop {
		if g.remote >= 0 && g.remote != p.sid {
			return false
		}
		g.remote = p.sid
		c.addToBatch(p.sid, i)
		return true
	}
	b := c.batches[p.sid]
	g.lockBuf = b.lockKeys(p, g.lockBuf[:0])
	g.one[p.sid], g.sid[0] = g.lockBuf, p.sid
	ok := g.hold(g.one, g.sid[:])
	g.one[p.sid] = nil
	if !ok {
		return false
	}
	b.idx = append(b.idx, int32(i))
	return true
}

// groupable: a single-shard command (with keys) may run in a hop group if
// it never waits but for its keys: not blocking, not a script (which may
// hand itself to a coordinator).
func groupable(cmd *command.Command) bool {
	return cmd.Flags&command.FlagBlocking == 0 && (cmd.Name == "exec" || !answersSoon(cmd))
}

// start sends the group's remote batch, or runs step 3 at once when there
// is no remote shard. It runs at the end of dispatch.
func (g *hopGroup) start() {
	c := g.c
	g.end, g.stop = c.next, c.next
	c.grouping = false
	c.inflight.Store(1)
	c.holdReplies = true
	if g.remote < 0 {
		g.finish(true)
		return
	}
	b := c.batches[g.remote]
	b.group = g
	c.srv.shards[g.remote].Send(b)
}

// refuse ends the remote batch b at the command it stands at (step 2).
func (g *hopGroup) refuse(b *shardBatch) {
	g.stop = int(b.idx[b.pos])
	g.remoteDone(b)
}

// remoteDone posts step 3 to the connection's loop.
func (g *hopGroup) remoteDone(b *shardBatch) {
	b.idx, b.pos, b.group = b.idx[:0], 0, nil
	b.dropMine() // tiered.go
	g.c.srv.shards[g.local[0]].Send(g)
}

// Run is step 3, posted by the remote shard. A local shard lent to a
// script's run meanwhile (borrow.go: the group's keys are locked, so the
// script has others) is not the loop's to run on until it comes back:
// step 3 then waits among the shard's deferred messages.
func (g *hopGroup) Run(*shard.Shard) {
	for _, sid := range g.local {
		if s := g.c.srv.shards[sid]; s.Lent() {
			s.Exec(g) // deferred; runs again on the shard's return
			return
		}
	}
	g.finish(false)
}

// finish is step 3, on the connection's loop (whose goroutine owns the
// local shards). inline: called within the connection's serve.
func (g *hopGroup) finish(inline bool) {
	c := g.c
	for _, sid := range g.local {
		b := c.batches[sid]
		b.group = g
		c.srv.shards[sid].Exec(b) // the shard's clock is refreshed first
	}
	for _, i := range g.hops {
		p := &c.cmds[i]
		if int(i) < g.stop {
			p.hop.answer(c, &p.reply)
			p.multi, p.kind = nil, kindDone
			p.cmd.Calls.Add(1)
		}
		p.hop.recycle()
		g.free = append(g.free, p.hop)
		p.hop = nil
	}
	if g.stop < g.end {
		c.next = g.stop // dispatched again (pending.kind)
	}
	c.complete(inline)
}

// runLocal runs the group's commands on local shard s (batch b) that come
// before the refused one, in order, without lock checks (the group holds
// their keys), then releases the keys. It is shardBatch.exec for a local
// batch of a group.
func (g *hopGroup) runLocal(b *shardBatch, s *shard.Shard) {
	for _, i := range b.idx {
		if int(i) >= g.stop {
			break
		}
		p := &b.c.cmds[i]
		if p.hop != nil {
			p.hop.runShard(s, b.c)
			continue
		}
		b.runOne(s, p)
	}
	b.idx, b.pos, b.group = b.idx[:0], 0, nil
	s.Release(g.keys[s.ID], false)
}

// runShard runs the EXEC's commands of shard s, in their order.
func (h *hopExec) runShard(s *shard.Shard, c *Conn) {
	s.SetWriter(c.tracker) // NOLOOP
	defer s.SetWriter(nil)
	for i, q := range h.m.cmds {
		if h.sids[i] == s.ID {
			q.cmd.Calls.Add(1)
			e := command.Exec{S: s, DB: s.DBs[q.db], Args: q.args, W: &h.replies[i], Srv: c.srv, Conn: c}
			runTimed(&e, q.cmd, runExec)
		}
	}
}

// answer runs the EXEC's connection commands and writes its reply, once
// its shard parts ran; on the connection's loop.
func (h *hopExec) answer(c *Conn, w *resp.Writer) {
	for i, q := range h.m.cmds {
		if h.sids[i] < 0 {
			q.cmd.Calls.Add(1)
			q.local(c, &h.replies[i])
		}
	}
	w.Array(len(h.m.cmds))
	for i := range h.replies {
		c.srv.countReply(h.m.cmds[i].cmd, false, &h.replies[i], 0)
		w.Buf = append(w.Buf, h.replies[i].Buf...)
	}
}
