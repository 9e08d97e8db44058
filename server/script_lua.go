package server

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/family"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// The Lua side of scripting: a sandboxed interpreter shaped like Redis 7.0's
// (read-only globals and libraries, the redis, cjson, bit and struct
// libraries, no os/io/loadfile/dofile/print), and the conversions between
// RESP replies and Lua values in both directions.

// scriptSource is the chunk name: runtime errors read "user_script:1: ...",
// Redis's "on @user_script:1." carries the '@'.
const scriptSource = "user_script"

// maxReplyDepth bounds the nesting of a table converted to a reply (a
// table that contains itself would never end).
const maxReplyDepth = 1000

// scriptCtx is one script run, as redis.call sees it.
type scriptCtx struct {
	x *Coord
	// t: the run's transaction; nil when it holds no lock, and for a
	// script confined to its shard until a call needs one (see tx).
	t        *tx.Tx
	sha      []byte   // as the request gave it
	fn       *funcDef // FCALL's function; nil for a script
	user     *aclUser // the caller's ACL user; nil: unrestricted
	db       int
	readonly bool
	keyed    bool     // declared keys (keyless writes such as FLUSHALL are refused)
	declared [][]byte // KEYS: few, so a scan beats building a map per run
	resp     int      // redis.setresp
	run      *scriptRun
}

// luaVM is a pooled interpreter. Between runs its globals are empty: the
// libraries live behind read-only proxies, and KEYS and ARGV are removed.
type luaVM struct {
	eng       *scriptEngine
	L         *lua.LState
	env       *lua.LTable   // the scripts' globals
	guarded   []*lua.LTable // read-only proxies, emptied after each run
	resetKeys []lua.LValue  // scratch for reset
	isGuard   map[*lua.LTable]bool
	handler   *lua.LFunction
	null      *lua.LUserData // cjson.null

	sc    *scriptCtx
	reply resp.Writer // the reply of the command being called
	pos   []int

	// Reused run after run, so that a call allocates little: the run's
	// context and SCRIPT KILL state (an interpreter whose context was
	// cancelled is dropped, never reused), the script context, the function made of each proto, the
	// KEYS and ARGV tables, a call's arguments, and its Exec.
	cur      scriptCtx
	runCtx   context.Context
	runState scriptRun
	fns      map[*lua.FunctionProto]*lua.LFunction
	keysT    *lua.LTable
	argvT    *lua.LTable
	args     [][]byte
	argBuf   []byte
	argEnds  []int
	exe      command.Exec
	coord    Coord
	step     *queuedStep
	// callErrs: the error tables of the run's failed calls (finishRun);
	// replyFailed, countErrs: finishRun's counting (noteError).
	callErrs               []*lua.LTable
	replyFailed, countErrs bool
	// owned: the transactions of a keyless call (callMulti), reused.
	owned []*tx.Tx
	tx    *tx.Tx // the last script transaction, recycled (Coord.scriptTx)

	// Function libraries (function_lua.go): the environment of their
	// chunks and functions and the load-time API it shows while a chunk
	// loads (loading), and the functions made in this interpreter per
	// library, valid for the engine's libGen.
	fnEnv   *lua.LTable
	loadAPI *lua.LTable
	loading *libLoad
	libFns  map[*funcLib]map[string]*lua.LFunction
	libGen  uint64
}

// maxCachedFns bounds an interpreter's functions cache; past it the cache
// starts over (SCRIPT FLUSH leaves stale entries, which are harmless).
const maxCachedFns = 256

// namesCommands: every command it can call is a literal in its text, and
// names are those literals (scriptNamesCommands).
func compileScript(body []byte) (proto *lua.FunctionProto, namesCommands bool, names []string, _ string) {
	return compileChunk(body, scriptSource, "ERR Error compiling script (new function): ")
}

// compileChunk is compileScript for a chunk named source, its errors
// starting with prefix.
func compileChunk(body []byte, source, prefix string) (proto *lua.FunctionProto, namesCommands bool, names []string, _ string) {
	chunk, err := parse.Parse(bytes.NewReader(body), source)
	if err == nil {
		if proto, err = lua.Compile(chunk, source); err == nil {
			// Redis runs a script as a function body: no Lua 5.0 "arg"
			// table for its varargs, which gopher-lua would otherwise
			// build (with a map) on every run.
			proto.IsVarArg &^= lua.VarArgNeedsArg
			ok, names := scriptNamesCommands(chunk)
			return proto, ok, names, ""
		}
	}
	msg := err.Error()
	if pe, ok := err.(*parse.Error); ok {
		line, near := pe.Pos.Line, pe.Token
		if line <= 0 {
			line, near = bytes.Count(body, []byte("\n"))+1, "<eof>"
		}
		msg = source + ":" + strconv.Itoa(line) + ": " + pe.Message + " near '" + near + "'"
	} else if ce, ok := err.(*lua.CompileError); ok {
		msg = source + ":" + strconv.Itoa(ce.Line) + ": " + ce.Message
	}
	return nil, false, nil, prefix + strings.TrimSpace(msg)
}

// errReadonlyTable is the error of a write to a read-only table.
const errReadonlyTable = lua.LString("Attempt to modify a readonly table")

func newLuaVM(e *scriptEngine) *luaVM {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 8192, MinimizeStackMemory: true,
		RegistrySize: 1024, RegistryMaxSize: 1 << 20, RegistryGrowStep: 256})
	vm := &luaVM{eng: e, L: L, isGuard: map[*lua.LTable]bool{}, fns: map[*lua.FunctionProto]*lua.LFunction{}}
	vm.runCtx, vm.runState.cancel = context.WithCancel(context.Background())
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{"", lua.OpenBase}, {"table", lua.OpenTable}, {"string", lua.OpenString},
		{"math", lua.OpenMath}, {"coroutine", lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	lib := L.G.Global
	for _, name := range []string{"dofile", "loadfile", "print", "getfenv", "setfenv", "_printregs",
		"module", "require", "newproxy", "_GOPHER_LUA_VERSION"} {
		lib.RawSetString(name, lua.LNil)
	}
	vm.null = L.NewUserData()
	lib.RawSetString("redis", vm.redisLib())
	lib.RawSetString("cjson", vm.cjsonLib())
	lib.RawSetString("bit", bitLib(L))
	lib.RawSetString("struct", structLib(L))
	// table.insert writes raw, past a proxy's __newindex: on a read-only
	// table it fails, as in Redis 7.0 (remove and sort of a proxy's empty
	// array write nothing, and pass there too).
	tbl := lib.RawGetString("table").(*lua.LTable)
	insert := tbl.RawGetString("insert").(*lua.LFunction)
	tbl.RawSetString("insert", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.isGuard[t] {
			L.Error(errReadonlyTable, 0) // a C function's error: no position
		}
		top := L.GetTop()
		L.Insert(insert, 1)
		L.Call(top, lua.MultRet)
		return L.GetTop()
	}))
	for _, name := range []string{"string", "math", "table", "coroutine", "redis", "cjson", "bit", "struct"} {
		lib.RawSetString(name, vm.guard(lib.RawGetString(name).(*lua.LTable)))
	}
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__metatable", vm.guard(mt))
	}
	rawset := lib.RawGetString("rawset").(*lua.LFunction)
	lib.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.isGuard[t] {
			L.Error(errReadonlyTable, 0)
		}
		L.Push(rawset)
		L.Push(L.Get(1))
		L.Push(L.Get(2))
		L.Push(L.Get(3))
		L.Call(3, 1)
		return 1
	}))
	// Redis 7.0's pcall hands back an error table's text (redis.call
	// raises tables).
	pcall := lib.RawGetString("pcall").(*lua.LFunction)
	lib.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		top := L.GetTop()
		L.Insert(pcall, 1)
		L.Call(top, lua.MultRet)
		if L.Get(1) == lua.LFalse {
			if t, ok := L.Get(2).(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					L.Replace(2, s)
				}
			}
		}
		return L.GetTop()
	}))
	// A missing global is an error, not nil.
	libMeta := L.NewTable()
	libMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		return 0
	}))
	L.SetMetatable(lib, libMeta)
	vm.env = vm.guard(lib)
	lib.RawSetString("_G", vm.env)
	L.Env = vm.env // functions made by loadstring see the same globals
	vm.handler = L.NewFunction(vm.errorHandler)
	return vm
}

// guard returns a read-only proxy of t.
func (vm *luaVM) guard(t *lua.LTable) *lua.LTable {
	L := vm.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	vm.guarded = append(vm.guarded, p)
	vm.isGuard[p] = true
	return p
}

// errorHandler is Redis's __redis__err__handler: the error becomes a table
// {err=..., source=..., line=...} naming the script line that raised it.
func (vm *luaVM) errorHandler(L *lua.LState) int {
	e, ok := L.Get(1).(*lua.LTable)
	if !ok {
		e = L.NewTable()
		e.RawSetString("err", lua.LString("ERR "+L.ToStringMeta(L.Get(1)).String()))
	}
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What != "G" && dbg.CurrentLine > 0 {
			e.RawSetString("source", lua.LString("@"+dbg.Source))
			e.RawSetString("line", lua.LNumber(dbg.CurrentLine))
			break
		}
	}
	L.Push(e)
	return 1
}

// run executes the script and writes its reply to w.
func (vm *luaVM) run(sc *scriptCtx, proto *lua.FunctionProto, keys, argv [][]byte, w *resp.Writer) {
	L := vm.L
	vm.sc = sc
	vm.keysT = vm.strings(vm.keysT, keys)
	vm.argvT = vm.strings(vm.argvT, argv)
	vm.env.RawSetString("KEYS", vm.keysT)
	vm.env.RawSetString("ARGV", vm.argvT)
	fn := vm.fns[proto]
	if fn == nil {
		if len(vm.fns) >= maxCachedFns {
			clear(vm.fns)
		}
		// A main chunk has no upvalues and scripts cannot change a
		// function's environment (no setfenv): the function is reusable.
		fn = L.NewFunctionFromProto(proto)
		vm.fns[proto] = fn
	}
	L.SetContext(vm.runCtx)
	L.Push(fn)
	err := L.PCall(0, 1, vm.handler)
	L.RemoveContext()
	vm.finishRun(err, w)
	vm.reset(len(keys), len(argv))
}

// finishRun writes the reply of a run that ended with err (nil: its
// result is on the stack), and counts its errors as Redis 7.0 does: an
// error of the script's own (raised, returned, or inside the reply) counts
// in the error statistics; one that is a call's error passed on was
// counted with the call. Either makes the script's call a failed one
// (w.StatsDone, w.Failed).
func (vm *luaVM) finishRun(err error, w *resp.Writer) {
	L := vm.L
	vm.replyFailed = false
	vm.countErrs = !vm.sc.run.demoted.Load() // a demoted run's reply is dropped
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		start := len(w.Buf)
		vm.writeError(w, obj, vm.sc.run.killed.Load())
		vm.noteError(obj, w.Buf[start:])
	} else {
		vm.writeReply(w, L.Get(-1), 0)
		L.Pop(1)
	}
	w.StatsDone, w.Failed = true, vm.replyFailed
	vm.callErrs = vm.callErrs[:0]
}

// noteError counts an error the script's reply carries (b, as written),
// unless v is a call's error passed on (counted with the call).
func (vm *luaVM) noteError(v lua.LValue, b []byte) {
	vm.replyFailed = true
	if vm.countErrs && !vm.isCallErr(v) && len(b) > 0 && b[0] == '-' {
		vm.sc.x.Srv.countErrorCode(b)
	}
}

// maxCallErrs bounds the call errors a run remembers (isCallErr).
const maxCallErrs = 16

// isCallErr reports whether v is the error of one of the run's calls.
func (vm *luaVM) isCallErr(v lua.LValue) bool {
	for _, t := range vm.callErrs {
		if v == t {
			return true
		}
	}
	return false
}

// reset empties the globals for the next run. Only Go code writes into the
// read-only proxies (their __newindex raises, rawset refuses them, their
// metatables are locked) and it writes only KEYS and ARGV into env, so a
// proxy is normally empty again once those are removed; the check is one
// call per proxy. The KEYS and ARGV tables are kept for the next run when
// the script left them as it found them apart from their nkeys/nargs
// array items (which the next run overwrites).
func (vm *luaVM) reset(nkeys, nargs int) {
	vm.sc = nil
	vm.coord = Coord{}
	vm.reply.Buf = vm.reply.Buf[:0]
	if cap(vm.reply.Buf) > replyKeepCap {
		vm.reply.Buf = nil
	}
	vm.env.RawSetString("KEYS", lua.LNil)
	vm.env.RawSetString("ARGV", lua.LNil)
	for _, t := range vm.guarded {
		if k, _ := t.Next(lua.LNil); k == lua.LNil {
			continue
		}
		keys := vm.resetKeys[:0]
		t.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		for _, k := range keys {
			t.RawSet(k, lua.LNil)
		}
		vm.resetKeys = keys[:0]
	}
	if !plainArray(vm.keysT, nkeys) {
		vm.keysT = nil
	}
	if !plainArray(vm.argvT, nargs) {
		vm.argvT = nil
	}
	vm.L.SetTop(0)
}

// plainArray reports whether t holds nothing but (at most) its items 1..n
// and has no metatable.
func plainArray(t *lua.LTable, n int) bool {
	if t == nil || t.Metatable != lua.LNil {
		return false
	}
	var k lua.LValue
	if n == 0 {
		k, _ = t.Next(lua.LNil)
	} else {
		k, _ = t.Next(lua.LNumber(n))
	}
	return k == lua.LNil
}

// writeError writes a script's failure as Redis 7.0 does: the error's
// text, then " script: <sha>, on @user_script:<line>." when known.
func (vm *luaVM) writeError(w *resp.Writer, obj lua.LValue, killed bool) {
	sc := vm.sc
	msg := ""
	var source, line string
	if t, ok := obj.(*lua.LTable); ok {
		if s, ok := t.RawGetString("err").(lua.LString); ok {
			msg = string(s)
		}
		if s, ok := t.RawGetString("source").(lua.LString); ok {
			source = string(s)
		}
		if n, ok := t.RawGetString("line").(lua.LNumber); ok {
			line = strconv.FormatInt(int64(n), 10)
		}
	} else {
		msg = "ERR Error running script " + sc.name() + ", " + obj.String()
	}
	if killed {
		msg = msgScriptKill
	}
	if source != "" && line != "" {
		msg += " script: " + sc.name() + ", on " + source + ":" + line + "."
	}
	writeRawError(w, msg)
}

// writeRawError writes msg as an error reply as it is (a leading '-' is
// kept, so {err="-x"} answers "--x" like Redis); CR and LF become spaces.
func writeRawError(w *resp.Writer, msg string) {
	msg = strings.TrimRight(msg, "\r\n")
	w.Buf = append(w.Buf, '-')
	for i := 0; i < len(msg); i++ {
		ch := msg[i]
		if ch == '\r' || ch == '\n' {
			ch = ' '
		}
		w.Buf = append(w.Buf, ch)
	}
	w.Buf = append(w.Buf, '\r', '\n')
}

// strings fills t (a new table when nil) with items as its array 1..n,
// clearing what a previous run left after them.
func (vm *luaVM) strings(t *lua.LTable, items [][]byte) *lua.LTable {
	if t == nil {
		t = vm.L.CreateTable(len(items), 0)
	}
	old := t.Len()
	for i, a := range items {
		t.RawSetInt(i+1, lua.LString(a))
	}
	for i := len(items) + 1; i <= old; i++ {
		t.RawSetInt(i, lua.LNil)
	}
	return t
}

// writeReply converts the script's result to a reply (Redis 7.0's
// luaReplyToRedisReply).
func (vm *luaVM) writeReply(w *resp.Writer, v lua.LValue, depth int) {
	if depth > maxReplyDepth {
		start := len(w.Buf)
		writeRawError(w, "ERR reached lua stack limit")
		vm.noteError(lua.LNil, w.Buf[start:])
		return
	}
	switch v := v.(type) {
	case lua.LString:
		w.Bulk([]byte(v))
	case lua.LBool:
		switch {
		case vm.sc.resp == 3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case lua.LNumber:
		w.Int(luaInt(v))
	case *lua.LTable:
		vm.writeTable(w, v, depth)
	default:
		w.Null()
	}
}

// luaInt is Redis's (long long) cast of a Lua number as x86-64 does it:
// truncated toward zero, and the "integer indefinite" value (the minimum)
// for NaN, the infinities and anything else out of range, so a script
// returning 2^63 (DECR of the maximum, read back as a double) replies
// -9223372036854775808 as Redis does.
func luaInt(n lua.LNumber) int64 {
	f := float64(n)
	if math.IsNaN(f) || f >= 0x1p63 || f < -0x1p63 {
		return math.MinInt64
	}
	return int64(f)
}

func (vm *luaVM) writeTable(w *resp.Writer, t *lua.LTable, depth int) {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		start := len(w.Buf)
		writeRawError(w, string(s))
		vm.noteError(t, w.Buf[start:])
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.SimpleString(string(s))
		return
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		w.Double(float64(n))
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		w.BigNumber(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
		return
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		n := 0
		m.ForEach(func(_, _ lua.LValue) { n++ })
		w.Map(n)
		m.ForEach(func(k, v lua.LValue) {
			vm.writeReply(w, k, depth+1)
			vm.writeReply(w, v, depth+1)
		})
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		n := 0
		s.ForEach(func(_, _ lua.LValue) { n++ })
		w.Set(n)
		s.ForEach(func(k, _ lua.LValue) { vm.writeReply(w, k, depth+1) })
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.Array(n)
	for i := 1; i <= n; i++ {
		vm.writeReply(w, t.RawGetInt(i), depth+1)
	}
}

// errorTable is the Lua form of an error (Redis's luaPushErrorBuff): a
// "-CODE msg" text keeps its code, anything else gets "ERR ".
func (vm *luaVM) errorTable(text string) *lua.LTable {
	msg := ""
	if strings.HasPrefix(text, "-") {
		if i := strings.IndexByte(text, ' '); i >= 0 {
			msg = text[1:]
		} else {
			msg = "ERR " + text[1:]
		}
	} else {
		msg = "ERR " + text
	}
	t := vm.L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(strings.TrimRight(msg, "\r\n")))
	return t
}

// fail ends a redis.call (raising the error) or a redis.pcall (returning
// it) with an error of the library itself.
func (vm *luaVM) fail(L *lua.LState, raise bool, text string) int {
	e := vm.errorTable(text)
	if raise {
		L.Error(e, 1)
	}
	L.Push(e)
	return 1
}

func (vm *luaVM) redisLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return vm.call(L, true) },
		"pcall": func(L *lua.LState) int { return vm.call(L, false) },
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.Error(vm.errorTable("wrong number of arguments"), 1)
			}
			L.Push(lua.LString(sha1hex([]byte(L.ToString(1)))))
			return 1
		},
		"error_reply": func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Push(vm.errorTable("wrong number or type of arguments"))
				return 1
			}
			if !strings.HasPrefix(string(s), "-") {
				s = "-" + s
			}
			L.Push(vm.errorTable(string(s)))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Push(vm.errorTable("wrong number or type of arguments"))
				return 1
			}
			r := L.CreateTable(0, 1)
			r.RawSetString("ok", s)
			L.Push(r)
			return 1
		},
		"log": vm.log,
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.Error(vm.errorTable("redis.setresp() requires one argument."), 1)
			}
			n, ok := L.Get(1).(lua.LNumber)
			if !ok || (n != 2 && n != 3) {
				L.Error(vm.errorTable("RESP version must be 2 or 3."), 1)
			}
			vm.sc.resp = int(n)
			return 0
		},
		"set_repl": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.Error(vm.errorTable("redis.set_repl() requires two arguments."), 1)
			}
			n, ok := L.Get(1).(lua.LNumber)
			if !ok || int(n)&^3 != 0 {
				L.Error(vm.errorTable("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."), 1)
			}
			return 0 // effects are what replicas get; nothing to choose
		},
		"replicate_commands": func(L *lua.LState) int {
			L.Push(lua.LTrue)
			return 1
		},
		"breakpoint": func(L *lua.LState) int {
			L.Push(lua.LFalse)
			return 1
		},
		"debug": func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, n := range map[string]int{"LOG_DEBUG": levelDebug, "LOG_VERBOSE": levelVerbose,
		"LOG_NOTICE": levelNotice, "LOG_WARNING": levelWarning, "REPL_NONE": 0, "REPL_AOF": 1,
		"REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(n))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(RedisVersion))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(RedisVersion)))
	return t
}

// versionNum is "7.2.0" as 0x070200.
func versionNum(v string) int {
	n := 0
	for _, p := range strings.SplitN(v, ".", 3) {
		x, _ := strconv.Atoi(p)
		n = n<<8 | x
	}
	return n
}

func (vm *luaVM) log(L *lua.LState) int {
	argc := L.GetTop()
	if argc < 2 {
		L.Error(vm.errorTable("redis.log() requires two arguments or more."), 1)
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		L.Error(vm.errorTable("First argument must be a number (log level)."), 1)
	}
	level := int(lv)
	if level < levelDebug || level > levelWarning {
		L.Error(vm.errorTable("Invalid debug level."), 1)
	}
	var b strings.Builder
	for i := 2; i <= argc; i++ {
		var s string
		switch v := L.Get(i).(type) {
		case lua.LString:
			s = string(v)
		case lua.LNumber:
			s = luaNumberString(v)
		default:
			continue
		}
		if i != 2 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	lg := vm.eng.log
	switch level {
	case levelDebug:
		lg.Debugf("%s", b.String())
	case levelVerbose:
		lg.Verbosef("%s", b.String())
	case levelNotice:
		lg.Noticef("%s", b.String())
	default:
		lg.Warnf("%s", b.String())
	}
	return 0
}

// luaNumberString is Lua's own number to string conversion ("%.14g").
func luaNumberString(n lua.LNumber) string {
	f := float64(n)
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// call is redis.call (raise) and redis.pcall.
func (vm *luaVM) call(L *lua.LState, raise bool) int {
	sc := vm.sc
	argc := L.GetTop()
	if argc == 0 {
		return vm.fail(L, raise, "Please specify at least one argument for this redis lib call")
	}
	// The arguments are copied into buffers the interpreter reuses: a
	// command keeps no reference to its arguments after it returns.
	buf, ends := vm.argBuf[:0], vm.argEnds[:0]
	for i := 1; i <= argc; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = strconv.AppendFloat(buf, float64(v), 'g', 17, 64)
		default:
			return vm.fail(L, raise, "Lua redis lib command arguments must be strings or integers")
		}
		ends = append(ends, len(buf))
	}
	args := vm.args[:0]
	off := 0
	for _, end := range ends {
		args = append(args, buf[off:end:end])
		off = end
	}
	vm.argBuf, vm.argEnds, vm.args = buf, ends, args
	srv := sc.x.Srv
	cmd := srv.table.Lookup(args[0])
	if cmd == nil {
		return vm.fail(L, raise, "Unknown Redis command called from script")
	}
	if !cmd.ArityOK(argc) {
		return vm.fail(L, raise, "Wrong number of args calling Redis command from script")
	}
	if cmd.Flags&command.FlagNoScript != 0 || cmd.Name == "quit" {
		return vm.fail(L, raise, errScriptCmd)
	}
	write := cmd.Flags&command.FlagWrite != 0
	if write && sc.readonly {
		return vm.fail(L, raise, "Write commands are not allowed from read-only scripts.")
	}
	if write && sc.x.Srv.replica.active.Load() {
		// As on a Redis 7 replica: EVAL runs (it is no write command
		// itself, replicaRefusal), its writes fail.
		return vm.fail(L, raise, "-"+errReadonlyReplica)
	}
	if u := sc.user; u != nil {
		if reason, object := u.check(cmd, args); reason != "" {
			srv.logDenial(sc.x.Conn, reason, "lua", object)
			return vm.fail(L, raise, aclScriptDenied(reason))
		}
	}
	vm.pos = cmd.Keys(vm.pos[:0], args)
	for _, i := range vm.pos {
		if !sc.isDeclared(args[i]) || sc.db != sc.x.DB {
			return vm.fail(L, raise, errUndeclared)
		}
	}
	if len(vm.pos) == 0 && write && sc.keyed && cmd.Local == nil {
		return vm.fail(L, raise, errKeylessCall)
	}
	if sc.x.Local != nil && srv.tiered != nil && (cmd.Name == "sort" || cmd.Name == "sort_ro") {
		// SORT inline with tiering: the script's text does not name it
		// (evalCoordinate). This run may have to stop (demote) or, having
		// written, to load offloaded pattern values blocking; its later
		// runs take a coordinator.
		toCoordinator(sc.sha)
	}
	// SORT without STORE (one key) writes nothing: not the script's first
	// write, so the run may still be stopped (SCRIPT KILL, demote).
	if write && !(cmd.Name == "sort" && len(vm.pos) == 1) && !sc.run.beginWrite() {
		L.Error(vm.errorTable(msgScriptKill[len("ERR "):]), 1)
	}
	if srv.monitors.active() {
		srv.monitors.feed(nil, sc.db, cmd, args)
	}
	if (cmd.Name == "xread" || cmd.Name == "xreadgroup") && family.XReadHasBlock(args) {
		// Redis refuses BLOCK in a script outright (in EXEC it just does
		// not wait), naming the command as the script wrote it.
		return vm.fail(L, raise, "-ERR "+string(args[0])+" command is not allowed with BLOCK option from scripts")
	}
	vm.exec(cmd, args)
	srv.countReply(cmd, false, &vm.reply, 0) // as Redis counts a script's calls
	v, _ := vm.toLua(vm.reply.Buf, 0)
	if len(vm.reply.Buf) > 0 && vm.reply.Buf[0] == '-' {
		if t, ok := v.(*lua.LTable); ok && len(vm.callErrs) < maxCallErrs {
			vm.callErrs = append(vm.callErrs, t)
		}
		if raise {
			L.Error(v, 1)
		}
	}
	L.Push(v)
	return 1
}

// exec runs one command of the script into vm.reply: through execQueued,
// within the script's transaction, like a command of EXEC.
func (vm *luaVM) exec(cmd *command.Command, args [][]byte) {
	sc := vm.sc
	vm.reply.Buf = vm.reply.Buf[:0]
	vm.reply.Proto = sc.resp
	w := &vm.reply
	if cmd.Name == "select" {
		// SELECT in a script changes the script's database only.
		n, err := strconv.Atoi(string(args[1]))
		switch {
		case err != nil:
			w.Error(command.ErrNotInt)
		case n < 0 || n >= sc.x.Srv.cfg.Databases:
			w.Error("ERR DB index is out of range")
		default:
			sc.db = n
			w.SimpleString("OK")
		}
		return
	}
	if local := sc.x.Local; local != nil && cmd.Local == nil {
		if sid := sc.x.Srv.singleShard(cmd, args, &vm.pos); sid >= 0 && len(vm.pos) > 0 && sc.x.runsHere(sid) {
			// The common call of a script confined to its shard (or to
			// the shards a borrowed run holds): a command on its keys
			// runs right here, as execQueued would through the nested
			// transaction, without making one.
			cmd.Calls.Add(1)
			e := &vm.exe
			s := sc.x.Srv.shards[sid]
			*e = command.Exec{S: s, DB: s.DBs[sc.db], Args: args, W: w, Srv: sc.x.Srv, Conn: sc.x.Conn, Prop: e.Prop[:0]}
			runExec(e, cmd)
			e.Args, e.W, e.Conn = nil, nil, nil
			return
		}
		if srv := sc.x.Srv; srv.shardsApart() && srv.leavesShard(cmd.Name) {
			// It may reach another loop's shard, and this goroutine must
			// not wait for one (evalCoordinate keeps such scripts off
			// shards; this one escaped it, say loaded between that check
			// and its run). Stopped before its first write, it runs again
			// on a coordinator; past it, it goes on.
			toCoordinator(sc.sha)
			if sc.x.script != nil && sc.x.script.demote() {
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
	x := &vm.coord
	*x = *sc.x
	if vm.step == nil {
		vm.step = newQueuedStep()
	}
	x.W, x.Args, x.DB, x.Cmd, x.step = w, args, sc.db, cmd, vm.step
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
	case cmd.Shard != nil && x.Srv.singleShard(cmd, args, &vm.pos) >= 0:
		sid := x.Srv.singleShard(cmd, args, &vm.pos)
		x.Srv.OnShard(sid, func(s *shard.Shard) {
			e := command.Exec{S: s, DB: s.DBs[q.db], Args: args, W: w, Srv: x.Srv}
			runExec(&e, cmd)
		})
	case cmd.Multi != nil:
		x.InTx = false
		vm.callMulti(x, cmd)
	default:
		w.Error("CROSSSLOT Keys in request don't hash to the same slot")
	}
}

// callMulti runs the Multi of a call that holds no script lock (a keyless
// script's). If it panics, the transactions it started give their locks
// back before the panic goes on to PCall, which makes it the call's error.
func (vm *luaVM) callMulti(x *Coord, cmd *command.Command) {
	x.owned = vm.owned[:0] // not the script's coordinator's (x is a copy)
	defer func() {
		r := recover()
		if r != nil {
			for _, t := range x.owned {
				t.Abort()
			}
		}
		clear(x.owned)
		vm.owned, x.owned = x.owned[:0], nil
		if r != nil {
			panic(r)
		}
	}()
	cmd.Multi(x.bind())
}

// toLua converts the RESP reply at b[pos:] to Lua (Redis 7.0's
// redisProtocolToLuaType), returning it and the position after it.
func (vm *luaVM) toLua(b []byte, pos int) (lua.LValue, int) {
	L := vm.L
	if pos >= len(b) {
		return lua.LNil, pos
	}
	kind := b[pos]
	end := bytes.Index(b[pos:], []byte("\r\n"))
	if end < 0 {
		return lua.LNil, len(b)
	}
	line := string(b[pos+1 : pos+end])
	next := pos + end + 2
	field := func(name string, v lua.LValue) *lua.LTable {
		t := L.CreateTable(0, 1)
		t.RawSetString(name, v)
		return t
	}
	switch kind {
	case '+':
		return field("ok", lua.LString(line)), next
	case '-':
		return vm.errorTable("-" + line), next
	case ':':
		n, _ := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(n), next
	case '$', '=':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return lua.LFalse, next
		}
		s := string(b[next : next+n])
		next += n + 2
		if kind == '=' {
			v := L.CreateTable(0, 2)
			if len(s) >= 4 {
				v.RawSetString("format", lua.LString(s[:3]))
				s = s[4:]
			}
			v.RawSetString("string", lua.LString(s))
			return field("verbatim_string", v), next
		}
		return lua.LString(s), next
	case '*', '>':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return lua.LFalse, next
		}
		t := L.CreateTable(n, 0)
		for i := 1; i <= n; i++ {
			var v lua.LValue
			v, next = vm.toLua(b, next)
			t.RawSetInt(i, v)
		}
		return t, next
	case '%', '~':
		n, _ := strconv.Atoi(line)
		t := L.CreateTable(0, n)
		for i := 0; i < n; i++ {
			var k, v lua.LValue
			k, next = vm.toLua(b, next)
			if kind == '%' {
				v, next = vm.toLua(b, next)
			} else {
				v = lua.LTrue
			}
			if k != lua.LNil {
				t.RawSet(k, v)
			}
		}
		if kind == '%' {
			return field("map", t), next
		}
		return field("set", t), next
	case '_':
		return lua.LNil, next
	case '#':
		return lua.LBool(line == "t"), next
	case ',':
		var f float64
		switch line {
		case "inf":
			f = math.Inf(1)
		case "-inf":
			f = math.Inf(-1)
		case "nan", "-nan":
			f = math.NaN()
		default:
			f, _ = strconv.ParseFloat(line, 64)
		}
		return field("double", lua.LNumber(f)), next
	case '(':
		return field("big_number", lua.LString(line)), next
	case '|':
		n, _ := strconv.Atoi(line)
		for i := 0; i < 2*n; i++ {
			_, next = vm.toLua(b, next)
		}
		return vm.toLua(b, next)
	}
	return lua.LNil, len(b)
}

// name is the script's SHA in lower case, or the function's name.
func (sc *scriptCtx) name() string {
	if sc.fn != nil {
		return sc.fn.name
	}
	return strings.ToLower(string(sc.sha))
}

func (sc *scriptCtx) isDeclared(key []byte) bool {
	for _, k := range sc.declared {
		if string(k) == string(key) {
			return true
		}
	}
	return false
}
