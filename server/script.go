package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/cespare/xxhash/v2"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/tx"
	"github.com/dfly/dfly/types/num"
)

// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT.
//
// A script runs on a coordinator goroutine as one transaction of package
// tx, like EXEC: its declared keys (KEYS) are locked on their shards for
// the whole run, exclusively (EVAL_RO: shared), and every redis.call runs
// within that transaction through execQueued, the path EXEC uses, so
// multi-shard commands work unchanged. A call touching a key the script did
// not declare is refused, as in Dragonfly. A script without keys holds no
// lock; the keyless commands it calls take their own.
//
// Unlike single-threaded Redis, a long script does not stop the server:
// clients touching its keys wait on the locks, everyone else goes on, and
// nobody is answered BUSY. A script running longer than
// busyScriptThreshold is "busy": SCRIPT KILL stops it (it is interrupted
// through the LState's context) unless it has already written.

// busyScriptThreshold is Redis's busy-reply-threshold (lua-time-limit):
// only a script running at least this long can be killed.
const busyScriptThreshold = 5 * time.Second

const (
	errNoScript    = "NOSCRIPT No matching script. Please use EVAL."
	errNotBusy     = "NOTBUSY No scripts in execution right now."
	errUnkillable  = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	msgScriptKill  = "ERR Script killed by user with SCRIPT KILL..."
	errScriptCmd   = "This Redis command is not allowed from script"
	errUndeclared  = "script tried accessing undeclared key"
	errKeylessCall = "this command can not run from a script that declared keys"
)

// scriptEngine is a server's script cache and the registry of running
// scripts, shared by all connections.
type scriptEngine struct {
	log *Logger
	// leaves is Server.leavesShard.
	leaves func(name string) bool

	mu     sync.RWMutex
	protos map[string]*compiledScript // by lower-case SHA1 hex
	// recent remembers load's answers by body: an EVAL carries its body
	// on every call, looked up by evalCoordinate and again by its run, and
	// a hash of the body (xxhash) and a comparison cost far less than
	// its SHA1. gen counts SCRIPT FLUSHes: an answer from before the last
	// one is stale (its script is no longer in protos).
	recent [64]atomic.Pointer[loadedScript]
	gen    atomic.Uint64

	// vms are idle interpreters; each is reset after a run.
	vms sync.Pool

	// fn: the function libraries (function.go), under mu; libGen counts
	// their changes (an interpreter's closures of an older one are stale).
	fn     funcRegistry
	libGen atomic.Uint64

	runMu   sync.Mutex
	running map[*scriptRun]struct{}
}

// scripts is the server's script engine, created on first use.
func (s *Server) scripts() *scriptEngine {
	if e := s.scriptEng.Load(); e != nil {
		return e
	}
	e := &scriptEngine{log: s.log, leaves: s.leavesShard, protos: make(map[string]*compiledScript),
		running: make(map[*scriptRun]struct{})}
	e.vms.New = func() any { return newLuaVM(e) }
	if s.scriptEng.CompareAndSwap(nil, e) {
		return e
	}
	return s.scriptEng.Load()
}

func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// compiledScript is a cached script.
type compiledScript struct {
	proto *lua.FunctionProto
	// maySort: its text names SORT (mentionsSort), or it calls a command
	// whose name is not a literal (scriptNamesCommands); see
	// evalCoordinate.
	maySort bool
	// leavesShard: it may call a command that reaches shards other than
	// its keys' (Server.leavesShard), or one whose name is not a literal;
	// see evalCoordinate.
	leavesShard bool
}

type loadedScript struct {
	body, sha string
	p         *compiledScript
	gen       uint64
}

// load compiles body (once) and caches it; the error is the full reply.
func (e *scriptEngine) load(body []byte) (string, *compiledScript, string) {
	gen := e.gen.Load()
	slot := &e.recent[xxhash.Sum64(body)%uint64(len(e.recent))]
	if l := slot.Load(); l != nil && l.gen == gen && l.body == string(body) {
		return l.sha, l.p, ""
	}
	sha := sha1hex(body)
	e.mu.RLock()
	p := e.protos[sha]
	e.mu.RUnlock()
	if p != nil {
		slot.Store(&loadedScript{body: string(body), sha: sha, p: p, gen: gen})
		return sha, p, ""
	}
	proto, literal, names, err := compileScript(body)
	if err != "" {
		return sha, nil, err
	}
	p = &compiledScript{proto: proto, maySort: mentionsSort(body) || !literal, leavesShard: !literal}
	for _, n := range names {
		p.leavesShard = p.leavesShard || e.leaves(n)
	}
	e.mu.Lock()
	if old := e.protos[sha]; old != nil {
		p = old
	} else {
		e.protos[sha] = p
	}
	e.mu.Unlock()
	slot.Store(&loadedScript{body: string(body), sha: sha, p: p, gen: gen})
	return sha, p, ""
}

func (e *scriptEngine) lookup(sha string) *compiledScript {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.protos[sha]
}

// lookupBytes is lookup of a SHA in any case, without allocating when it
// is already lower case (as clients send it).
func (e *scriptEngine) lookupBytes(sha []byte) *compiledScript {
	for _, c := range sha {
		if 'A' <= c && c <= 'Z' {
			return e.lookup(strings.ToLower(string(sha)))
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.protos[string(sha)]
}

// scriptRun is one running script, as SCRIPT KILL sees it. Each
// interpreter owns one and reuses it run after run.
type scriptRun struct {
	cancel context.CancelFunc
	// mu orders a kill against the script's first write: a script is
	// either killed before it writes or never. It also guards the fields
	// the budget timer reads: start, active, budgeted, sha and the timer.
	mu     sync.Mutex
	start  time.Time
	active bool
	sha    []byte // the running script's SHA (its bytes may be a request's)
	fn     *funcDef
	cmd    [][]byte // the command running it (a request's)
	wrote  bool
	killed atomic.Bool
	// demoted: an inline run overran its budget before writing; it was
	// stopped and will run again on a coordinator.
	demoted atomic.Bool
	// budgeted: the run is inline and bounded by localScriptBudget.
	// budget fires at most once per budget period while runs follow each
	// other (see overBudget), so a run pays no timer operation unless
	// none is pending; pending: it will fire.
	budgeted bool
	budget   *time.Timer
	pending  bool
}

// begin starts a run of sha (of function fn, when not nil) for command
// cmd; budgeted: see localScriptBudget.
func (r *scriptRun) begin(sha []byte, fn *funcDef, cmd [][]byte, budgeted bool) {
	r.mu.Lock()
	r.start, r.active, r.sha, r.wrote, r.budgeted = time.Now(), true, sha, false, budgeted
	r.fn, r.cmd = fn, cmd
	if budgeted && !r.pending {
		r.pending = true
		if r.budget == nil {
			r.budget = time.AfterFunc(localScriptBudget, r.overBudget)
		} else {
			r.budget.Reset(localScriptBudget)
		}
	}
	r.mu.Unlock()
}

// end closes the run; the budget timer then finds it inactive.
func (r *scriptRun) end() {
	r.mu.Lock()
	r.active, r.sha, r.fn, r.cmd = false, nil, nil, nil
	r.mu.Unlock()
}

// overBudget is the budget timer's callback: an inline run that has not
// written within localScriptBudget of its start is stopped, having changed
// nothing, and its script runs on a coordinator from then on
// (coordScripts). The timer may have been set for an earlier run: it then
// fires again at the current run's deadline, or stays idle when no
// budgeted run is active.
func (r *scriptRun) overBudget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = false
	if !r.active || !r.budgeted || r.wrote {
		return
	}
	if left := localScriptBudget - time.Since(r.start); left > 0 {
		r.pending = true
		r.budget.Reset(left)
		return
	}
	toCoordinator(r.sha)
	r.demoted.Store(true)
	r.killed.Store(true)
	r.cancel()
}

// demote stops an inline run that has not written, to run it again on a
// coordinator, as overBudget does: for a command that would otherwise
// block the shard's goroutine (SORT meeting offloaded pattern values,
// cmd_sort.go, in a script whose text does not name SORT: luaVM.call has
// put it in coordScripts already). false when the run is not inline or
// has written: the command must then go on inline.
func (r *scriptRun) demote() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active || !r.budgeted || r.wrote || r.killed.Load() {
		return r.demoted.Load()
	}
	r.demoted.Store(true)
	r.killed.Store(true)
	r.cancel()
	return true
}

// beginWrite records that the script is about to write; false when it has
// been killed and must stop instead.
func (r *scriptRun) beginWrite() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed.Load() {
		return false
	}
	r.wrote = true
	return true
}

// kill stops the busy scripts (functions: FUNCTION KILL) that have not
// written: the reply for SCRIPT KILL (FUNCTION KILL).
func (e *scriptEngine) kill(functions bool) string {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	busy, killed, other := 0, 0, 0
	for r := range e.running {
		r.mu.Lock()
		if time.Since(r.start) < busyScriptThreshold || r.killed.Load() {
			r.mu.Unlock()
			continue
		}
		if (r.fn != nil) != functions {
			other++
			r.mu.Unlock()
			continue
		}
		busy++
		if !r.wrote {
			r.killed.Store(true)
			r.cancel()
			killed++
		}
		r.mu.Unlock()
	}
	switch {
	case killed > 0:
		e.log.Warnf("Lua script killed by user with SCRIPT KILL.")
		return ""
	case busy > 0:
		return errUnkillable
	case other > 0 && functions:
		return "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	case other > 0:
		return "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	}
	return errNotBusy
}

func scriptCommands() []*command.Command {
	// EVAL is flagged write (EVAL_RO readonly) so that EXEC locks a queued
	// script's keys the way the script itself would.
	f := command.FlagNoScript | command.FlagStale
	return []*command.Command{
		{Name: "eval", Arity: -3, Flags: f | command.FlagWrite, KeyPositions: evalKeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, false, false) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, false, false) })},
		{Name: "evalsha", Arity: -3, Flags: f | command.FlagWrite, KeyPositions: evalKeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, true, false) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, true, false) })},
		{Name: "eval_ro", Arity: -3, Flags: f | command.FlagReadonly, KeyPositions: evalKeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, false, true) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, false, true) })},
		{Name: "evalsha_ro", Arity: -3, Flags: f | command.FlagReadonly, KeyPositions: evalKeyPositions,
			Coordinate: viaServer(evalCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdEval(c, true, true) }) },
			Multi: viaCoord(func(x *Coord) { cmdEval(x, true, true) })},
		{Name: "script", Arity: -2, Flags: command.FlagNoScript, Local: viaConn(cmdScript)},
	}
}

func init() { command.Register("scripting", scriptCommands) }

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
}

func cmdScript(c *Conn, a [][]byte, w *resp.Writer) {
	e := c.srv.scripts()
	sub := strings.ToLower(string(a[1]))
	switch {
	case sub == "help" && len(a) == 2:
		w.Array(len(scriptHelp))
		for _, l := range scriptHelp {
			w.SimpleString(l)
		}
	case sub == "load" && len(a) == 3:
		sha, _, err := e.load(a[2])
		if err != "" {
			w.Error(err)
			return
		}
		w.BulkString(sha)
	case sub == "exists" && len(a) >= 3:
		w.Array(len(a) - 2)
		for _, s := range a[2:] {
			if e.lookup(strings.ToLower(string(s))) != nil {
				w.Int(1)
			} else {
				w.Int(0)
			}
		}
	case sub == "flush" && len(a) <= 3:
		if len(a) == 3 {
			if m := strings.ToLower(string(a[2])); m != "sync" && m != "async" {
				w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
				return
			}
		}
		e.mu.Lock()
		e.protos = make(map[string]*compiledScript)
		e.gen.Add(1) // under mu: a load that saw the old gen stored into the old map
		e.mu.Unlock()
		w.SimpleString("OK")
	case sub == "kill" && len(a) == 2:
		if err := e.kill(false); err != "" {
			w.Error(err)
			return
		}
		w.SimpleString("OK")
	case sub == "debug" && len(a) == 3:
		// There is no Lua debugger (redis-cli --ldb): only NO is accepted.
		switch strings.ToLower(string(a[2])) {
		case "no":
			w.SimpleString("OK")
		case "yes", "sync":
			w.Error("ERR SCRIPT DEBUG " + strings.ToUpper(string(a[2])) + " is not supported: this server has no Lua debugger")
		default:
			w.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
		}
	case sub == "help" || sub == "load" || sub == "exists" || sub == "flush" || sub == "kill" || sub == "debug":
		w.Error(command.WrongArity("script|" + sub))
	default:
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try SCRIPT HELP.")
	}
}

// evalKeyPositions are EVAL's KEYS: numkeys arguments after numkeys.
func evalKeyPositions(dst []int, args [][]byte) []int {
	if len(args) < 3 {
		return dst
	}
	n, ok := num.ParseInt(args[2])
	if !ok || n <= 0 || n > int64(len(args)-3) {
		return dst
	}
	for i := 3; i < 3+int(n); i++ {
		dst = append(dst, i)
	}
	return dst
}

// parseNumKeys reads EVAL's numkeys with Redis's errors.
func parseNumKeys(args [][]byte) (int, string) {
	n, ok := num.ParseInt(args[2])
	if !ok {
		return 0, command.ErrNotInt
	}
	if n > int64(len(args)-3) {
		return 0, "ERR Number of keys can't be greater than number of args"
	}
	if n < 0 {
		return 0, "ERR Number of keys can't be negative"
	}
	return int(n), ""
}

func cmdEval(x *Coord, bySHA, readonly bool) {
	numKeys, errText := parseNumKeys(x.Args)
	if errText != "" {
		x.W.Error(errText)
		return
	}
	e := x.Srv.scripts()
	var sha []byte
	var proto *compiledScript
	if bySHA {
		sha = x.Args[1]
		if proto = e.lookupBytes(sha); proto == nil {
			x.W.Error(errNoScript)
			return
		}
	} else {
		var s string
		if s, proto, errText = e.load(x.Args[1]); errText != "" {
			x.W.Error(errText)
			return
		}
		sha = []byte(s)
	}
	runScript(x, scriptTarget{script: proto, id: sha}, numKeys, readonly)
}

// scriptTarget is what a script run executes: a script (EVAL, EVALSHA) or
// a library's function (FCALL); id names its runs (coordScripts).
type scriptTarget struct {
	script *compiledScript
	fn     *funcDef
	id     []byte
}

// runScript runs target with the request's keys (numKeys after numkeys)
// and arguments, writing its reply: the part EVAL and FCALL share.
func runScript(x *Coord, target scriptTarget, numKeys int, readonly bool) {
	e := x.Srv.scripts()
	sha := target.id
	keys := x.Args[3 : 3+numKeys]
	argv := x.Args[3+numKeys:]

	vm := e.vms.Get().(*luaVM)
	sc := &vm.cur
	var owned *tx.Tx // the script's transaction, finished after the run
	*sc = scriptCtx{x: x, sha: sha, fn: target.fn, db: x.DB, readonly: readonly, resp: 2, keyed: numKeys > 0, run: &vm.runState}
	if c := x.Conn; c != nil {
		c.info.Lock() // the script may run on a shard's goroutine
		if u := c.info.user.cur.Load(); !u.unrestricted {
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
		t := x.scriptTx(vm)
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

	run := sc.run
	run.killed.Store(false)
	run.demoted.Store(false)
	// Bound how long an inline script may hold its shard's event loop
	// before it writes: past localScriptBudget it is stopped — having
	// changed nothing — and run again on a coordinator (as are its later
	// runs), where it holds only its keys.
	run.begin(sha, target.fn, x.Args, x.Local != nil && x.canRetry)
	if x.Local != nil && x.canRetry {
		x.script = run // its commands may demote it (scriptRun.demote)
		defer func() { x.script = nil }()
	}
	replyStart := len(x.W.Buf)
	e.runMu.Lock()
	e.running[run] = struct{}{}
	e.runMu.Unlock()

	if target.fn != nil {
		vm.runFunction(sc, target.fn, keys, argv, x.W)
	} else {
		vm.run(sc, target.script.proto, keys, argv, x.W)
	}
	if owned != nil {
		// Before the interpreter goes back to the pool: the next script
		// to take it recycles this transaction (Coord.scriptTx).
		owned.Finish(nil)
	}

	e.runMu.Lock()
	delete(e.running, run)
	e.runMu.Unlock()
	run.end()
	// After end no kill and no budget timer touches the run: an
	// interpreter whose context was never cancelled is reusable. One
	// interrupted mid-run is dropped.
	if run.demoted.Load() {
		x.W.Buf = x.W.Buf[:replyStart]
		x.demoted = true
	}
	vm.cur = scriptCtx{}
	if vm.runCtx.Err() == nil {
		e.vms.Put(vm)
	}
}

// evalCoordinate sends a script to a coordinator instead of running it
// on the shard that owns its keys (cmdEvalShard) when
//   - it has no keys: it may call keyless commands (FLUSHALL, DBSIZE) that
//     take locks of their own;
//   - it may call a command that reaches other shards (DBSIZE, KEYS,
//     SCAN, SORT's patterns: Server.leavesShard), or one not named by a
//     literal, and the shards are owned by more than one goroutine. Inline,
//     the shard's goroutine would wait for another shard's, which may at
//     that moment wait for it in a script of its own: two event loops
//     waiting for each other forever. A coordinator waits for both
//     without holding either;
//   - tiering is on and it may call SORT: its text names it
//     (mentionsSort), or a command it calls is not named by a literal
//     (scriptNamesCommands, checked when it is compiled). SORT's BY and
//     GET patterns reach keys known only once it runs, whose values may
//     be offloaded, and a shard's goroutine must not wait for their reads
//     (tiered.go). Inline, SORT could only stop a script that has not
//     written to run it again on a coordinator (scriptRun.demote); one that
//     has written cannot be undone, and a script inside EXEC (run by the
//     shard for an EXEC on one shard, or in a coordinator's step) cannot
//     be stopped at all. On a coordinator SORT waits for the reads on its
//     own goroutine (cmd_sort.go). Deciding here costs the scripts that
//     merely mention sort (table.sort, a comment) their inline run, with
//     tiering only; undoing writes would cost every inline script a copy
//     of what it overwrites, and sending every script to a coordinator
//     would cost them all;
//   - it is in coordScripts: it overran its inline budget, or it called
//     SORT inline with tiering on in a way the checks above missed
//     (luaVM.call, a safety net).
//
// The check is per script, so it holds wherever the script runs: alone,
// in an EXEC on one shard (execShard) or in one on several (execQueued).
func evalCoordinate(srv *Server, args [][]byte) bool {
	n, e := parseNumKeys(args)
	if e != "" || n == 0 {
		return true
	}
	bySHA := len(args[0]) > 4 && (args[0][4] == 's' || args[0][4] == 'S') // EVALSHA[_RO]
	// sha: of an EVAL's body, once computed.
	var sha string
	tiered, apart := srv.tiered != nil, srv.shardsApart()
	if tiered || apart {
		var p *compiledScript
		if bySHA {
			p = srv.scripts().lookupBytes(args[1])
		} else if tiered && mentionsSort(args[1]) { // EVAL carries the body
			return true
		} else {
			sha, p, _ = srv.scripts().load(args[1]) // cached for the run that follows
		}
		if p != nil && (tiered && p.maySort || apart && p.leavesShard) {
			return true
		}
	}
	if coordCount.Load() == 0 {
		return false
	}
	switch {
	case bySHA:
		sha = strings.ToLower(string(args[1]))
	case sha == "":
		sha = sha1hex(args[1])
	}
	_, marked := coordScripts.Load(sha)
	return marked
}

// mentionsSort reports whether a script's text contains "sort" in any
// case: a script that may call SORT or SORT_RO by a literal name. A name
// made at run time escapes it: scriptNamesCommands catches those.
func mentionsSort(text []byte) bool {
	for i := 0; i+4 <= len(text); i++ {
		if text[i]|0x20 == 's' && text[i+1]|0x20 == 'o' && text[i+2]|0x20 == 'r' && text[i+3]|0x20 == 't' {
			return true
		}
	}
	return false
}

// An inline run (cmdEvalShard) that has not written is stopped after
// localScriptBudget, and the script runs on a coordinator from then on.
const localScriptBudget = 100 * time.Millisecond

// coordScripts holds the SHAs (lower case) of scripts that run on a
// coordinator from now on (evalCoordinate), where they hold only their
// keys, never an event loop: those that overran the inline budget, and,
// with tiering, those seen calling SORT inline though their text does not
// name it. coordCount is its size, so that the common case of none costs
// one load.
var (
	coordScripts sync.Map
	coordCount   atomic.Int32
)

// toCoordinator adds the script sha to coordScripts.
func toCoordinator(sha []byte) {
	if _, had := coordScripts.LoadOrStore(strings.ToLower(string(sha)), struct{}{}); !had {
		coordCount.Add(1)
	}
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

// leavesShard reports whether the command name, called by a script that
// runs on the shard owning its keys, may have to run on other shards too:
// a keyless one that is not a connection command (DBSIZE, KEYS, SCAN,
// RANDOMKEY; keyless writes such as FLUSHALL are refused in a keyed
// script before they run) and SORT, whose BY and GET patterns name keys
// anywhere. Unknown names and commands scripts may not call fail before
// they run.
func (s *Server) leavesShard(name string) bool {
	cmd := s.table.Lookup([]byte(name))
	if cmd == nil || cmd.Local != nil || cmd.Flags&command.FlagNoScript != 0 {
		return false
	}
	if cmd.Name == "sort" || cmd.Name == "sort_ro" {
		return true
	}
	return cmd.FirstKey == 0 && cmd.KeyPositions == nil
}

// shardsApart reports whether shards are owned by more than one goroutine
// (event loop): a shard's goroutine must then never wait for another's
// (see evalCoordinate). Before the loops are known, it assumes so.
func (s *Server) shardsApart() bool {
	return len(s.shards) > 1 && len(s.loops) != 1
}
