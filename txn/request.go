package txn

import (
	"strconv"
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/lock"
)

// TXN's syntax:
//
//	TXN [IF EXISTS key | IF NOTEXISTS key | IF VALUE key value |
//	     IF VERSION key version | IF SEQUENCER name mode generation] ...
//	    DO argc command arg ... [DO argc command arg ...] ...
//	    [ONFAIL argc command arg ...] ...
//
// argc counts the command's name and arguments, so any byte string can be
// an argument. The conditions come first, the mutations after, each run
// in order. ONFAIL reads (commands that only read) run, atomically with
// the failed check, only when a condition fails: the reply is then an
// array of the PRECONDITION error and their replies, so a client retrying
// a read-modify-write has the fresh state without another round trip.

// Kind is a condition's kind.
type Kind uint8

const (
	Exists    Kind = iota + 1 // IF EXISTS key
	NotExists                 // IF NOTEXISTS key
	ValueEq                   // IF VALUE key value: a string equal to value
	VersionEq                 // IF VERSION key version: KEYVERSION's reply
	Sequencer                 // IF SEQUENCER name mode generation: LOCK.ACQUIRE's grant still current
)

var kindNames = map[string]Kind{"EXISTS": Exists, "NOTEXISTS": NotExists, "VALUE": ValueEq, "VERSION": VersionEq, "SEQUENCER": Sequencer}

func (k Kind) String() string {
	for name, v := range kindNames {
		if v == k {
			return name
		}
	}
	return "?"
}

// Condition is one IF of a request.
type Condition struct {
	Kind Kind
	Key  []byte
	Arg  []byte // VALUE's value, VERSION's version
	Seq  lock.Sequencer
}

// Mutation is one DO of a request: a command of the table with its
// arguments (Args[0] its name) and the positions of its keys.
type Mutation struct {
	Cmd  *command.Command
	Args [][]byte
	Keys []int
}

// Request is a parsed TXN.
type Request struct {
	Conds []Condition
	Muts  []Mutation
	// OnFail are the reads to answer a failed condition with.
	OnFail []Mutation
}

// Parse reads a TXN's arguments (args[0] is TXN) against the command
// table; errText is the reply to a request that must not run.
func Parse(t *command.Table, args [][]byte) (r Request, errText string) {
	i := 1
	for i < len(args) && strings.EqualFold(string(args[i]), "IF") {
		if i+2 >= len(args) {
			return r, command.ErrSyntax
		}
		k := kindNames[strings.ToUpper(string(args[i+1]))]
		c := Condition{Kind: k, Key: args[i+2]}
		switch k {
		case Exists, NotExists:
			i += 3
		case ValueEq, VersionEq:
			if i+3 >= len(args) {
				return r, command.ErrSyntax
			}
			c.Arg = args[i+3]
			i += 4
		case Sequencer:
			if i+4 >= len(args) {
				return r, command.ErrSyntax
			}
			m, ok := lock.ParseMode(string(args[i+3]))
			g, err := strconv.ParseUint(string(args[i+4]), 10, 64)
			if !ok || err != nil {
				return r, "ERR invalid sequencer: expected name, EXCLUSIVE or SHARED, and a generation"
			}
			c.Seq = lock.Sequencer{Name: string(c.Key), Mode: m, Gen: lock.Generation(g)}
			i += 5
		default:
			return r, "ERR TXN: unknown condition '" + string(args[i+1]) + "' (EXISTS, NOTEXISTS, VALUE, VERSION or SEQUENCER)"
		}
		r.Conds = append(r.Conds, c)
	}
	for i < len(args) {
		word := strings.ToUpper(string(args[i]))
		onFail := word == "ONFAIL"
		if (word != "DO" && !onFail) || (word == "DO" && len(r.OnFail) > 0) || i+1 >= len(args) {
			return r, command.ErrSyntax
		}
		list := &r.Muts
		if onFail {
			list = &r.OnFail
		}
		where := " in " + word + " " + strconv.Itoa(len(*list)+1)
		argc, err := strconv.Atoi(string(args[i+1]))
		if err != nil || argc < 1 || argc > len(args)-i-2 {
			return r, "ERR TXN: " + word + " " + strconv.Itoa(len(*list)+1) + " needs a count of 1 or more of the arguments that follow it"
		}
		m := Mutation{Args: args[i+2 : i+2+argc]}
		if e := m.check(t, where); e != "" {
			return r, e
		}
		if onFail && m.Cmd.Flags&command.FlagReadonly == 0 {
			return r, "ERR TXN: '" + m.Cmd.Name + "' is not a read" + where
		}
		*list = append(*list, m)
		i += 2 + argc
	}
	if len(r.Muts) == 0 {
		return r, "ERR TXN: no mutation (DO argc command arg ...)"
	}
	return r, ""
}

// check finds the mutation's command and refuses what TXN cannot run: an
// unknown name, a wrong argument count, a command without keys or that
// does not run on its keys' shard alone (blocking ones, scripts, EXEC,
// TXN itself, connection and server commands).
func (m *Mutation) check(t *command.Table, where string) string {
	name := string(m.Args[0])
	m.Cmd = t.Lookup(m.Args[0])
	if m.Cmd == nil {
		return "ERR TXN: unknown command '" + name + "'" + where
	}
	if !m.Cmd.ArityOK(len(m.Args)) {
		return "ERR TXN: wrong number of arguments for '" + m.Cmd.Name + "'" + where
	}
	m.Keys = m.Cmd.Keys(nil, m.Args)
	if m.Cmd.Shard == nil || m.Cmd.Coordinate != nil || len(m.Keys) == 0 ||
		m.Cmd.Flags&(command.FlagBlocking|command.FlagNoScript|command.FlagNoMulti|command.FlagPubSub|command.FlagAdmin) != 0 ||
		m.Cmd.JournaledByEffects() {
		return "ERR TXN: '" + m.Cmd.Name + "' cannot run in a TXN" + where + " (only commands on keys, each on its keys' shard)"
	}
	return ""
}

// innerCalls lists what a TXN reads and runs, for ACL: its conditions'
// keys (reads), then its mutations and ONFAIL reads, each judged as the
// command it is; nothing when the request does not parse (it will not
// run). A SEQUENCER condition reads its lock's key.
func innerCalls(t *command.Table, dst []command.Call, args [][]byte) []command.Call {
	r, e := Parse(t, args)
	if e != "" {
		return dst
	}
	for _, c := range r.Conds {
		dst = append(dst, command.Call{Args: [][]byte{c.Key}})
	}
	for _, list := range [][]Mutation{r.Muts, r.OnFail} {
		for _, m := range list {
			dst = append(dst, command.Call{Cmd: m.Cmd, Args: m.Args})
		}
	}
	return dst
}

// keyPositions lists the positions in args of every key of a TXN, the
// conditions' and the mutations' (ACL's key patterns, COMMAND GETKEYS);
// nothing for a request that does not parse.
func keyPositions(t *command.Table, dst []int, args [][]byte) []int {
	if t == nil {
		return dst
	}
	i := 1
	for i+2 < len(args) && strings.EqualFold(string(args[i]), "IF") {
		dst = append(dst, i+2)
		switch kindNames[strings.ToUpper(string(args[i+1]))] {
		case Exists, NotExists:
			i += 3
		case Sequencer:
			i += 5
		default:
			i += 4
		}
	}
	for i+1 < len(args) && (strings.EqualFold(string(args[i]), "DO") || strings.EqualFold(string(args[i]), "ONFAIL")) {
		argc, err := strconv.Atoi(string(args[i+1]))
		if err != nil || argc < 1 || argc > len(args)-i-2 {
			return dst
		}
		sub := args[i+2 : i+2+argc]
		if cmd := t.Lookup(sub[0]); cmd != nil && cmd.ArityOK(len(sub)) {
			for _, k := range cmd.Keys(nil, sub) {
				dst = append(dst, i+2+k)
			}
		}
		i += 2 + argc
	}
	return dst
}
