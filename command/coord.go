package command

import (
	"time"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Server is what a command reads of the server it runs in.
type Server interface {
	// ShardOf is the shard that owns key; Shards every shard, by id.
	ShardOf(key []byte) int
	Shards() []*shard.Shard
	// Databases is --databases; ProtoMaxBulk proto-max-bulk-len.
	Databases() int
	ProtoMaxBulk() int64
	// Tiered reports whether values may be offloaded (--tiered_prefix).
	Tiered() bool
}

// SingleShard is the one shard owning all of cmd's keys in args, or -1
// when the command must be coordinated (keys on several shards, or no
// Shard handler). Keyless shard commands go to shard 0. scratch keeps
// the key positions (none when -1 for want of a Shard handler).
func SingleShard(s Server, cmd *Command, args [][]byte, scratch *[]int) int {
	if cmd.Shard == nil || (cmd.Coordinate != nil && cmd.Coordinate(s, args)) {
		*scratch = (*scratch)[:0] // no keys to run inline: see server's Conn.runBorrowed
		return -1
	}
	pos := cmd.Keys((*scratch)[:0], args)
	*scratch = pos
	if len(pos) == 0 {
		return 0
	}
	sid := s.ShardOf(args[pos[0]])
	for _, i := range pos[1:] {
		if s.ShardOf(args[i]) != sid {
			return -1
		}
	}
	return sid
}

// Declare declares to t the locks of the command with args in database
// db, queued in a transaction (EXEC): its keys, exclusive if it writes,
// and the key it writes in another database (OtherDBLock); every shard
// whole for a keyless command (FLUSHALL, DBSIZE, KEYS ...). pos is scratch
// for the key positions, returned for reuse.
func (cmd *Command) Declare(s Server, t *tx.Tx, db int, args [][]byte, pos []int) []int {
	pos = cmd.Keys(pos[:0], args)
	if len(pos) == 0 || cmd.Shard == nil && cmd.FirstKey == 0 && cmd.KeyPositions == nil {
		t.AddAllShards()
		return pos
	}
	excl := cmd.Flags&FlagWrite != 0
	for _, i := range pos {
		t.AddBytes(s.ShardOf(args[i]), db, args[i], excl)
	}
	if k, ok := cmd.OtherDBLock(args, s.Databases()); ok {
		t.Add(s.ShardOf(args[1]), k.DB, k.Key, true)
	}
	return pos
}

// Coord is a command running on a coordinator goroutine: one whose keys
// span shards, or that works on every shard (DBSIZE, FLUSHALL, KEYS). The
// server drives it (Run): transactions, work on shards, blocking.
type Coord struct {
	DB   int
	Args [][]byte
	W    *resp.Writer
	Cmd  *Command
	// InTx: running inside EXEC (or a script), whose transaction already
	// holds every lock; blocking commands then do not block.
	InTx bool
	// Local: the command runs on this shard's goroutine, inside a script
	// confined to the shard; work for it runs inline (see tx.Local).
	Local *shard.Shard
	// Prop: what the journal records instead of Args (see Propagate).
	Prop [][][]byte
	// Run is the server's side of this coordinator.
	Run Runner
}

// Runner is what the server does for a coordinator command.
type Runner interface {
	Server() Server
	// Tx starts a transaction over the server's shards; a write command's
	// transaction journals the command at its commit.
	Tx() *tx.Tx
	// On runs fn on shard sid without locks and waits; OnEach on every
	// shard in parallel. fn must write only to state indexed by the
	// shard's id.
	On(sid int, fn func(s *shard.Shard))
	OnEach(fn func(s *shard.Shard))
	// Wait waits, the client counted as blocked, until b is served
	// (b.Done), the deadline passes, the client is unblocked (CLIENT
	// UNBLOCK) or disconnects.
	Wait(b *shard.Blocker, deadline <-chan time.Time) WaitEnd
	// ReadsAnyKey reports whether the client's ACL user may read every
	// key (SORT's BY and GET patterns).
	ReadsAnyKey() bool
	// TieredReads says how a command reads offloaded values it meets:
	// async, waiting on the coordinator; or inline, within a script run
	// on a shard's goroutine, handing the script to a coordinator by
	// demote when it must wait.
	TieredReads() (async bool, demote func() bool)
}

// ShardOf is the shard that owns key.
func (x *Coord) ShardOf(key []byte) int { return x.Run.Server().ShardOf(key) }

// Srv is the server the command runs in.
func (x *Coord) Srv() Server { return x.Run.Server() }

// Tx starts a transaction over the server's shards (Runner.Tx).
func (x *Coord) Tx() *tx.Tx {
	t := x.Run.Tx()
	t.SetReads(x.Cmd != nil && x.Cmd.Flags&FlagReadonly != 0)
	return t
}

// NumShards is the number of shards.
func (x *Coord) NumShards() int { return len(x.Run.Server().Shards()) }

// OnEach runs fn on every shard in parallel, without locks, and waits.
// fn(sid) must write only to state indexed by the shard's id.
func (x *Coord) OnEach(fn func(s *shard.Shard)) { x.Run.OnEach(fn) }

// On runs fn on shard sid without locks and waits.
func (x *Coord) On(sid int, fn func(s *shard.Shard)) { x.Run.On(sid, fn) }

// LockKeys starts a transaction that locks the keys at positions pos of
// args (exclusively when excl), in the coordinator's DB.
func (x *Coord) LockKeys(pos []int, excl bool) *tx.Tx {
	t := x.Tx()
	for _, i := range pos {
		k := x.Args[i]
		t.AddBytes(x.ShardOf(k), x.DB, k, excl)
	}
	t.Lock()
	return t
}

// LockSplit groups the keys at pos by shard, locks them all, and returns
// the transaction with the positions each shard owns.
func (x *Coord) LockSplit(pos []int, excl bool) (*tx.Tx, [][]int) {
	parts := make([][]int, x.NumShards())
	t := x.Tx()
	for _, i := range pos {
		sid := x.ShardOf(x.Args[i])
		parts[sid] = append(parts[sid], i)
		t.AddBytes(sid, x.DB, x.Args[i], excl)
	}
	t.Lock()
	return t, parts
}

// SplitKeys runs fn on every shard that owns some of the keys at pos, with
// all of them locked, each shard releasing right after its part. fn gets
// the positions its shard owns, in argument order.
func (x *Coord) SplitKeys(pos []int, excl bool, fn func(s *shard.Shard, db *shard.DB, pos []int)) {
	t, parts := x.LockSplit(pos, excl)
	t.Finish(func(s *shard.Shard) { fn(s, s.DBs[x.DB], parts[s.ID]) })
}

// Propagate is Exec.Propagate for coordinator commands. It always keeps
// args: whether they are journaled is decided at the commit
// (JournalCommit), by the journals of the shards the transaction holds.
// No one shard's journal can answer here: a replication session starts the
// journals shard by shard as it releases its hold of every shard, so a
// command locking the destination's shard right after its start found
// shard 0's journal still off, kept nothing, and was journaled as sent (a
// SORT ... BY ... STORE re-run by the replica against keys it did not have
// yet: TestCoordPropagateJournalStartsShardByShard).
func (x *Coord) Propagate(args ...[]byte) {
	x.Prop = append(x.Prop, args)
}

// Propagate makes the journal record args instead of the command as sent;
// called several times, it records each in order. For commands whose
// arguments do not determine their effect.
func (x *Exec) Propagate(args ...[]byte) {
	if x.S.Journal.Active() {
		x.Prop = append(x.Prop, args)
	}
}
