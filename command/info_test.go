package command_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dfly/dfly/command"
	_ "github.com/dfly/dfly/server" // registers every family
)

// The key specs COMMAND INFO reports find the keys dfly locks (Command.keys):
// all of them, except those only an unknown spec stands for (SORT's STORE),
// and no others but an empty key argument (MIGRATE's with KEYS, which
// Redis's specs find too).
func TestKeySpecsFindTheKeys(t *testing.T) {
	tab := command.NewTable()
	for _, line := range []string{
		"get k", "set k v get", "mset a 1 b 2 c 3", "del a b c", "blpop a b 0", "bitop and d a b",
		"lcs a b", "rename a b", "lmove a b left right", "copy a b", "pfmerge d a b", "sdiffstore d a b",
		"zunionstore d 2 a b weights 1 2", "zunion 2 a b", "zinter 3 a b c", "zintercard 2 a b limit 1",
		"lmpop 2 a b left", "blmpop 0 2 a b left count 1", "zmpop 1 a min", "bzmpop 1 2 a b max",
		"sintercard 2 a b", "eval s 2 a b x", "evalsha_ro s 1 a", "fcall f 0", "fcall_ro f 1 a x",
		"xread count 1 streams a b 0 0", "xreadgroup group g c count 1 streams a 0",
		"georadius k 0 0 1 m", "georadius k 0 0 1 m store d", "georadiusbymember k m 1 km storedist d",
		"geosearch k frommember m byradius 1 km", "geosearchstore d s frommember m byradius 1 km",
		"migrate h 1 k 0 5", "migrate h 1 \"\" 0 5 keys a b", "sort k", "sort k by w_* store d",
		"sort_ro k get g_*", "object encoding k", "memory usage k", "xgroup create k g $",
		"xinfo stream k", "watch a b", "spublish ch m", "ping",
	} {
		args := splitArgs(line)
		cmd := tab.Lookup(args[0])
		if cmd == nil {
			t.Fatalf("%s: no command", line)
		}
		want := cmd.Keys(nil, args)
		specs, unknown := cmd.Specs(), false
		if s := cmd.InfoSub(args[1%len(args)]); s != nil {
			specs = s.Specs()
		}
		var got []int
		for _, s := range specs {
			unknown = unknown || s.UnknownBegin()
			if !slices.Contains(s.Flags(), "not_key") {
				got = s.Positions(got, args)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		got = slices.DeleteFunc(got, func(p int) bool { return len(args[p]) == 0 }) // MIGRATE's with KEYS
		for _, p := range got {
			if !slices.Contains(want, p) {
				t.Errorf("%s: the key specs find argument %d, not a key of dfly's (%v)", line, p, want)
			}
		}
		if !unknown && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the key specs find %v, dfly's keys are %v", line, got, want)
		}
	}
}

// A command with one range of keys and no spec of its own reports that
// range, and reports it as it has always.
func TestLegacyRangeOfRangeCommands(t *testing.T) {
	for _, c := range command.NewTable().ByName {
		if c.KeySpecs != "" || c.FirstKey == 0 || c.KeyPositions != nil || c.Subs != nil {
			continue
		}
		first, last, step, movable := command.LegacyRange(c.Specs())
		if first != c.FirstKey || last != c.LastKey || step != c.Step || movable {
			t.Errorf("%s: reports %d %d %d (movable %v), its keys are %d %d %d",
				c.Name, first, last, step, movable, c.FirstKey, c.LastKey, c.Step)
		}
	}
	// Several specs: the index ones of step 1 that follow one another merge.
	for spec, want := range map[string]string{
		"OW update @2; RO access @3 range:-1":     "2 -1 1 false",
		"OW update @1; RO access @2 keynum:0:1:1": "1 1 1 true",
		"RO access kw:STREAMS:1 range:-1:1:2":     "0 0 0 true",
		"RW access delete @1; RW insert @2":       "1 2 1 false",
		"OW update @1 range:-1:2":                 "1 -1 2 false",
		"RO access @1; RO access ?":               "1 1 1 true",
	} {
		first, last, step, movable := command.LegacyRange(command.ParseKeySpecs(spec))
		if got := fmt.Sprint(first, last, step, movable); got != want {
			t.Errorf("%q: %s, want %s", spec, got, want)
		}
	}
}

// splitArgs splits a command line at spaces; "" is an empty argument.
func splitArgs(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}
