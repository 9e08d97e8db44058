package script

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/dfly/dfly/resp"
)

// Conversions between Lua values and RESP: a script's result to its
// reply, a call's reply to Lua, and errors both ways, as Redis 7.0 does
// them.

// writeError writes a script's failure as Redis 7.0 does: the error's
// text, then " script: <sha>, on @user_script:<line>." when known.
func (vm *VM) writeError(w *resp.Writer, obj lua.LValue, killed bool) {
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
		msg = "ERR Error running script " + vm.name() + ", " + obj.String()
	}
	if killed {
		msg = msgScriptKill
	}
	if source != "" && line != "" {
		msg += " script: " + vm.name() + ", on " + source + ":" + line + "."
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

// writeReply converts the script's result to a reply (Redis 7.0's
// luaReplyToRedisReply).
func (vm *VM) writeReply(w *resp.Writer, v lua.LValue, depth int) {
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
		case vm.resp == 3:
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

func (vm *VM) writeTable(w *resp.Writer, t *lua.LTable, depth int) {
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
func (vm *VM) errorTable(text string) *lua.LTable {
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

// toLua converts the RESP reply at b[pos:] to Lua (Redis 7.0's
// redisProtocolToLuaType), returning it and the position after it.
func (vm *VM) toLua(b []byte, pos int) (lua.LValue, int) {
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
