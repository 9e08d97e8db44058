package command

import (
	"strings"

	"github.com/dfly/dfly/resp"
)

// Subcommand checks a container command's subcommand (XGROUP, XINFO) the
// way Redis 7.0's command table does: known name (one of subs), then its
// arity. It writes the error and returns "" on failure.
func Subcommand(w *resp.Writer, args [][]byte, container string, subs []SubcommandInfo) string {
	sub := strings.ToLower(string(args[1]))
	s := FindSubcommand(subs, sub)
	if s == nil {
		w.Error("ERR unknown subcommand '" + TruncArg(args[1]) + "'. Try " + strings.ToUpper(container) + " HELP.")
		return ""
	}
	if (s.Arity >= 0 && len(args) != s.Arity) || (s.Arity < 0 && len(args) < -s.Arity) {
		w.Error(WrongArity(container + "|" + sub))
		return ""
	}
	return sub
}

// FindSubcommand is the subcommand of subs named name (lower case), nil
// when there is none.
func FindSubcommand(subs []SubcommandInfo, name string) *SubcommandInfo {
	for i := range subs {
		if subs[i].Name == name {
			return &subs[i]
		}
	}
	return nil
}

// SubcommandSyntaxErr is the reply to an unknown subcommand or one with
// the wrong number of arguments.
func SubcommandSyntaxErr(w *resp.Writer, args [][]byte, container string) {
	w.Error("ERR unknown subcommand or wrong number of arguments for '" + TruncArg(args[1]) + "'. Try " + strings.ToUpper(container) + " HELP.")
}

// WriteHelp writes a HELP subcommand's lines.
func WriteHelp(w *resp.Writer, lines []string) {
	w.Array(len(lines))
	for _, l := range lines {
		w.SimpleString(l)
	}
}

// TruncArg is an argument as error replies quote it: its first 128 bytes.
func TruncArg(a []byte) string {
	if len(a) > 128 {
		a = a[:128]
	}
	return string(a)
}

// SubcommandOf is the subcommand of container cmd that args name, nil
// when cmd is no container or args name none of its subcommands.
func SubcommandOf(cmd *Command, args [][]byte) *SubcommandInfo {
	if len(cmd.Subcommands) == 0 || len(args) < 2 {
		return nil
	}
	for i := range cmd.Subcommands {
		if strings.EqualFold(cmd.Subcommands[i].Name, string(args[1])) {
			return &cmd.Subcommands[i]
		}
	}
	return nil
}

// CheckSubcommand is the error for container cmd called with args whose
// subcommand is sub (SubcommandOf): unknown, or of the wrong arity; ""
// when neither.
func CheckSubcommand(cmd *Command, sub *SubcommandInfo, args [][]byte) string {
	if sub == nil {
		return "ERR unknown subcommand '" + TruncArg(args[1]) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP."
	}
	if (sub.Arity >= 0 && len(args) != sub.Arity) || (sub.Arity < 0 && len(args) < -sub.Arity) {
		return WrongArity(FullName(cmd, sub))
	}
	return ""
}

// FullName is the name Redis 7.0's texts give a command: "config|get" for
// a container's subcommand, the command's name otherwise.
func FullName(cmd *Command, sub *SubcommandInfo) string {
	if sub == nil {
		return cmd.Name
	}
	return cmd.Name + "|" + sub.Name
}
