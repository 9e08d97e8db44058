package command

import (
	"errors"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/types/num"
)

// Error replies used across command families, in Redis 7's words.
const (
	ErrSyntax    = string(num.ErrSyntax)
	ErrNotInt    = string(num.ErrNotInt)
	ErrNotFloat  = string(num.ErrNotFloat)
	ErrWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoSuchKey = "ERR no such key"
	ErrOverflow  = string(num.ErrOverflow)
)

// WrongArity is the reply to a command (or "container|subcommand") given
// the wrong number of arguments; name as Redis prints it, lower case.
func WrongArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// ReplyErr maps an error from a types/* package to its reply: their errors
// carry the full Redis text; anything else is an internal error.
func ReplyErr(w *resp.Writer, err error) {
	var e num.Error
	if errors.As(err, &e) {
		w.Error(string(e))
		return
	}
	w.Error("ERR " + err.Error())
}

// ErrTierRead is the reply of a command whose offloaded value could not
// be read.
const ErrTierRead = "ERR tiered storage: failed to read an offloaded value"

// ErrScriptDemoted: an inline script stopped to run again on a coordinator
// (the server's scriptCall.exec); the reply is discarded with the run.
const ErrScriptDemoted = "ERR script moved to a coordinator"
