package server

import (
	"strconv"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// SLOWLOG, as Redis: every command that ran at least
// slowlog-log-slower-than microseconds (negative: none, 0: all) is kept,
// newest first, up to slowlog-max-len entries, with its arguments (at
// most 32, each cut at 128 bytes), the client's address and name. The
// time is the command's own execution on its shard, loop or coordinator,
// not the wait for its turn. Commands inside EXEC and scripts are timed
// as the EXEC or the script only where those run as one command
// (coordinators); a transaction run on its shards is not logged.
//
// The cost on every command is one read of the monotonic clock (a
// batch's commands are timed end to end, runtime's nanotime: time.Now
// reads two clocks, and timing each command with two cost 90 ns a command
// in BenchmarkBatchGetSet) and one atomic load; the log itself is touched
// only by slow commands.
type slowlog struct {
	mu      sync.Mutex
	entries []slowEntry // newest first
	nextID  int64
}

type slowEntry struct {
	id, at, usec int64
	args         []string
	addr, name   string
}

const (
	slowlogMaxArgs   = 32
	slowlogMaxString = 128
)

// nanotime is the runtime's monotonic clock in nanoseconds (one vDSO
// read; runtime keeps it linkable for packages like this one).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// slowCheck logs the command c sent (args) if it ran for at least the
// threshold since start (a nanotime), and gives the latency monitor its
// time; it returns the time it read, the next command's start in a
// batch. c may be nil (no client).
func (s *Server) slowCheck(c *Conn, args [][]byte, start int64) (now int64) {
	if !s.cfg.Timing() {
		return 0 // off: no clock read at all
	}
	now = nanotime()
	if start == 0 { // timing was off when the batch began
		return now
	}
	us := (now - start) / 1000
	s.latencyCheck(us) // latency.go
	if thr := s.cfg.SlowlogSlowerThan.Load(); thr < 0 || us < thr {
		return now
	}
	e := slowEntry{at: time.Now().Unix(), usec: us}
	n := min(len(args), slowlogMaxArgs)
	for i := 0; i < n; i++ {
		a := args[i]
		switch {
		case i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs:
			e.args = append(e.args, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
		case len(a) > slowlogMaxString:
			e.args = append(e.args, string(a[:slowlogMaxString])+"... ("+strconv.Itoa(len(a)-slowlogMaxString)+" more bytes)")
		default:
			e.args = append(e.args, string(a))
		}
	}
	if c != nil {
		c.info.Lock()
		e.addr, e.name = c.info.addr, c.info.name
		c.info.Unlock()
	}
	max := int(s.cfg.SlowlogMaxLen.Load())
	l := &s.slow
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append([]slowEntry{e}, l.entries...)
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
	return now
}

// slowlogSubcommands describe SLOWLOG's subcommands: arity, flags, key specs, ACL categories.
var slowlogSubcommands = []command.SubcommandInfo{
	{Name: "get", Tips: "request_policy:all_nodes nondeterministic_output", Arity: -2, Flags: command.FlagAdmin | command.FlagsLoadingStale, ACLCats: "admin dangerous"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "len", Tips: "request_policy:all_nodes response_policy:agg_sum nondeterministic_output", Arity: 2, Flags: command.FlagAdmin | command.FlagsLoadingStale, ACLCats: "admin dangerous"},
	{Name: "reset", Tips: "request_policy:all_nodes response_policy:all_succeeded", Arity: 2, Flags: command.FlagAdmin | command.FlagsLoadingStale, ACLCats: "admin dangerous"},
}

func cmdSlowlog(c *Conn, a [][]byte, w *resp.Writer) {
	l := &c.srv.slow
	switch command.Subcommand(w, a, "slowlog", slowlogSubcommands) {
	case "get":
		count := int64(10)
		if len(a) > 3 {
			command.SubcommandSyntaxErr(w, a, "slowlog")
			return
		}
		if len(a) == 3 {
			n, err := strconv.ParseInt(string(a[2]), 10, 64)
			if err != nil || n < -1 {
				w.Error("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if count == -1 || count > int64(len(l.entries)) {
			count = int64(len(l.entries))
		}
		w.Array(int(count))
		for _, e := range l.entries[:count] {
			w.Array(6)
			w.Int(e.id)
			w.Int(e.at)
			w.Int(e.usec)
			w.Array(len(e.args))
			for _, s := range e.args {
				w.BulkString(s)
			}
			w.BulkString(e.addr)
			w.BulkString(e.name)
		}
	case "len":
		l.mu.Lock()
		w.Int(int64(len(l.entries)))
		l.mu.Unlock()
	case "reset":
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		w.SimpleString("OK")
	case "help":
		command.WriteHelp(w, []string{
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
			"HELP",
			"    Prints this help.",
		})
	}
}
