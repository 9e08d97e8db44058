package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/client"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/master"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tracking"
)

// Limits of one dispatch step, so a flood of pipelined input is taken a
// bounded piece at a time.
const (
	maxBatchCmds  = 1024
	maxBatchBytes = 1 << 20
	// replyKeepCap: reply buffers larger than this are dropped after use
	// instead of kept for the next command.
	replyKeepCap = 64 << 10
)

// pending is one parsed command of the current batch.
type pending struct {
	args  [][]byte
	cmd   *command.Command
	reply resp.Writer
	db    int
	sid   int // owning shard for single-shard dispatch, -1 otherwise
	// multi and watch: an EXEC running on one shard (execOnShard), or in
	// a hop group (hop; multi_hop.go).
	multi *multiState
	watch *watchState
	hop   *hopExec
	kind  pendingKind
	// track: register the keys the command reads (CLIENT TRACKING).
	track bool
	// rejected: refused before it ran (prepare); INFO counts its error
	// reply as rejected_calls, a later one as failed_calls.
	rejected bool
	// seen: dispatch got to it before and stopped there (it goes in the
	// next step): it was fed to MONITOR then, not again.
	seen bool
	// assembled: its arguments are the connection's own (resp/assemble.go),
	// those of resp.BigArg bytes or more each a buffer of its own, which
	// the command may keep (Exec.OwnArgs).
	assembled bool
	// msgMark: the Pub/Sub messages delivered to the connection before
	// the command was dispatched (subState.enq), which go out before its
	// reply (collectReplies).
	msgMark uint64
	// queued: answered QUEUED (MULTI); gateExec: an EXEC's commands as
	// CLIENT REPLY's gate sees them, when one matters (execGate).
	queued   bool
	gateExec []client.Cmd
}

// Conn is one client connection. Its fields are owned by the event loop
// that serves it, except those under info, which CLIENT LIST on another
// loop reads.
type Conn struct {
	srv    *Server
	gc     gnet.Conn
	ID     int64
	parser *resp.Parser

	db     int
	proto  int
	authed bool
	// clusterRO: READONLY, reads of a replica's group served here (cluster.go).
	clusterRO bool
	// user is the ACL user the connection runs as (acl.go).
	user *acl.User

	info struct {
		sync.Mutex
		name, addr, laddr string
		lib, libver       string
		created           time.Time
		db, proto         int
		// subs counts subscriptions by kind, monitor mirrors Conn.monitor:
		// the loop's own state as CLIENT LIST on another loop shows it.
		subs    [subKinds]int
		monitor bool
		noEvict bool      // CLIENT NO-EVICT: exempt from client eviction (evictClients)
		user    *acl.User // Conn.user, for other loops
	}

	cmds   []pending
	argBuf [][]byte
	arena  []byte
	// assembled: argBuf holds arguments of an assembled command, to be
	// let go when the batch ends.
	assembled bool
	next      int // first command not yet dispatched
	// readyUpTo: every command before it is complete (it trails next while
	// dispatched work is in flight).
	readyUpTo int
	flushed   int // first command whose reply is not yet written
	out       []byte
	// inflight counts dispatched units (shard batches, coordinated
	// commands) not yet complete; the last to complete wakes the loop.
	inflight atomic.Int32
	batches  []*shardBatch
	used     []int // shards with commands in the current step
	keyPos   []int

	// gathered: the commands before it were gathered by dispatch once
	// (pending.kind); group: the connection's hop group (multi_hop.go).
	gathered int
	group    *hopGroup
	co       *Coord // see coord
	grouping bool   // dispatch is gathering a hop group
	// fwd: the connection's forwarded run (forward.go), gathered or in
	// flight; nil until the first.
	fwd *forwardRun

	// holdReplies: the work in flight answers soon (shard batches without
	// a blocking command, an EXEC or a script, which never block), so the
	// replies before it wait for it and go out in one write with its own,
	// instead of one write per dispatch step.
	holdReplies bool
	aofHeld     bool // the replies wait for the AOF's fsync (aof.go)

	sub   subState
	gate  client.Gate // CLIENT REPLY (collectReplies)
	multi *multiState // open MULTI, nil otherwise
	// monitor: the connection asked for MONITOR (monitor.go).
	monitor bool
	// tracker is the connection's CLIENT TRACKING state (tracking.go), nil
	// until first enabled; caching is CLIENT CACHING's flag for the next
	// command.
	tracker *tracking.Client
	caching bool
	// inExec is set while EXEC runs the queued commands (SSUBSCRIBE
	// refuses to run there, as in Redis).
	inExec bool
	watch  *watchState // WATCHed keys, nil when none
	// protoShared mirrors proto for publishers on other goroutines.
	protoShared atomic.Int32

	// loop is the index of the event loop serving this connection; -2
	// until known. Batches for shards that loop owns run inline.
	loop int

	// repl: what REPLCONF said; handoff: SYNC/PSYNC takes the socket
	// once the replies before it are written (cmd_master.go).
	repl    *master.ReplConf
	handoff func(net.Conn)

	closing  bool   // close once replies are written
	protoErr string // a protocol error to send after the batch's replies
	// Client buffer limits (clientbuf.go): the output limiter, set once the
	// connection is being closed for its output, and the figures CLIENT
	// LIST shows.
	obuf       outputLimiter
	outClosing atomic.Bool
	stats      connStats
	closed     atomic.Bool
	// gone is closed when the client disconnects (blocked commands stop
	// waiting).
	gone chan struct{}
	// waiting is set while a blocking command (BLPOP & co., XREAD BLOCK,
	// WAIT) waits; CLIENT UNBLOCK then sends on unblock: true for ERROR,
	// false for TIMEOUT (blocking.go).
	waiting atomic.Bool
	unblock chan bool
	// lastActive (a nanotime) and lastCmd are what CLIENT LIST shows as idle
	// and cmd; they are atomics so the loop pays no lock per read.
	lastActive atomic.Int64
	// busy is set from parsing a batch until its last reply is written;
	// graceful shutdown waits for it.
	busy    atomic.Bool
	lastCmd atomic.Pointer[command.Command]
	lastSub atomic.Pointer[command.SubcommandInfo]
	// batchesDone counts the batches served to their last reply; parked
	// is set while a pause holds the connection (pause.go). A failover
	// reads both (drainWrites).
	batchesDone atomic.Uint64
	parked      atomic.Bool
	// mayDefer is set while dispatch runs a connection command, which may
	// then leave deferred to finish its reply off the loop (runDeferred);
	// draining is set while that runs (drainWrites does not wait for it:
	// two CLIENT PAUSEs would wait for each other).
	mayDefer bool
	deferred func(w *resp.Writer)
	draining atomic.Bool
}

func newConn(srv *Server, gc gnet.Conn) *Conn {
	c := &Conn{srv: srv, gc: gc, proto: 2, loop: -2}
	c.tracker = srv.tracking.NewClient((*trackConn)(c)) // CLIENT LIST reads it from other loops
	c.protoShared.Store(2)
	c.stats.multi.Store(-1)
	srv.startClientsCron() // clientbuf.go
	c.gone = make(chan struct{})
	c.unblock = make(chan bool, 1)
	c.ID = srv.nextConnID.Add(1)
	c.parser = resp.NewParser(srv.cfg.ProtoMaxBulk, int(srv.cfg.QueryBufMax))
	c.parser.SetAssembly(true) // a big command leaves gnet's buffer as it arrives
	c.user, c.info.user = srv.acl.Default(), srv.acl.Default()
	c.authed = srv.acl.Open()
	c.parser.SetAuthenticated(c.authed)
	now := time.Now()
	c.info.created, c.info.proto = now, 2
	c.lastActive.Store(nanotime())
	if a := gc.RemoteAddr(); a != nil {
		c.info.addr = a.String()
	}
	if a := gc.LocalAddr(); a != nil {
		c.info.laddr = a.String()
	}
	c.batches = make([]*shardBatch, len(srv.shards))
	for i := range c.batches {
		c.batches[i] = &shardBatch{c: c, sid: i}
	}
	return c
}

// complete is called by whoever finishes a dispatched unit, on any
// goroutine. A unit finished inline on the connection's own loop needs no
// wake-up: serve sees the count drop when the inline run returns.
func (c *Conn) complete(inline bool) {
	if c.inflight.Add(-1) == 0 && !inline {
		_ = c.gc.Wake(nil)
	}
}

// serve runs on the event loop whenever input arrives or a dispatched unit
// completes: it writes finished replies, dispatches what can go next, and
// parses more input once the batch is done.
func (c *Conn) serve() gnet.Action {
	a := c.step()
	c.publishStats() // for CLIENT LIST on other loops
	return a
}

func (c *Conn) step() gnet.Action {
	for {
		if c.outClosing.Load() {
			return gnet.Close // over its output buffer limit (clientbuf.go)
		}
		if c.inflight.Load() != 0 {
			if c.queryOverLimit() {
				return gnet.Close // input piles up while the batch runs
			}
			c.releaseHeld() // borrow.go: what waits may need them
			// Replies of connection commands that ran before the work in
			// flight go out now (a SUBSCRIBE confirmation must precede
			// the messages published to it) — unless the work answers
			// soon (holdReplies) and comes back with the rest of the
			// batch's replies: one write then, as Redis writes a script's
			// reply with those before it.
			c.collectReplies(c.readyUpTo)
			if !c.holdReplies || c.subscriptions() > 0 {
				c.writeOut()
			}
			return gnet.None
		}
		c.holdReplies = false
		c.endForward()
		c.collectReplies(c.next)
		if c.next < len(c.cmds) {
			c.dispatch()
			continue
		}
		// The batch is done.
		if c.holdForAOF() {
			return gnet.None
		}
		c.releaseHeld()
		if c.protoErr != "" && !c.gate.Muted() {
			c.out = append(c.out, "-ERR "...)
			c.out = append(c.out, c.protoErr...)
			c.out = append(c.out, "\r\n"...)
			c.closing = true
		}
		if c.closing {
			c.writeOut()
			if c.handoff != nil {
				c.srv.handoffConn(c)
			}
			return gnet.Close
		}
		c.resetBatch()
		c.batchesDone.Add(1)
		c.busy.Store(false)
		if !c.parse() {
			c.writeOut()
			return gnet.None
		}
		c.busy.Store(true)
	}
}

func (c *Conn) writeOut() {
	// After the replies: the messages delivered since they were dispatched,
	// and again while more came meanwhile (their deliver saw a wake pending
	// and woke nobody: drainMessages).
	for due := c.messagesDue(); due > c.sub.taken; due = c.messagesDue() {
		c.drainMessages(due)
	}
	if len(c.out) == 0 {
		return
	}
	_, _ = c.gc.Write(c.out)
	c.stats.outPeak.Store(max(c.stats.outPeak.Load(), int64(len(c.out))))
	c.srv.traffic.slot(c.loop).out.Add(uint64(len(c.out)))
	if cap(c.out) > 4*replyKeepCap {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	c.checkOutput()
}

// collectReplies moves finished replies, in order, to the output buffer.
func (c *Conn) collectReplies(upTo int) {
	for c.flushed < upTo {
		p := &c.cmds[c.flushed]
		c.drainMessages(p.msgMark)
		c.srv.countReply(p.cmd, p.rejected, &p.reply, 0)
		if c.gate.Active() || p.gateExec != nil || p.cmd != nil && client.Gated(p.cmd.Name) {
			c.out = c.gate.Append(c.out, p.reply.Buf, c.gateCmd(p))
		} else {
			c.out = append(c.out, p.reply.Buf...)
		}
		if cap(p.reply.Buf) > replyKeepCap {
			p.reply.Buf = nil
		} else {
			p.reply.Buf = p.reply.Buf[:0]
		}
		c.flushed++
	}
}

func (c *Conn) resetBatch() {
	for i := range c.cmds {
		c.cmds[i].args, c.cmds[i].kind, c.cmds[i].seen = nil, kindNew, false
	}
	c.cmds = c.cmds[:0]
	if c.assembled {
		clear(c.argBuf) // they held assembled arguments: let those go
		c.assembled = false
	}
	c.argBuf = c.argBuf[:0]
	if cap(c.arena) > maxBatchBytes*2 {
		c.arena = nil
	}
	c.arena = c.arena[:0]
	c.next, c.flushed, c.readyUpTo, c.gathered = 0, 0, 0, 0
}

// parse reads complete commands from the inbound buffer into the batch,
// copying their arguments (the buffer is recycled once discarded), except
// an assembled command's, which are the connection's already. The parser
// takes a big command's bytes as they arrive (resp/assemble.go), so the
// inbound buffer never holds more than a read and a small command. It
// reports whether it found any command or a protocol error.
func (c *Conn) parse() bool {
	buf, _ := c.gc.Peek(-1)
	if len(buf) == 0 {
		return false
	}
	consumed, before := 0, len(c.cmds)
	for len(c.cmds) < maxBatchCmds && len(c.arena) < maxBatchBytes {
		args, n, ok, err := c.parser.Next(buf[consumed:])
		if err != nil {
			c.protoErr = err.Error()
			break
		}
		consumed += n // the parser may take part of a command (assembly)
		if !ok {
			break
		}
		if len(args) == 0 {
			continue // an empty inline line
		}
		start := len(c.argBuf)
		assembled := c.parser.Assembled()
		if assembled {
			c.argBuf = append(c.argBuf, args...)
			c.assembled = true
		} else {
			for _, a := range args {
				off := len(c.arena)
				c.arena = append(c.arena, a...)
				c.argBuf = append(c.argBuf, c.arena[off:len(c.arena):len(c.arena)])
			}
		}
		if len(c.cmds) < cap(c.cmds) {
			c.cmds = c.cmds[:len(c.cmds)+1]
		} else {
			c.cmds = append(c.cmds, pending{})
		}
		c.cmds[len(c.cmds)-1].args = c.argBuf[start:len(c.argBuf):len(c.argBuf)]
		c.cmds[len(c.cmds)-1].assembled = assembled
	}
	if consumed > 0 {
		_, _ = c.gc.Discard(consumed) // Discard(0) would drop everything
		slot := c.srv.traffic.slot(c.loop)
		slot.in.Add(uint64(consumed))
		slot.cmds.Add(uint64(len(c.cmds) - before))
	}
	if len(c.cmds) > 0 {
		c.lastActive.Store(nanotime())
	}
	if c.protoErr == "" && c.queryOverLimit() {
		// Redis closes such a client without a reply, and runs none of
		// what it read with it.
		c.cmds = c.cmds[:0]
		c.closing = true
	}
	return len(c.cmds) > 0 || c.protoErr != "" || c.closing
}

// dispatch runs connection commands inline and sends the following run of
// single-shard commands to their shards, stopping before a coordinated
// command (which goes alone, after the run completes). An EXEC over the
// loop's shards and one other joins the run as a hop group (multi_hop.go),
// as do the single-shard commands after it.
func (c *Conn) dispatch() {
	c.used = c.used[:0]
	c.holdReplies = true
	var g *hopGroup
	// groupOK: the commands gathered so far may precede a hop group (only
	// remote ones that never wait but for their keys).
	groupOK := true
gather:
	for c.next < len(c.cmds) {
		p := &c.cmds[c.next]
		if c.next < c.gathered {
			// Gathered before, given back by a hop group (multi_hop.go).
			switch p.kind {
			case kindDone:
				c.doneGathering()
				continue
			case kindCoord:
				if len(c.used) > 0 {
					break gather
				}
				c.next++
				c.startCoord(p)
				return
			}
			groupOK = false
			c.addToBatch(p.sid, c.next)
			c.next++
			continue
		}
		p.reply.Proto = c.proto
		p.rejected, p.queued, p.gateExec = false, false, nil
		p.msgMark = c.sub.enq.Load()
		if !c.prepare(p) {
			p.rejected = true
			if c.multi != nil {
				c.multi.dirty = true // EXEC will answer EXECABORT
			}
			c.doneGathering()
			continue
		}
		if c.pausedFor(p) { // CLIENT PAUSE (pause.go): p runs again once it ends
			if len(c.used) > 0 || g != nil || c.forwarding() {
				break // what was gathered before it goes first
			}
			c.park()
			return
		}
		cmd := p.cmd
		if !p.seen && c.srv.monitors.active() && (cmd.Local == nil || c.multi != nil && !multiControl[cmd.Name]) {
			c.srv.monitors.feed(c, c.db, cmd, p.args)
		}
		p.seen = true
		if c.multi != nil && !multiControl[cmd.Name] {
			if cmd.Flags&command.FlagNoMulti != 0 {
				// SYNC, PSYNC, SAVE: Redis refuses them and aborts EXEC.
				p.reply.Error("ERR Command not allowed inside a transaction")
				c.multi.dirty = true
			} else {
				c.queue(p)
			}
			c.doneGathering()
			continue
		}
		p.track = c.tracker != nil && c.tracksNext(cmd)
		if cmd.Local != nil {
			switch c.runConnCommand(p, g) {
			case stepStop:
				break gather
			case stepDone:
				return
			}
			continue
		}
		p.db = c.db
		p.sid = c.srv.singleShard(cmd, p.args, &c.keyPos)
		hasKeys := len(c.keyPos) > 0
		if cmd.Name == "exec" {
			p.gateExec = execGate(c.multi)
			c.recheckQueued() // acl.go
			// A transaction confined to one shard runs there as one
			// message (see execShard); the rest take the coordinator.
			if sid := c.execShard(); sid >= 0 {
				p.sid, p.multi, p.watch = sid, c.multi, c.watch
				c.multi, c.watch = nil, nil
				hasKeys = true
			}
		}
		if p.sid < 0 {
			switch c.gatherMultiShard(p, &g, groupOK) {
			case stepStop:
				break gather
			case stepDone:
				return
			}
			continue
		}
		if len(c.used) == 0 && g == nil && hasKeys && borrowable(cmd) && !c.forwarding() {
			if lp := c.forwardLoop(p); lp >= 0 {
				c.gatherForward(p, lp) // its shard is lent to that loop
				continue
			}
		}
		if c.forwarding() {
			if lp := c.forwardLoop(p); lp >= 0 {
				c.gatherForward(p, lp) // a script on one shard the run's loop can borrow
				continue
			}
			c.giveBackExec(p)
			break
		}
		if !hasKeys || !groupable(cmd) {
			if g != nil {
				break
			}
			groupOK = false
		}
		if cmd.Flags&command.FlagBlocking != 0 {
			c.holdReplies = false // it may wait long: answer those before it now
		}
		if g != nil {
			if !g.addCommand(c.next, p) {
				c.giveBackExec(p)
				break
			}
		} else {
			groupOK = groupOK && c.srv.shardLoop[p.sid] != c.loop
			c.addToBatch(p.sid, c.next)
		}
		p.kind = kindShard
		c.next++
	}
	c.sendGathered(g)
}

// dispatchStep is what the gathering of a dispatch step does after a
// command: go on to the next, stop and send what it gathered, or end (the
// command took the connection: a coordinator, a deferred reply).
type dispatchStep int

const (
	stepNext dispatchStep = iota
	stepStop
	stepDone
)

// runConnCommand runs connection command p inline, between the commands
// gathered before it and those after (which see its effect: SELECT, HELLO
// and AUTH apply in order) — except CLIENT PAUSE, which waits for what was
// dispatched before it, its own connection's commands included.
func (c *Conn) runConnCommand(p *pending, g *hopGroup) dispatchStep {
	cmd := p.cmd
	if (len(c.used) > 0 || g != nil || c.forwarding()) && defersReply(p.args) {
		return stepStop
	}
	cmd.Calls.Add(1)
	start := nanotime()
	c.mayDefer = true
	runLocal(cmd, c, p.args, &p.reply)
	c.mayDefer = false
	if end := c.srv.slowCheck(c, p.args, start); end != 0 {
		cmd.Nsec.Add(uint64(end - start))
		c.srv.trackLatency(c.srv.loopRecorder(c.loop), cmd, p.args, end-start)
	}
	if c.srv.monitors.active() {
		// After it ran, as Redis feeds: SELECT shows the new
		// database, RESET and QUIT of a monitor are not fed back.
		c.srv.monitors.feed(c, c.db, cmd, p.args)
	}
	if fn := c.deferred; fn != nil {
		c.runDeferred(p, fn)
		return stepDone
	}
	c.doneGathering()
	if c.closing {
		c.cmds = c.cmds[:c.next] // nothing after QUIT runs
		return stepStop
	}
	return stepNext
}

// gatherMultiShard places p, whose keys span shards (or which has none
// and runs on a coordinator): forwarded to a lower loop with its scripts,
// joined to a hop group, or run alone once what was gathered before it is
// done — borrowed on this loop, or on a coordinator.
func (c *Conn) gatherMultiShard(p *pending, g **hopGroup, groupOK bool) dispatchStep {
	cmd := p.cmd
	if lp := c.forwardLoop(p); lp >= 0 {
		if len(c.used) > 0 || *g != nil {
			return stepStop // what was gathered before it goes first
		}
		c.gatherForward(p, lp) // forward.go
		return stepNext
	}
	if c.forwarding() {
		return stepStop // (an EXEC here kept its transaction: execShard found none)
	}
	if p.track {
		c.trackAhead(p) // its shards get this before its own messages
	}
	if cmd.Name == "exec" && groupOK && c.startsGroup(p, g) {
		c.next++
		if p.hop.conn {
			return stepStop
		}
		return stepNext
	}
	if len(c.used) > 0 || *g != nil {
		if *g == nil && len(c.keyPos) > 0 && borrowable(cmd) && c.heldLend() == nil {
			c.borrowAhead(p) // borrow.go
		}
		return stepStop
	}
	c.next++
	c.inflight.Store(1)
	c.holdReplies = answersSoon(cmd)
	c.gathered = c.next
	if len(c.keyPos) > 0 && borrowable(cmd) && c.runBorrowed(p) {
		return stepDone // ran here, or went to a coordinator after all
	}
	co := c.coord(cmd)
	co.reset(c, cmd, p.db, p.args, &p.reply)
	co.start(c)
	return stepDone

}

// sendGathered starts what the gathering collected: a forwarded run, a
// hop group, or the batches of the shards it used (this loop's own run
// here, no hop).
func (c *Conn) sendGathered(g *hopGroup) {
	if c.next > c.gathered {
		c.gathered = c.next
	}
	if c.forwarding() {
		c.startForward()
		return
	}
	if g != nil {
		g.start()
		return
	}
	if len(c.used) == 0 {
		return
	}
	c.inflight.Store(int32(len(c.used)))
	local := -1
	held := c.heldLend()
	for _, sid := range c.used {
		if c.srv.shardLoop[sid] == c.loop && local < 0 {
			local = sid
			continue
		}
		if held != nil && held.holds(sid) {
			// Lent to this loop for the connection's scripts (borrow.go):
			// it runs here as a shard of the loop would.
			b := c.batches[sid]
			b.inline = true
			c.srv.shards[sid].ExecBorrowed(b)
			continue
		}
		c.srv.shards[sid].Send(c.batches[sid])
	}
	if local >= 0 {
		// This loop owns the shard: run its batch here, no hop.
		b := c.batches[local]
		s := c.srv.shards[local]
		b.inline = !s.Lent() // a lent shard defers it (borrow.go)
		s.Exec(b)
	}
}

// runDeferred finishes connection command p off the loop: fn writes its
// reply once what it waits for is done (CLIENT PAUSE's drain). Nothing
// else of the connection is in flight (dispatch ran p with nothing
// gathered), and the commands after p wait for it, as after a
// coordinated command.
func (c *Conn) runDeferred(p *pending, fn func(w *resp.Writer)) {
	c.deferred = nil
	p.kind = kindDone
	c.next++
	c.gathered = max(c.gathered, c.next)
	c.inflight.Store(1)
	c.holdReplies = false
	c.draining.Store(true)
	w := &p.reply
	go func() {
		fn(w)
		c.draining.Store(false)
		c.complete(false)
	}()
}

// giveBackExec undoes execShard for an EXEC in p that dispatch stops
// before: it is gathered again next time, with its transaction.
func (c *Conn) giveBackExec(p *pending) {
	if p.multi != nil {
		c.multi, c.watch, p.multi, p.watch = p.multi, p.watch, nil, nil
	}
}

// doneGathering passes a command answered while gathered.
func (c *Conn) doneGathering() {
	c.cmds[c.next].kind = kindDone
	c.next++
	if len(c.used) == 0 && !c.grouping && !c.forwarding() {
		c.readyUpTo = c.next
	}
}

// addToBatch queues command i for shard sid in this step.
func (c *Conn) addToBatch(sid, i int) {
	b := c.batches[sid]
	if len(b.idx) == 0 {
		c.used = append(c.used, sid)
	}
	b.idx = append(b.idx, int32(i))
}

// startsGroup adds the EXEC in p to the step's hop group, starting one if
// *g is nil and the step so far allows it (nothing gathered but commands
// for the EXEC's remote shard); false: p is not gathered.
func (c *Conn) startsGroup(p *pending, g **hopGroup) bool {
	h := c.hopExecOf(p)
	if h == nil {
		return false
	}
	if *g == nil {
		switch {
		case len(c.used) == 0:
		case len(c.used) == 1 && (h.remote < 0 || h.remote == c.used[0]) && c.srv.shardLoop[c.used[0]] != c.loop:
		default:
			c.group.free = append(c.group.free, h)
			return false
		}
		ng := c.newGroup()
		if len(c.used) == 1 {
			ng.remote = c.used[0]
		}
		if !ng.addHop(c.next, p, h) {
			ng.free = append(ng.free, h)
			return false
		}
		*g = ng
		c.grouping = true
		return true
	}
	if !(*g).addHop(c.next, p, h) {
		(*g).free = append((*g).free, h)
		return false
	}
	return true
}

// coord is a Coord for a coordinated command. EXEC and scripts use the
// connection's own: one runs at a time (the loop waits for it), and
// nothing keeps it once it completed the unit (Coord.run). Other commands
// (which may hand themselves over, or block) get a new one.
func (c *Conn) coord(cmd *command.Command) *Coord {
	if answersSoon(cmd) {
		if c.co == nil {
			c.co = &Coord{}
		}
		return c.co
	}
	return &Coord{}
}

// startCoord runs an EXEC a hop group gave back on a coordinator.
func (c *Conn) startCoord(p *pending) {
	c.inflight.Store(1)
	c.holdReplies = true
	co := c.coord(p.cmd)
	co.reset(c, p.cmd, p.db, p.args, &p.reply)
	co.multi = p.multi
	p.multi = nil
	co.start(c)
}

// answersSoon reports whether a coordinated command never blocks: EXEC
// (blocking commands inside it do not block) and scripts (nor inside
// them). Replies before it may wait for it (holdReplies).
func answersSoon(cmd *command.Command) bool { return cmd.Name == "exec" || cmd.IsScript() }

// prepare checks a command before it runs: known, right arity, allowed.
// On failure it writes the error reply and returns false.
func (c *Conn) prepare(p *pending) bool {
	name := p.args[0]
	p.cmd = c.srv.table.Lookup(name)
	w := &p.reply
	c.lastCmd.Store(p.cmd) // nil: CLIENT LIST's cmd=NULL, as Redis
	if p.cmd == nil {
		w.Error(unknownCommand(p.args))
		return false
	}
	sub := command.SubcommandOf(p.cmd, p.args)
	c.lastSub.Store(sub)
	if c.multi != nil && !p.cmd.SubcommandsInfoOnly && len(p.args) > 1 && len(p.cmd.Subcommands) > 0 {
		// Queued only when the subcommand and its arity are right, as Redis 7.0.
		if e := command.CheckSubcommand(p.cmd, sub, p.args); e != "" {
			w.Error(e)
			return false
		}
	}
	if !p.cmd.ArityOK(len(p.args)) {
		w.Error(command.WrongArity(p.cmd.Name))
		return false
	}
	if c.monitor && p.cmd.Flags&(command.FlagWrite|command.FlagReadonly) != 0 {
		w.Error("ERR Replica can't interact with the keyspace")
		return false
	}
	if !c.authed && p.cmd.Flags&command.FlagNoAuth == 0 {
		w.Error("NOAUTH Authentication required.")
		return false
	}
	if u := c.user.Rules(); !u.Unrestricted() && p.cmd.Flags&command.FlagNoAuth == 0 {
		if reason, object := u.Check(p.cmd, p.args); reason != "" {
			context := "toplevel"
			if c.multi != nil {
				context = "multi"
			}
			c.srv.logDenial(c, reason, context, object)
			w.Error(acl.DeniedError(reason, object))
			return false
		}
	}
	if e := c.clusterRefusal(p); e != "" { // cluster.go: MOVED, CROSSSLOT
		w.Error(e)
		return false
	}
	// Issue 8: a replica refuses client writes (READONLY) and, during a
	// full sync, whatever cannot run while loading (LOADING).
	if e := c.srv.replicaRefusal(p.cmd, p.args); e != "" {
		w.Error(e)
		return false
	}
	if e := c.oomRefusal(p.cmd); e != "" { // oom.go
		w.Error(e)
		return false
	}
	if c.srv.noReplicas.Load() && p.cmd.Flags&command.FlagWrite != 0 { // repl.go
		w.Error(errNoReplicas)
		return false
	}
	if e := c.srv.scriptEng.Load(); e != nil {
		if busy := e.Busy(); busy != "" && !p.cmd.AllowsBusy(p.args) {
			w.Error(busy)
			return false
		}
	}
	if c.proto == 2 && c.subscriptions() > 0 && !subscribedAllowed[p.cmd.Name] {
		w.Error("ERR Can't execute '" + command.FullName(p.cmd, c.lastSub.Load()) + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return false
	}
	return true
}

func unknownCommand(args [][]byte) string {
	msg := "ERR unknown command '" + command.TruncArg(args[0]) + "', with args beginning with: "
	for _, a := range args[1:] {
		msg += "'" + command.TruncArg(a) + "' "
	}
	return msg
}

// shardBatch carries a connection's commands for one shard in one step.
type shardBatch struct {
	c   *Conn
	sid int
	idx []int32
	pos int
	x   command.Exec
	// inline: running on the connection's own loop within serve.
	inline bool
	// clock: nanotime at the end of the last command run (slowlog.go).
	clock int64
	// tier: loading offloaded values ahead of the commands (tiered.go).
	tier tierBatch
	// group: the batch is part of a hop group (multi_hop.go): on the
	// group's remote shard a command whose keys are taken is refused, not
	// parked; on a local shard the group holds the keys.
	group *hopGroup
}

// Run executes the batch on the shard, parking at the first command whose
// keys are locked; Resume continues from there.
func (b *shardBatch) Run(s *shard.Shard) {
	b.x.S, b.x.Srv, b.x.Conn = s, b.c.srv, b.c
	if g := b.group; g != nil && g.remote != b.sid {
		g.runLocal(b, s)
		return
	}
	b.exec(s, false)
}

func (b *shardBatch) exec(s *shard.Shard, resumed bool) {
	g := b.group
	// One clock read a command (SLOWLOG): a command's time runs from the
	// previous one's end, like Redis's cached command start time.
	if b.c.srv.cfg.Timing() {
		b.clock = nanotime()
	}
	for b.pos < len(b.idx) {
		p := &b.c.cmds[b.idx[b.pos]]
		var ns int64 // the command's time, for INFO commandstats
		if p.hop != nil && (s.Journal.Active() || s.Tier() != nil) {
			g.refuse(b) // see hopGroup: the coordinator will run it
			return
		}
		if resumed || !s.Idle() {
			if !resumed {
				b.x.Locks = b.lockKeys(p, b.x.Locks[:0])
				if !s.Available(b.x.Locks) {
					if g != nil {
						g.refuse(b) // a hop group never waits holding locks
						return
					}
					b.inline = false // resumed later from another message
					s.Park(b)
					return
				}
			}
			if multiKeyWrite(b.x.Locks) {
				// A snapshot writes the keys' baselines first.
				s.Capture(b.x.Locks)
			}
		}
		resumed = false
		if s.Tier() != nil {
			// Tiered storage: park until the offloaded values the command
			// reads are loaded (tiered.go).
			parked, failed := b.tierBefore(s, p)
			if parked {
				return
			}
			if failed {
				b.pos++
				continue
			}
		}
		if p.hop != nil {
			p.hop.runShard(s, b.c)
			b.pos++
			continue
		}
		b.x.DB = s.DBs[p.db]
		b.x.Args = p.args
		b.x.W = &p.reply
		b.x.OwnArgs = p.assembled
		if p.multi != nil {
			if b.c.tracker != nil {
				s.SetWriter(b.c.tracker)
			}
			execOnShard(&b.x, b.c, p.multi, p.watch)
			if b.c.tracker != nil {
				s.SetWriter(nil)
			}
			if p.track {
				b.c.trackOnShard(s, p, p.multi, false)
			}
			if b.tierActive() {
				b.tierAfter(s)
			}
			b.c.unwatchLater(p.watch)
			p.multi, p.watch = nil, nil
		} else {
			b.x.CanRetry = true
			if b.c.tracker != nil {
				s.SetWriter(b.c.tracker) // NOLOOP (tracking.go)
			}
			reads := s.Stats.Reads
			runExec(&b.x, p.cmd)
			b.x.OwnArgs = false
			if b.c.tracker != nil {
				s.SetWriter(nil)
			}
			if p.track {
				b.c.trackOnShard(s, p, nil, s.Stats.Reads != reads || b.x.Retry != nil)
			}
			start := b.clock
			b.clock = b.c.srv.slowCheck(b.c, p.args, b.clock)
			if start != 0 && b.clock != 0 {
				ns = b.clock - start
			}
			b.x.CanRetry = false
			if b.tierActive() {
				b.tierAfter(s)
			}
			if retry := b.x.Retry; retry != nil {
				co := coordOf(retry)
				// The command handed itself to a coordinator: the rest of
				// the batch waits for it, keeping the connection's order.
				// The values this batch loaded for it may be offloaded
				// again meanwhile (a read-only one is at once: tierAfter),
				// so the coordinator loads them anew, as any does.
				b.x.Retry = nil
				b.pos++
				b.inline = false
				go func() {
					co.runMulti()
					s.Send(b)
				}()
				return
			}
		}
		s.Stats.Commands++
		b.c.srv.countShardCall(s.ID, p.cmd, p.args, ns)
		b.pos++
	}
	if g != nil {
		g.remoteDone(b)
		return
	}
	b.idx = b.idx[:0]
	b.pos = 0
	b.dropMine() // tiered.go
	inline := b.inline
	b.inline = false
	b.c.complete(inline)
}

// runOne runs p, whose keys are free for it, and counts it: a command of
// a hop group on a local shard (no tiered storage, no script).
func (b *shardBatch) runOne(s *shard.Shard, p *pending) {
	b.x.DB = s.DBs[p.db]
	b.x.Args = p.args
	b.x.W = &p.reply
	var ns int64
	if p.multi != nil {
		execOnShard(&b.x, b.c, p.multi, p.watch)
		b.c.unwatchLater(p.watch)
		p.multi, p.watch = nil, nil
	} else {
		start := nanotime()
		b.x.OwnArgs = p.assembled
		runExec(&b.x, p.cmd)
		b.x.OwnArgs = false
		if end := b.c.srv.slowCheck(b.c, p.args, start); end != 0 {
			ns = end - start
		}
	}
	s.Stats.Commands++
	b.c.srv.countShardCall(s.ID, p.cmd, p.args, ns)
}

func (b *shardBatch) lockKeys(p *pending, dst []shard.KeyLock) []shard.KeyLock {
	ndb := b.c.srv.cfg.Databases
	if p.hop != nil {
		return append(dst, p.hop.keys[b.sid]...)
	}
	if p.multi != nil {
		return execLockKeys(p.multi, p.watch, ndb, dst)
	}
	excl := p.cmd.Flags&command.FlagWrite != 0
	pos := p.cmd.Keys(nil, p.args)
	for _, i := range pos {
		dst = append(dst, shard.KeyLock{DB: p.db, Key: string(p.args[i]), Excl: excl})
	}
	if k, ok := p.cmd.OtherDBLock(p.args, ndb); ok {
		dst = append(dst, k)
	}
	return dst
}

// multiKeyWrite reports whether a command (a single-shard EXEC or script)
// with keys must show them to the shard's gates before it runs
// (shard.Capture): it has more than one key and writes one of them. One
// that writes nothing journals nothing.
func multiKeyWrite(keys []shard.KeyLock) bool {
	if len(keys) < 2 {
		return false
	}
	for _, k := range keys {
		if k.Excl {
			return true
		}
	}
	return false
}

func (b *shardBatch) LockKeys() ([]shard.KeyLock, bool) { return b.x.Locks, false }

func (b *shardBatch) Resume(s *shard.Shard) { b.exec(s, true) }

func (c *Conn) protoAtomic() int { return int(c.protoShared.Load()) }

// Table is command.Client's: the server's command table.
func (c *Conn) Table() *command.Table { return c.srv.table }
