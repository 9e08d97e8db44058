package bitmap

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dfly/dfly/types/num"
)

// TestScripts replays testdata/*.txt: one command per line followed by
// " => " and the reply redis-server 7.0.15 gave to that very script run
// from an empty database (so every expected reply was confirmed against
// the real server). The keyspace below wires the package the way the
// server does: lookups, WRONGTYPE and argument order are its job.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			db := keyspace{}
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := sc.Text()
				if line == "" || line[0] == '#' {
					continue
				}
				cmd, want, ok := strings.Cut(line, " => ")
				if !ok {
					t.Fatalf("%s:%d: no reply", file, n)
				}
				if got := db.do(tokens(t, cmd)); got != want {
					t.Errorf("%s:%d: %s\n got  %s\n want %s", file, n, cmd, got, want)
				}
			}
		})
	}
}

// tokens splits a script line on spaces; Go-quoted tokens may hold any byte.
func tokens(t *testing.T, line string) [][]byte {
	var out [][]byte
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				t.Fatalf("bad quoting: %s", line)
			}
			s, _ := strconv.Unquote(q)
			out = append(out, []byte(s))
			line = line[len(q):]
			continue
		}
		tok, rest, _ := strings.Cut(line, " ")
		out = append(out, []byte(tok))
		line = rest
	}
	return out
}

type keyspace map[string][]byte

func reply(v any, err error) string {
	if err != nil {
		var e num.Error
		if !errors.As(err, &e) {
			return "(bad error) " + err.Error()
		}
		return "(error) " + string(e)
	}
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case []byte:
		if x == nil {
			return "nil"
		}
		return strconv.Quote(string(x))
	case string:
		return strconv.Quote(x)
	case []Result:
		parts := make([]string, len(x))
		for i, r := range x {
			parts[i] = "nil"
			if !r.Nil {
				parts[i] = strconv.FormatInt(r.Value, 10)
			}
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	panic("reply type")
}

func (db keyspace) do(argv [][]byte) string {
	name, args := strings.ToLower(string(argv[0])), argv[1:]
	key := ""
	if len(args) > 0 {
		key = string(args[0])
	}
	val, exists := db[key]
	switch name {
	case "set":
		db[key] = append([]byte{}, args[1]...)
		return reply("OK", nil)
	case "get":
		return reply(val, nil)
	case "exists":
		return reply(map[bool]int{true: 1}[exists], nil)
	case "getbit":
		off, err := ParseOffset(args[1])
		if err != nil {
			return reply(nil, err)
		}
		return reply(Bit(val, off), nil)
	case "setbit":
		off, err := ParseOffset(args[1])
		if err != nil {
			return reply(nil, err)
		}
		on, err := ParseBit(args[2])
		if err != nil {
			return reply(nil, err)
		}
		var old int
		db[key], old = SetBit(val, off, on)
		return reply(old, nil)
	case "bitcount":
		if !exists {
			return reply(0, nil)
		}
		s, err := ParseCountSpan(args[1:])
		if err != nil {
			return reply(nil, err)
		}
		return reply(Count(val, s), nil)
	case "bitpos":
		bit, err := ParsePosBit(args[1])
		if err != nil {
			return reply(nil, err)
		}
		if !exists {
			return reply(int64(-bit), nil) // 0 for a 0, -1 for a 1
		}
		s, err := ParsePosSpan(args[2:])
		if err != nil {
			return reply(nil, err)
		}
		return reply(Pos(val, bit, s), nil)
	case "bitop":
		op, err := ParseOp(args[0], len(args)-2)
		if err != nil {
			return reply(nil, err)
		}
		var srcs [][]byte
		for _, k := range args[2:] {
			srcs = append(srcs, db[string(k)])
		}
		res := Apply(op, nil, srcs)
		if len(res) == 0 {
			delete(db, string(args[1]))
		} else {
			db[string(args[1])] = res
		}
		return reply(len(res), nil)
	case "bitfield", "bitfield_ro":
		p, err := ParseBitfield(args[1:], name == "bitfield_ro")
		if err != nil {
			return reply(nil, err)
		}
		newVal, results := p.Exec(val, nil)
		if p.Writes() {
			db[key] = newVal
		}
		return reply(results, nil)
	case "getrange", "substr":
		start, end, err := ParseRange(args[1], args[2])
		if err != nil {
			return reply(nil, err)
		}
		return reply(string(Range(val, start, end)), nil)
	case "setrange":
		off, err := ParseSetRangeOffset(args[1])
		if err != nil {
			return reply(nil, err)
		}
		newVal, err := SetRange(val, off, args[2])
		if err != nil {
			return reply(nil, err)
		}
		if len(args[2]) > 0 {
			db[key] = newVal
		}
		return reply(len(newVal), nil)
	}
	panic("unknown command " + name)
}
