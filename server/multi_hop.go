package server

import (
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// hopExec is an EXEC run from the connection's own event loop, without a
// coordinator goroutine, when each queued command lives on one shard and
// the shards involved are those of the connection's loop ("local") plus at
// most one other ("remote"). It costs one round trip to the remote shard
// (none without one) instead of a coordinator's lock and run rounds:
//
//  1. On the loop, in dispatch: take the local keys' locks if they are
//     free now (try, never wait), else give up (the coordinator runs EXEC).
//  2. One message to the remote shard: if its keys are free right now, run
//     its commands and finish, all in that message; else do nothing. Then
//     post step 3 to the local shard (the connection's loop).
//  3. On the loop: if the remote part ran, run the local commands and
//     connection commands, release the local locks and answer; else
//     release them and hand EXEC to a coordinator, which takes every lock
//     in shard order.
//
// Atomicity (DESIGN §8.2): the local keys are locked from before the
// remote part runs until after the local part ran, and the remote part
// runs as one message, inside which nothing else runs on that shard. A
// reader that saw a remote key's new value can only reach a local key
// after the local part (it waits on the lock); a transaction that holds
// both shards' keys at once holds them either before step 1 (step 2 then
// finds its keys taken) or after step 3. With two or more remote shards
// their parts would become visible at different times with nothing held
// between them, so such an EXEC takes the coordinator.
//
// No deadlock: the remote shard never waits (try, else refuse), so the
// local locks are never held while waiting for another lock; a refusal
// releases them before the coordinator takes locks in shard order.
//
// It does not apply (the coordinator runs EXEC) with WATCH, while a
// journal records (its commit order needs the coordinator), with tiered
// storage (values may need loading first), or when a command spans shards,
// has no key, or needs a coordinator.
type hopExec struct {
	c       *Conn
	p       *pending // EXEC's slot: its reply
	m       *multiState
	sids    []int // per queued command: its shard, -1 for a connection command
	replies []resp.Writer
	local   []int             // the local shards involved
	keys    [][]shard.KeyLock // per involved shard id (nil if not involved)
	remote  int               // -1: none
	ran     bool              // the remote part ran
	step    hopStep
}

type hopStep uint8

const (
	hopRemote hopStep = iota // step 2
	hopFinish                // step 3
	hopLocal                 // a local shard's part, within step 3
)

// startHopExec tries to run the EXEC in p as a hopExec; false means the
// coordinator must run it (nothing was done).
func (c *Conn) startHopExec(p *pending) bool {
	m := c.multi
	if m == nil || m.dirty || c.watch != nil || c.loop < 0 || len(c.srv.shards) == 1 {
		return false
	}
	h := &hopExec{c: c, p: p, m: m, remote: -1, sids: make([]int, len(m.cmds))}
	for i, q := range m.cmds {
		if q.cmd.Local != nil {
			if q.cmd.Name == "exec" || q.cmd.Name == "multi" {
				return false
			}
			h.sids[i] = -1
			continue
		}
		sid := c.srv.singleShard(q.cmd, q.args, &c.keyPos)
		if sid < 0 || len(c.keyPos) == 0 {
			return false
		}
		h.sids[i] = sid
		if c.srv.shardLoop[sid] != c.loop {
			if h.remote >= 0 && h.remote != sid {
				return false // two remote shards
			}
			h.remote = sid
		}
		if h.keys == nil {
			h.keys = make([][]shard.KeyLock, len(c.srv.shards))
		}
		if h.keys[sid] == nil && c.srv.shardLoop[sid] == c.loop {
			h.local = append(h.local, sid)
		}
		excl := q.cmd.Flags&FlagWrite != 0
		for _, ki := range c.keyPos {
			h.keys[sid] = addKeyLock(h.keys[sid], q.db, string(q.args[ki]), excl)
		}
	}
	if len(h.local) == 0 {
		return false
	}
	// Step 1: the local locks, now or never. A journal cannot start
	// recording on a shard while its keys are locked (recording starts in
	// a step holding every shard), so it stays off for this EXEC here;
	// hence no snapshot streaming with a journal needs to see its keys
	// first either (shard.Capture).
	for n, sid := range h.local {
		s := c.srv.shards[sid]
		if s.Journal.Active() || s.Tier() != nil || !s.Available(h.keys[sid]) {
			for _, held := range h.local[:n] {
				c.srv.shards[held].Release(h.keys[held], false)
			}
			return false
		}
		s.Acquire(h.keys[sid], false)
	}
	h.replies = make([]resp.Writer, len(m.cmds))
	for i := range h.replies {
		h.replies[i].Proto = c.proto
	}
	c.inflight.Store(1)
	c.holdReplies = true
	if h.remote < 0 {
		h.ran = true
		h.complete(true)
		return true
	}
	c.srv.shards[h.remote].Send(h)
	return true
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

func (h *hopExec) Run(s *shard.Shard) {
	switch h.step {
	case hopFinish:
		h.complete(false)
		return
	case hopLocal:
		h.runShard(s)
		return
	}
	// Step 2, on the remote shard: all or nothing, inside this message.
	if !s.Journal.Active() && s.Tier() == nil && s.Available(h.keys[s.ID]) {
		h.runShard(s)
		h.ran = true
	}
	h.step = hopFinish
	h.c.srv.shards[h.local[0]].Send(h)
}

// runShard runs the commands of shard s, in their order.
func (h *hopExec) runShard(s *shard.Shard) {
	for i, q := range h.m.cmds {
		if h.sids[i] == s.ID {
			q.cmd.calls.Add(1)
			e := Exec{S: s, DB: s.DBs[q.db], Args: q.args, W: &h.replies[i], Srv: h.c.srv, Conn: h.c}
			e.run(q.cmd)
		}
	}
}

// complete is step 3, on the connection's loop (whose goroutine owns the
// local shards): finish and answer, or fall back to the coordinator.
// inline: called within the connection's serve.
func (h *hopExec) complete(inline bool) {
	c := h.c
	c.holdReplies = false
	if !h.ran {
		for _, sid := range h.local {
			c.srv.shards[sid].Release(h.keys[sid], false)
		}
		// inflight stays 1: the coordinator completes the unit.
		co := &Coord{Srv: c.srv, Conn: c, DB: h.p.db, Args: h.p.args, W: &h.p.reply, cmd: h.p.cmd}
		go co.run(c)
		return
	}
	c.multi = nil
	h.step = hopLocal
	for _, sid := range h.local {
		c.srv.shards[sid].Exec(h) // the shard's clock is refreshed first
	}
	for _, sid := range h.local {
		c.srv.shards[sid].Release(h.keys[sid], false)
	}
	for i, q := range h.m.cmds {
		if h.sids[i] < 0 {
			q.cmd.calls.Add(1)
			q.cmd.Local(c, q.args, &h.replies[i])
		}
	}
	w := &h.p.reply
	w.Array(len(h.m.cmds))
	for i := range h.replies {
		w.Buf = append(w.Buf, h.replies[i].Buf...)
	}
	h.p.cmd.calls.Add(1)
	c.complete(inline)
}
