package server

import (
	"errors"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/types/num"
)

// Error replies used across command families, in Redis 7's words.
const (
	errSyntax    = "ERR syntax error"
	errNotInt    = string(num.ErrNotInt)
	errNotFloat  = string(num.ErrNotFloat)
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoSuchKey = "ERR no such key"
	errOverflow  = string(num.ErrOverflow)
)

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
