package client

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/dfly/dfly/resp"
)

// Gate is CLIENT REPLY's state, Redis's CLIENT_REPLY_OFF, CLIENT_REPLY_SKIP
// and CLIENT_REPLY_SKIP_NEXT flags. A reply is written unless the gate is
// Muted when it is; pushed data (Pub/Sub confirmations and messages,
// invalidations) goes through whatever the gate says, as in Redis 7.0.15.
// The zero Gate lets every reply through.
type Gate struct {
	off, skip, skipNext bool
}

// Muted reports whether a reply written now is dropped.
func (g *Gate) Muted() bool { return g.off || g.skip }

// Active reports whether the gate has anything to do: it mutes now or
// will after the current command (SKIP).
func (g *Gate) Active() bool { return g.off || g.skip || g.skipNext }

// Reply applies CLIENT REPLY mode (ON, OFF or SKIP, any case) as it runs;
// false for another word, which changes nothing (a syntax error).
// ON lets its own +OK through; SKIP while OFF is ignored, as in Redis.
func (g *Gate) Reply(mode string) bool {
	switch strings.ToLower(mode) {
	case "on":
		g.off, g.skip = false, false
	case "off":
		g.off = true
	case "skip":
		if !g.off {
			g.skipNext = true
		}
	default:
		return false
	}
	return true
}

// Reset is RESET's effect, before its +RESET is gated: it clears OFF and a
// pending SKIP, not a SKIP already in force for RESET itself.
func (g *Gate) Reset() { g.off, g.skipNext = false, false }

// CommandDone ends a top-level command (queued ones and EXEC included, not
// the commands EXEC runs): a SKIP it asked for applies to the next one.
func (g *Gate) CommandDone() {
	g.skip, g.skipNext = g.skipNext, false
}

// Cmd is a command as the gate sees it.
type Cmd struct {
	// Reply: the command was CLIENT REPLY with this mode and ran (not
	// refused, not queued).
	Reply string
	// Reset: RESET ran. Push: its reply is pushed data (the SUBSCRIBE
	// family's confirmations), which the gate never drops.
	Reset, Push bool
	// Exec: EXEC's queued commands, when one of them matters to the
	// gate (else nil: the reply is gated as one).
	Exec []Cmd
}

// Append appends to dst what of the top-level command cmd's reply gets
// through, applies its effect and ends it (CommandDone). EXEC's reply with
// a CLIENT REPLY among its commands is gated element by element, each at
// the state of its command's turn, as Redis writes them one after the
// other: its array header may then announce elements that are not sent,
// as Redis's does.
func (g *Gate) Append(dst, reply []byte, cmd Cmd) []byte {
	defer g.CommandDone()
	if cmd.Exec != nil {
		if out, ok := g.appendExec(dst, reply, cmd.Exec); ok {
			return out
		}
	}
	return g.appendOne(dst, reply, cmd)
}

func (g *Gate) appendOne(dst, reply []byte, cmd Cmd) []byte {
	switch {
	case cmd.Reply != "":
		g.Reply(cmd.Reply)
	case cmd.Reset:
		g.Reset()
	}
	if g.Muted() && !cmd.Push {
		return dst
	}
	return append(dst, reply...)
}

// appendExec gates EXEC's array reply; false when reply is not an array of
// one element per command (EXECABORT, a failed WATCH's null).
func (g *Gate) appendExec(dst, reply []byte, cmds []Cmd) ([]byte, bool) {
	nl := bytes.IndexByte(reply, '\n')
	if nl < 2 || reply[0] != '*' {
		return dst, false
	}
	if n, err := strconv.Atoi(string(reply[1 : nl-1])); err != nil || n != len(cmds) {
		return dst, false
	}
	if !g.Muted() {
		dst = append(dst, reply[:nl+1]...)
	}
	rest := reply[nl+1:]
	for _, c := range cmds {
		e := resp.ReplyEnd(rest)
		if e < 0 {
			return dst, true
		}
		dst = g.appendOne(dst, rest[:e], c)
		rest = rest[e:]
	}
	return dst, true
}

// Gated reports whether command name may change the gate, which must then
// see it even while it lets everything through.
func Gated(name string) bool { return name == "client" || name == "reset" }

// CmdOf is a top-level command (name, lower case, and arguments) as the
// gate sees it, but for Exec.
func CmdOf(name string, args [][]byte) Cmd {
	switch name {
	case "client":
		if len(args) == 3 && strings.EqualFold(string(args[1]), "reply") {
			return Cmd{Reply: string(args[2])}
		}
	case "reset":
		return Cmd{Reset: true}
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
		return Cmd{Push: true}
	}
	return Cmd{}
}

// ExecCmds is EXEC's n queued commands (cmd(i): the name and arguments of
// the i-th) as the gate sees them, nil when none changes the gate or
// pushes: EXEC's reply is then gated whole.
func ExecCmds(n int, cmd func(i int) (string, [][]byte)) []Cmd {
	var out []Cmd
	for i := 0; i < n; i++ {
		if g := CmdOf(cmd(i)); (g.Reply != "" || g.Push) && out == nil {
			out = make([]Cmd, n)
			for j := 0; j < i; j++ {
				out[j] = CmdOf(cmd(j))
			}
		}
		if out != nil {
			out[i] = CmdOf(cmd(i))
		}
	}
	return out
}
