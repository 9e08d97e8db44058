package server

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// replApplier applies a master's stream to the shards; it implements
// replica.Applier and is the internal apply API a dfly-native replication
// flow can reuse (see Apply and FullSync).
//
// Apply takes the ops of one read and runs them like a connection's
// pipeline (conn.go): runs of single-shard commands go to their shards as
// one batch per shard, all shards at once; a command spanning shards and a
// MULTI/EXEC block wait for the batches before them and run as a tx.Tx.
// Every shard step of the master's commands runs with shard.MasterApply
// set, so the master's writes see keys the replica's clock already
// considers expired (Redis's replica does the same for its master client).
//
// Order: one shard's commands run in stream order (one batch per shard in
// flight, applied in order, parking behind client locks as a whole);
// commands on different shards between two barriers are independent by
// construction (different keys), so running them in parallel is the same
// history. Blocks and multi-shard commands are barriers.
type replApplier struct {
	s *Server
	// conn stands in for a client in handlers that expect one; it never
	// has a socket.
	conn    *Conn
	batches []*applyBatch
	used    []int
	scratch []int
	wg      sync.WaitGroup
	errs    atomic.Int64
	lastLog atomic.Int64
	// failed and lastFailure: error replies noted on the shards.
	failed      atomic.Int64
	lastFailure atomic.Pointer[string]
}

// applyLoadInflight bounds the decoded RDB batches queued per shard.
const applyLoadInflight = 8

func newReplApplier(s *Server) *replApplier {
	a := &replApplier{s: s, batches: make([]*applyBatch, len(s.shards))}
	a.conn = &Conn{srv: s, proto: 2, loop: -1, authed: true, gone: make(chan struct{}), user: acl.Master}
	a.conn.info.user = acl.Master
	a.conn.ID = s.nextConnID.Add(1)
	a.conn.protoShared.Store(2)
	for i := range a.batches {
		a.batches[i] = &applyBatch{a: a, sid: i}
		a.batches[i].w.Proto = 2
	}
	return a
}

var _ replica.Applier = (*replApplier)(nil)

// FullSync empties every database and loads the RDB payload into the
// shards, keys routed by this server's ShardOf. Clients get LOADING
// meanwhile, and still after a failed load, until a full sync succeeds
// (or REPLICAOF NO ONE): a partial dataset is never served as the
// master's.
func (a *replApplier) FullSync(r io.Reader, size int64) (err error) {
	s := a.s
	s.replica.loading.Store(true)
	defer func() {
		if err == nil {
			s.replica.loading.Store(false)
		}
	}()
	start := time.Now()
	s.flushForSync() // the master's data comes in its RDB
	defer s.persist.BeginLoad(size, 0)()
	l := s.replicaLoader(&a.wg)
	l.LimitReserve(size) // unknown (diskless, EOF-marked) when not positive
	err = l.Load(s.persist.Progress(r))
	a.wg.Wait()
	if err != nil {
		return err
	}
	s.log.Noticef("MASTER <-> REPLICA sync: loaded %d keys in %.3f seconds", l.Keys(), time.Since(start).Seconds())
	return nil
}

// applyOp is a command on its way to a shard.
type applyOp struct {
	cmd  *command.Command
	db   int
	args [][]byte
}

// Apply runs ops in order and returns when all are applied.
func (a *replApplier) Apply(ops []replica.Op) error {
	for i := range ops {
		op := &ops[i]
		if op.Tx != nil {
			a.barrier()
			a.applyTx(op.Tx)
			continue
		}
		cmd := a.command(op)
		if cmd == nil {
			continue
		}
		if cmd.Local != nil {
			a.barrier()
			a.applyLocal(op, cmd)
			continue
		}
		sid := a.s.singleShard(cmd, op.Args, &a.scratch)
		if sid < 0 {
			a.barrier()
			a.applyCoord(op, cmd)
			continue
		}
		b := a.batches[sid]
		if len(b.ops) == 0 {
			a.used = append(a.used, sid)
		}
		b.ops = append(b.ops, applyOp{cmd: cmd, db: op.DB, args: op.Args})
	}
	a.barrier()
	a.report()
	return nil
}

// command looks up an op's command; nil (logged) when it cannot run here.
func (a *replApplier) command(op *replica.Op) *command.Command {
	if len(op.Args) == 0 {
		return nil
	}
	cmd := a.s.table.Lookup(op.Args[0])
	switch {
	case cmd == nil:
		a.logf("replica: unknown command from master: %s", command.TruncArg(op.Args[0]))
		return nil
	case !cmd.ArityOK(len(op.Args)):
		a.logf("replica: wrong number of arguments from master for '%s'", cmd.Name)
		return nil
	case op.DB >= a.s.cfg.Databases:
		a.logf("replica: master selected DB %d, out of range", op.DB)
		return nil
	}
	return cmd
}

// logf logs apply problems, at most a few per second: a master sending
// what this server cannot apply must not flood the log.
func (a *replApplier) logf(format string, args ...any) {
	a.errs.Add(1)
	now := time.Now().UnixNano()
	last := a.lastLog.Load()
	if now-last < int64(200*time.Millisecond) || !a.lastLog.CompareAndSwap(last, now) {
		return
	}
	a.s.log.Warnf(format, args...)
}

// checkReply notes an error reply to a master's command (Redis's replica
// logs those: the datasets may have diverged) and resets w. It runs on
// shard goroutines, which do no I/O: report logs later.
func (a *replApplier) checkReply(w *resp.Writer, cmd *command.Command) {
	if len(w.Buf) > 0 && w.Buf[0] == '-' {
		msg := w.Buf[1:]
		if len(msg) > 200 {
			msg = msg[:200]
		}
		text := cmd.Name + ": " + string(bytes.TrimRight(msg, "\r\n"))
		a.lastFailure.Store(&text)
		a.failed.Add(1)
	}
	w.Reset()
}

// report logs the failures checkReply noted; on the applier's goroutine.
func (a *replApplier) report() {
	if n := a.failed.Swap(0); n > 0 {
		a.logf("replica: %d of the master's commands failed on the replica, the last: %s", n, *a.lastFailure.Load())
	}
}

// barrier sends the gathered batches and waits until all are applied.
func (a *replApplier) barrier() {
	if len(a.used) == 0 {
		return
	}
	a.wg.Add(len(a.used))
	for _, sid := range a.used {
		a.s.shards[sid].Send(a.batches[sid])
	}
	a.wg.Wait()
	a.used = a.used[:0]
}

// setMasterApply marks a shard as running the master's commands.
func setMasterApply(on bool) func(*shard.Shard) {
	return func(sh *shard.Shard) { sh.MasterApply = on }
}

// applyCoord runs a command whose keys span shards (or that works on all
// of them) with every shard locked, as one step of the history.
func (a *replApplier) applyCoord(op *replica.Op, cmd *command.Command) {
	pins := a.tierPreload(applyOp{cmd: cmd, db: op.DB, args: op.Args})
	t := tx.New(a.s.shards)
	t.AddAllShards()
	t.Lock()
	t.RunAll(setMasterApply(true))
	a.runCoord(t, op.DB, op.Args, cmd)
	t.Finish(setMasterApply(false))
	if pins != nil {
		pins.unpin()
	}
}

// tierPreload (tiered.go): the offloaded values that the commands of a
// multi-shard step read are loaded into memory first and pinned until
// unpin (tierPins), the applier's goroutine waiting, so the shards find
// them in memory under the step's locks. A failed read is tried again
// (tierRetry) until it succeeds, as in loadDone. nil when there is
// nothing to load.
func (a *replApplier) tierPreload(cmds ...applyOp) *tierPins {
	if a.s.tiered == nil {
		return nil
	}
	p := &tierPins{srv: a.s}
	for _, c := range cmds {
		if c.cmd.Local == nil {
			p.add(c.db, c.cmd, c.args)
		}
	}
	if p.keys == nil {
		return nil
	}
	for retries := 1; !p.load(); retries++ {
		time.Sleep(tierRetry(retries))
	}
	return p
}

// runCoord runs one command inside t, which holds every shard.
func (a *replApplier) runCoord(t *tx.Tx, db int, args [][]byte, cmd *command.Command) {
	var w resp.Writer
	w.Proto = 2
	cmd.Calls.Add(1)
	sid := -1
	if cmd.Local == nil {
		var pos []int
		sid = a.s.singleShard(cmd, args, &pos)
	}
	// As EXEC (execQueued): a command of one shard runs its shard handler,
	// as on the master; the cross-shard form differs at the edges (LMOVE
	// of a one-element list to itself deleted it, TTL and all).
	switch {
	case cmd.Local != nil:
		a.applyLocal(&replica.Op{DB: db, Args: args}, cmd)
		return
	case sid < 0 && cmd.Multi != nil:
		inner := &Coord{Coord: command.Coord{DB: db, Args: args, W: &w, Cmd: cmd, InTx: true}, Srv: a.s, Conn: a.conn}
		cmd.Multi(inner.bind())
	case sid < 0:
		w.Error("CROSSSLOT Keys in request don't hash to the same slot")
	default:
		t.Run(sid, func(sh *shard.Shard) {
			e := command.Exec{S: sh, DB: sh.DBs[db], Args: args, W: &w, Srv: a.s, Conn: a.conn}
			if tierNoLoad(sh, cmd, args) { // tiered.go: SET, DEL ... leave offloaded values so
				defer sh.SetNoLoad(false)
			}
			cmd.Shard(&e)
		})
	}
	a.checkReply(&w, cmd)
}

// applyLocal runs the connection-level commands a master propagates
// (PUBLISH, SPUBLISH); others (SELECT is the link's) are ignored.
func (a *replApplier) applyLocal(op *replica.Op, cmd *command.Command) {
	switch cmd.Name {
	case "publish", "spublish", "script":
		var w resp.Writer
		w.Proto = 2
		cmd.Calls.Add(1)
		runLocal(cmd, a.conn, op.Args, &w)
		a.checkReply(&w, cmd)
	}
}

// applyTx applies a MULTI/EXEC block atomically: every key of the block
// is locked (exclusively) on its shard before any command runs and
// released after all ran, as EXEC does. A block whose commands each live
// on one shard runs as one message per shard; otherwise the block locks
// every shard and runs command by command.
func (a *replApplier) applyTx(ops []replica.Op) {
	cmds := make([]applyOp, 0, len(ops))
	sids := make([]int, 0, len(ops))
	parallel := true
	for i := range ops {
		cmd := a.command(&ops[i])
		if cmd == nil {
			continue
		}
		sid := -1
		if cmd.Local == nil {
			sid = a.s.singleShard(cmd, ops[i].Args, &a.scratch)
		}
		if sid < 0 {
			parallel = false
		}
		cmds = append(cmds, applyOp{cmd: cmd, db: ops[i].DB, args: ops[i].Args})
		sids = append(sids, sid)
	}
	if len(cmds) == 0 {
		return
	}
	if pins := a.tierPreload(cmds...); pins != nil {
		defer pins.unpin()
	}
	t := tx.New(a.s.shards)
	if parallel {
		var pos []int
		for i, c := range cmds {
			pos = c.cmd.Keys(pos[:0], c.args)
			for _, k := range pos {
				t.Add(sids[i], c.db, string(c.args[k]), true)
			}
			if len(pos) == 0 {
				t.AddShard(sids[i])
			}
		}
		t.Lock()
		t.Finish(func(sh *shard.Shard) {
			sh.MasterApply = true
			var w resp.Writer
			w.Proto = 2
			for i, c := range cmds {
				if sids[i] != sh.ID {
					continue
				}
				c.cmd.Calls.Add(1)
				e := command.Exec{S: sh, DB: sh.DBs[c.db], Args: c.args, W: &w, Srv: a.s, Conn: a.conn}
				set := tierNoLoad(sh, c.cmd, c.args) // tiered.go
				c.cmd.Shard(&e)
				if set {
					sh.SetNoLoad(false)
				}
				a.checkReply(&w, c.cmd)
			}
			sh.MasterApply = false
		})
		return
	}
	t.AddAllShards()
	t.Lock()
	t.RunAll(setMasterApply(true))
	for _, c := range cmds {
		a.runCoord(t, c.db, c.args, c.cmd)
	}
	t.Finish(setMasterApply(false))
}

// applyBatch is one shard's run of the master's single-shard commands.
type applyBatch struct {
	a    *replApplier
	sid  int
	ops  []applyOp
	pos  int
	w    resp.Writer
	keys []shard.KeyLock
	// loaded: the values of the command at pos were loaded (tiered.go);
	// retries: failed loads of them so far (loadDone).
	loaded  bool
	retries int
}

func (b *applyBatch) Run(s *shard.Shard) { b.exec(s, false) }

// exec applies the batch from pos, parking (as a whole, so later commands
// wait too) at a command whose keys a client has locked. It leaves
// MasterApply as it found it: it may run, and park, between the steps of
// another flow's transaction that holds the shard with it set.
func (b *applyBatch) exec(s *shard.Shard, resumed bool) {
	was := s.MasterApply
	s.MasterApply = true
	for b.pos < len(b.ops) {
		op := &b.ops[b.pos]
		if !resumed && !s.Locks.Idle() {
			b.keys = b.keys[:0]
			excl := op.cmd.Flags&command.FlagWrite != 0
			for _, i := range op.cmd.Keys(nil, op.args) {
				b.keys = append(b.keys, shard.KeyLock{DB: op.db, Key: string(op.args[i]), Excl: excl})
			}
			if !s.Available(b.keys) {
				s.MasterApply = was
				s.Park(b)
				return
			}
		}
		resumed = false
		if t, ok := s.Tier().(*offload.Shard); ok && !b.loaded &&
			tierApplyLoad(t, s, op.cmd, op.db, op.args, func(failed bool) { b.loadDone(s, failed) }) {
			// tiered.go: resumed (from this command, the locks checked
			// again) once the offloaded values it reads are in memory.
			b.loaded = true
			s.MasterApply = was
			return
		}
		b.loaded, b.retries = false, 0
		e := command.Exec{S: s, DB: s.DBs[op.db], Args: op.args, W: &b.w, Srv: b.a.s, Conn: b.a.conn}
		set := tierNoLoad(s, op.cmd, op.args) // tiered.go: SET, DEL ... leave offloaded values so
		op.cmd.Shard(&e)
		if set {
			s.SetNoLoad(false)
		}
		b.a.checkReply(&b.w, op.cmd)
		s.Stats.Commands++
		b.a.s.countShardCall(s.ID, op.cmd, 0)
		b.pos++
	}
	s.MasterApply = was
	clear(b.ops)
	b.ops, b.pos = b.ops[:0], 0
	b.a.wg.Done()
}

// loadDone resumes the batch once the values of the command at pos are
// loaded. When a read failed it loads them again later (tierRetry)
// instead: the master's command must be applied, and on the value's bytes
// (DB.Find's blocking load would leave a value it fails to read offloaded,
// and the command would run on no bytes). The batch, and the applier
// behind it, wait meanwhile.
func (b *applyBatch) loadDone(s *shard.Shard, failed bool) {
	if !failed {
		b.exec(s, false)
		return
	}
	b.loaded = false
	b.retries++
	time.AfterFunc(tierRetry(b.retries), func() { s.Send(shard.Func(func(s *shard.Shard) { b.exec(s, false) })) })
}

func (b *applyBatch) LockKeys() ([]shard.KeyLock, bool) { return b.keys, false }

func (b *applyBatch) Resume(s *shard.Shard) { b.exec(s, true) }
