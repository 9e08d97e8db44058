package script

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is lua-cmsgpack 0.4.0 as Redis 7.0 bundles it: MessagePack
// written byte for byte as it writes it (the smallest integer form, a
// float32 when the number survives the round trip, str8 for strings of 32
// to 255 bytes, a table as an array when its keys are exactly 1..n) and
// read back, several top-level values to a string. Its errors carry the
// script's position (luaL_error of a function the script called).

// msgpackMaxNesting is LUACMSGPACK_MAX_NESTING: a table nested this deep is
// packed as nil, so a table that contains itself ends.
const msgpackMaxNesting = 16

// luaMaxCStack is LUAI_MAXCSTACK, the stack slots a C function may use:
// unpack fails past it as in Redis, with luaL_checkstack's texts.
const luaMaxCStack = 8000

func cmsgpackLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, "unpack", 0, 0)
	}))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := msgpackIntArg(L, 2, "unpack_one", true)
		L.SetTop(1)
		return msgpackUnpack(L, "unpack_one", 1, offset)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := msgpackIntArg(L, 2, "unpack_limit", false)
		offset := msgpackIntArg(L, 3, "unpack_limit", true)
		L.SetTop(1)
		return msgpackUnpack(L, "unpack_limit", limit, offset)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// msgpackPack is cmsgpack.pack(...): its arguments' encodings, concatenated.
func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.RaiseError("bad argument #0 to 'pack' (MessagePack pack needs input.)")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = msgpackEncode(b, L.Get(i), 0)
	}
	L.Push(lua.LString(b))
	return 1
}

// msgpackIntArg is luaL_checkinteger (opt: luaL_optinteger, 0 when absent).
func msgpackIntArg(L *lua.LState, i int, fname string, opt bool) int {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return int(int32(int64(v))) // lua-cmsgpack keeps an int
	case lua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64); err == nil {
			return int(int32(int64(f)))
		}
	case *lua.LNilType:
		if opt {
			return 0
		}
	}
	msgpackArgError(L, i, fname, "number")
	return 0
}

// msgpackArgError is luaL_typerror's text.
func msgpackArgError(L *lua.LState, i int, fname, want string) {
	got := "no value"
	if i <= L.GetTop() {
		got = L.Get(i).Type().String()
	}
	L.RaiseError("bad argument #%d to '%s' (%s expected, got %s)", i, fname, want, got)
}

// int64Equivalent is lua-cmsgpack's IS_INT64_EQUIVALENT.
func int64Equivalent(f float64) bool {
	return !math.IsInf(f, 0) && f >= -(1<<63) && f < 1<<63 && float64(int64(f)) == f
}

func msgpackEncode(b []byte, v lua.LValue, level int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return msgpackString(b, string(v))
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		if f := float64(v); int64Equivalent(f) {
			return msgpackInt(b, int64(f))
		} else if f32 := float32(f); float64(f32) == f {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(f32))
		} else {
			return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
		}
	case *lua.LTable:
		if level == msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArrayLen(v); ok {
			b = msgpackHeader(b, 0x90, 0xdc, n)
			for i := 1; i <= n; i++ {
				b = msgpackEncode(b, v.RawGetInt(i), level+1)
			}
			return b
		}
		n := 0
		v.ForEach(func(lua.LValue, lua.LValue) { n++ })
		b = msgpackHeader(b, 0x80, 0xde, n)
		v.ForEach(func(k, val lua.LValue) {
			b = msgpackEncode(b, k, level+1)
			b = msgpackEncode(b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0) // nil, functions, userdata ...
}

// msgpackArrayLen is table_is_an_array: every key a positive integer and
// as many keys as the largest, so the keys are 1..n; n is then the
// table's length as lua_objlen gives it.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, max, ok := 0, 0, true
	t.ForEach(func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !ok || !isNum || n <= 0 || float64(n) != math.Trunc(float64(n)) || float64(n) > math.MaxInt32 {
			ok = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	if !ok || count != max {
		return 0, false
	}
	return t.Len(), true
}

// msgpackHeader writes an array's (fix 0x90, 16-bit 0xdc) or a map's
// (0x80, 0xde) header; the 32-bit form follows the 16-bit one.
func msgpackHeader(b []byte, fix, code16 byte, n int) []byte {
	switch {
	case n <= 15:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code16+1), uint32(n))
}

func msgpackString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func msgpackInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(n))
	case n >= -128:
		return append(b, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// msgpackUnpack is mp_unpack_full: the values of the string argument from
// offset, at most limit of them (both 0: all, and no offset returned),
// after the offset of the next value (-1 at the end) when limited.
func msgpackUnpack(L *lua.LState, fname string, limit, offset int) int {
	var s string
	switch v := L.Get(1).(type) {
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = v.String()
	default:
		msgpackArgError(L, 1, fname, "string")
	}
	all := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	} else if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	if all {
		limit = math.MaxInt32
	}
	d := msgpackDecoder{L: L, b: []byte(s[offset:])}
	n := 0
	for ; len(d.b) > 0 && n < limit; n++ {
		if d.base = L.GetTop(); d.base+1 > luaMaxCStack {
			L.RaiseError("stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
		}
		if v := d.value(); d.err != "" {
			L.RaiseError("%s", d.err)
		} else {
			L.Push(v)
		}
	}
	if all {
		return n
	}
	next := lua.LNumber(len(s) - len(d.b))
	if len(d.b) == 0 {
		next = -1
	}
	L.Insert(next, 2)
	return n + 1
}

type msgpackDecoder struct {
	L   *lua.LState
	b   []byte
	err string
	// base: the stack's height under the value being read; depth: the
	// tables open, each holding two slots as lua-cmsgpack's do.
	base, depth int
}

// open enters a table, failing where Lua's stack would.
func (d *msgpackDecoder) open(array bool) {
	d.depth++
	if d.base+2*d.depth > luaMaxCStack {
		if array {
			d.L.RaiseError("stack overflow (in function mp_decode_to_lua_array)")
		}
		d.L.RaiseError("stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
	}
}

const (
	msgpackMissing = "Missing bytes in input."
	msgpackBadFmt  = "Bad data format in input."
)

// take consumes n bytes, or fails with nil.
func (d *msgpackDecoder) take(n int) []byte {
	if d.err != "" {
		return nil
	}
	if len(d.b) < n {
		d.err = msgpackMissing
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

// size reads an n-byte big-endian length.
func (d *msgpackDecoder) size(n int) int {
	p := d.take(n)
	switch {
	case p == nil:
		return 0
	case n == 1:
		return int(p[0])
	case n == 2:
		return int(binary.BigEndian.Uint16(p))
	}
	return int(binary.BigEndian.Uint32(p))
}

func (d *msgpackDecoder) value() lua.LValue {
	p := d.take(1)
	if p == nil {
		return lua.LNil
	}
	switch c := p[0]; {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c >= 0xa0 && c <= 0xbf:
		return d.str(int(c & 0x1f))
	case c >= 0x90 && c <= 0x9f:
		return d.array(int(c & 0x0f))
	case c >= 0x80 && c <= 0x8f:
		return d.table(int(c & 0x0f))
	}
	switch c := p[0]; c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc, 0xcd, 0xce, 0xcf:
		p := d.take(1 << (c - 0xcc))
		switch len(p) {
		case 1:
			return lua.LNumber(p[0])
		case 2:
			return lua.LNumber(binary.BigEndian.Uint16(p))
		case 4:
			return lua.LNumber(binary.BigEndian.Uint32(p))
		case 8:
			return lua.LNumber(binary.BigEndian.Uint64(p))
		}
	case 0xd0, 0xd1, 0xd2, 0xd3:
		p := d.take(1 << (c - 0xd0))
		switch len(p) {
		case 1:
			return lua.LNumber(int8(p[0]))
		case 2:
			return lua.LNumber(int16(binary.BigEndian.Uint16(p)))
		case 4:
			return lua.LNumber(int32(binary.BigEndian.Uint32(p)))
		case 8:
			return lua.LNumber(int64(binary.BigEndian.Uint64(p)))
		}
	case 0xca:
		if p := d.take(4); p != nil {
			return lua.LNumber(math.Float32frombits(binary.BigEndian.Uint32(p)))
		}
	case 0xcb:
		if p := d.take(8); p != nil {
			return lua.LNumber(math.Float64frombits(binary.BigEndian.Uint64(p)))
		}
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32; no bin types in 0.4.0
		return d.str(d.size(1 << (c - 0xd9)))
	case 0xdc, 0xdd: // array 16, 32
		return d.array(d.size(2 << (c - 0xdc)))
	case 0xde, 0xdf: // map 16, 32
		return d.table(d.size(2 << (c - 0xde)))
	default:
		d.err = msgpackBadFmt
	}
	return lua.LNil
}

func (d *msgpackDecoder) str(n int) lua.LValue {
	if p := d.take(n); p != nil {
		return lua.LString(p)
	}
	return lua.LNil
}

func (d *msgpackDecoder) array(n int) lua.LValue {
	d.open(true)
	t := d.L.NewTable()
	for i := 1; i <= n && d.err == ""; i++ {
		t.RawSetInt(i, d.value())
	}
	d.depth--
	return t
}

func (d *msgpackDecoder) table(n int) lua.LValue {
	d.open(false)
	defer func() { d.depth-- }()
	t := d.L.NewTable()
	for i := 0; i < n && d.err == ""; i++ {
		k := d.value()
		v := d.value()
		if d.err == "" {
			if k == lua.LNil {
				d.L.Error(lua.LString("table index is nil"), 0) // a runtime error inside C: no position
			}
			d.L.SetTable(t, k, v)
		}
	}
	return t
}
