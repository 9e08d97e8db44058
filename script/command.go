package script

import (
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/types/num"
)

// What the server's EVAL, FCALL, SCRIPT and FUNCTION commands share with
// the engine: their error texts, their arguments, SCRIPT's subcommands.

// Error replies of scripts and functions.
const (
	ErrNoScript         = "NOSCRIPT No matching script. Please use EVAL."
	ErrFunctionNotFound = "ERR Function not found"
	// ErrWriteFunctionRO: FCALL_RO of a function without no-writes.
	ErrWriteFunctionRO = "ERR Can not execute a script with write flag using *_ro command."
	// Refusals of a call (Caller.Call).
	ErrNotAllowed   = "This Redis command is not allowed from script"
	ErrUndeclared   = "script tried accessing undeclared key"
	ErrKeylessCall  = "this command can not run from a script that declared keys"
	ErrReadonlyCall = "Write commands are not allowed from read-only scripts."

	errNotBusy      = "NOTBUSY No scripts in execution right now."
	errBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	errUnkillable   = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	msgScriptKill   = "ERR Script killed by user with SCRIPT KILL..."
	errLibNotFound  = "ERR Library not found"
	errNameChars    = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
)

// KeyPositions are EVAL's and FCALL's keys: numkeys arguments after
// numkeys (command.Command.KeyPositions).
func KeyPositions(dst []int, args [][]byte) []int {
	if len(args) < 3 {
		return dst
	}
	n, ok := num.ParseInt(args[2])
	if !ok || n <= 0 || n > int64(len(args)-3) {
		return dst
	}
	for i := 3; i < 3+int(n); i++ {
		dst = append(dst, i)
	}
	return dst
}

// NumKeys reads EVAL's (FCALL's) numkeys with Redis's errors.
func NumKeys(args [][]byte) (int, string) {
	n, ok := num.ParseInt(args[2])
	if !ok {
		return 0, command.ErrNotInt
	}
	if n > int64(len(args)-3) {
		return 0, "ERR Number of keys can't be greater than number of args"
	}
	if n < 0 {
		return 0, "ERR Number of keys can't be negative"
	}
	return int(n), ""
}

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
}

// ScriptSubcommands describe SCRIPT's subcommands: arity, flags, key specs, ACL categories.
var ScriptSubcommands = []command.SubcommandInfo{
	{Name: "debug", Arity: 3, Flags: command.FlagNoScript, ACLCats: "scripting"},
	{Name: "exists", Tips: "request_policy:all_shards response_policy:agg_logical_and", Arity: -3, Flags: command.FlagNoScript, ACLCats: "scripting"},
	{Name: "flush", Tips: "request_policy:all_nodes response_policy:all_succeeded", Arity: -2, Flags: command.FlagNoScript, ACLCats: "scripting"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale, ACLCats: "scripting"},
	{Name: "kill", Tips: "request_policy:all_shards response_policy:one_succeeded", Arity: 2, Flags: command.FlagNoScript | command.FlagAllowBusy, ACLCats: "scripting"},
	{Name: "load", Tips: "request_policy:all_nodes response_policy:all_succeeded", Arity: 3, Flags: command.FlagNoScript | command.FlagStale, ACLCats: "scripting"},
}

// ScriptCommand answers SCRIPT (args).
func (e *Engine) ScriptCommand(a [][]byte, w *resp.Writer) {
	sub := strings.ToLower(string(a[1]))
	switch {
	case sub == "help" && len(a) == 2:
		w.Array(len(scriptHelp))
		for _, l := range scriptHelp {
			w.SimpleString(l)
		}
	case sub == "load" && len(a) == 3:
		sha, _, err := e.Load(a[2])
		if err != "" {
			w.Error(err)
			return
		}
		w.BulkString(sha)
	case sub == "exists" && len(a) >= 3:
		w.Array(len(a) - 2)
		for _, s := range a[2:] {
			if e.Lookup(strings.ToLower(string(s))) != nil {
				w.Int(1)
			} else {
				w.Int(0)
			}
		}
	case sub == "flush" && len(a) <= 3:
		if len(a) == 3 {
			if m := strings.ToLower(string(a[2])); m != "sync" && m != "async" {
				w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
				return
			}
		}
		e.Flush()
		w.SimpleString("OK")
	case sub == "kill" && len(a) == 2:
		if err := e.Kill(false); err != "" {
			w.Error(err)
			return
		}
		w.SimpleString("OK")
	case sub == "debug" && len(a) == 3:
		// There is no Lua debugger (redis-cli --ldb): only NO is accepted.
		switch strings.ToLower(string(a[2])) {
		case "no":
			w.SimpleString("OK")
		case "yes", "sync":
			w.Error("ERR SCRIPT DEBUG " + strings.ToUpper(string(a[2])) + " is not supported: this server has no Lua debugger")
		default:
			w.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
		}
	case sub == "help" || sub == "load" || sub == "exists" || sub == "flush" || sub == "kill" || sub == "debug":
		w.Error(command.WrongArity("script|" + sub))
	default:
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try SCRIPT HELP.")
	}
}
