package server

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/tx"
)

// A bug in one command must not take every client's data down with the
// process. A command that panics while it runs on a shard for one client
// (Exec.run) or on its connection's loop (Command.local) gets an error
// reply instead, its partial reply dropped; the stack goes to the log and
// INFO stats counts it (command_panics). The writes it made before the
// panic stay, unjournaled: a replica may then differ on that key, which
// the log says.
//
// A coordinator command (Multi) holds key locks across shards and runs
// steps on several shard goroutines: a panic in a step is caught on its
// shard and raised again on the coordinator (tx.StepPanic), and the
// coordinator's recovery (Coord.runGuarded) aborts the transactions the
// command started, giving their locks back, before it answers the error.
// Not covered: a panic in the snapshot, journal or replication machinery
// still ends the process, where carrying on could write a corrupt file or
// stream.
var commandPanics atomic.Uint64

// recoverCommand is deferred around a command; replyStart is w's length
// before it ran.
func (s *Server) recoverCommand(name string, w *resp.Writer, replyStart int) {
	r := recover()
	if r == nil {
		return
	}
	commandPanics.Add(1)
	if replyStart <= len(w.Buf) {
		w.Buf = w.Buf[:replyStart]
	}
	s.log.Warnf("Command '%s' panicked: %v (its writes so far stay and may not reach replicas)\n%s", name, r, debug.Stack())
	w.Error(fmt.Sprintf("ERR internal error in '%s' command: %v", name, r))
}

// recoverCoord is recoverCommand for a coordinator command, with the
// recovered value r; a step's panic (tx.StepPanic) logs its shard's stack.
// unjournaled: a step wrote for the command, whose own journal record the
// panic prevented (what its steps recorded was committed: tx.Abort).
func (s *Server) recoverCoord(name string, w *resp.Writer, replyStart int, r any, unjournaled bool) {
	commandPanics.Add(1)
	if replyStart <= len(w.Buf) {
		w.Buf = w.Buf[:replyStart]
	}
	stack, v := debug.Stack(), r
	if sp, ok := r.(*tx.StepPanic); ok {
		stack, v = sp.Stack, sp.Value
	}
	lost := ""
	if unjournaled {
		lost = "; its writes so far stay and did not reach the journal: replicas may miss them"
	}
	s.log.Warnf("Command '%s' panicked: %v (its locks are released%s)\n%s", name, v, lost, stack)
	w.Error(fmt.Sprintf("ERR internal error in '%s' command: %v", name, v))
}

// runLocal runs a connection command, recovering from a panic in it.
func runLocal(cmd *command.Command, c *Conn, args [][]byte, w *resp.Writer) {
	defer c.srv.recoverCommand(cmd.Name, w, len(w.Buf))
	cmd.Local(c, args, w)
}

// runExec runs a command on its shard (command.Exec.Run: journaling its
// write), recovering from a panic in it.
func runExec(x *command.Exec, cmd *command.Command) {
	defer srvOf(x).recoverCommand(cmd.Name, x.W, len(x.W.Buf))
	x.Run(cmd)
}
