package txn

import (
	"bytes"
	"strconv"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/lock"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

func init() { command.Register("txn", commands) } // no @transaction: Redis 7.0 lists its own there

func commands() []*command.Command {
	cmd := &command.Command{Name: "txn", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagNoScript,
		Summary: "TXN [IF EXISTS key | IF NOTEXISTS key | IF VALUE key value | IF VERSION key version | " +
			"IF SEQUENCER name mode generation] ... " +
			"DO argc command arg ... [DO argc command arg ...] ... [ONFAIL argc command arg ...] ... -- every condition holds and every mutation applies, " +
			"atomically across shards, or a PRECONDITION error names the first that failed and nothing applies; " +
			"the reply is the mutations' replies, as EXEC's",
		KeySpecs: "RW access update incomplete ?", Multi: runTxn}
	cmd.KeyPositions = func(dst []int, args [][]byte) []int { return keyPositions(cmd.Table(), dst, args) }
	cmd.Shard = func(x *command.Exec) { runTxnOnShard(cmd.Table(), x) }
	cmd.Inner = func(dst []command.Call, args [][]byte) []command.Call { return innerCalls(cmd.Table(), dst, args) }
	return []*command.Command{
		cmd,
		{Name: "keyversion", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, KeyFlags: "RO", FirstKey: 1, LastKey: 1, Step: 1,
			Summary: "KEYVERSION key -- the key's version (nil when missing): it changes on every write of the key, never " +
				"returns to an earlier value, and differs from every version another server (a replica, a restarted master) gives",
			Shard: cmdKeyVersion},
	}
}

// runTxn runs a TXN on its coordinator: lock every key, check the
// conditions on their shards (all at once), then run the mutations (or,
// when a condition failed, the ONFAIL reads), each shard its own in order,
// all shards at once, releasing as they finish. With every lock held from
// the first check to the last command, no other command sees the keys in
// between, so the shards' parallel parts are the same transaction as
// running the commands one by one.
func runTxn(x *command.Coord) {
	r, e := Parse(x.Cmd.Table(), x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	mutsOn, e := byShard(x, r.Muts, "DO")
	if e == "" {
		var readsOn [][]int
		if readsOn, e = byShard(x, r.OnFail, "ONFAIL"); e == "" {
			runLocked(x, &r, mutsOn, readsOn)
			return
		}
	}
	x.W.Error(e)
}

// byShard groups the commands by their keys' shard; an error when one's
// keys are on several.
func byShard(x *command.Coord, cmds []Mutation, word string) ([][]int, string) {
	on := make([][]int, x.NumShards())
	for i, m := range cmds {
		sid := x.ShardOf(m.Args[m.Keys[0]])
		for _, k := range m.Keys[1:] {
			if x.ShardOf(m.Args[k]) != sid {
				return nil, "ERR TXN: the keys of " + word + " " + strconv.Itoa(i+1) + " are on different shards: give them one {hash tag}, or split it"
			}
		}
		on[sid] = append(on[sid], i)
	}
	return on, ""
}

func runLocked(x *command.Coord, r *Request, mutsOn, readsOn [][]int) {
	t := x.Tx()
	condsOn := make([][]int, x.NumShards())
	for i, c := range r.Conds {
		sid := x.ShardOf(c.Key)
		condsOn[sid] = append(condsOn[sid], i)
		t.AddBytes(sid, x.DB, c.Key, false)
	}
	for _, list := range []struct {
		on   [][]int
		cmds []Mutation
	}{{mutsOn, r.Muts}, {readsOn, r.OnFail}} {
		for sid, idx := range list.on {
			for _, i := range idx {
				m := &list.cmds[i]
				for _, k := range m.Keys {
					t.AddBytes(sid, x.DB, m.Args[k], m.Cmd.Flags&command.FlagWrite != 0)
				}
			}
		}
	}
	t.Lock()
	first := 0 // 1 + the first condition that failed
	if len(r.Conds) > 0 {
		failed := make([]int, x.NumShards()) // per shard
		t.RunAll(func(s *shard.Shard) {
			db := s.DBs[x.DB]
			for _, i := range condsOn[s.ID] {
				if !r.Conds[i].holds(db) {
					failed[s.ID] = i + 1
					return
				}
			}
		})
		for _, f := range failed {
			if f != 0 && (first == 0 || f < first) {
				first = f
			}
		}
	}
	cmds, on := r.Muts, mutsOn
	if first != 0 {
		if len(r.OnFail) == 0 {
			t.Finish(nil)
			x.W.Error(preconditionFailed(r.Conds[first-1], first))
			return
		}
		cmds, on = r.OnFail, readsOn
	}
	replies := make([]resp.Writer, len(cmds))
	for i := range replies {
		replies[i].Proto = x.W.Proto
	}
	srv := x.Srv()
	t.Finish(func(s *shard.Shard) {
		for _, i := range on[s.ID] {
			m := &cmds[i]
			m.Cmd.Calls.Add(1)
			e := command.Exec{S: s, DB: s.DBs[x.DB], Args: m.Args, W: &replies[i], Srv: srv}
			e.Run(m.Cmd)
		}
	})
	if first != 0 {
		x.W.Array(1 + len(replies))
		x.W.Error(preconditionFailed(r.Conds[first-1], first))
	} else {
		x.W.Array(len(replies))
	}
	for i := range replies {
		x.W.Buf = append(x.W.Buf, replies[i].Buf...)
	}
}

// runTxnOnShard runs a TXN whose keys are all on one shard, inline in
// the shard's batch: no coordinator, no lock round trip (the batch checked
// the keys' locks), and the shard runs it to the end before anything else.
// Exec.Run journals it as one part of the shard, by its mutations.
func runTxnOnShard(t *command.Table, x *command.Exec) {
	r, e := Parse(t, x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	cmds := r.Muts
	failed := 0
	for i := range r.Conds {
		if !r.Conds[i].holds(x.DB) {
			failed = i + 1
			break
		}
	}
	switch {
	case failed == 0:
		x.W.Array(len(r.Muts))
	case len(r.OnFail) == 0:
		x.W.Error(preconditionFailed(r.Conds[failed-1], failed))
		return
	default:
		x.W.Array(1 + len(r.OnFail))
		x.W.Error(preconditionFailed(r.Conds[failed-1], failed))
		cmds = r.OnFail
	}
	for i := range cmds {
		m := &cmds[i]
		m.Cmd.Calls.Add(1)
		e := command.Exec{S: x.S, DB: x.DB, Args: m.Args, W: x.W, Srv: x.Srv}
		e.Run(m.Cmd)
	}
}

// preconditionFailed is the error naming condition n (from 1), c.
func preconditionFailed(c Condition, n int) string {
	return "PRECONDITION failed: IF " + c.Kind.String() + " " + string(c.Key) + " (condition " + strconv.Itoa(n) + "); nothing applied"
}

// holds checks the condition on the shard that owns its key, under the
// transaction's lock. A key expired by now is missing.
func (c *Condition) holds(db *shard.DB) bool {
	it, v := db.Find(c.Key)
	switch c.Kind {
	case Exists:
		return v != nil
	case NotExists:
		return v == nil
	case ValueEq:
		return v != nil && v.Type == shard.TypeString && bytes.Equal(v.Str(), c.Arg)
	case VersionEq:
		var buf [40]byte
		return v != nil && bytes.Equal(appendVersion(buf[:0], db, it), c.Arg)
	case Sequencer:
		if v == nil || v.Type != shard.TypeLock {
			return false
		}
		return v.Obj().(*lock.Lock).CurrentSequencer(c.Seq, lock.Process.Now())
	}
	return false
}
