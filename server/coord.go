package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Coord is a command running on a coordinator goroutine: one whose keys
// span shards, or that works on every shard (DBSIZE, FLUSHALL, KEYS).
type Coord struct {
	Srv  *Server
	Conn *Conn // the issuing connection; only its immutable fields may be read
	DB   int
	Args [][]byte
	W    *resp.Writer
	cmd  *Command
	// inTx: running inside EXEC (or a script), whose transaction already
	// holds every lock; blocking commands then do not block.
	inTx bool
	// blocked: counted in blocked_clients.
	blocked bool
	// local: the command runs on this shard's goroutine, inside a script
	// confined to the shard; work for it runs inline (see tx.Local).
	local *shard.Shard
	// owner: with local, whether shard b is this goroutine's to run on
	// as well (a is local's id): nil for the shards of local's event loop
	// (Server.sameLoop); a borrowed run's involved shards (borrow.go).
	owner func(a, b int) bool
	// canRetry: an inline script may hand itself over to a coordinator
	// (see cmdEvalShard); demoted: it did.
	canRetry, demoted bool
	// script: the inline run (on local's goroutine) of the script this
	// command belongs to, which may still hand itself over to a
	// coordinator (scriptRun.demote); nil otherwise.
	script *scriptRun
	// outer: the transaction an inTx command runs within (EXEC's, a
	// script's), whose journal parts its steps record into.
	outer *tx.Tx
	// multi: the transaction of an EXEC a hop group gave back
	// (multi_hop.go), taken from the connection when it was gathered.
	multi *multiState
	// step runs its queued commands on their shards (execQueued).
	step *queuedStep
	// prop: what the journal records instead of Args (see Propagate).
	prop [][][]byte
	// owned: the transactions the command started (Tx), which the
	// recovery from a panic aborts (runGuarded).
	owned []*tx.Tx
}

func (x *Coord) run(c *Conn) {
	x.cmd.calls.Add(1)
	if x.cmd.Multi == nil {
		x.W.Error("CROSSSLOT Keys in request don't hash to the same slot")
	} else {
		start := nanotime()
		x.runGuarded()
		if end := x.Srv.slowCheck(c, x.Args, start); end != 0 {
			x.cmd.nsec.Add(uint64(end - start))
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
			x.Srv.recoverCoord(x.cmd.Name, x.W, replyStart, r, unjournaled)
		}
		clear(x.owned)
		x.owned = x.owned[:0]
	}()
	x.runMulti()
}

// runMulti runs the command's Multi with the offloaded values it reads
// loaded first, and kept in memory until it is done (tiered.go).
func (x *Coord) runMulti() {
	pinned, ok := x.tierPreload()
	if ok {
		x.cmd.Multi(x)
	}
	if pinned != nil {
		pinned.unpin()
	}
}

// sameOwner reports whether shard b runs on the goroutine that runs shard
// a (tx.Local's test; a is x.local's id).
func (x *Coord) sameOwner(a, b int) bool {
	if x.owner != nil {
		return x.owner(a, b)
	}
	return x.Srv.sameLoop(a, b)
}

// runsHere reports whether work for shard sid runs in place: x runs on
// the goroutine that owns (or borrowed) it. Only with local set.
func (x *Coord) runsHere(sid int) bool {
	return x.local.ID == sid || x.sameOwner(x.local.ID, sid)
}

// ShardOf is the shard that owns key.
func (x *Coord) ShardOf(key []byte) int { return x.Srv.ShardOf(key) }

// Tx starts a transaction over the server's shards.
// A write command's transaction journals the command at its commit.
func (x *Coord) Tx() *tx.Tx {
	var t *tx.Tx
	switch {
	case x.local != nil:
		t = tx.Local(x.Srv.shards, x.local, x.sameOwner)
	case x.inTx:
		t = tx.NestedIn(x.Srv.shards, x.outer)
	default:
		t = tx.New(x.Srv.shards)
		x.owned = append(x.owned, t)
	}
	return x.withRecorder(t)
}

// scriptTx is the transaction of a script: the interpreter's previous one
// recycled (tx.Recycle) when the script runs on its own, which it then
// owns until its next run; as Tx within EXEC or inline.
func (x *Coord) scriptTx(vm *luaVM) *tx.Tx {
	if x.local != nil || x.inTx {
		return x.Tx()
	}
	vm.tx = tx.Recycle(vm.tx, x.Srv.shards)
	return x.withRecorder(vm.tx)
}

// withRecorder makes a write command's transaction journal the command at
// its commit.
func (x *Coord) withRecorder(t *tx.Tx) *tx.Tx {
	if x.cmd != nil && x.cmd.Flags&FlagWrite != 0 && !effectsOnly[x.cmd.Name] {
		t.SetRecorder(x)
	}
	return t
}

// NumShards is the number of shards.
func (x *Coord) NumShards() int { return len(x.Srv.shards) }

// OnEach runs fn on every shard in parallel, without locks, and waits.
// fn(sid) must write only to state indexed by the shard's id.
func (x *Coord) OnEach(fn func(s *shard.Shard)) {
	if x.local == nil {
		x.Srv.OnEachShard(fn)
		return
	}
	for _, s := range x.Srv.shards {
		x.On(s.ID, fn)
	}
}

// On runs fn on shard sid without locks and waits.
func (x *Coord) On(sid int, fn func(s *shard.Shard)) {
	if x.local != nil && x.runsHere(sid) {
		fn(x.Srv.shards[sid]) // this goroutine owns that shard too
		return
	}
	x.Srv.OnShard(sid, fn)
}

// LockKeys starts a transaction that locks the keys at positions pos of
// args (exclusively when excl), in the coordinator's DB.
func (x *Coord) LockKeys(pos []int, excl bool) *tx.Tx {
	t := x.Tx()
	for _, i := range pos {
		k := x.Args[i]
		t.Add(x.ShardOf(k), x.DB, string(k), excl)
	}
	t.Lock()
	return t
}

// lockSplit groups the keys at pos by shard, locks them all, and returns
// the transaction with the positions each shard owns.
func (x *Coord) lockSplit(pos []int, excl bool) (*tx.Tx, [][]int) {
	parts := make([][]int, x.NumShards())
	t := x.Tx()
	for _, i := range pos {
		sid := x.ShardOf(x.Args[i])
		parts[sid] = append(parts[sid], i)
		t.Add(sid, x.DB, string(x.Args[i]), excl)
	}
	t.Lock()
	return t, parts
}

// splitKeys runs fn on every shard that owns some of the keys at pos, with
// all of them locked, each shard releasing right after its part. fn gets
// the positions its shard owns, in argument order.
func (x *Coord) splitKeys(pos []int, excl bool, fn func(s *shard.Shard, db *shard.DB, pos []int)) {
	t, parts := x.lockSplit(pos, excl)
	t.Finish(func(s *shard.Shard) { fn(s, s.DBs[x.DB], parts[s.ID]) })
}
