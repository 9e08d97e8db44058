package server

import (
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

// FUNCTION and FCALL / FCALL_RO: Redis 7's function libraries, kept by
// package script. An FCALL runs like EVALSHA (runScript: inline on the
// shard owning its keys or on a coordinator, its declared keys locked,
// replicated by its effects).
//
// Durability: libraries are saved in RDB files and snapshots (FUNCTION2
// records, written at the cut: cutFunctions) and loaded from them (a
// Redis RDB's too), carried by full syncs, and every change is journaled
// on shard 0 while holding it, the way a snapshot's cut holds every shard,
// so a change is either in a cut or in the journal after it.

func functionCommands() []*command.Command {
	f := command.FlagNoScript | command.FlagStale
	return []*command.Command{
		{Name: "fcall", Arity: -3, Flags: f | command.FlagWrite, KeySpecs: "RW access update @2 keynum:0:1:1", InfoFlags: command.FlagSkipMonitor | command.FlagNoMandatoryKeys, InfoHides: command.FlagWrite, KeyPositions: script.KeyPositions,
			Coordinate: viaServer(fcallCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdFcall(c, false) }) },
			Multi: viaCoord(func(x *Coord) { cmdFcall(x, false) })},
		{Name: "fcall_ro", Arity: -3, Flags: f | command.FlagReadonly, KeySpecs: "RO access @2 keynum:0:1:1", InfoFlags: command.FlagSkipMonitor | command.FlagNoMandatoryKeys, KeyPositions: script.KeyPositions,
			Coordinate: viaServer(fcallCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdFcall(c, true) }) },
			Multi: viaCoord(func(x *Coord) { cmdFcall(x, true) })},
		{Name: "function", Arity: -2, Flags: command.FlagNoScript | command.FlagWrite, Subcommands: script.FunctionSubcommands, ACLCats: "dangerous", Multi: viaCoord(cmdFunction)},
	}
}

func init() { command.Register("scripting", functionCommands) }

// fcallCoordinate is evalCoordinate for a function.
func fcallCoordinate(srv *Server, args [][]byte) bool {
	return srv.scripts().CoordinateFunction(args, srv.tiered != nil, srv.shardsApart())
}

func cmdFcall(x *Coord, readonly bool) {
	numKeys, errText := script.NumKeys(x.Args)
	if errText != "" {
		if errText == command.ErrNotInt {
			errText = "ERR Bad number of keys provided"
		}
		x.W.Error(errText)
		return
	}
	f := x.Srv.scripts().Function(x.Args[1])
	if f == nil {
		x.W.Error(script.ErrFunctionNotFound)
		return
	}
	oom := x.Srv.overMaxmemory()
	if r := f.Refusal(readonly, x.Srv.replica.active.Load(), oom); r != "" {
		x.W.Error(r)
		return
	}
	runScript(x, scriptTarget{fn: f, id: []byte(f.RunID()), oom: oom && script.CallsMayOOM(true, f.Flags())}, numKeys, readonly || f.NoWrites())
}

// cmdFunction is FUNCTION. The subcommands that read (LIST, STATS, DUMP,
// HELP) and KILL need no shard; those that change the libraries run
// while holding shard 0 and are journaled there (see the top).
func cmdFunction(x *Coord) {
	e := x.Srv.scripts()
	if !e.FunctionCommand(x.Args, x.W) {
		return
	}
	t := x.Tx()
	t.AddShard(0)
	t.Lock()
	if e.ChangeLibraries(x.Args, x.W) && t.Recording() {
		t.Record(x.DB, x.Args)
	}
	t.Finish(nil)
}

// functionWrites reports whether FUNCTION's subcommand sub changes the
// libraries (refused on a replica).
func functionWrites(sub []byte) bool { return script.ChangesLibraries(sub) }

// loadFunctionLibrary loads a library read from a snapshot or a
// replication stream, replacing one of the same name.
func (s *Server) loadFunctionLibrary(code []byte) error { return s.scripts().LoadLibrary(code) }

// flushFunctions drops every library (a replica's full sync).
func (s *Server) flushFunctions() { s.scripts().FlushLibraries() }

// cutFunctions returns the libraries as RDB FUNCTION2 records, for a
// snapshot's cut: call it while holding shard 0 (every change holds it).
func (s *Server) cutFunctions() []byte { return s.scripts().Records() }

// functionsAtCut puts the libraries first on shard 0's output of a
// snapshot (tagged: as a main-stream fragment) when there are any; it runs
// at the cut, on the shard's goroutine, holding it.
func (s *Server) functionsAtCut(sh *shard.Shard, out chan<- snapshot.Chunk, tagged bool) {
	if sh.ID != 0 {
		return
	}
	b := s.cutFunctions()
	if len(b) == 0 {
		return
	}
	if tagged {
		b = persist.AppendPlainFrames(nil, snapshot.MainStream, b)
	}
	out <- snapshot.Chunk{Data: b} // the first item of an empty channel: never blocks
}
