package txn

import (
	"testing"

	"github.com/dfly/dfly/command"
	_ "github.com/dfly/dfly/family" // the commands TXN runs
)

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

func TestParse(t *testing.T) {
	tbl := command.NewTable()
	// VALUE's value may be any word, IF and DO included.
	r, e := Parse(tbl, args("TXN", "if", "exists", "a", "IF", "VALUE", "b", "DO", "do", "3", "SET", "c", "IF",
		"DO", "5", "MSET", "{t}d", "1", "{t}e", "2"))
	if e != "" {
		t.Fatal(e)
	}
	if len(r.Conds) != 2 || r.Conds[0].Kind != Exists || r.Conds[1].Kind != ValueEq || string(r.Conds[1].Key) != "b" || string(r.Conds[1].Arg) != "DO" {
		t.Fatalf("conditions: %+v", r.Conds)
	}
	if len(r.Muts) != 2 || r.Muts[0].Cmd.Name != "set" || string(r.Muts[0].Args[2]) != "IF" || r.Muts[1].Cmd.Name != "mset" || len(r.Muts[1].Keys) != 2 {
		t.Fatalf("mutations: %+v", r.Muts)
	}
}

func TestParseErrors(t *testing.T) {
	tbl := command.NewTable()
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"TXN", "DO", "3", "SET", "a", "1"}, ""},
		{[]string{"TXN", "IF", "VERSION", "a", "v", "DO", "2", "GET", "a"}, ""},
		{[]string{"TXN", "IF", "VERSION", "a"}, command.ErrSyntax},
		{[]string{"TXN", "IF", "EXISTS", "a"}, "ERR TXN: no mutation (DO argc command arg ...)"},
		{[]string{"TXN", "DO", "4", "SET", "a", "1"}, "ERR TXN: DO 1 needs a count of 1 or more of the arguments that follow it"},
		{[]string{"TXN", "DO", "-1", "SET"}, "ERR TXN: DO 1 needs a count of 1 or more of the arguments that follow it"},
		{[]string{"TXN", "DO", "1", "RANDOMKEY"}, "ERR TXN: 'randomkey' cannot run in a TXN in DO 1 (only commands on keys, each on its keys' shard)"},
		{[]string{"TXN", "DO", "2", "GET", "a", "X"}, command.ErrSyntax},
		{[]string{"TXN", "DO", "2", "GET", "a", "DO", "1", "GET"}, "ERR TXN: wrong number of arguments for 'get' in DO 2"},
	} {
		_, e := Parse(tbl, args(c.in...))
		if e != c.want {
			t.Errorf("%q: %q, want %q", c.in, e, c.want)
		}
	}
}

func TestKeyPositions(t *testing.T) {
	tbl := command.NewTable()
	a := args("TXN", "IF", "EXISTS", "k1", "IF", "VERSION", "k2", "v", "DO", "3", "SET", "k3", "v", "DO", "5", "MSET", "k4", "1", "k5", "2")
	got := keyPositions(tbl, nil, a)
	want := []int{3, 6, 11, 16, 18}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	// A request that does not parse yields the keys up to where it breaks.
	if got := keyPositions(tbl, nil, args("TXN", "DO", "9", "GET", "k")); len(got) != 0 {
		t.Fatalf("bad count: %v", got)
	}
}
