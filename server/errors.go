package server

import (
	"errors"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/types/num"
)

// Error replies used across command families, in Redis 7's words.
const (
	errSyntax    = string(num.ErrSyntax)
	errNotInt    = string(num.ErrNotInt)
	errNotFloat  = string(num.ErrNotFloat)
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoSuchKey = "ERR no such key"
	errOverflow  = string(num.ErrOverflow)
)

// wrongArity is the reply to a command (or "container|subcommand") given
// the wrong number of arguments; name as Redis prints it, lower case.
func wrongArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// replyErr maps an error from a types/* package to its reply: their errors
// carry the full Redis text; anything else is an internal error.
func replyErr(w *resp.Writer, err error) {
	var e num.Error
	if errors.As(err, &e) {
		w.Error(string(e))
		return
	}
	w.Error("ERR " + err.Error())
}
