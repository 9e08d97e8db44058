package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/debug"
	"github.com/dfly/dfly/latency"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

func init() { command.Register("server", serverCommands) }

func serverCommands() []*command.Command {
	return []*command.Command{
		{Name: "dbsize", Tips: "request_policy:all_shards response_policy:agg_sum", Arity: 1, Flags: command.FlagReadonly | command.FlagFast, ACLCats: "keyspace", Multi: viaCoord(cmdDBSize)},
		{Name: "flushdb", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: -1, Flags: command.FlagWrite, ACLCats: "keyspace dangerous", Multi: viaCoord(func(x *Coord) { flush(x, false) })},
		{Name: "flushall", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: -1, Flags: command.FlagWrite, ACLCats: "keyspace dangerous", Multi: viaCoord(func(x *Coord) { flush(x, true) })},
		{Name: "swapdb", Arity: 3, Flags: command.FlagWrite | command.FlagFast, ACLCats: "keyspace dangerous", Multi: viaCoord(cmdSwapDB)},
		{Name: "acl", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Subcommands: aclSubcommands, ACLCats: "dangerous", Local: viaConn(cmdACL)},
		{Name: "info", Tips: "nondeterministic_output request_policy:all_shards response_policy:special", Arity: -1, Flags: command.FlagLoading | command.FlagStale, ACLCats: "dangerous", Multi: viaCoord(cmdInfo)},
		{Name: "config", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Subcommands: configSubcommands, ACLCats: "dangerous", Local: viaConn(cmdConfig)},
		{Name: "debug", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Multi: viaCoord(cmdDebug)},
		{Name: "slowlog", Arity: -2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Subcommands: slowlogSubcommands, ACLCats: "dangerous", Local: viaConn(cmdSlowlog)},
		{Name: "latency", Arity: -2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Subcommands: latency.Subcommands, ACLCats: "dangerous", Local: viaConn(cmdLatency)},
		{Name: "shutdown", Arity: -1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale | command.FlagNoMulti, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdShutdown)},
	}
}

func cmdDBSize(x *Coord) {
	counts := make([]int, x.NumShards())
	x.OnEach(func(s *shard.Shard) { counts[s.ID] = s.DBs[x.DB].Len() })
	total := 0
	for _, n := range counts {
		total += n
	}
	x.W.Int(int64(total))
}

// cmdSwapDB is SWAPDB index1 index2, on every shard under one lock, so
// no client sees one shard swapped and another not.
func cmdSwapDB(x *Coord) {
	n := len(x.Srv.shards[0].DBs)
	var idx [2]int
	for i, which := range []string{"first", "second"} {
		v, err := strconv.Atoi(string(x.Args[1+i]))
		if err != nil {
			x.W.Error("ERR invalid " + which + " DB index")
			return
		}
		idx[i] = v
	}
	for _, v := range idx {
		if v < 0 || v >= n {
			x.W.Error("ERR DB index is out of range")
			return
		}
	}
	if x.Srv.tiered != nil {
		x.W.Error("ERR SWAPDB is not supported with tiered storage")
		return
	}
	for {
		t := x.Tx()
		t.AddAllShards()
		t.Lock()
		// A snapshot's walk cannot follow a swap (shard.SwapDBs): wait for
		// it to end (a BGSAVE, a replica's full sync), holding nothing
		// meanwhile. Within EXEC or a script the locks cannot be let go:
		// refuse instead.
		var blocked atomic.Bool
		t.RunAll(func(sh *shard.Shard) {
			if sh.SwapBlocked() {
				blocked.Store(true)
			}
		})
		if !blocked.Load() {
			t.Finish(func(sh *shard.Shard) { sh.SwapDBs(idx[0], idx[1]) })
			break
		}
		t.Finish(nil)
		if x.InTx {
			x.W.Error("ERR SWAPDB cannot run in a transaction while a snapshot is being taken")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	x.W.SimpleString("OK")
}

// flush drops one DB or all, under a lock on every shard so no
// multi-shard command is half-applied on either side of it.
func flush(x *Coord, all bool) {
	if len(x.Args) > 2 {
		x.W.Error(command.ErrSyntax)
		return
	}
	if len(x.Args) == 2 {
		switch strings.ToLower(string(x.Args[1])) {
		case "async", "sync":
		default:
			x.W.Error(command.ErrSyntax)
			return
		}
	}
	t := x.Tx()
	t.AddAllShards()
	t.Lock()
	t.Finish(func(s *shard.Shard) {
		if all {
			for _, db := range s.DBs {
				db.Flush()
			}
		} else {
			s.DBs[x.DB].Flush()
		}
	})
	x.Srv.tracking.Flushed()
	x.Srv.reclaim.Flushed() // the last GC's live heap is garbage now
	x.W.SimpleString("OK")
}

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. As in
// Redis, it saves the dataset first when told to (SAVE) or when save
// points are configured (unless NOSAVE); a failed save refuses the
// shutdown with an error, unless FORCE. The save runs off the event loop
// (Conn.deferred); on success nothing is answered: the server closes.
// There is no delayed shutdown here, so NOW changes nothing and ABORT has
// nothing to abort.
func cmdShutdown(c *Conn, a [][]byte, w *resp.Writer) {
	var save, nosave, force, abort bool
	for _, o := range a[1:] {
		switch strings.ToLower(string(o)) {
		case "nosave":
			nosave = true
		case "save":
			save = true
		case "now":
		case "force":
			force = true
		case "abort":
			abort = true
		default:
			w.Error(command.ErrSyntax)
			return
		}
	}
	if save && nosave || abort && len(a) > 2 {
		w.Error(command.ErrSyntax)
		return
	}
	if abort {
		w.Error("ERR No shutdown in progress.")
		return
	}
	srv := c.srv
	srv.log.Warnf("User requested shutdown...")
	if !save && (nosave || !srv.cfg.SavePoints()) {
		go srv.Shutdown()
		c.closing = true
		return
	}
	c.deferred = func(w *resp.Writer) {
		if err := srv.SaveBeforeShutdown(); err != nil && !force {
			w.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
		go srv.Shutdown()
	}
}

// configSubcommands describe CONFIG's subcommands: arity, flags, key specs, ACL categories.
var configSubcommands = []command.SubcommandInfo{
	{Name: "get", Arity: -3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "resetstat", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "rewrite", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "set", Tips: "request_policy:all_nodes response_policy:all_succeeded", Arity: -4, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
}

func cmdConfig(c *Conn, a [][]byte, w *resp.Writer) {
	cfg := c.srv.cfg
	sub := strings.ToLower(string(a[1]))
	switch {
	case sub == "get" && len(a) >= 3:
		out := cfg.Get(a[2:])
		w.Map(len(out) / 2)
		for _, s := range out {
			w.BulkString(s)
		}
	case sub == "set" && len(a) >= 4 && len(a)%2 == 1:
		w.Error(command.ErrSyntax)
	case sub == "set" && len(a) >= 4:
		pairs := make([]string, len(a)-2)
		for i := range pairs {
			pairs[i] = string(a[2+i])
		}
		if e := cfg.Set(pairs); e != "" {
			w.Error(e)
			return
		}
		c.srv.refreshOOM(false) // maxmemory may have changed (oom.go)
		c.srv.aof.Configure()   // appendonly, appendfsync (package aof)
		for i := 0; i < len(pairs); i += 2 {
			if strings.EqualFold(pairs[i], "requirepass") {
				c.srv.acl.SetRequirepass(pairs[i+1]) // the default user's password
			}
		}
		w.SimpleString("OK")
	case sub == "resetstat" && len(a) == 2:
		c.srv.resetStats()
		w.SimpleString("OK")
	case sub == "rewrite" && len(a) == 2:
		c.srv.configRewrite(w)
	case sub == "help":
		w.Array(4)
		w.SimpleString("CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		w.SimpleString("GET <pattern>")
		w.SimpleString("SET <directive> <value>")
		w.SimpleString("RESETSTAT")
	default:
		if sub == "get" || sub == "set" || sub == "resetstat" {
			w.Error(command.WrongArity("config|" + sub))
			return
		}
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try CONFIG HELP.")
	}
}

func (s *Server) resetStats() {
	snapshot.ResetMaxStall()
	for _, cmd := range s.table.ByName {
		cmd.Calls.Store(0)
		cmd.Nsec.Store(0)
		cmd.Failed.Store(0)
		cmd.Rejected.Store(0)
	}
	s.tracker.Reset()
	// CONFIG runs on a connection's event loop, which may own a shard:
	// waiting for the shards here would wait for itself. The resets are
	// posted; each shard runs its reset before any later message.
	for _, sh := range s.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) {
			s.cmdStats[sh.ID].Reset()
			sh.Stats = shard.Stats{}
		}))
	}
	s.errors.Reset()
	s.totalConns.Store(0)
	s.rejectedConns.Store(0)
}

func cmdDebug(x *Coord) {
	if !debug.Allowed(x.Srv.cfg.Value("enable-debug-command"), x.Conn == nil || x.Conn.local()) {
		x.W.Error(debug.NotAllowed)
		return
	}
	debug.Run(&x.Coord, (*debugHost)(x.Srv))
}

// debugHost is what package debug sees of the server.
type debugHost Server

func (h *debugHost) Reload(x *command.Coord) { debugReload(coordOf(x)) } // cmd_persist.go
func (h *debugHost) ChangeReplID()           { h.master.ChangeID() }
func (h *debugHost) Log(msg string)          { h.log.Warnf("%s", msg) }

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// rss reads the resident set size from /proc (0 where unavailable).
func rss() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
