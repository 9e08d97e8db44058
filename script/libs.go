package script

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The libraries Redis bundles for scripts: cjson (lua-cjson), bit
// (LuaBitOp) and struct (Roberto Ierusalimschy's struct), with the
// behaviour scripts rely on. Their errors carry the calling script's
// position, as luaL_error's do in Redis.

func libError(L *lua.LState, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	L.Error(lua.LString(msg), 1)
}

// ---- cjson ----

const cjsonMaxDepth = 1000

func (vm *VM) cjsonLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			libError(L, "bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b []byte
		b = vm.jsonEncode(L, b, L.Get(1), 0)
		L.Push(lua.LString(b))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			libError(L, "bad argument #1 to 'decode' (expected 1 argument)")
		}
		L.Push(vm.jsonDecode(L, L.CheckString(1)))
		return 1
	}))
	t.RawSetString("null", vm.null)
	for _, name := range []string{"encode_keep_buffer", "encode_max_depth", "decode_max_depth",
		"encode_number_precision", "encode_sparse_array", "encode_invalid_numbers", "decode_invalid_numbers"} {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return 0 }))
	}
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

// jsonNumber formats like lua-cjson's default "%.14g".
func jsonNumber(L *lua.LState, b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		libError(L, "Cannot serialise number: must not be NaN or Inf")
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', 14, 64)
}

func jsonString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '/':
			b = append(b, '\\', '/')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if ch < 0x20 || ch == 0x7f {
				b = append(b, '\\', 'u', '0', '0', hexd[ch>>4], hexd[ch&15])
			} else {
				b = append(b, ch)
			}
		}
	}
	return append(b, '"')
}

func (vm *VM) jsonEncode(L *lua.LState, b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return jsonString(b, string(v))
	case lua.LNumber:
		return jsonNumber(L, b, float64(v))
	case lua.LBool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case *lua.LNilType:
		return append(b, "null"...)
	case *lua.LUserData:
		if v == vm.null {
			return append(b, "null"...)
		}
	case *lua.LTable:
		depth++
		if depth > cjsonMaxDepth {
			libError(L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		// An array: every key a positive integer, not too sparse.
		max, items := 0, 0
		array := true
		v.ForEach(func(k, _ lua.LValue) {
			n, ok := k.(lua.LNumber)
			if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
				array = false
				return
			}
			items++
			if int(n) > max {
				max = int(n)
			}
		})
		if array && max > items*2 && max > 10 {
			libError(L, "Cannot serialise table: excessively sparse array")
		}
		if array && max > 0 {
			b = append(b, '[')
			for i := 1; i <= max; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = vm.jsonEncode(L, b, v.RawGetInt(i), depth)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		v.ForEach(func(k, val lua.LValue) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch k := k.(type) {
			case lua.LString:
				b = jsonString(b, string(k))
			case lua.LNumber:
				b = append(b, '"')
				b = jsonNumber(L, b, float64(k))
				b = append(b, '"')
			default:
				libError(L, "Cannot serialise table: table key must be a number or string")
			}
			b = append(b, ':')
			b = vm.jsonEncode(L, b, val, depth)
		})
		return append(b, '}')
	}
	libError(L, "Cannot serialise %s: type not supported", v.Type().String())
	return b
}

func (vm *VM) jsonDecode(L *lua.LState, s string) lua.LValue {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := vm.jsonValue(L, dec, 0)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("Expected the end but found invalid token at character " + strconv.Itoa(int(dec.InputOffset())+1))
		}
	}
	if err != nil {
		msg := err.Error()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg = "Expected value but found invalid token at character " + strconv.Itoa(int(se.Offset))
		} else if err == io.EOF || err == io.ErrUnexpectedEOF {
			msg = "Expected value but found T_END at character " + strconv.Itoa(len(s)+1)
		}
		libError(L, "%s", msg)
	}
	return v
}

func (vm *VM) jsonValue(L *lua.LState, dec *json.Decoder, depth int) (lua.LValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return lua.LNil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		depth++
		if depth > cjsonMaxDepth {
			return lua.LNil, errors.New("Found too many nested data structures (" + strconv.Itoa(depth) + ") at character " + strconv.Itoa(int(dec.InputOffset())))
		}
		tbl := L.NewTable()
		if t == '[' {
			for i := 1; dec.More(); i++ {
				v, err := vm.jsonValue(L, dec, depth)
				if err != nil {
					return lua.LNil, err
				}
				tbl.RawSetInt(i, v)
			}
		} else {
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return lua.LNil, err
				}
				v, err := vm.jsonValue(L, dec, depth)
				if err != nil {
					return lua.LNil, err
				}
				tbl.RawSetString(k.(string), v)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return lua.LNil, err
		}
		return tbl, nil
	case string:
		return lua.LString(t), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return lua.LNil, err
		}
		return lua.LNumber(f), nil
	case bool:
		return lua.LBool(t), nil
	case nil:
		return vm.null, nil
	}
	return lua.LNil, errors.New("unexpected token")
}

// ---- bit ----

// bitArg converts a number as LuaBitOp does: rounded to nearest (ties to
// even), modulo 2^32.
func bitArg(L *lua.LState, i int) uint32 {
	f := math.RoundToEven(float64(L.CheckNumber(i)))
	if math.Abs(f) < 1<<63 {
		return uint32(int64(f))
	}
	return uint32(uint64(math.Mod(f, 1<<32)))
}

func bitLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	ret := func(L *lua.LState, v uint32) int {
		L.Push(lua.LNumber(int32(v)))
		return 1
	}
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := bitArg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, bitArg(L, i))
			}
			return ret(L, v)
		}
	}
	shift := func(op func(v uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v, n := bitArg(L, 1), bitArg(L, 2)
			return ret(L, op(v, uint(n&31)))
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, bitArg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^bitArg(L, 1)) },
		"band":  fold(func(a, b uint32) uint32 { return a & b }),
		"bor":   fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":  fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift": shift(func(v uint32, n uint) uint32 {
			return v << n
		}),
		"rshift": shift(func(v uint32, n uint) uint32 {
			return v >> n
		}),
		"arshift": shift(func(v uint32, n uint) uint32 {
			return uint32(int32(v) >> n)
		}),
		"rol": shift(func(v uint32, n uint) uint32 {
			return v<<n | v>>((32-n)&31)
		}),
		"ror": shift(func(v uint32, n uint) uint32 {
			return v>>n | v<<((32-n)&31)
		}),
		"bswap": func(L *lua.LState) int {
			v := bitArg(L, 1)
			return ret(L, v>>24|(v>>8)&0xff00|(v&0xff00)<<8|v<<24)
		},
		"tohex": func(L *lua.LState) int {
			v := bitArg(L, 1)
			n := int32(8)
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				n = int32(bitArg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := int(n) - 1; i >= 0; i-- {
				buf[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// ---- struct ----

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

type structHeader struct {
	big   bool
	align int
	fn    string // pack, unpack or size: luaL_argerror names it
}

// structOpt reads one option at format[*i:], returning it and its size.
func structOpt(L *lua.LState, format string, i *int, h *structHeader) (byte, int) {
	opt := format[*i]
	*i++
	num := func(def int) int {
		if *i >= len(format) || format[*i] < '0' || format[*i] > '9' {
			return def
		}
		n := 0
		for *i < len(format) && format[*i] >= '0' && format[*i] <= '9' {
			n = n*10 + int(format[*i]-'0')
			*i++
		}
		return n
	}
	switch opt {
	case 'B', 'b', 'x':
		return opt, 1
	case 'H', 'h':
		return opt, 2
	case 'L', 'l', 'T':
		return opt, 8
	case 'f':
		return opt, 4
	case 'd':
		return opt, 8
	case 'c':
		return opt, num(1)
	case 'i', 'I':
		n := num(4)
		if n > structMaxIntSize {
			libError(L, "integral size %d is larger than limit of %d", n, structMaxIntSize)
		}
		return opt, n
	case 's', ' ':
		return opt, 0
	case '>':
		h.big = true
		return opt, 0
	case '<':
		h.big = false
		return opt, 0
	case '!':
		a := num(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			libError(L, "alignment %d is not a power of 2", a)
		}
		h.align = a
		return opt, 0
	}
	if h.fn == "size" && (opt >= 'a' && opt <= 'z' || opt >= 'A' && opt <= 'Z' || opt >= '0' && opt <= '9') {
		return opt, 0 // size passes only non-alphanumeric options to controloptions
	}
	libError(L, "bad argument #1 to '%s' (invalid format option '%s')", h.fn, string(opt))
	return 0, 0
}

func structAlign(L *lua.LState, n int, h *structHeader, opt byte, size int) int {
	if size <= 1 || opt == 'c' {
		return 0
	}
	align := size
	if align > h.align {
		align = h.align
	}
	if align&(align-1) != 0 {
		libError(L, "alignment must be power of 2")
	}
	return (align - (n & (align - 1))) & (align - 1)
}

func structLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

func structPack(L *lua.LState) int {
	format := L.CheckString(1)
	h := structHeader{align: 1, fn: "pack"}
	arg := 2
	var b []byte
	for i := 0; i < len(format); {
		opt, size := structOpt(L, format, &i, &h)
		for pad := structAlign(L, len(b), &h, opt, size); pad > 0; pad-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			buf := make([]byte, size)
			for k := 0; k < size; k++ {
				idx := k
				if h.big {
					idx = size - 1 - k
				}
				buf[idx] = byte(v)
				v >>= 8
			}
			b = append(b, buf...)
		case 'x':
			b = append(b, 0)
		case 'f':
			v := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			if h.big {
				b = binary.BigEndian.AppendUint32(b, v)
			} else {
				b = binary.LittleEndian.AppendUint32(b, v)
			}
		case 'd':
			v := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			if h.big {
				b = binary.BigEndian.AppendUint64(b, v)
			} else {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			n := size
			if opt == 's' {
				b = append(b, s...)
				b = append(b, 0)
				continue
			}
			if n == 0 {
				n = len(s)
			}
			if len(s) < n {
				libError(L, "bad argument #%d to 'pack' (string too short)", arg-1)
			}
			b = append(b, s[:n]...)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func structUnpack(L *lua.LState) int {
	format := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		libError(L, "bad argument #3 to 'unpack' (offset must be 1 or greater)")
	}
	h := structHeader{align: 1, fn: "unpack"}
	n := 0
	short := func() { libError(L, "bad argument #2 to 'unpack' (data string too short)") }
	for i := 0; i < len(format); {
		opt, size := structOpt(L, format, &i, &h)
		pos += structAlign(L, pos, &h, opt, size)
		if size > len(data) || pos > len(data)-size {
			short()
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var v uint64
			for k := 0; k < size; k++ {
				idx := pos + k
				if !h.big {
					idx = pos + size - 1 - k
				}
				v = v<<8 | uint64(data[idx])
			}
			if opt >= 'a' && size < 8 { // signed: extend the sign
				mask := uint64(1) << (size*8 - 1)
				v = (v ^ mask) - mask
			}
			if opt >= 'a' {
				L.Push(lua.LNumber(int64(v)))
			} else {
				L.Push(lua.LNumber(v))
			}
			n++
		case 'f':
			var v uint32
			if h.big {
				v = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			} else {
				v = binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			}
			L.Push(lua.LNumber(math.Float32frombits(v)))
			n++
		case 'd':
			var v uint64
			if h.big {
				v = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				v = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			}
			L.Push(lua.LNumber(math.Float64frombits(v)))
			n++
		case 'c':
			if size == 0 {
				prev, ok := L.Get(-1).(lua.LNumber)
				if n == 0 || !ok {
					libError(L, "format 'c0' needs a previous size")
				}
				size = int(prev)
				L.Pop(1)
				n--
				if size > len(data) || pos > len(data)-size {
					short()
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case 's':
			e := bytes.IndexByte([]byte(data[pos:]), 0)
			if e < 0 {
				libError(L, "unfinished string in data")
			}
			size = e + 1
			L.Push(lua.LString(data[pos : pos+e]))
			n++
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	format := L.CheckString(1)
	h := structHeader{align: 1, fn: "size"}
	total := 0
	for i := 0; i < len(format); {
		opt, size := structOpt(L, format, &i, &h)
		total += structAlign(L, total, &h, opt, size)
		if opt == 's' {
			libError(L, "bad argument #1 to 'size' (option 's' has no fixed size)")
		} else if opt == 'c' && size == 0 {
			libError(L, "bad argument #1 to 'size' (option 'c0' has no fixed size)")
		}
		total += size
	}
	L.Push(lua.LNumber(total))
	return 1
}
