package replica

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// ApplyHost is what a ShardApplier needs of the server whose shards it
// applies to, beyond the command context (package command).
type ApplyHost interface {
	// Server is the server as its commands see it: its shards, ShardOf,
	// --databases.
	Server() command.Server
	// NewClient is a client that the master's commands run for, in
	// handlers that expect one (command.Exec.Conn, a Local command): the
	// master's user, no socket. Its Table is the server's command table.
	NewClient() command.Client
	// Coord is x, a command of c's, as a coordinator command of the
	// server (x.Run set): for the master's commands that span shards.
	Coord(c command.Client, x command.Coord) *command.Coord
	// RunLocal runs a connection command of c's (PUBLISH, SPUBLISH,
	// SCRIPT), recovering from a panic in it.
	RunLocal(c command.Client, cmd *command.Command, args [][]byte, w *resp.Writer)
	// CountCall counts a call of cmd on shard sid, on its goroutine
	// (INFO commandstats).
	CountCall(sid int, cmd *command.Command)
	// FlushForSync, SetLoading and NewLoader as in Host.
	FlushForSync()
	SetLoading(loading bool)
	NewLoader(pending *sync.WaitGroup) *rdbvalue.Loader
	// BeginLoad reports a load of size bytes (unknown when not positive)
	// as the server's loading progress until end; progress is r, counted.
	BeginLoad(r io.Reader, size int64) (progress io.Reader, end func())
	// Tier is the server's tiered storage; nil when values are never
	// offloaded.
	Tier() Tier
	Noticef(format string, args ...any)
	Warnf(format string, args ...any)
}

// Tier is what a ShardApplier needs of tiered storage: the master's
// commands read offloaded values in memory, never without their bytes.
type Tier interface {
	// Preload loads the offloaded values whose bytes the commands of a
	// multi-shard step read into memory and pins them until unpin, the
	// caller waiting, so the shards find them in memory under the step's
	// locks. A failed read is tried again until it succeeds. nil when
	// there is nothing to load.
	Preload(cmds []Cmd) (unpin func())
	// Load, on s's goroutine, issues the reads of the offloaded values
	// whose bytes c reads and reports whether it did; done then runs on
	// s's goroutine once they are in memory, failed when one is not.
	Load(s *shard.Shard, c *Cmd, done func(failed bool)) bool
	// NoLoad turns DB.Find's loading off on s for a command that reads
	// no string bytes (SET, DEL ... leave offloaded values so); true: the
	// caller turns it on again after the command.
	NoLoad(s *shard.Shard, c *Cmd) bool
	// Retry is how long to wait before loading again values whose read
	// failed, the retries-th time.
	Retry(retries int) time.Duration
}

// ShardApplier applies a master's stream to a server's shards; it is the
// Applier of a Redis-protocol link and of each dfly flow
// (Host.NewApplier).
//
// Apply takes the ops of one read and runs them like a connection's
// pipeline: runs of single-shard commands go to their shards as one batch
// per shard, all shards at once; a command spanning shards and a
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
type ShardApplier struct {
	h      ApplyHost
	srv    command.Server
	shards []*shard.Shard
	table  *command.Table
	tier   Tier
	// client stands in for a client in handlers that expect one; it
	// never has a socket.
	client  command.Client
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

// NewShardApplier is an applier into h's shards.
func NewShardApplier(h ApplyHost) *ShardApplier {
	srv := h.Server()
	a := &ShardApplier{h: h, srv: srv, shards: srv.Shards(), tier: h.Tier(), client: h.NewClient()}
	a.table = a.client.Table()
	a.batches = make([]*applyBatch, len(a.shards))
	for i := range a.batches {
		a.batches[i] = &applyBatch{a: a, sid: i}
		a.batches[i].w.Proto = 2
	}
	return a
}

var _ Applier = (*ShardApplier)(nil)

// FullSync empties every database and loads the RDB payload into the
// shards, keys routed by the server's ShardOf. Clients get LOADING
// meanwhile, and still after a failed load, until a full sync succeeds
// (or REPLICAOF NO ONE): a partial dataset is never served as the
// master's.
func (a *ShardApplier) FullSync(r io.Reader, size int64) (err error) {
	a.h.SetLoading(true)
	defer func() {
		if err == nil {
			a.h.SetLoading(false)
		}
	}()
	start := time.Now()
	a.h.FlushForSync() // the master's data comes in its RDB
	r, end := a.h.BeginLoad(r, size)
	defer end()
	l := a.h.NewLoader(&a.wg)
	l.LimitReserve(size) // unknown (diskless, EOF-marked) when not positive
	err = l.Load(r)
	a.wg.Wait()
	if err != nil {
		return err
	}
	a.h.Noticef("MASTER <-> REPLICA sync: loaded %d keys in %.3f seconds", l.Keys(), time.Since(start).Seconds())
	return nil
}

// Cmd is one of the master's commands on its way to a shard.
type Cmd struct {
	Cmd  *command.Command
	DB   int
	Args [][]byte
}

// Apply runs ops in order and returns when all are applied.
func (a *ShardApplier) Apply(ops []Op) error {
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
		sid := command.SingleShard(a.srv, cmd, op.Args, &a.scratch)
		if sid < 0 {
			a.barrier()
			a.applyCoord(op, cmd)
			continue
		}
		b := a.batches[sid]
		if len(b.ops) == 0 {
			a.used = append(a.used, sid)
		}
		b.ops = append(b.ops, Cmd{Cmd: cmd, DB: op.DB, Args: op.Args})
	}
	a.barrier()
	a.report()
	return nil
}

// command looks up an op's command; nil (logged) when it cannot run here.
func (a *ShardApplier) command(op *Op) *command.Command {
	if len(op.Args) == 0 {
		return nil
	}
	cmd := a.table.Lookup(op.Args[0])
	switch {
	case cmd == nil:
		a.logf("replica: unknown command from master: %s", command.TruncArg(op.Args[0]))
		return nil
	case !cmd.ArityOK(len(op.Args)):
		a.logf("replica: wrong number of arguments from master for '%s'", cmd.Name)
		return nil
	case op.DB >= a.srv.Databases():
		a.logf("replica: master selected DB %d, out of range", op.DB)
		return nil
	}
	return cmd
}

// logf logs apply problems, at most a few per second: a master sending
// what this server cannot apply must not flood the log.
func (a *ShardApplier) logf(format string, args ...any) {
	a.errs.Add(1)
	now := time.Now().UnixNano()
	last := a.lastLog.Load()
	if now-last < int64(200*time.Millisecond) || !a.lastLog.CompareAndSwap(last, now) {
		return
	}
	a.h.Warnf(format, args...)
}

// checkReply notes an error reply to a master's command (Redis's replica
// logs those: the datasets may have diverged) and resets w. It runs on
// shard goroutines, which do no I/O: report logs later.
func (a *ShardApplier) checkReply(w *resp.Writer, cmd *command.Command) {
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
func (a *ShardApplier) report() {
	if n := a.failed.Swap(0); n > 0 {
		a.logf("replica: %d of the master's commands failed on the replica, the last: %s", n, *a.lastFailure.Load())
	}
}

// barrier sends the gathered batches and waits until all are applied.
func (a *ShardApplier) barrier() {
	if len(a.used) == 0 {
		return
	}
	a.wg.Add(len(a.used))
	for _, sid := range a.used {
		a.shards[sid].Send(a.batches[sid])
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
func (a *ShardApplier) applyCoord(op *Op, cmd *command.Command) {
	unpin := a.preload(Cmd{Cmd: cmd, DB: op.DB, Args: op.Args})
	t := tx.New(a.shards)
	t.AddAllShards()
	t.Lock()
	t.RunAll(setMasterApply(true))
	a.runCoord(t, op.DB, op.Args, cmd)
	t.Finish(setMasterApply(false))
	if unpin != nil {
		unpin()
	}
}

// preload is Tier.Preload, nil without tiered storage.
func (a *ShardApplier) preload(cmds ...Cmd) (unpin func()) {
	if a.tier == nil {
		return nil
	}
	return a.tier.Preload(cmds)
}

// noLoad is Tier.NoLoad, false without tiered storage.
func (a *ShardApplier) noLoad(s *shard.Shard, c *Cmd) bool {
	return a.tier != nil && a.tier.NoLoad(s, c)
}

// runCoord runs one command inside t, which holds every shard.
func (a *ShardApplier) runCoord(t *tx.Tx, db int, args [][]byte, cmd *command.Command) {
	var w resp.Writer
	w.Proto = 2
	cmd.Calls.Add(1)
	sid := -1
	if cmd.Local == nil {
		var pos []int
		sid = command.SingleShard(a.srv, cmd, args, &pos)
	}
	// As EXEC (the server's execQueued): a command of one shard runs its
	// shard handler, as on the master; the cross-shard form differs at
	// the edges (LMOVE of a one-element list to itself deleted it, TTL
	// and all).
	switch {
	case cmd.Local != nil:
		a.applyLocal(&Op{DB: db, Args: args}, cmd)
		return
	case sid < 0 && cmd.Multi != nil:
		cmd.Multi(a.h.Coord(a.client, command.Coord{DB: db, Args: args, W: &w, Cmd: cmd, InTx: true}))
	case sid < 0:
		w.Error("CROSSSLOT Keys in request don't hash to the same slot")
	default:
		t.Run(sid, func(sh *shard.Shard) {
			e := command.Exec{S: sh, DB: sh.DBs[db], Args: args, W: &w, Srv: a.srv, Conn: a.client}
			if a.noLoad(sh, &Cmd{Cmd: cmd, DB: db, Args: args}) {
				defer sh.SetNoLoad(false)
			}
			cmd.Shard(&e)
		})
	}
	a.checkReply(&w, cmd)
}

// applyLocal runs the connection-level commands a master propagates
// (PUBLISH, SPUBLISH); others (SELECT is the link's) are ignored.
func (a *ShardApplier) applyLocal(op *Op, cmd *command.Command) {
	switch cmd.Name {
	case "publish", "spublish", "script":
		var w resp.Writer
		w.Proto = 2
		cmd.Calls.Add(1)
		a.h.RunLocal(a.client, cmd, op.Args, &w)
		a.checkReply(&w, cmd)
	}
}

// applyTx applies a MULTI/EXEC block atomically: every key of the block
// is locked (exclusively) on its shard before any command runs and
// released after all ran, as EXEC does. A block whose commands each live
// on one shard runs as one message per shard; otherwise the block locks
// every shard and runs command by command.
func (a *ShardApplier) applyTx(ops []Op) {
	cmds := make([]Cmd, 0, len(ops))
	sids := make([]int, 0, len(ops))
	parallel := true
	for i := range ops {
		cmd := a.command(&ops[i])
		if cmd == nil {
			continue
		}
		sid := -1
		if cmd.Local == nil {
			sid = command.SingleShard(a.srv, cmd, ops[i].Args, &a.scratch)
		}
		if sid < 0 {
			parallel = false
		}
		cmds = append(cmds, Cmd{Cmd: cmd, DB: ops[i].DB, Args: ops[i].Args})
		sids = append(sids, sid)
	}
	if len(cmds) == 0 {
		return
	}
	if unpin := a.preload(cmds...); unpin != nil {
		defer unpin()
	}
	t := tx.New(a.shards)
	if parallel {
		var pos []int
		for i, c := range cmds {
			pos = c.Cmd.Keys(pos[:0], c.Args)
			for _, k := range pos {
				t.Add(sids[i], c.DB, string(c.Args[k]), true)
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
			for i := range cmds {
				c := &cmds[i]
				if sids[i] != sh.ID {
					continue
				}
				c.Cmd.Calls.Add(1)
				e := command.Exec{S: sh, DB: sh.DBs[c.DB], Args: c.Args, W: &w, Srv: a.srv, Conn: a.client}
				set := a.noLoad(sh, c)
				c.Cmd.Shard(&e)
				if set {
					sh.SetNoLoad(false)
				}
				a.checkReply(&w, c.Cmd)
			}
			sh.MasterApply = false
		})
		return
	}
	t.AddAllShards()
	t.Lock()
	t.RunAll(setMasterApply(true))
	for _, c := range cmds {
		a.runCoord(t, c.DB, c.Args, c.Cmd)
	}
	t.Finish(setMasterApply(false))
}

// applyBatch is one shard's run of the master's single-shard commands.
type applyBatch struct {
	a    *ShardApplier
	sid  int
	ops  []Cmd
	pos  int
	w    resp.Writer
	keys []shard.KeyLock
	// loaded: the values of the command at pos were loaded (Tier.Load);
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
	a := b.a
	was := s.MasterApply
	s.MasterApply = true
	for b.pos < len(b.ops) {
		op := &b.ops[b.pos]
		if !resumed && !s.Locks.Idle() {
			b.keys = b.keys[:0]
			excl := op.Cmd.Flags&command.FlagWrite != 0
			for _, i := range op.Cmd.Keys(nil, op.Args) {
				b.keys = append(b.keys, shard.KeyLock{DB: op.DB, Key: string(op.Args[i]), Excl: excl})
			}
			if !s.Available(b.keys) {
				s.MasterApply = was
				s.Park(b)
				return
			}
		}
		resumed = false
		if a.tier != nil && !b.loaded && a.tier.Load(s, op, func(failed bool) { b.loadDone(s, failed) }) {
			// Resumed (from this command, the locks checked again) once
			// the offloaded values it reads are in memory.
			b.loaded = true
			s.MasterApply = was
			return
		}
		b.loaded, b.retries = false, 0
		e := command.Exec{S: s, DB: s.DBs[op.DB], Args: op.Args, W: &b.w, Srv: a.srv, Conn: a.client}
		set := a.noLoad(s, op)
		op.Cmd.Shard(&e)
		if set {
			s.SetNoLoad(false)
		}
		a.checkReply(&b.w, op.Cmd)
		s.Stats.Commands++
		a.h.CountCall(s.ID, op.Cmd)
		b.pos++
	}
	s.MasterApply = was
	clear(b.ops)
	b.ops, b.pos = b.ops[:0], 0
	a.wg.Done()
}

// loadDone resumes the batch once the values of the command at pos are
// loaded. When a read failed it loads them again later (Tier.Retry)
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
	time.AfterFunc(b.a.tier.Retry(b.retries), func() { s.Send(shard.Func(func(*shard.Shard) { b.exec(s, false) })) })
}

func (b *applyBatch) LockKeys() ([]shard.KeyLock, bool) { return b.keys, false }

func (b *applyBatch) Resume(s *shard.Shard) { b.exec(s, true) }
