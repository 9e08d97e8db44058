package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tracking"
	"github.com/dfly/dfly/tx"
)

// Coord is the server's side of a command running on a coordinator
// goroutine (command.Coord, which it embeds and drives as its Runner):
// the connection, how the command's transactions are made (standalone,
// inside EXEC or a script, inline on a shard's goroutine), and what a
// panic must release.
type Coord struct {
	command.Coord
	Srv  *Server
	Conn *Conn // the issuing connection; only its immutable fields may be read
	// blocked: counted in blocked_clients.
	blocked bool
	// owner: with Local, whether shard b is this goroutine's to run on
	// as well (a is Local's id): nil for the shards of Local's event loop
	// (Server.sameLoop); a borrowed run's involved shards (borrow.go).
	owner func(a, b int) bool
	// canRetry: an inline script may hand itself over to a coordinator
	// (see cmdEvalShard); demoted: it did.
	canRetry, demoted bool
	// script: the inline run (on Local's goroutine) of the script this
	// command belongs to, which may still hand itself over to a
	// coordinator (script.Run.Demote); nil otherwise.
	script *script.Run
	// outer: the transaction an InTx command runs within (EXEC's, a
	// script's), whose journal parts its steps record into.
	outer *tx.Tx
	// multi: the transaction of an EXEC a hop group gave back
	// (multi_hop.go), taken from the connection when it was gathered.
	multi *multiState
	// step runs its queued commands on their shards (execQueued).
	step *queuedStep
	// owned: the transactions the command started (Tx), which the
	// recovery from a panic aborts (runGuarded).
	owned []*tx.Tx
}

// reset makes x a coordinator for cmd on c, keeping what x had of its
// step and owned transactions (their buffers are reused).
func (x *Coord) reset(c *Conn, cmd *command.Command, db int, args [][]byte, w *resp.Writer) {
	*x = Coord{Coord: command.Coord{DB: db, Args: args, W: w, Cmd: cmd}, Srv: c.srv, Conn: c, step: x.step, owned: x.owned}
}

// bind makes x the Runner of its command.Coord, which it returns.
func (x *Coord) bind() *command.Coord {
	x.Run = x
	return &x.Coord
}

// srvOf is the server a shard command runs in.
func srvOf(x *command.Exec) *Server { return x.Srv.(*Server) }

// connOf is the connection that issued a shard command, nil for none.
func connOf(x *command.Exec) *Conn {
	c, _ := x.Conn.(*Conn)
	return c
}

// Server is Runner.Server.
func (x *Coord) Server() command.Server { return x.Srv }

// ReadsAnyKey is Runner.ReadsAnyKey.
func (x *Coord) ReadsAnyKey() bool { return x.user().ReadsAnyKey() }

// TieredReads is Runner.TieredReads.
func (x *Coord) TieredReads() (async bool, demote func() bool) {
	switch {
	case x.Srv.tiered == nil:
		return false, nil
	case x.Local == nil:
		return true, nil
	case x.script != nil:
		return false, x.script.Demote
	}
	return false, nil
}

// coordOf is the server's coordinator of a command's x (command.Coord.Run).
func coordOf(x *command.Coord) *Coord { return x.Run.(*Coord) }

// viaCoord adapts a coordinator command of the server's to the table.
func viaCoord(fn func(x *Coord)) func(x *command.Coord) {
	return func(x *command.Coord) { fn(coordOf(x)) }
}

func (x *Coord) run(c *Conn) {
	x.Cmd.Calls.Add(1)
	if x.Cmd.Multi == nil {
		x.W.Error("CROSSSLOT Keys in request don't hash to the same slot")
	} else {
		start := nanotime()
		x.runGuarded()
		if end := x.Srv.slowCheck(c, x.Args, start); end != 0 {
			x.Cmd.Nsec.Add(uint64(end - start))
			x.Srv.trackLatency(x.Srv.loopRecorder(-1), x.Cmd, x.Args, end-start)
		}
	}
	c.complete(false)
}

// start runs the command on a coordinator goroutine: an idle one when
// there is one, else a new one. A coordinator's stack has grown to what
// commands (a script's interpreter) need, and starting a goroutine for
// each command would grow a fresh one every time.
func (x *Coord) start(c *Conn) {
	select {
	case idleCoords <- coordRun{x, c}:
	default:
		coords.total.Add(1)
		coordSweep.Do(func() { go sweepCoordinators() })
		go coordinator(coordRun{x, c})
	}
}

type coordRun struct {
	x *Coord
	c *Conn
}

// idleCoords hands work to idle coordinators (unbuffered: only one waiting
// can take it); a coordRun without a command tells the one that takes it
// to end (sweepCoordinators).
var idleCoords = make(chan coordRun)

// coordIdle is how often idle coordinators beyond the recent need end.
const coordIdle = 10 * time.Second

// coords counts the coordinators: live ones, those running a command now,
// and the most that ran at once since the last sweep.
var coords struct {
	total, busy, peak atomic.Int32
}

var coordSweep sync.Once

func coordinator(r coordRun) {
	for {
		raisePeak(coords.busy.Add(1))
		r.x.run(r.c)
		coords.busy.Add(-1)
		// A plain receive: a timer per wait (to end after coordIdle idle)
		// was 3.6% of the server's CPU under cross-shard EVALs (a timer
		// heap insert and delete per command); sweepCoordinators ends
		// the surplus instead.
		if r = <-idleCoords; r.x == nil {
			coords.total.Add(-1)
			return
		}
	}
}

func raisePeak(n int32) {
	for {
		p := coords.peak.Load()
		if n <= p || coords.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// sweepCoordinators ends, every coordIdle, the idle coordinators beyond
// the most that ran at once in that time: a burst's coordinators (and
// their grown stacks) go once it has passed.
func sweepCoordinators() {
	for range time.Tick(coordIdle) {
		excess := coords.total.Load() - coords.peak.Swap(coords.busy.Load())
		for ; excess > 0; excess-- {
			select {
			case idleCoords <- coordRun{}:
			default:
				excess = 0 // none idle now
			}
		}
	}
}

// runGuarded is runMulti recovering from a panic, the coordinator's own or
// one of a shard step (tx.StepPanic): the transactions the command started
// give their locks back (tx.Abort), and the client gets an error, as for a
// command that panics on its shard (recover.go).
func (x *Coord) runGuarded() {
	replyStart := len(x.W.Buf)
	x.owned = x.owned[:0]
	defer func() {
		r := recover()
		if r != nil {
			unjournaled := false
			for _, t := range x.owned {
				unjournaled = t.Abort() || unjournaled
			}
			x.Srv.recoverCoord(x.Cmd.Name, x.W, replyStart, r, unjournaled)
		}
		clear(x.owned)
		x.owned = x.owned[:0]
		if x.blocked { // Wait counted it
			x.blocked = false
			x.Srv.blockedClients.Add(-1)
		}
	}()
	x.runMulti()
}

// runMulti runs the command's Multi with the offloaded values it reads
// loaded first, and kept in memory until it is done (tiered.go).
func (x *Coord) runMulti() {
	pinned, ok := x.tierPreload()
	if ok {
		x.Cmd.Multi(x.bind())
	}
	if pinned != nil {
		pinned.unpin()
	}
}

// sameOwner reports whether shard b runs on the goroutine that runs shard
// a (tx.Local's test; a is x.Local's id).
func (x *Coord) sameOwner(a, b int) bool {
	if x.owner != nil {
		return x.owner(a, b)
	}
	return x.Srv.sameLoop(a, b)
}

// runsHere reports whether work for shard sid runs in place: x runs on
// the goroutine that owns (or borrowed) it. Only with local set.
func (x *Coord) runsHere(sid int) bool {
	return x.Local.ID == sid || x.sameOwner(x.Local.ID, sid)
}

// Tx starts a transaction over the server's shards.
// A write command's transaction journals the command at its commit.
func (x *Coord) Tx() *tx.Tx {
	var t *tx.Tx
	switch {
	case x.Local != nil:
		t = tx.Local(x.Srv.shards, x.Local, x.sameOwner)
	case x.InTx:
		t = tx.NestedIn(x.Srv.shards, x.outer)
	default:
		t = tx.New(x.Srv.shards)
		x.owned = append(x.owned, t)
	}
	t.SetWriter(x.tracker()) // NOLOOP
	return x.withRecorder(t)
}

// tracker is the issuing connection's tracking client (NOLOOP), if any.
func (x *Coord) tracker() *tracking.Client {
	if x.Conn == nil {
		return nil
	}
	return x.Conn.tracker
}

// scriptTx is the transaction of a script: the interpreter's previous one
// recycled (tx.Recycle) when the script runs on its own, which it then
// owns until its next run; as Tx within EXEC or inline.
func (x *Coord) scriptTx(sc *scriptCall) *tx.Tx {
	if x.Local != nil || x.InTx {
		return x.Tx()
	}
	sc.tx = tx.Recycle(sc.tx, x.Srv.shards)
	sc.tx.SetWriter(x.tracker())
	return x.withRecorder(sc.tx)
}

// withRecorder makes a write command's transaction journal the command at
// its commit.
func (x *Coord) withRecorder(t *tx.Tx) *tx.Tx {
	if x.Cmd != nil && x.Cmd.Flags&command.FlagWrite != 0 && !x.Cmd.JournaledByEffects() {
		t.SetRecorder(x)
	}
	return t
}

// OnEach runs fn on every shard in parallel, without locks, and waits.
// fn(sid) must write only to state indexed by the shard's id.
func (x *Coord) OnEach(fn func(s *shard.Shard)) {
	if x.Local == nil {
		x.Srv.OnEachShard(fn)
		return
	}
	for _, s := range x.Srv.shards {
		x.On(s.ID, fn)
	}
}

// On runs fn on shard sid without locks and waits.
func (x *Coord) On(sid int, fn func(s *shard.Shard)) {
	if x.Local != nil && x.runsHere(sid) {
		fn(x.Srv.shards[sid]) // this goroutine owns that shard too
		return
	}
	x.Srv.OnShard(sid, fn)
}

// viaConn adapts a connection command of the server's to the table.
func viaConn(fn func(c *Conn, args [][]byte, w *resp.Writer)) func(c command.Client, args [][]byte, w *resp.Writer) {
	return func(c command.Client, args [][]byte, w *resp.Writer) { fn(c.(*Conn), args, w) }
}

// viaServer adapts a Coordinate test of the server's to the table.
func viaServer(fn func(s *Server, args [][]byte) bool) func(s command.Server, args [][]byte) bool {
	return func(s command.Server, args [][]byte) bool { return fn(s.(*Server), args) }
}
