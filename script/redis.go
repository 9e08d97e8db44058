package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The redis library of scripts: redis.call and redis.pcall (the Lua side;
// the server runs the command: Caller), the replies' helpers, redis.log
// and the constants.

// Redis's log levels (redis.LOG_*).
const (
	logDebug = iota
	logVerbose
	logNotice
	logWarning
)

// fail ends a redis.call (raising the error) or a redis.pcall (returning
// it) with an error of the library itself.
func (vm *VM) fail(L *lua.LState, raise bool, text string) int {
	e := vm.errorTable(text)
	if raise {
		L.Error(e, 1)
	}
	L.Push(e)
	return 1
}

func (vm *VM) redisLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return vm.call(L, true) },
		"pcall": func(L *lua.LState) int { return vm.call(L, false) },
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.Error(vm.errorTable("wrong number of arguments"), 1)
			}
			L.Push(lua.LString(SHA1Hex([]byte(L.ToString(1)))))
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
			vm.resp = int(n)
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
	for name, n := range map[string]int{"LOG_DEBUG": logDebug, "LOG_VERBOSE": logVerbose,
		"LOG_NOTICE": logNotice, "LOG_WARNING": logWarning, "REPL_NONE": 0, "REPL_AOF": 1,
		"REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(n))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(vm.eng.version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(vm.eng.version)))
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

func (vm *VM) log(L *lua.LState) int {
	argc := L.GetTop()
	if argc < 2 {
		L.Error(vm.errorTable("redis.log() requires two arguments or more."), 1)
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		L.Error(vm.errorTable("First argument must be a number (log level)."), 1)
	}
	level := int(lv)
	if level < logDebug || level > logWarning {
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
	case logDebug:
		lg.Debugf("%s", b.String())
	case logVerbose:
		lg.Verbosef("%s", b.String())
	case logNotice:
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

// call is redis.call (raise) and redis.pcall: the arguments become a
// command the Caller runs, its reply a Lua value.
func (vm *VM) call(L *lua.LState, raise bool) int {
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
	vm.reply.Buf = vm.reply.Buf[:0]
	vm.reply.Proto = vm.resp
	refused, killed := vm.caller.Call(args, &vm.reply)
	switch {
	case killed:
		L.Error(vm.errorTable(msgScriptKill[len("ERR "):]), 1)
	case refused != "":
		return vm.fail(L, raise, refused)
	}
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
