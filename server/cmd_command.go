package server

import (
	"sort"
	"strings"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/resp"
)

// cmdCommand: COMMAND, COMMAND COUNT | INFO [name...] | DOCS [name...] | LIST [FILTERBY ...].
var commandArities = map[string]int{"count": 2, "list": -2, "info": -2, "docs": -2, "getkeys": -3, "help": 2}

var commandHelp = []string{
	"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"(no subcommand)",
	"    Return details about all Redis commands.",
	"COUNT",
	"    Return the total number of commands in this Redis server.",
	"LIST",
	"    Return a list of all commands in this Redis server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"HELP",
	"    Prints this help.",
}

func cmdCommand(c *Conn, a [][]byte, w *resp.Writer) {
	t := c.srv.table
	if len(a) == 1 {
		cmds := t.sorted()
		w.Array(len(cmds))
		for _, cmd := range cmds {
			writeCommandInfo(w, cmd)
		}
		return
	}
	switch subcommand(w, a, "command", commandArities) {
	case "":
		return
	case "help":
		writeHelp(w, commandHelp)
	case "count":
		w.Int(int64(len(t.byName)))
	case "list":
		keep, ok := commandListFilter(a[2:])
		if !ok {
			w.Error(errSyntax)
			return
		}
		// As Redis 7.0: every command, and every container's subcommand
		// as "container|sub", each kept or not by the filter.
		var names []string
		for _, cmd := range t.sorted() {
			if keep(cmd) {
				names = append(names, cmd.Name)
			}
			for _, sub := range sortedSubs(cmd) {
				if keep(sub) {
					names = append(names, sub.Name)
				}
			}
		}
		w.Array(len(names))
		for _, n := range names {
			w.BulkString(n)
		}
	case "info":
		cmds := t.sorted()
		if len(a) > 2 {
			cmds = cmds[:0]
			for _, n := range a[2:] {
				cmds = append(cmds, t.lookup(n))
			}
		}
		w.Array(len(cmds))
		for _, cmd := range cmds {
			if cmd == nil {
				w.NullArray()
				continue
			}
			writeCommandInfo(w, cmd)
		}
	case "docs":
		cmds := t.sorted()
		if len(a) > 2 {
			cmds = cmds[:0]
			for _, n := range a[2:] {
				if cmd := t.lookup(n); cmd != nil {
					cmds = append(cmds, cmd)
				}
			}
		}
		w.Map(len(cmds))
		for _, cmd := range cmds {
			w.BulkString(cmd.Name)
			w.Map(3)
			w.BulkString("summary")
			w.BulkString("")
			w.BulkString("since")
			w.BulkString("1.0.0")
			w.BulkString("group")
			w.BulkString(cmd.Group)
		}
	case "getkeys":
		cmd := t.lookup(a[2])
		if cmd == nil {
			w.Error("ERR Invalid command specified")
			return
		}
		args := a[2:]
		if !cmd.arityOK(len(args)) {
			w.Error("ERR Invalid number of arguments specified for command")
			return
		}
		pos := cmd.keys(nil, args)
		if len(pos) == 0 {
			w.Error("ERR The command has no key arguments")
			return
		}
		w.Array(len(pos))
		for _, i := range pos {
			w.Bulk(args[i])
		}
	default:
		w.Error("ERR unknown subcommand '" + truncArg(a[1]) + "'. Try COMMAND HELP.")
	}
}

// commandListFilter parses COMMAND LIST's [FILTERBY MODULE name | ACLCAT
// category | PATTERN pattern]; false on a syntax error. No command is a
// module's, an unknown category matches none, a pattern matches full
// names ("client|kill") in any case.
func commandListFilter(a [][]byte) (func(*Command) bool, bool) {
	if len(a) == 0 {
		return func(*Command) bool { return true }, true
	}
	if len(a) != 3 || !strings.EqualFold(string(a[0]), "filterby") {
		return nil, false
	}
	arg := string(a[2])
	switch strings.ToLower(string(a[1])) {
	case "module":
		return func(*Command) bool { return false }, true
	case "aclcat":
		bit := categoryBit(strings.ToLower(arg))
		return func(c *Command) bool {
			if c.subs != nil { // a container is @slow, its subcommands have the rest
				return bit == categoryBit("slow")
			}
			return c.cats&bit != 0
		}, true
	case "pattern":
		return func(c *Command) bool { return glob.MatchString(arg, c.Name, true) }, true
	}
	return nil, false
}

// sortedSubs are a container's subcommands by name (nil for others).
func sortedSubs(c *Command) []*Command {
	if len(c.subs) == 0 {
		return nil
	}
	out := make([]*Command, 0, len(c.subs))
	for _, sub := range c.subs {
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (t *Table) sorted() []*Command {
	out := make([]*Command, 0, len(t.byName))
	for _, c := range t.byName {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// writeCommandInfo writes Redis 7's COMMAND INFO entry: name, arity,
// flags, first key, last key, step, ACL categories, tips, key specs,
// subcommands.
func writeCommandInfo(w *resp.Writer, cmd *Command) {
	w.Array(10)
	w.BulkString(cmd.Name)
	w.Int(int64(cmd.Arity))
	var flags []string
	for _, f := range flagNames {
		if cmd.Flags&f.f != 0 {
			flags = append(flags, f.name)
		}
	}
	if cmd.KeyPositions != nil {
		flags = append(flags, "movablekeys") // its keys depend on its arguments
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.SimpleString(f)
	}
	first, last, step := cmd.FirstKey, cmd.LastKey, cmd.Step
	if cmd.KeyPositions != nil && first == 0 {
		first, last, step = 1, -1, 1
	}
	if first == 0 {
		last, step = 0, 0
	}
	w.Int(int64(first))
	w.Int(int64(last))
	w.Int(int64(step))
	cats := shownCategories(cmd)
	w.Set(len(cats))
	for _, c := range cats {
		w.SimpleString("@" + c)
	}
	w.Set(0)
	w.Array(0)
	w.Array(0)
}
