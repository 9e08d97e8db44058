package server

import (
	"strconv"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// MULTI/EXEC. Commands after MULTI are queued on the connection (copies of
// their arguments) and answered +QUEUED; EXEC runs them as one transaction
// of package tx: every key of every queued command is locked on its shard
// (exclusively when any command writes it; whole shards for keyless
// commands such as FLUSHALL or DBSIZE), then the commands run one after
// the other, each on its key's shard, and the locks are released. No other
// client's command touches those keys in between; transactions on disjoint
// keys run in parallel; one confined to a shard locks only that shard.
//
// WATCH registers a shard.Watch on each key's shard; any change to a
// watched key (write, delete, expiry, flush) marks it dirty and EXEC then
// answers a null array without running anything.

type queued struct {
	args [][]byte
	cmd  *command.Command
	db   int
	read bool // a script that ran a read command (CLIENT TRACKING)
}

// local runs a queued connection command inside EXEC (every EXEC path
// calls it), with c.inExec set.
func (q queued) local(c *Conn, w *resp.Writer) {
	c.inExec = true
	defer func() { c.inExec = false }()
	runLocal(q.cmd, c, q.args, w)
}

type multiState struct {
	cmds  []queued
	dirty bool // a queuing error: EXEC answers EXECABORT
	// The queued commands' arguments are copied into argv and buf, which
	// start in the arrays below: a short transaction costs one allocation.
	// A slice handed out stays valid when an append moves argv or buf.
	argv    [][]byte
	buf     []byte
	cmdsArr [4]queued
	argvArr [12][]byte
	bufArr  [192]byte
}

func newMultiState() *multiState {
	m := &multiState{}
	m.cmds, m.argv, m.buf = m.cmdsArr[:0], m.argvArr[:0], m.bufArr[:0]
	return m
}

type watchState struct {
	w    *shard.Watch
	keys []watchedKey
}

type watchedKey struct {
	db  int
	key string
	sid int
}

func multiCommands() []*command.Command {
	f := command.FlagNoScript | command.FlagLoading | command.FlagStale | command.FlagFast
	return []*command.Command{
		{Name: "multi", Arity: 1, Flags: f, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdMulti)},
		{Name: "discard", Arity: 1, Flags: f, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdDiscard)},
		{Name: "exec", Arity: 1, Flags: command.FlagNoScript | command.FlagLoading | command.FlagStale, InfoFlags: command.FlagSkipSlowlog, Multi: viaCoord(cmdExec)},
		{Name: "watch", Arity: -2, Flags: f, KeyFlags: "RO", InfoFlags: command.FlagAllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Multi: viaCoord(cmdWatch)},
		{Name: "unwatch", Arity: 1, Flags: f, InfoFlags: command.FlagAllowBusy, Local: viaConn(func(c *Conn, a [][]byte, w *resp.Writer) {
			c.unwatch()
			w.SimpleString("OK")
		})},
	}
}

func init() { command.Register("transactions", multiCommands) }

// multiControl are the commands that act on a transaction instead of being
// queued in it.
var multiControl = map[string]bool{"exec": true, "discard": true, "multi": true, "watch": true,
	"quit": true, "reset": true}

func cmdMulti(c *Conn, a [][]byte, w *resp.Writer) {
	if c.multi != nil {
		w.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = newMultiState()
	w.SimpleString("OK")
}

func cmdDiscard(c *Conn, a [][]byte, w *resp.Writer) {
	if c.multi == nil {
		w.Error("ERR DISCARD without MULTI")
		return
	}
	c.multi = nil
	c.unwatch()
	w.SimpleString("OK")
}

// queue adds a command to the open transaction; it runs on the loop.
func (c *Conn) queue(p *pending) {
	m := c.multi
	start := len(m.argv)
	for _, a := range p.args {
		m.buf = append(m.buf, a...)
		m.argv = append(m.argv, m.buf[len(m.buf)-len(a):len(m.buf):len(m.buf)])
	}
	args := m.argv[start:len(m.argv):len(m.argv)]
	m.cmds = append(m.cmds, queued{args: args, cmd: p.cmd, db: c.multiDB()})
	p.reply.SimpleString("QUEUED")
	p.queued = true
}

// multiDB is the database the next queued command will run in, following
// SELECTs queued before it.
func (c *Conn) multiDB() int {
	db := c.db
	for _, q := range c.multi.cmds {
		if q.cmd.Name == "select" {
			if n, err := strconv.Atoi(string(q.args[1])); err == nil && n >= 0 && n < c.srv.cfg.Databases {
				db = n
			}
		}
	}
	return db
}

func cmdWatch(x *Coord) {
	c := x.Conn
	if c.multi != nil {
		x.W.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.watch == nil {
		c.watch = &watchState{w: &shard.Watch{}}
	}
	for _, k := range x.Args[1:] {
		wk := watchedKey{db: x.DB, key: string(k), sid: x.ShardOf(k)}
		c.watch.keys = append(c.watch.keys, wk)
		// Touch the key first so an already expired one is deleted now,
		// not counted as a change after WATCH.
		x.On(wk.sid, func(s *shard.Shard) {
			s.DBs[wk.db].FindMeta([]byte(wk.key)) // an offloaded value stays so
			s.AddWatch(wk.db, wk.key, c.watch.w)
		})
	}
	x.W.SimpleString("OK")
}

// unwatch drops the connection's watches; the shards forget them when they
// get the message.
func (c *Conn) unwatch() {
	ws := c.watch
	c.watch = nil
	c.unwatchLater(ws)
}

// unwatchLater removes the registrations of ws; safe from any goroutine.
func (c *Conn) unwatchLater(ws *watchState) {
	if ws == nil {
		return
	}
	for _, k := range ws.keys {
		k := k
		c.srv.shards[k.sid].Send(shard.Func(func(s *shard.Shard) { s.RemoveWatch(k.db, k.key, ws.w) }))
	}
}

func cmdExec(x *Coord) {
	c := x.Conn
	m, ws := x.execState()
	if m == nil {
		x.W.Error("ERR EXEC without MULTI")
		return
	}
	if x.multi == nil {
		c.multi = nil
		defer c.unwatch()
	}
	if x.Srv.oom.Load() && m.deniesOOM() { // oom.go
		x.W.Error("EXECABORT Transaction discarded because of: " + script.ErrOOM)
		return
	}
	if x.Srv.noReplicas.Load() && m.writes() { // repl.go
		x.W.Error("EXECABORT Transaction discarded because of: " + errNoReplicas)
		return
	}
	if m.dirty {
		x.W.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	t := tx.New(x.Srv.shards)
	t.SetWriter(x.tracker())     // NOLOOP
	x.owned = append(x.owned, t) // aborted if the EXEC panics (runGuarded)
	var pos []int
	for _, q := range m.cmds {
		if q.cmd.Local == nil {
			pos = q.cmd.Declare(x.Srv, t, q.db, q.args, pos)
		}
	}
	if ws != nil {
		for _, k := range ws.keys {
			t.Add(k.sid, k.db, k.key, false)
		}
	}
	sids, splits, parallel := x.planParallel(m) // before Lock: not while holding
	t.Lock()
	if ws != nil {
		// Lazily expire watched keys now: an expiry since WATCH counts as
		// a change.
		for _, k := range ws.keys {
			t.Run(k.sid, func(s *shard.Shard) { s.DBs[k.db].FindMeta([]byte(k.key)) })
		}
		if ws.w.Dirty() {
			t.Finish(nil)
			x.W.NullArray()
			return
		}
	}
	if parallel {
		x.execParallel(t, m, sids, splits)
		return
	}
	x.W.Array(len(m.cmds))
	for _, q := range m.cmds {
		start := len(x.W.Buf)
		x.execQueued(t, q)
		x.Srv.countReply(q.cmd, false, x.W, start)
	}
	t.Finish(nil)
}

// execState is the transaction EXEC runs and its WATCH: the connection's
// (the loop waits for EXEC, so its state is ours), or the one a hop group
// gave back, which has no WATCH (the connection's may be a later one's).
func (x *Coord) execState() (*multiState, *watchState) {
	if x.multi != nil {
		return x.multi, nil
	}
	return x.Conn.multi, x.Conn.watch
}

// execParallel runs a locked transaction whose commands each live on one
// shard, or split by key (command.KeySplit: MGET), as one step per shard,
// all shards at once, each releasing its locks after its part. With every
// lock held the shards' parts cannot be told apart in time, and each shard
// keeps its commands in their order, so this is the same transaction in
// fewer round trips. planParallel gives each command's shard (-1: none)
// or split, or false when some command spans shards otherwise or needs a
// coordinator.
func (x *Coord) planParallel(m *multiState) ([]int, []*command.KeySplit, bool) {
	sids := make([]int, len(m.cmds))
	splits := make([]*command.KeySplit, len(m.cmds))
	var scratch []int
	for i, q := range m.cmds {
		switch {
		case q.cmd.Local != nil:
			sids[i] = -1
		case q.cmd.Shard != nil && (q.cmd.Coordinate == nil || !q.cmd.Coordinate(x.Srv, q.args)):
			if sids[i] = x.Srv.singleShard(q.cmd, q.args, &scratch); sids[i] < 0 {
				if !q.cmd.SplitsByKey {
					return nil, nil, false
				}
				splits[i] = command.SplitByKey(x.Srv, q.args, scratch, x.W.Proto)
			}
		default:
			return nil, nil, false
		}
	}
	return sids, splits, true
}

func (x *Coord) execParallel(t *tx.Tx, m *multiState, sids []int, splits []*command.KeySplit) {
	replies := make([]resp.Writer, len(m.cmds))
	for i := range replies {
		replies[i].Proto = x.W.Proto
	}
	for i, q := range m.cmds {
		if sids[i] < 0 {
			q.cmd.Calls.Add(1)
			if splits[i] == nil {
				q.local(x.Conn, &replies[i])
			}
		}
	}
	t.Finish(func(s *shard.Shard) {
		for i, q := range m.cmds {
			args, w := q.args, &replies[i]
			if splits[i] != nil {
				args, w = splits[i].Part(s.ID)
			} else if sids[i] == s.ID {
				q.cmd.Calls.Add(1)
			} else {
				continue
			}
			if args != nil {
				e := command.Exec{S: s, DB: s.DBs[q.db], Args: args, W: w, Srv: x.Srv, Conn: x.Conn}
				runQueued(&e, q.cmd)
			}
		}
	})
	x.W.Array(len(m.cmds))
	for i := range replies {
		if splits[i] != nil {
			splits[i].Merge(&replies[i])
		}
		x.Srv.countReply(m.cmds[i].cmd, false, &replies[i], 0)
		x.W.Buf = append(x.W.Buf, replies[i].Buf...)
	}
}

// execQueued runs one queued command inside EXEC's transaction, writing its
// reply into EXEC's array.
func (x *Coord) execQueued(t *tx.Tx, q queued) {
	c := x.Conn
	cmd := q.cmd
	cmd.Calls.Add(1)
	sid := -1
	if x.step == nil {
		x.step = newQueuedStep()
	}
	st := x.step
	if cmd.Local == nil {
		sid = x.Srv.singleShard(cmd, q.args, &st.pos)
	}
	switch {
	case cmd.Local != nil:
		// The loop is waiting for EXEC, so connection state is ours.
		q.local(c, x.W)
	case sid >= 0:
		st.q = q
		st.e = command.Exec{W: x.W, Srv: x.Srv, Conn: c, Prop: st.e.Prop[:0]}
		t.Run(sid, st.run)
		st.e, st.q = command.Exec{Prop: st.e.Prop[:0]}, queued{}
	case cmd.Multi != nil:
		inner := &Coord{Coord: command.Coord{DB: q.db, Args: q.args, W: x.W, Cmd: cmd, InTx: true, Local: x.Local},
			Srv: x.Srv, Conn: c, owner: x.owner, outer: t, script: x.script}
		cmd.Multi(inner.bind())
	default:
		x.W.Error("CROSSSLOT Keys in request don't hash to the same slot")
	}
}

// queuedStep runs a queued command on its shard, inside a transaction's
// step (execQueued): a coordinator keeps one for all its commands, and a
// script's interpreter one for all its calls, so none allocates a closure.
// A step runs while its coordinator waits (tx.Run), one at a time.
type queuedStep struct {
	q   queued
	e   command.Exec
	pos []int
	run func(*shard.Shard)
	now int64 // a script's calls: the script's clock (shard.SetNow); 0: the shard's
}

func newQueuedStep() *queuedStep {
	st := &queuedStep{}
	st.run = st.exec
	return st
}

func (st *queuedStep) exec(s *shard.Shard) {
	st.e.S, st.e.DB, st.e.Args = s, s.DBs[st.q.db], st.q.args
	if st.now != 0 {
		s.SetNow(st.now)
	}
	runTimed(&st.e, st.q.cmd, runQueued)
}

// execShard finds the one shard that owns every key of the open
// transaction (and of its WATCH), so EXEC can run as a single message on
// that shard, with no coordinator and no cross-shard step: the shard runs
// the queued commands back to back, which no other command can interleave
// with. It returns -1 when the transaction needs the general path (keys on
// several shards; keyless or multi-shard-only commands, SELECT; commands
// that ask for a coordinator, such as a script that may SORT by offloaded
// values: see evalCoordinate).
func (c *Conn) execShard() int {
	m := c.multi
	if m == nil || m.dirty || c.srv.oom.Load() { // over maxmemory: cmdExec decides (oom.go)
		return -1
	}
	sid := -1
	same := func(key []byte) bool {
		s := c.srv.ShardOf(key)
		if sid < 0 {
			sid = s
		}
		return s == sid
	}
	var pos []int
	for _, q := range m.cmds {
		cmd := q.cmd
		if cmd.Local != nil {
			if cmd.Name == "select" {
				return -1
			}
			continue
		}
		if cmd.Shard == nil || (cmd.Coordinate != nil && cmd.Coordinate(c.srv, q.args)) {
			return -1
		}
		pos = cmd.Keys(pos[:0], q.args)
		if len(pos) == 0 {
			return -1
		}
		for _, i := range pos {
			if !same(q.args[i]) {
				return -1
			}
		}
	}
	if c.watch != nil {
		for _, k := range c.watch.keys {
			if k.db != c.db || !same([]byte(k.key)) {
				return -1
			}
		}
	}
	if sid < 0 {
		sid = 0 // only connection commands: any shard will do
	}
	return sid
}

// execLockKeys are the keys a single-shard EXEC checks before it runs.
func execLockKeys(m *multiState, w *watchState, ndb int, dst []shard.KeyLock) []shard.KeyLock {
	var pos []int
	for _, q := range m.cmds {
		if q.cmd.Local != nil {
			continue
		}
		excl := q.cmd.Flags&command.FlagWrite != 0
		pos = q.cmd.Keys(pos[:0], q.args)
		for _, i := range pos {
			dst = append(dst, shard.KeyLock{DB: q.db, Key: string(q.args[i]), Excl: excl})
		}
		if k, ok := q.cmd.OtherDBLock(q.args, ndb); ok {
			dst = append(dst, k)
		}
	}
	if w != nil {
		for _, k := range w.keys {
			dst = append(dst, shard.KeyLock{DB: k.db, Key: k.key})
		}
	}
	return dst
}

// execOnShard runs a single-shard transaction inside one shard message.
func execOnShard(x *command.Exec, c *Conn, m *multiState, w *watchState) {
	if w != nil {
		for _, k := range w.keys {
			x.S.DBs[k.db].FindMeta([]byte(k.key)) // an expiry since WATCH counts
		}
		if w.w.Dirty() {
			x.W.NullArray()
			return
		}
	}
	x.W.Array(len(m.cmds))
	command.RunPart(x.S, func() {
		for i, q := range m.cmds {
			q.cmd.Calls.Add(1)
			start := len(x.W.Buf)
			if q.cmd.Local != nil {
				q.local(c, x.W)
			} else {
				e, reads := command.Exec{S: x.S, DB: x.S.DBs[q.db], Args: q.args, W: x.W, Srv: x.Srv, Conn: c}, x.S.Stats.Reads
				runTimed(&e, q.cmd, runQueued)
				m.cmds[i].read = x.S.Stats.Reads != reads
			}
			srvOf(x).countReply(q.cmd, false, x.W, start)
		}
	})
}
