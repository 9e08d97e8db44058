package script

import (
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's error texts. gopher-lua words its runtime errors its own way
// ("cannot perform add operation between number and table"); scripts and
// their tests match Redis's texts, which are Lua 5.1's ("attempt to
// perform arithmetic on a table value"). lua51Text rewrites the ones whose
// Lua 5.1 form can be told from gopher-lua's text; the rest (a call of a
// non-function, the length of a non-table: gopher-lua does not say the
// value's type) stay as gopher-lua words them. Lua 5.1 also names the
// variable ("local 't'", "field 'b'"), which gopher-lua cannot: those read
// as Lua 5.1 reads them without debug information.

var (
	reArgName = regexp.MustCompile(`bad argument #(\d+) to ([A-Za-z_][A-Za-z0-9_]*) \(`)
	reOp      = regexp.MustCompile(`cannot perform (\w+) operation between (\w+) and (\w+)`)
	reCompare = regexp.MustCompile(`attempt to compare (\w+) with (\w+)`)
	reIndex   = regexp.MustCompile(`(?s)attempt to index a non-table object\((\w+)\) with key .*`)
)

var forTexts = strings.NewReplacer(
	"for statement init must be a number", "'for' initial value must be a number",
	"for statement limit must be a number", "'for' limit must be a number",
	"for statement step must be a number", "'for' step must be a number",
)

// lua51Text rewrites a runtime error's text as Lua 5.1 words it.
func lua51Text(msg string) string {
	if !strings.Contains(msg, "argument #") && !strings.Contains(msg, "operation between") &&
		!strings.Contains(msg, "attempt to") && !strings.Contains(msg, "for statement") {
		return msg
	}
	msg = reArgName.ReplaceAllString(msg, "bad argument #$1 to '$2' (")
	msg = reOp.ReplaceAllStringFunc(msg, func(s string) string {
		m := reOp.FindStringSubmatch(s)
		op, a, b := m[1], m[2], m[3]
		if op == "concat" {
			// Lua 5.1 names the first operand that is neither a
			// string nor a number.
			if a == "string" || a == "number" {
				a = b
			}
			return "attempt to concatenate a " + a + " value"
		}
		// Arithmetic names the first operand that is not a number (a
		// string that converts is one; one that did not convert is the
		// culprit).
		if a == "number" {
			a = b
		}
		return "attempt to perform arithmetic on a " + a + " value"
	})
	msg = reCompare.ReplaceAllStringFunc(msg, func(s string) string {
		m := reCompare.FindStringSubmatch(s)
		if m[1] == m[2] {
			return "attempt to compare two " + m[1] + " values"
		}
		return s
	})
	msg = reIndex.ReplaceAllString(msg, "attempt to index a $1 value")
	return forTexts.Replace(msg)
}

// lua51Base replaces error and assert with Lua 5.1's: error adds the
// position to a number too and counts levels as Lua 5.1 does (level 2 is
// the script's caller, which has none); assert takes a number as its
// message and words its failure "assertion failed!".
func lua51Base(L *lua.LState, lib *lua.LTable) {
	lib.RawSetString("error", L.NewFunction(func(L *lua.LState) int {
		v := L.Get(1)
		level := L.OptInt(2, 1)
		if n, ok := v.(lua.LNumber); ok {
			v = lua.LString(n.String())
		}
		s, ok := v.(lua.LString)
		if !ok || level <= 0 {
			L.Error(v, 0)
			return 0
		}
		if level == 1 {
			L.Error(s, 1) // the script's position, as gopher-lua counts
			return 0
		}
		L.Error(lua.LString(where(L, level)+string(s)), 0)
		return 0
	}))
	lib.RawSetString("assert", L.NewFunction(func(L *lua.LState) int {
		if L.ToBool(1) {
			return L.GetTop()
		}
		msg := "assertion failed!"
		if L.GetTop() >= 2 {
			switch v := L.Get(2).(type) {
			case lua.LString, lua.LNumber:
				msg = v.String()
			default:
				L.RaiseError("bad argument #2 to 'assert' (string expected, got %s)", v.Type().String())
			}
		}
		L.RaiseError("%s", msg)
		return 0
	}))
}

// where is Lua 5.1's luaL_where: "source:line: " of the function level
// calls up (1 is the caller of the running Go function), or "" when that
// is not a Lua function.
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
}
