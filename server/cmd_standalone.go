package server

import (
	"strconv"
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// Commands of features dfly does not have, answered as a standalone
// redis-server without them answers, so that clients and tools probing for
// them (module lists) take the same branch as against Redis instead of
// meeting an unknown command. (CLUSTER, READONLY, READWRITE and ASKING are
// package cluster's.)
//
//   - MODULE: no modules can be loaded; LIST is empty, LOAD and LOADEX fail
//     as a load that failed does, UNLOAD finds no module.
func standaloneCommands() []*command.Command {
	return []*command.Command{
		{Name: "module", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript, Subcommands: moduleSubcommands, ACLCats: "dangerous", Local: viaConn(cmdModule)},
		{Name: "lolwut", Arity: -1, Flags: command.FlagReadonly | command.FlagFast, Local: viaConn(cmdLolwut)},
	}
}

// cmdLolwut is LOLWUT [VERSION v]: the version line, which is all Redis
// 7.0 prints for its own version (the art of versions 5 and 6 is not
// drawn here).
func cmdLolwut(c *Conn, a [][]byte, w *resp.Writer) {
	if len(a) >= 3 && strings.EqualFold(string(a[1]), "version") {
		if _, err := strconv.ParseInt(string(a[2]), 10, 64); err != nil {
			w.Error(command.ErrNotInt)
			return
		}
	}
	w.Verbatim("txt", []byte("Redis ver. "+RedisVersion+"\n"))
}

func init() { command.Register("server", standaloneCommands) }

// moduleSubcommands describe MODULE's subcommands: arity, flags, key specs, ACL categories.
var moduleSubcommands = []command.SubcommandInfo{
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "list", Tips: "nondeterministic_output_order", Arity: 2, Flags: command.FlagAdmin | command.FlagNoScript, ACLCats: "admin dangerous"},
	{Name: "load", Arity: -3, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "loadex", Arity: -3, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "unload", Arity: 3, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
}

func cmdModule(c *Conn, a [][]byte, w *resp.Writer) {
	switch command.Subcommand(w, a, "module", moduleSubcommands) {
	case "list":
		w.Array(0)
	case "load", "loadex":
		c.srv.log.Warnf("Module %s not loaded: dfly does not support modules", a[2])
		w.Error("ERR Error loading the extension. Please check the server logs.")
	case "unload":
		w.Error("ERR Error unloading module: no such module with that name")
	case "help":
		command.WriteHelp(w, []string{
			"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"LIST",
			"    Return a list of loaded modules (dfly loads none).",
			"LOAD <path> [<arg> ...]",
			"    Load a module library from <path>: refused, dfly does not support modules.",
			"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
			"    As LOAD: refused.",
			"UNLOAD <name>",
			"    Unload a module: there is none.",
			"HELP",
			"    Print this help.",
		})
	}
}
