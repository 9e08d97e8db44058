package server

// SAVE, BGSAVE, LASTSAVE and DEBUG RELOAD's handlers over package
// persist, and what persist needs of the server (persistHost).

import (
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

func init() { command.Register("server", persistCommands) }

func persistCommands() []*command.Command {
	return []*command.Command{
		{Name: "save", Arity: 1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagNoMulti, InfoFlags: command.FlagNoAsyncLoading, Multi: viaCoord(cmdSave)},
		{Name: "bgsave", Arity: -1, Flags: command.FlagAdmin | command.FlagNoScript, InfoFlags: command.FlagNoAsyncLoading, Multi: viaCoord(cmdBgsave)},
		{Name: "bgrewriteaof", Arity: 1, Flags: command.FlagAdmin | command.FlagNoScript, InfoFlags: command.FlagNoAsyncLoading, Multi: viaCoord(cmdBgrewriteaof)},
		{Name: "lastsave", Tips: "nondeterministic_output", Arity: 1, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, ACLCats: "admin dangerous", Multi: viaCoord(cmdLastSave)},
	}
}

func cmdSave(x *Coord) {
	if x.Srv.persist.BgsaveRunning() {
		x.W.Error("ERR Background save already in progress")
		return
	}
	if err := x.Srv.persist.Save(x.Tx()); err != nil {
		x.W.Error("ERR")
		return
	}
	x.W.SimpleString("OK")
}

// cmdBgsave: BGSAVE [SCHEDULE].
func cmdBgsave(x *Coord) {
	if len(x.Args) > 2 || (len(x.Args) == 2 && !strings.EqualFold(string(x.Args[1]), "schedule")) {
		x.W.Error(command.ErrSyntax)
		return
	}
	p := x.Srv.persist
	if x.InTx { // in EXEC, as Redis 7.0; its cut waits for the shards EXEC holds
		go func() {
			if !p.StartBgsave() {
				p.ScheduleBgsave()
			}
		}()
		x.W.SimpleString("Background saving scheduled")
		return
	}
	// SCHEDULE, as Redis's, waits only for another kind of child (an AOF
	// rewrite), which dfly has not: while a BGSAVE runs it is refused too.
	if !p.StartBgsave() {
		x.W.Error("ERR Background save already in progress")
		return
	}
	x.W.SimpleString("Background saving started")
}

func cmdLastSave(x *Coord) { x.W.Int(x.Srv.persist.LastSave()) }

// debugReload is DEBUG RELOAD: save, then load the file, holding every
// shard throughout.
func debugReload(x *Coord) {
	s := x.Srv
	var serialize func(*tx.Tx) []persist.ShardRecords
	if s.tiered != nil && x.Local == nil {
		serialize = s.serializeAsync // offloaded strings read without blocking a shard (tiered.go)
	}
	saveErr, loadErr := s.persist.Reload(x.Tx(), serialize)
	switch {
	case saveErr != nil:
		x.W.Error("ERR Error trying to save the DB: " + saveErr.Error())
	case loadErr != nil:
		x.W.Error("ERR Error trying to load the RDB dump: " + loadErr.Error())
	default:
		x.W.SimpleString("OK")
	}
}

// LoadOnStart loads the dataset once the server serves (LOADING until then);
// end gets the result: a partial load's caller exits rather than serve it.
func (s *Server) LoadOnStart(end func(error)) { s.persist.LoadWhenServing(s.ready, s.done, end) }

// SaveBeforeShutdown writes the final snapshot (SHUTDOWN SAVE, or SHUTDOWN
// and SIGTERM with save points configured).
// Writes are paused first (acknowledged after the cut, they would be
// lost), a master waits up to shutdown-timeout for its replicas to
// acknowledge every write (Redis 7.0), and a replica's link stops, so the
// file keeps the data's exact position and is where its replicas are.
func (s *Server) SaveBeforeShutdown() error {
	secs, _ := strconv.Atoi(s.cfg.Value("shutdown-timeout"))
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	s.holdWrites(true)
	s.drainWrites(deadline, nil, nil)
	resume := s.stopLinkForSave()
	if !s.isReplica() && len(s.master.Replicas(false)) > 0 {
		s.log.Noticef("Waiting for replicas before shutting down.")
		for _, r := range s.master.CaughtUp(deadline) {
			s.log.Warnf("Lagging replica %s:%d: it did not acknowledge every write.", r.Host, r.Port)
		}
	}
	err := s.persist.SaveBeforeShutdown()
	if err != nil {
		s.holdWrites(false)
		resume()
	}
	return err
}

// StartSaveSchedule runs the save schedule (--save) once the server
// serves, until it stops.
func (s *Server) StartSaveSchedule() {
	s.persist.StartSaveSchedule(s.ready, s.done, s.stopping.Load)
}

// persistHost is the Server as package persist sees it.
type persistHost Server

func (h *persistHost) Settings() persist.Settings {
	s := (*Server)(h)
	s.cfg.Mu.RLock()
	defer s.cfg.Mu.RUnlock()
	return persist.Settings{Dir: s.cfg.Dir, DBFilename: s.cfg.DBFilename, DBFormat: s.cfg.DBFormat,
		SerializationMaxChunk: int(s.cfg.SerializationMaxChunk), SnapshotReference: s.cfg.SnapshotReference,
		Save: s.cfg.Save}
}

func (h *persistHost) Functions() []byte { return (*Server)(h).cutFunctions() }

func (h *persistHost) FunctionsAtCut(sh *shard.Shard, out chan<- snapshot.Chunk, tagged bool) {
	(*Server)(h).functionsAtCut(sh, out, tagged)
}

func (h *persistHost) LoadFunctions(code []byte) error { return (*Server)(h).loadFunctionLibrary(code) }

func (h *persistHost) Tiered() bool { return h.tiered != nil }

func (h *persistHost) TierView(sh *shard.Shard, e *rdb.Encoder, v *shard.Value) *shard.Value {
	return offload.View(sh, e, v)
}

func (h *persistHost) TierLoader(sh *shard.Shard) snapshot.Loader { return offload.Loader(sh) }

// PositionCut: a master's position at the cut; a replica's only once its
// link stopped for a shutdown's save (a running link applies while the
// cut holds the shards: its position would not be the data's).
func (h *persistHost) PositionCut() replpos.Cut {
	if pos := h.replica.final.Load(); pos != nil {
		return (*replpos.Fixed)(pos)
	}
	if (*Server)(h).isReplica() {
		return nil
	}
	return h.master.PositionCut()
}
