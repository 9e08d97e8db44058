package command

import (
	"sort"
	"strings"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/resp"
)

func init() {
	Register("connection", func() []*Command {
		return []*Command{{Name: "command", Tips: "nondeterministic_output_order", Arity: -1, Flags: FlagLoading | FlagStale, Subcommands: commandSubcommands, SubcommandsInfoOnly: true, Local: cmdCommand}}
	})
}

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
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
	"HELP",
	"    Prints this help.",
}

// commandSubcommands describe COMMAND's subcommands (for COMMAND INFO: ACL
// judges COMMAND as one command).
var commandSubcommands = []SubcommandInfo{
	{Name: "count", Arity: 2, Flags: FlagsLoadingStale},
	{Name: "docs", Tips: "nondeterministic_output_order", Arity: -2, Flags: FlagsLoadingStale},
	{Name: "getkeys", Arity: -4, Flags: FlagsLoadingStale},
	{Name: "getkeysandflags", Arity: -4, Flags: FlagsLoadingStale},
	{Name: "help", Arity: 2, Flags: FlagsLoadingStale},
	{Name: "info", Tips: "nondeterministic_output_order", Arity: -2, Flags: FlagsLoadingStale},
	{Name: "list", Tips: "nondeterministic_output_order", Arity: -2, Flags: FlagsLoadingStale},
}

// cmdCommand: COMMAND, COMMAND COUNT | INFO [name...] | DOCS [name...] | LIST [FILTERBY ...].
func cmdCommand(c Client, a [][]byte, w *resp.Writer) {
	t := c.Table()
	if len(a) == 1 {
		cmds := t.Sorted()
		w.Array(len(cmds))
		for _, cmd := range cmds {
			writeCommandInfo(w, cmd)
		}
		return
	}
	switch Subcommand(w, a, "command", commandSubcommands) {
	case "":
		return
	case "help":
		WriteHelp(w, commandHelp)
	case "count":
		w.Int(int64(len(t.ByName)))
	case "list":
		keep, ok := commandListFilter(a[2:])
		if !ok {
			w.Error(ErrSyntax)
			return
		}
		// As Redis 7.0: every command, and every container's subcommand
		// as "container|sub", each kept or not by the filter.
		var names []string
		for _, cmd := range t.Sorted() {
			if keep(cmd) {
				names = append(names, cmd.Name)
			}
			for _, sub := range cmd.infoSubs {
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
		cmds := t.Sorted()
		if len(a) > 2 {
			cmds = cmds[:0]
			for _, n := range a[2:] {
				cmds = append(cmds, t.lookupInfo(n))
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
		cmds := t.Sorted()
		if len(a) > 2 {
			cmds = cmds[:0]
			for _, n := range a[2:] {
				if cmd := t.lookupInfo(n); cmd != nil {
					cmds = append(cmds, cmd)
				}
			}
		}
		w.Map(len(cmds))
		for _, cmd := range cmds {
			w.BulkString(cmd.Name)
			writeCommandDocs(w, cmd)
		}
	case "getkeys", "getkeysandflags":
		cmd := t.Lookup(a[2])
		if cmd == nil {
			w.Error("ERR Invalid command specified")
			return
		}
		args := a[2:]
		specs := cmd.specs
		if len(args) > 1 {
			if s := cmd.infoSub(args[1]); s != nil {
				specs = s.specs
			}
		}
		if !hasKeySpecs(specs) {
			w.Error("ERR The command has no key arguments")
			return
		}
		if !cmd.ArityOK(len(args)) {
			w.Error("ERR Invalid number of arguments specified for command")
			return
		}
		// As Redis: the key specs when they are complete, else the
		// command's own key finding (ours).
		pos, complete := specKeys(specs, args)
		if !complete {
			pos = cmd.Keys(nil, args)
		}
		if len(pos) == 0 && (cmd.Flags|cmd.InfoFlags)&FlagNoMandatoryKeys == 0 {
			w.Error("ERR Invalid arguments specified for command")
			return
		}
		if strings.EqualFold(string(a[1]), "getkeys") {
			w.Array(len(pos))
			for _, i := range pos {
				w.Bulk(args[i])
			}
			return
		}
		flags := keyFlags(cmd, args, pos)
		w.Array(len(pos))
		for k, i := range pos {
			w.Array(2)
			w.Bulk(args[i])
			w.Set(len(flags[k]))
			for _, f := range flags[k] {
				w.SimpleString(f)
			}
		}
	default:
		w.Error("ERR unknown subcommand '" + TruncArg(a[1]) + "'. Try COMMAND HELP.")
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
		bit := CategoryBit(strings.ToLower(arg))
		return func(c *Command) bool {
			if c.Subs != nil { // a container is @slow, its subcommands have the rest
				return bit == CategoryBit("slow")
			}
			return c.Cats&bit != 0
		}, true
	case "pattern":
		return func(c *Command) bool { return glob.MatchString(arg, c.Name, true) }, true
	}
	return nil, false
}

// sortedSubs are a container's subcommands by name (nil for others).
func sortedSubs(c *Command) []*Command {
	out := make([]*Command, 0, len(c.Subs))
	for _, sub := range c.Subs {
		out = append(out, sub)
	}
	return sortedCommands(out)
}

func (t *Table) Sorted() []*Command {
	out := make([]*Command, 0, len(t.ByName))
	for _, c := range t.ByName {
		out = append(out, c)
	}
	return sortedCommands(out)
}

// sortedCommands sorts cmds by name.
func sortedCommands(cmds []*Command) []*Command {
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

// writeCommandDocs writes a command's COMMAND DOCS map: summary, since,
// group (dfly keeps no documentation of Redis's commands: the summary
// names only a container, or is dfly's own command's Summary; since is
// 1.0.0), and a container's subcommands.
func writeCommandDocs(w *resp.Writer, cmd *Command) {
	n := 3
	if cmd.infoSubs != nil {
		n = 5
	}
	w.Map(n)
	w.BulkString("summary")
	if cmd.infoSubs != nil {
		w.BulkString("A container for " + strings.ToUpper(cmd.Name) + " subcommands")
	} else {
		w.BulkString(cmd.Summary)
	}
	w.BulkString("since")
	w.BulkString("1.0.0")
	w.BulkString("group")
	w.BulkString(cmd.Group)
	if cmd.infoSubs == nil {
		return
	}
	w.BulkString("complexity")
	w.BulkString("Depends on subcommand.")
	w.BulkString("subcommands")
	w.Map(len(cmd.infoSubs))
	for _, s := range cmd.infoSubs {
		w.BulkString(s.Name)
		writeCommandDocs(w, s)
	}
}
