package script

import (
	"bytes"
	"context"
	"runtime/metrics"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/dfly/dfly/resp"
)

// The interpreter: a sandbox shaped like Redis 7.0's (read-only globals
// and libraries, the redis, cjson, bit, struct and cmsgpack libraries, no
// os/io/loadfile/dofile/print), and a run's life in it.

// scriptSource is the chunk name: runtime errors read "user_script:1: ...",
// Redis's "on @user_script:1." carries the '@'.
const scriptSource = "user_script"

// maxReplyDepth bounds the nesting of a table converted to a reply (a
// table that contains itself would never end).
const maxReplyDepth = 1000

// replyKeepCap bounds the buffer of calls' replies an interpreter keeps
// between runs.
const replyKeepCap = 64 << 10

// Caller runs a script's redis.call and redis.pcall: the server's side of
// a run, one per interpreter (Host.NewCaller), told by the server what the
// current run may do.
type Caller interface {
	// Call runs the command args (args[0] names it, as the script wrote
	// it) and writes its reply to w. When the command may not run from the
	// script (unknown, wrong arity, an undeclared key, refused by ACL ...)
	// it writes nothing and returns the refusal: an error text, "-CODE
	// msg" or a message that gets "ERR " before it; killed: the run was
	// killed before this write (SCRIPT KILL, Run.Demote), and the call
	// raises even in redis.pcall. Neither args nor w may be kept.
	Call(args [][]byte, w *resp.Writer) (refused string, killed bool)
}

// VM is a pooled interpreter. Between runs its globals are empty: the
// libraries live behind read-only proxies, and KEYS and ARGV are removed.
type VM struct {
	eng       *Engine
	caller    Caller
	L         *lua.LState
	env       *lua.LTable                 // the scripts' globals
	guarded   []*lua.LTable               // read-only proxies, emptied after each run
	resetKeys []lua.LValue                // scratch for reset
	under     map[*lua.LTable]*lua.LTable // a read-only proxy's table
	handler   *lua.LFunction
	null      *lua.LUserData // cjson.null

	reply resp.Writer // the reply of the command being called
	resp  int         // the run's redis.setresp

	// Reused run after run, so that a call allocates little: the run's
	// context and SCRIPT KILL state (an interpreter whose context was
	// cancelled is dropped, never reused), the function made of each
	// proto, the KEYS and ARGV tables, and a call's arguments.
	runCtx  context.Context
	run     Run
	fns     map[*lua.FunctionProto]*lua.LFunction
	keysT   *lua.LTable
	argvT   *lua.LTable
	args    [][]byte
	argBuf  []byte
	argEnds []int
	// callErrs: the error tables of the run's failed calls (finishRun);
	// replyFailed, countErrs: finishRun's counting (noteError).
	callErrs               []*lua.LTable
	replyFailed, countErrs bool

	// Function libraries (library.go): the environment of their chunks
	// and functions and the load-time API it shows while a chunk loads
	// (loading), and the functions made in this interpreter per library,
	// valid for the engine's libGen.
	fnEnv   *lua.LTable
	loadAPI *lua.LTable
	loading *libLoad
	libFns  map[*Library]map[string]*lua.LFunction
	libGen  uint64

	guardedMeta map[*lua.LTable]*lua.LTable // getmetatable's read-only metatables
}

// Caller is the interpreter's Caller (Host.NewCaller's).
func (vm *VM) Caller() Caller { return vm.caller }

// Run is the interpreter's run, as SCRIPT KILL and the budget see it.
func (vm *VM) Run() *Run { return &vm.run }

// Begin starts a run of the script or function id (of function fn, when
// not nil) for the command cmd: SCRIPT KILL and FUNCTION STATS see it from
// now on; budgeted: the run is inline on a shard's event loop, and stopped
// past InlineBudget unless it has written.
func (vm *VM) Begin(id []byte, fn *Function, cmd [][]byte, budgeted bool) {
	vm.run.begin(id, fn, cmd, budgeted)
	e := vm.eng
	e.runMu.Lock()
	e.running[&vm.run] = struct{}{}
	e.nrunning.Add(1)
	e.runMu.Unlock()
}

// End closes the run. After it no kill and no budget timer touches the
// run: an interpreter whose context was never cancelled is reusable
// (Engine.Release).
func (vm *VM) End() {
	e := vm.eng
	e.runMu.Lock()
	delete(e.running, &vm.run)
	e.nrunning.Add(-1)
	e.runMu.Unlock()
	vm.run.end()
}

// maxCachedFns bounds an interpreter's functions cache; past it the cache
// starts over (SCRIPT FLUSH leaves stale entries, which are harmless).
const maxCachedFns = 256

// literal: every command it can call is a literal in its text, and
// names are those literals (namesCommands).
func compileScript(body []byte) (proto *lua.FunctionProto, literal bool, names []string, _ string) {
	return compileChunk(body, scriptSource, "ERR Error compiling script (new function): ")
}

// compileChunk is compileScript for a chunk named source, its errors
// starting with prefix.
func compileChunk(body []byte, source, prefix string) (proto *lua.FunctionProto, literal bool, names []string, _ string) {
	chunk, err := parse.Parse(bytes.NewReader(body), source)
	if err == nil {
		if proto, err = lua.Compile(chunk, source); err == nil {
			// Redis runs a script as a function body: no Lua 5.0 "arg"
			// table for its varargs, which gopher-lua would otherwise
			// build (with a map) on every run.
			proto.IsVarArg &^= lua.VarArgNeedsArg
			ok, names := namesCommands(chunk)
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

func newVM(e *Engine) *VM {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 8192, MinimizeStackMemory: true,
		RegistrySize: 1024, RegistryMaxSize: 1 << 20, RegistryGrowStep: 256})
	vm := &VM{eng: e, L: L, under: map[*lua.LTable]*lua.LTable{}, fns: map[*lua.FunctionProto]*lua.LFunction{}}
	vm.runCtx, vm.run.cancel = context.WithCancel(context.Background())
	vm.run.eng = e
	vm.caller = e.host.NewCaller()
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
	lua51Base(L, lib)
	vm.null = L.NewUserData()
	lib.RawSetString("redis", vm.redisLib())
	lib.RawSetString("cjson", vm.cjsonLib())
	lib.RawSetString("bit", bitLib(L))
	lib.RawSetString("struct", structLib(L))
	lib.RawSetString("cmsgpack", cmsgpackLib(L))
	vm.refuseProxy(lib.RawGetString("table").(*lua.LTable), "insert")
	for _, name := range []string{"string", "math", "table", "coroutine", "redis", "cjson", "bit", "struct", "cmsgpack"} {
		lib.RawSetString(name, vm.guard(lib.RawGetString(name).(*lua.LTable)))
	}
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__index", lib.RawGetString("string"))
		mt.RawSetString("__metatable", vm.guard(mt))
	}
	vm.seeThroughGuards(lib)
	vm.refuseProxy(lib, "rawset")
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
			} else if s, ok := L.Get(2).(lua.LString); ok {
				L.Replace(2, lua.LString(lua51Text(string(s))))
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
	// Globals Redis 7.0's scripts see too: its error handler, and Lua
	// 5.1's gcinfo (the heap in KB).
	lib.RawSetString("__redis__err__handler", vm.handler)
	lib.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		L.Push(lua.LNumber(sample[0].Value.Uint64() / 1024))
		return 1
	}))
	return vm
}

// seeThroughGuards makes the functions that look into a table without
// its metamethods (next, pairs, rawget, getmetatable, setmetatable) treat
// a read-only proxy as the table it guards, as Redis 7.0's read-only
// tables are plain tables to them: a script can list cjson's functions or
// _G's globals, and gets "Attempt to modify a readonly table" from
// setmetatable.
func (vm *VM) seeThroughGuards(lib *lua.LTable) {
	L := vm.L
	next := L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		k, v := vm.next(t, L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(v)
		return 2
	})
	lib.RawSetString("next", next)
	lib.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		L.Push(next)
		L.Push(L.CheckTable(1))
		L.Push(lua.LNil)
		return 3
	}))
	lib.RawSetString("rawget", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		v := t.RawGet(L.Get(2))
		if u := vm.under[t]; u != nil && v == lua.LNil {
			v = u.RawGet(L.Get(2))
		}
		L.Push(v)
		return 1
	}))
	getmetatable := lib.RawGetString("getmetatable").(*lua.LFunction)
	lib.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.under[t] != nil {
			mt, ok := vm.under[t].Metatable.(*lua.LTable)
			if !ok {
				L.Push(lua.LNil)
				return 1
			}
			if vm.under[mt] == nil {
				if vm.guardedMeta == nil {
					vm.guardedMeta = map[*lua.LTable]*lua.LTable{}
				}
				if vm.guardedMeta[mt] == nil {
					vm.guardedMeta[mt] = vm.guard(mt)
				}
				mt = vm.guardedMeta[mt]
			}
			L.Push(mt)
			return 1
		}
		L.Push(getmetatable)
		L.Push(L.Get(1))
		L.Call(1, 1)
		return 1
	}))
	vm.refuseProxy(lib, "setmetatable")
}

// refuseProxy makes lib's function name fail as on a read-only table when
// its first argument is a read-only proxy: rawset, setmetatable and
// table.insert write past a proxy's __newindex. Its error, a C
// function's, has no position, as in Redis 7.0 (table.remove and
// table.sort of a proxy's empty array write nothing, and pass there too).
func (vm *VM) refuseProxy(lib *lua.LTable, name string) {
	orig := lib.RawGetString(name).(*lua.LFunction)
	lib.RawSetString(name, vm.L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.under[t] != nil {
			L.Error(errReadonlyTable, 0)
		}
		top := L.GetTop()
		L.Insert(orig, 1)
		L.Call(top, lua.MultRet)
		return L.GetTop()
	}))
}

// next is Lua's next, over a proxy's own entries (KEYS and ARGV in the
// globals') and then its table's.
func (vm *VM) next(t *lua.LTable, k lua.LValue) (lua.LValue, lua.LValue) {
	u := vm.under[t]
	if u == nil {
		return t.Next(k)
	}
	if k == lua.LNil || t.RawGet(k) != lua.LNil {
		if k, v := t.Next(k); k != lua.LNil {
			return k, v
		}
		k = lua.LNil
	}
	for {
		var v lua.LValue
		if k, v = u.Next(k); k == lua.LNil || t.RawGet(k) == lua.LNil {
			return k, v
		}
	}
}

// guard returns a read-only proxy of t.
func (vm *VM) guard(t *lua.LTable) *lua.LTable {
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
	vm.under[p] = t
	return p
}

// errorHandler is Redis's __redis__err__handler: the error becomes a table
// {err=..., source=..., line=...} naming the script line that raised it.
func (vm *VM) errorHandler(L *lua.LState) int {
	e, ok := L.Get(1).(*lua.LTable)
	if !ok {
		e = L.NewTable()
		e.RawSetString("err", lua.LString("ERR "+lua51Text(L.ToStringMeta(L.Get(1)).String())))
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

// RunScript runs the script s with its keys and arguments, between Begin
// and End, and writes its reply to w.
func (vm *VM) RunScript(s *Script, keys, argv [][]byte, w *resp.Writer) {
	L := vm.L
	proto := s.proto
	vm.resp = 2
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
func (vm *VM) finishRun(err error, w *resp.Writer) {
	L := vm.L
	vm.replyFailed = false
	vm.countErrs = !vm.run.demoted.Load() // a demoted run's reply is dropped
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		start := len(w.Buf)
		vm.writeError(w, obj, vm.run.killed.Load())
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
func (vm *VM) noteError(v lua.LValue, b []byte) {
	vm.replyFailed = true
	if vm.countErrs && !vm.isCallErr(v) && len(b) > 0 && b[0] == '-' {
		vm.eng.host.CountError(b)
	}
}

// maxCallErrs bounds the call errors a run remembers (isCallErr).
const maxCallErrs = 16

// isCallErr reports whether v is the error of one of the run's calls.
func (vm *VM) isCallErr(v lua.LValue) bool {
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
func (vm *VM) reset(nkeys, nargs int) {
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

// strings fills t (a new table when nil) with items as its array 1..n,
// clearing what a previous run left after them.
func (vm *VM) strings(t *lua.LTable, items [][]byte) *lua.LTable {
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

// name is the running script's SHA in lower case, or its function's name.
func (vm *VM) name() string {
	if vm.run.fn != nil {
		return vm.run.fn.Name
	}
	return strings.ToLower(string(vm.run.id))
}
