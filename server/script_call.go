package server

import (
	"strconv"
	"time"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/family"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// scriptCall is the server's side of a script's redis.call (script.Caller):
// one per interpreter, told by runScript what the current run may touch.
type scriptCall struct {
	srv *Server
	x   *Coord // the script's coordinator; nil between runs
	// t: the run's transaction; nil when it holds no lock, and for a
	// script confined to its shard until a call needs one (see tx).
	t        *tx.Tx
	id       []byte      // the script's SHA (as the request gave it) or function's run ID
	start    int64       // unix ms of the run's start: its calls' clock (shard.SetNow)
	run      *script.Run // the interpreter's
	user     *acl.Rules  // the caller's ACL user; nil: unrestricted
	db       int
	readonly bool
	oom      bool     // the run's first write is refused (script.ErrOOM)
	keyed    bool     // declared keys (keyless writes such as FLUSHALL are refused)
	declared [][]byte // KEYS: few, so a scan beats building a map per run

	// Reused run after run, so that a call allocates nothing: a call's
	// key positions, its Exec, its coordinator and step, the transactions
	// of a keyless call (callMulti), and the last script transaction,
	// recycled (Coord.scriptTx).
	pos   []int
	exe   command.Exec
	coord Coord
	step  *queuedStep
	owned []*tx.Tx
	tx    *tx.Tx
}

// begin prepares the call state for a run of the script id by x.
func (sc *scriptCall) begin(x *Coord, id []byte, run *script.Run, readonly, keyed bool) {
	sc.x, sc.t, sc.id, sc.run, sc.user, sc.start = x, nil, id, run, nil, time.Now().UnixMilli()
	sc.db, sc.readonly, sc.keyed, sc.declared = x.DB, readonly, keyed, nil
}

// end forgets the run.
func (sc *scriptCall) end() {
	sc.x, sc.t, sc.id, sc.run, sc.user, sc.declared = nil, nil, nil, nil, nil, nil
	sc.coord = Coord{}
}

func (sc *scriptCall) isDeclared(key []byte) bool {
	for _, k := range sc.declared {
		if string(k) == string(key) {
			return true
		}
	}
	return false
}

// Call is script.Caller.Call: the checks of a call from a script (Redis's
// and those of running inline on a shard), then the command.
func (sc *scriptCall) Call(args [][]byte, w *resp.Writer) (refused string, killed bool) {
	srv := sc.srv
	cmd := srv.table.Lookup(args[0])
	if cmd == nil {
		return "Unknown Redis command called from script", false
	}
	if !cmd.ArityOK(len(args)) {
		return "Wrong number of args calling Redis command from script", false
	}
	if cmd.Flags&command.FlagNoScript != 0 || cmd.Name == "quit" {
		return script.ErrNotAllowed, false
	}
	write := cmd.Flags&command.FlagWrite != 0
	if write && sc.readonly {
		return script.ErrReadonlyCall, false
	}
	if sc.oom && cmd.Flags&command.FlagDenyOOM != 0 && !sc.run.Wrote() {
		return "-" + script.ErrOOM, false
	}
	if write && srv.replica.active.Load() {
		// As on a Redis 7 replica: EVAL runs (it is no write command
		// itself, replicaRefusal), its writes fail.
		return "-" + errReadonlyReplica, false
	}
	if u := sc.user; u != nil {
		if reason, object := u.Check(cmd, args); reason != "" {
			srv.logDenial(sc.x.Conn, reason, "lua", object)
			return acl.ScriptDeniedError(reason), false
		}
	}
	sc.pos = cmd.Keys(sc.pos[:0], args)
	for _, i := range sc.pos {
		if !sc.isDeclared(args[i]) || sc.db != sc.x.DB {
			return script.ErrUndeclared, false
		}
	}
	if len(sc.pos) == 0 && write && sc.keyed && cmd.Local == nil {
		return script.ErrKeylessCall, false
	}
	if sc.x.Local != nil && srv.tiered != nil && (cmd.Name == "sort" || cmd.Name == "sort_ro") {
		// SORT inline with tiering: the script's text does not name it
		// (evalCoordinate). This run may have to stop (demote) or, having
		// written, to load offloaded pattern values blocking; its later
		// runs take a coordinator.
		srv.scripts().MarkCoordinated(sc.id)
	}
	// SORT without STORE (one key) writes nothing: not the script's first
	// write, so the run may still be stopped (SCRIPT KILL, demote).
	if write && !(cmd.Name == "sort" && len(sc.pos) == 1) && !sc.run.BeginWrite() {
		return "", true
	}
	if srv.monitors.active() {
		srv.monitors.feed(nil, sc.db, cmd, args)
	}
	if (cmd.Name == "xread" || cmd.Name == "xreadgroup") && family.XReadHasBlock(args) {
		// Redis refuses BLOCK in a script outright (in EXEC it just does
		// not wait), naming the command as the script wrote it.
		return "-ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts", false
	}
	sc.exec(cmd, args, w)
	srv.countReply(cmd, false, w, 0) // as Redis counts a script's calls
	return "", false
}

// exec runs one command of the script into w: through execQueued, within
// the script's transaction, like a command of EXEC.
func (sc *scriptCall) exec(cmd *command.Command, args [][]byte, w *resp.Writer) {
	if cmd.Name == "select" {
		// SELECT in a script changes the script's database only.
		n, err := strconv.Atoi(string(args[1]))
		switch {
		case err != nil:
			w.Error(command.ErrNotInt)
		case n < 0 || n >= sc.srv.cfg.Databases:
			w.Error("ERR DB index is out of range")
		default:
			sc.db = n
			w.SimpleString("OK")
		}
		return
	}
	if local := sc.x.Local; local != nil && cmd.Local == nil {
		if sid := sc.srv.singleShard(cmd, args, &sc.pos); sid >= 0 && len(sc.pos) > 0 && sc.x.runsHere(sid) {
			// The common call of a script confined to its shard (or to
			// the shards a borrowed run holds): a command on its keys
			// runs right here, as execQueued would through the nested
			// transaction, without making one.
			cmd.Calls.Add(1)
			e := &sc.exe
			s := sc.srv.shards[sid]
			*e = command.Exec{S: s, DB: s.DBs[sc.db], Args: args, W: w, Srv: sc.srv, Conn: sc.x.Conn, Prop: e.Prop[:0]}
			s.SetNow(sc.start)
			runTimed(e, cmd, runExec)
			e.Args, e.W, e.Conn = nil, nil, nil
			return
		}
		if srv := sc.srv; srv.shardsApart() && srv.table.LeavesShard(cmd.Name) {
			// It may reach another loop's shard, and this goroutine must
			// not wait for one (evalCoordinate keeps such scripts off
			// shards; this one escaped it, say loaded between that check
			// and its run). Stopped before its first write, it runs again
			// on a coordinator; past it, it goes on.
			srv.scripts().MarkCoordinated(sc.id)
			if sc.x.script != nil && sc.x.script.Demote() {
				w.Error(command.ErrScriptDemoted) // discarded with the run
				return
			}
		}
		if sc.t == nil {
			sc.t = sc.x.Tx()
		}
	}
	// The call's coordinator: the script's, with the call's arguments; the
	// interpreter's own copy and step, so a call allocates neither.
	x := &sc.coord
	*x = *sc.x
	if sc.step == nil {
		sc.step = newQueuedStep()
	}
	x.W, x.Args, x.DB, x.Cmd, x.step = w, args, sc.db, cmd, sc.step
	sc.step.now = sc.start
	q := queued{args: args, cmd: cmd, db: sc.db}
	if sc.t != nil {
		x.execQueued(sc.t, q)
		return
	}
	// No lock held: the (keyless) command locks what it needs itself.
	cmd.Calls.Add(1)
	switch {
	case cmd.Local != nil:
		runLocal(cmd, x.Conn, args, w)
	case cmd.Shard != nil && x.Srv.singleShard(cmd, args, &sc.pos) >= 0:
		sid := x.Srv.singleShard(cmd, args, &sc.pos)
		x.Srv.OnShard(sid, func(s *shard.Shard) {
			e := command.Exec{S: s, DB: s.DBs[q.db], Args: args, W: w, Srv: x.Srv}
			s.SetNow(sc.start)
			runTimed(&e, cmd, runExec)
		})
	case cmd.Multi != nil:
		x.InTx = false
		sc.callMulti(x, cmd)
	default:
		w.Error("CROSSSLOT Keys in request don't hash to the same slot")
	}
}

// callMulti runs the Multi of a call that holds no script lock (a keyless
// script's). If it panics, the transactions it started give their locks
// back before the panic goes on to PCall, which makes it the call's error.
func (sc *scriptCall) callMulti(x *Coord, cmd *command.Command) {
	x.owned = sc.owned[:0] // not the script's coordinator's (x is a copy)
	defer func() {
		r := recover()
		if r != nil {
			for _, t := range x.owned {
				t.Abort()
			}
		}
		clear(x.owned)
		sc.owned, x.owned = x.owned[:0], nil
		if r != nil {
			panic(r)
		}
	}()
	cmd.Multi(x.bind())
}
