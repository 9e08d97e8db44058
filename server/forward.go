package server

import "github.com/dfly/dfly/shard"

// A forwarded run executes a connection's run of pipelined scripts on a
// lower event loop than the connection's own. A script whose keys live on
// the shards of several loops runs as a borrowed run (borrow.go) on the
// lowest of those loops: a connection of that loop runs it itself, one of
// a higher loop sends it there, with the scripts after it in its pipeline
// that the lower loop can run too, as one message (forwardRun), and goes
// on serving its other connections meanwhile. The lower loop borrows the
// higher loops' shards the run needs (or finds them kept from a run
// before), runs the scripts in order, ends its hold at the end of the
// message (keeping the shards until recalled: borrow.go) and wakes the
// connection.
//
// Why: when each loop borrowed for its own connections, two loops under
// scripts over both their shards took turns holding both, each waiting
// (its goroutine parked) for its own shard to come back from the other:
// on two cores ~38% of each loop's time, and a cross-shard EVAL cost
// twice the server CPU of a confined one. Borrowing only from higher
// loops, a loop never waits for its own shards to come back from a loop
// it borrows from, and the highest loops never wait at all: they lend,
// parse and answer, as the second loop of a one-shard server does. With
// kept shards, scripts over two loops' shards cost about what scripts on
// one shard do (EVAL of 2 INCRs, every one cross-shard, 2 shards on 2
// loops: 79-85k -> 134-136k op/s, 13 -> 8.5 us of server CPU each).
//
// Invariants:
//   - Borrowing goes up: a loop borrows only shards of higher loops, for
//     its own connections' scripts and for forwarded runs. (Asks from a
//     lower loop are always answered as when idle: borrow.go.)
//   - A forwarded run is the connection's whole dispatch step: nothing
//     else of the connection is in flight while it runs, so its scripts
//     run after every command sent before them and before every command
//     after them, in order, and the lower loop reads the connection's
//     commands (cmds[start:end]) while the connection's loop leaves them
//     alone (it parses nothing until the step completes).
//   - The lower loop holds what it borrowed only within the run's
//     message: a hold never spans two messages, so the loop waits for
//     nothing while it holds (as loopLend.holding says of a connection's
//     serve).
//   - A script of the run that cannot have its shards (refused, busy,
//     backed off) or overruns the inline budget before it writes ends the
//     run: it and the scripts after it are given back to the connection
//     (pending.kind kindCoord) and run on coordinators, in order, one at a
//     time, as a refused hop group's EXECs do.
type forwardRun struct {
	c          *Conn
	loop       int // the loop that runs it
	start, end int // the commands of the run: c.cmds[start:end]
	// stop: the first command given back (end when all ran); written by
	// the run's loop, read by the connection's once the run completed.
	stop   int
	keyPos []int
}

// forwardLoop is the loop a script p should be forwarded to, or -1 when it
// runs from the connection's own loop (or a coordinator): within a run
// being gathered (c.fwd.loop >= 0), any script the run's loop can run as a
// borrowed run (its keys on shards of that loop or higher ones); else one
// whose lowest loop is lower than the connection's.
//
// A script on one shard of the connection's loop that is lent out (kept
// by a lower loop after a run) goes there too, with what follows it, and
// finds the shard held there, instead of recalling it; so does one on a
// lower loop's shard (it would go there as a shard batch anyway), so that
// the scripts after it join it.
func (c *Conn) forwardLoop(p *pending) int {
	srv := c.srv
	if c.loop <= 0 || len(c.keyPos) == 0 || !borrowable(p.cmd) || srv.lends == nil ||
		srv.tiered != nil || p.track || c.tracker.Options() != nil {
		return -1
	}
	low := c.loop
	for _, i := range c.keyPos {
		low = min(low, srv.shardLoop[srv.ShardOf(p.args[i])])
	}
	if f := c.fwd; f != nil && f.loop >= 0 {
		if low < f.loop {
			return -1
		}
		return f.loop
	}
	if low == c.loop {
		if p.sid >= 0 && srv.shardLoop[p.sid] == c.loop && srv.shards[p.sid].Lent() {
			return srv.lentTo[p.sid] // borrowing goes up: a lower loop
		}
		return -1
	}
	return low
}

// gatherForward adds p (the command at c.next) to the forwarded run to
// loop lp that dispatch is gathering, starting one if none is.
func (c *Conn) gatherForward(p *pending, lp int) {
	f := c.fwd
	if f == nil {
		f = &forwardRun{c: c, loop: -1}
		c.fwd = f
	}
	if f.loop < 0 {
		f.loop, f.start = lp, c.next
	}
	p.kind = kindFwd
	c.next++
}

// forwarding reports whether dispatch is gathering a forwarded run.
func (c *Conn) forwarding() bool { return c.fwd != nil && c.fwd.loop >= 0 }

// startForward sends the gathered run to its loop; it ends dispatch.
func (c *Conn) startForward() {
	f := c.fwd
	f.end = c.next
	c.inflight.Store(1)
	c.holdReplies = true // scripts answer soon
	in := c.srv.inboxes[f.loop]
	in.post(shardTask{r: f})
}

// Run runs the forwarded run on its loop (a message without a shard).
func (f *forwardRun) Run(*shard.Shard) {
	c := f.c
	l := c.srv.lends[f.loop]
	l.forwarded.Add(1)
	if l.holding {
		l.release() // never: a hold ends with its connection's serve
	}
	f.stop = f.end
	for i := f.start; i < f.end; i++ {
		p := &c.cmds[i]
		if p.kind != kindFwd {
			continue // a connection command, answered while gathered
		}
		f.keyPos = p.cmd.Keys(f.keyPos[:0], p.args)
		if c.borrowOn(l, p, f.keyPos, false) == nil {
			f.stop = i
			break
		}
		l.runs.Add(1)
		if c.runLentOn(l, p) {
			f.stop = i // demoted: it wrote nothing
			break
		}
		p.kind = kindDone
		// Held for the run's next scripts (borrowOn: holder c).
		l.holding, l.holder = true, c
	}
	for i := f.stop; i < f.end; i++ {
		if p := &c.cmds[i]; p.kind == kindFwd {
			p.kind = kindCoord
		}
	}
	l.release()
	f.loop = -1
	c.complete(false)
}

// endForward gives the connection's loop the commands a forwarded run gave
// back (dispatched again: pending.kind); serve calls it once nothing is
// in flight.
func (c *Conn) endForward() {
	if f := c.fwd; f != nil && f.stop < f.end {
		c.next = f.stop
		f.stop = f.end
	}
}
