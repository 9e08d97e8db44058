package server

import (
	"math"
	"runtime/metrics"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/tx"
)

// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: where a script runs and
// with what locks. The interpreter, the script cache and SCRIPT's
// subcommands are package script's; the server gives it the commands a
// script calls (scriptCall, script_call.go).
//
// A script runs on a coordinator goroutine as one transaction of package
// tx, like EXEC: its declared keys (KEYS) are locked on their shards for
// the whole run, exclusively (EVAL_RO: shared), and every redis.call runs
// within that transaction through execQueued, the path EXEC uses, so
// multi-shard commands work unchanged. A call touching a key the script did
// not declare is refused, as in Dragonfly. A script without keys holds no
// lock; the keyless commands it calls take their own. A script whose keys
// live on one shard runs inline on it (cmdEvalShard), or borrowed
// (borrow.go) when they are on several loops' shards.
//
// Until it has run for busy-reply-threshold, a script stops only the
// clients touching its keys (they wait on the locks) and those of the
// event loop it runs on, if inline. Past it the script is "busy", and as
// in Redis every other client's command but a few (AUTH, MULTI, SCRIPT
// KILL, SHUTDOWN ...: command.Command.AllowsBusy) is answered BUSY
// (Conn.prepare, script.Engine.Busy); SCRIPT KILL stops it (through the
// interpreter's context) unless it has already written. Clients of the
// loop of an inline script still wait for it, answered when it ends.
//
// A script's calls see the time it started (shard.SetNow; scriptCall.start)
// and no shard's active expiry deletes a key that expired after the start
// of a running script (scriptsStart), so a key expiring during a script
// stays there for it, as in Redis 7.0. An inline run stopped by its budget
// starts again, on a coordinator, with a new start.

// scripts is the server's script engine, created on first use.
func (s *Server) scripts() *script.Engine {
	if e := s.scriptEng.Load(); e != nil {
		return e
	}
	e := script.New((*scriptHost)(s), s.log, RedisVersion)
	if s.scriptEng.CompareAndSwap(nil, e) {
		return e
	}
	return s.scriptEng.Load()
}

// scriptsStart is when the oldest running script started (unix ms; the
// maximum when none runs): the shards' active expiry stops there.
func (s *Server) scriptsStart() int64 {
	if e := s.scriptEng.Load(); e != nil {
		return e.OldestStart()
	}
	return math.MaxInt64
}

// overMaxmemory reports whether the heap is over maxmemory (Redis's OOM
// state, checked as a script starts).
func (s *Server) overMaxmemory() bool {
	max := s.cfg.MaxMemory
	if max <= 0 {
		return false
	}
	if s.cfg.Evict.Policy() != evict.NoEviction {
		return s.oom.Load() // over only when eviction cannot help (oom.go)
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64()) > max
}

// scriptHost is what package script sees of the server (script.Host).
type scriptHost Server

func (h *scriptHost) LeavesShard(name string) bool { return h.table.LeavesShard(name) }
func (h *scriptHost) CountError(reply []byte)      { (*Server)(h).countErrorCode(reply) }
func (h *scriptHost) BusyThreshold() time.Duration {
	return time.Duration(h.cfg.BusyReplyThreshold.Load()) * time.Millisecond
}
func (h *scriptHost) NewCaller() script.Caller {
	return &scriptCall{srv: (*Server)(h)}
}

func scriptCommands() []*command.Command {
	// EVAL is flagged write (EVAL_RO readonly) so that EXEC locks a queued
	// script's keys the way the script itself would.
	f := command.FlagNoScript | command.FlagStale
	return []*command.Command{
		{Name: "eval", Arity: -3, Flags: f | command.FlagWrite, KeySpecs: "RW access update @2 keynum:0:1:1", InfoFlags: command.FlagSkipMonitor | command.FlagNoMandatoryKeys, InfoHides: command.FlagWrite, KeyPositions: script.KeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, false, false) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, false, false) })},
		{Name: "evalsha", Arity: -3, Flags: f | command.FlagWrite, KeySpecs: "RW access update @2 keynum:0:1:1", InfoFlags: command.FlagSkipMonitor | command.FlagNoMandatoryKeys, InfoHides: command.FlagWrite, KeyPositions: script.KeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, true, false) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, true, false) })},
		{Name: "eval_ro", Arity: -3, Flags: f | command.FlagReadonly, KeySpecs: "RO access @2 keynum:0:1:1", InfoFlags: command.FlagSkipMonitor | command.FlagNoMandatoryKeys, KeyPositions: script.KeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, false, true) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, false, true) })},
		{Name: "evalsha_ro", Arity: -3, Flags: f | command.FlagReadonly, KeySpecs: "RO access @2 keynum:0:1:1", InfoFlags: command.FlagSkipMonitor | command.FlagNoMandatoryKeys, KeyPositions: script.KeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, true, true) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, true, true) })},
		{Name: "script", Arity: -2, Flags: command.FlagNoScript, Subcommands: script.ScriptSubcommands, Local: viaConn(cmdScript)},
	}
}

func init() { command.Register("scripting", scriptCommands) }

func cmdScript(c *Conn, a [][]byte, w *resp.Writer) { c.srv.scripts().ScriptCommand(a, w) }

func cmdEval(x *Coord, bySHA, readonly bool) {
	numKeys, errText := script.NumKeys(x.Args)
	if errText != "" {
		x.W.Error(errText)
		return
	}
	e := x.Srv.scripts()
	var sha []byte
	var s *script.Script
	if bySHA {
		sha = x.Args[1]
		if s = e.LookupBytes(sha); s == nil {
			x.W.Error(script.ErrNoScript)
			return
		}
	} else {
		var id string
		if id, s, errText = e.Load(x.Args[1]); errText != "" {
			x.W.Error(errText)
			return
		}
		sha = []byte(id)
	}
	oom := x.Srv.overMaxmemory()
	if r := script.Refusal(s.Declared, s.Flags, readonly, x.Srv.replica.active.Load(), oom); r != "" {
		x.W.Error(r)
		return
	}
	runScript(x, scriptTarget{script: s, id: sha, oom: oom && script.CallsMayOOM(s.Declared, s.Flags)}, numKeys, readonly || s.NoWrites())
}

// scriptTarget is what a script run executes: a script (EVAL, EVALSHA) or
// a library's function (FCALL); id names its runs (Engine.MarkCoordinated).
type scriptTarget struct {
	script *script.Script
	fn     *script.Function
	id     []byte
	oom    bool // over maxmemory at the start: its first write is refused
}

// runScript runs target with the request's keys (numKeys after numkeys)
// and arguments, writing its reply: the part EVAL and FCALL share.
func runScript(x *Coord, target scriptTarget, numKeys int, readonly bool) {
	e := x.Srv.scripts()
	keys := x.Args[3 : 3+numKeys]
	argv := x.Args[3+numKeys:]

	vm := e.VM()
	sc := vm.Caller().(*scriptCall)
	var owned *tx.Tx // the script's transaction, finished after the run
	sc.begin(x, target.id, vm.Run(), readonly, numKeys > 0)
	sc.oom = target.oom
	if c := x.Conn; c != nil {
		c.info.Lock() // the script may run on a shard's goroutine
		if u := c.info.user.Rules(); !u.Unrestricted() {
			sc.user = u
		}
		c.info.Unlock()
	}
	if x.Local != nil {
		// Confined to this shard, whose goroutine runs it: no other
		// command can run here meanwhile, so it needs no locks. Its
		// (nested) transaction is made only if a call needs one.
		sc.declared = keys
	} else if numKeys > 0 || x.InTx {
		t := x.scriptTx(sc)
		sc.declared = keys
		for _, k := range keys {
			t.Add(x.ShardOf(k), x.DB, string(k), !readonly)
		}
		// Calls run one at a time: each shard's locks come with the
		// first call there when that keeps them in shard order (tx).
		t.LockLazily()
		sc.t = t
		owned = t
	}

	// Bound how long an inline script may hold its shard's event loop
	// before it writes: past script.InlineBudget it is stopped — having
	// changed nothing — and run again on a coordinator (as are its later
	// runs), where it holds only its keys.
	budgeted := x.Local != nil && x.canRetry
	vm.Begin(target.id, target.fn, x.Args, budgeted)
	run := vm.Run()
	if budgeted {
		x.script = run // its commands may demote it (script.Run.Demote)
		defer func() { x.script = nil }()
	}
	replyStart := len(x.W.Buf)

	if target.fn != nil {
		vm.RunFunction(target.fn, keys, argv, x.W)
	} else {
		vm.RunScript(target.script, keys, argv, x.W)
	}
	if owned != nil {
		// Before the interpreter goes back to the pool: the next script
		// to take it recycles this transaction (Coord.scriptTx).
		owned.Finish(nil)
	}
	vm.End()
	if run.Demoted() {
		x.W.Buf = x.W.Buf[:replyStart]
		x.demoted = true
	}
	sc.end()
	e.Release(vm)
}

// evalCoordinate sends a script to a coordinator instead of running it
// on the shard that owns its keys (cmdEvalShard): script.Engine.Coordinate.
func evalCoordinate(srv *Server, args [][]byte) bool {
	return srv.scripts().Coordinate(args, srv.tiered != nil, srv.shardsApart())
}

// cmdEvalShard runs a script whose keys all live on this shard right here,
// on the shard's goroutine, as Redis runs every script: one message, no
// coordinator, no lock round trips (docs/DESIGN.md §2: a transaction on one shard
// pays no cross-shard coordination). While it runs, the event loop that
// owns the shard serves nothing else; SCRIPT KILL from a client of another
// loop still stops a long read-only script.
func cmdEvalShard(e *command.Exec, run func(x *Coord)) {
	// The shard's own coordinator value: nothing keeps it once cmdEval
	// returned (the interpreter drops its context), and a script cannot
	// run a script, so one per shard serves every inline run.
	srv, conn := srvOf(e), connOf(e)
	x := &srv.evalCoords[e.S.ID]
	*x = Coord{Coord: command.Coord{DB: e.DB.Index, Args: e.Args, W: e.W, InTx: true, Local: e.S},
		Srv: srv, Conn: conn, canRetry: e.CanRetry, step: x.step}
	x.bind()
	run(x)
	if x.demoted {
		retry := &Coord{Coord: command.Coord{DB: e.DB.Index, Args: e.Args, W: e.W, Cmd: srv.table.Lookup(e.Args[0])},
			Srv: srv, Conn: conn}
		e.Retry = retry.bind()
	}
	*x = Coord{step: x.step}
}

// shardsApart reports whether shards are owned by more than one goroutine
// (event loop): a shard's goroutine must then never wait for another's
// (see evalCoordinate). Before the loops are known, it assumes so.
func (s *Server) shardsApart() bool {
	return len(s.shards) > 1 && len(s.loops) != 1
}
