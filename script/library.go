package script

import (
	"context"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/dfly/dfly/resp"
)

// The Lua side of function libraries (function.go): running a library's
// chunk, redis.register_function, and calling a function.

// libLoadTimeout bounds the run of a library's chunk, as Redis's
// (a chunk that never ends would hold FUNCTION LOAD and shard 0).
const libLoadTimeout = 500 * time.Millisecond

// libLoad is a chunk's run: the functions it registered, made in this
// interpreter; collect: also describe them in lib.Functions (FUNCTION LOAD,
// the first run of the library).
type libLoad struct {
	lib     *Library
	collect bool
	fns     map[string]*lua.LFunction
}

// functionEnv returns the interpreter's environment of libraries, made on
// first use: read-only; while a chunk loads it shows loadAPI, otherwise
// the scripts' globals (vm.env, whose missing names raise).
func (vm *VM) functionEnv() *lua.LTable {
	if vm.fnEnv != nil {
		return vm.fnEnv
	}
	L := vm.L
	missing := func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		return 0
	}
	readonly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
	api := L.NewTable()
	for name, fn := range map[string]lua.LGFunction{"register_function": vm.registerFunction, "log": vm.log} {
		api.RawSetString(name, L.NewFunction(fn))
	}
	for name, n := range map[string]int{"LOG_DEBUG": logDebug, "LOG_VERBOSE": logVerbose,
		"LOG_NOTICE": logNotice, "LOG_WARNING": logWarning} {
		api.RawSetString(name, lua.LNumber(n))
	}
	api.RawSetString("REDIS_VERSION", lua.LString(vm.eng.version))
	api.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(vm.eng.version)))
	redis := L.NewTable()
	L.SetMetatable(redis, vm.metaOf(L, L.NewFunction(func(L *lua.LState) int {
		if v := api.RawGet(L.Get(2)); v != lua.LNil {
			L.Push(v)
			return 1
		}
		return missing(L)
	}), readonly))
	vm.loadAPI = L.NewTable()
	vm.loadAPI.RawSetString("redis", redis)

	env := L.NewTable()
	L.SetMetatable(env, vm.metaOf(L, L.NewFunction(func(L *lua.LState) int {
		if vm.loading != nil {
			if v := vm.loadAPI.RawGet(L.Get(2)); v != lua.LNil {
				L.Push(v)
				return 1
			}
			return missing(L)
		}
		L.Push(L.GetTable(vm.env, L.Get(2)))
		return 1
	}), readonly))
	vm.fnEnv = env
	return env
}

// metaOf returns a locked metatable with index and newindex.
func (vm *VM) metaOf(L *lua.LState, index, newindex *lua.LFunction) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", index)
	mt.RawSetString("__newindex", newindex)
	mt.RawSetString("__metatable", lua.LFalse)
	return mt
}

// loadLibrary runs lib's chunk in this interpreter and returns the
// functions it registered; the error is the full reply.
func (vm *VM) loadLibrary(lib *Library, collect bool) (map[string]*lua.LFunction, string) {
	L := vm.L
	env := vm.functionEnv()
	ld := &libLoad{lib: lib, collect: collect, fns: map[string]*lua.LFunction{}}
	vm.loading = ld
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = env // closures made by the chunk inherit it
	ctx, cancel := context.WithTimeout(context.Background(), libLoadTimeout)
	L.SetContext(ctx)
	L.Push(fn)
	err := L.PCall(0, 0, vm.handler)
	L.RemoveContext()
	timedOut := ctx.Err() == context.DeadlineExceeded
	cancel()
	vm.loading = nil
	L.SetTop(0)
	if err != nil {
		text := err.Error()
		if ae, ok := err.(*lua.ApiError); ok {
			if t, ok := ae.Object.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					text = string(s)
				}
			} else {
				text = ae.Object.String()
			}
		}
		if timedOut {
			text = "FUNCTION LOAD timeout"
		}
		if collect {
			lib.Functions = nil
		}
		return nil, "ERR Error registering functions: " + text
	}
	return ld.fns, ""
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=..., callback=..., flags={...},
// description=...}, while a chunk loads.
func (vm *VM) registerFunction(L *lua.LState) int {
	ld := vm.loading
	fail := func(text string) { L.Error(vm.errorTable(text), 1) }
	if ld == nil {
		fail("redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &Function{Lib: ld.lib}
	var cb *lua.LFunction
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		named := false
		t.ForEach(func(k, v lua.LValue) {
			switch k.String() {
			case "function_name":
				s, ok := luaText(v)
				if !ok {
					fail("function_name argument given to redis.register_function must be a string")
				}
				f.Name, named = s, true
			case "callback":
				if cb, ok = v.(*lua.LFunction); !ok {
					fail("callback argument given to redis.register_function must be a function")
				}
			case "description":
				s, ok := luaText(v)
				if !ok {
					fail("description argument given to redis.register_function must be a string")
				}
				f.desc, f.hasDesc = s, true
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					fail("flags argument to redis.register_function must be a table representing function flags")
				}
				ft.ForEach(func(_, fl lua.LValue) {
					bit := -1
					if s, ok := fl.(lua.LString); ok {
						for i, n := range funcFlagNames {
							if string(s) == n {
								bit = i
							}
						}
					}
					if bit < 0 {
						fail("unknown flag given")
					}
					f.flags |= 1 << bit
				})
			default:
				fail("unknown argument given to redis.register_function")
			}
		})
		if !named {
			fail("redis.register_function must get a function name argument")
		}
		if cb == nil {
			fail("redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := luaText(L.Get(1))
		if !ok {
			fail("first argument to redis.register_function must be a string")
		}
		f.Name = s
		if cb, ok = L.Get(2).(*lua.LFunction); !ok {
			fail("second argument to redis.register_function must be a function")
		}
	default:
		fail("wrong number of arguments to redis.register_function")
	}
	if !validName(f.Name) {
		fail(errNameChars[len("ERR "):]) // sic: Redis 7.0 says library
	}
	if _, dup := ld.fns[f.Name]; dup {
		fail("Function already exists in the library")
	}
	for name := range ld.fns {
		if strings.EqualFold(name, f.Name) {
			fail("Function already exists in the library")
		}
	}
	ld.fns[f.Name] = cb
	if ld.collect {
		ld.lib.Functions = append(ld.lib.Functions, f)
	}
	return 0
}

// luaText is a string or number argument as text (Lua's coercion).
func luaText(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return luaNumberString(v), true
	}
	return "", false
}

// libFunction returns f's closure in this interpreter, running its
// library's chunk here first when needed.
func (vm *VM) libFunction(f *Function) (*lua.LFunction, string) {
	if g := vm.eng.libGen.Load(); g != vm.libGen || vm.libFns == nil {
		vm.libFns = map[*Library]map[string]*lua.LFunction{}
		vm.libGen = g
	}
	fns := vm.libFns[f.Lib]
	if fns == nil {
		var errText string
		if fns, errText = vm.loadLibrary(f.Lib, false); errText != "" {
			return nil, errText
		}
		vm.libFns[f.Lib] = fns
	}
	return fns[f.Name], ""
}

// RunFunction calls the function f with its keys and arguments, between
// Begin and End, and writes its reply to w: RunScript for FCALL.
func (vm *VM) RunFunction(f *Function, keys, argv [][]byte, w *resp.Writer) {
	L := vm.L
	vm.resp = 2
	fn, errText := vm.libFunction(f)
	if fn == nil {
		if errText == "" {
			errText = ErrFunctionNotFound
		}
		w.Error(errText)
		vm.reset(0, 0)
		return
	}
	vm.keysT = vm.strings(vm.keysT, keys)
	vm.argvT = vm.strings(vm.argvT, argv)
	L.SetContext(vm.runCtx)
	L.Push(fn)
	L.Push(vm.keysT)
	L.Push(vm.argvT)
	err := L.PCall(2, 1, vm.handler)
	L.RemoveContext()
	vm.finishRun(err, w)
	vm.reset(len(keys), len(argv))
}
