package server

import (
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// The error replies clients got (command.ErrorStats: INFO errorstats and
// total_error_replies); a command's own are its failed_calls, or its
// rejected_calls when it was refused before it ran. As in Redis 7.0, the
// replies of commands inside EXEC and of scripts' calls count too (the
// command's failed_calls and the error's code), and a script's error
// reply that is a call's error passed on counts only as the script's
// failed call, not a second time in errorstats (resp.Writer.StatsDone).

// countErrorReply counts the error reply b of cmd (nil: unknown).
func (s *Server) countErrorReply(cmd *command.Command, rejected bool, b []byte) {
	switch {
	case cmd == nil:
	case rejected:
		cmd.Rejected.Add(1)
	default:
		cmd.Failed.Add(1)
	}
	s.countErrorCode(b)
}

// countErrorCode counts the error reply b ('-' and its text) in INFO
// errorstats and total_error_replies, by its first word.
func (s *Server) countErrorCode(b []byte) { s.errors.Count(b) }

// countReply counts the reply of cmd at w.Buf[start:] when it is an error
// (rejected: refused before it ran): at the top level, inside EXEC, and
// for a script's calls. A reply whose writer counted its errors
// (w.StatsDone: a script's) adds only cmd's failed call, if it failed.
func (s *Server) countReply(cmd *command.Command, rejected bool, w *resp.Writer, start int) {
	if w.StatsDone {
		if w.Failed && cmd != nil {
			cmd.Failed.Add(1)
		}
		w.StatsDone, w.Failed = false, false
		return
	}
	if b := w.Buf[start:]; len(b) > 0 && b[0] == '-' {
		s.countErrorReply(cmd, rejected, b)
	}
}
