package command

import (
	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Recording writes in the shards' journals (docs/DESIGN.md §6, package journal).
//
// Every command that runs on a shard goes through Exec.run; while the
// shard's journal is inactive that is one atomic load and the command.
// While it records, a command that wrote (the shard's write counter moved,
// expiries aside) is journaled after it applied: as sent, or in the
// deterministic form Redis 7 propagates (Command.Rewrite, from the
// key's state and the reply after the command), or as the commands it gave to
// Propagate. Expiries are journaled as DEL by the shard (shard.DB.deleteExpired).
//
// Transactions: the steps of a multi-shard transaction (package tx) record
// into the transaction's per-shard parts, which are committed when it
// releases its locks; a coordinator command (MSET over shards, RENAME,
// FLUSHALL ...) journals its own command through tx.Recorder at that
// commit. A single-shard EXEC or script is one part of its shard. Scripts
// are replicated by effects: their redis.call writes, never EVAL itself.

// effectsOnly are commands journaled by their effects, not themselves.
var effectsOnly = map[string]bool{"eval": true, "evalsha": true, "exec": true, "fcall": true, "txn": true, "fence": true}

// notJournaled write commands change nothing a replica should repeat, or
// journal themselves (FUNCTION: changeFunctions).
var notJournaled = map[string]bool{"debug": true, "function": true}

// Run runs cmd on the shard, journaling its write when the journal records.
func (x *Exec) Run(cmd *Command) {
	if cmd.Flags&FlagQuiet != 0 {
		x.S.Quiet(true)
		defer x.S.Quiet(false)
	}
	if cmd.Flags&(FlagReadonly|FlagNoScript) == FlagReadonly {
		x.S.Stats.Reads++ // not EVAL_RO: the commands it runs count
	}
	defer x.S.ReadMisses(x.S.ReadMisses(cmd.Flags&FlagReadonly != 0))
	if !x.S.Journal.Active() {
		cmd.Shard(x)
		return
	}
	x.runRecorded(cmd)
}

func (x *Exec) runRecorded(cmd *Command) {
	s := x.S
	j := s.Journal
	if effectsOnly[cmd.Name] {
		if j.InPart() {
			cmd.Shard(x)
			return
		}
		// A script confined to this shard: its writes are one transaction.
		p := journal.NewPart(nil)
		prev := j.Enter(p)
		func() {
			defer j.Leave(prev) // also when the script panics (recoverCommand)
			cmd.Shard(x)
		}()
		if p.Len() > 0 {
			j.Commit(p, tx.NewID(), []uint16{uint16(s.ID)})
		}
		return
	}
	before := s.Stats.Writes - s.Stats.ExpiredKeys
	replyStart := len(x.W.Buf)
	x.Prop = x.Prop[:0]
	cmd.Shard(x)
	if s.Stats.Writes-s.Stats.ExpiredKeys == before || notJournaled[cmd.Name] {
		x.Prop = x.Prop[:0]
		return
	}
	db := x.DB.Index
	if len(x.Prop) > 0 {
		for _, a := range x.Prop {
			j.Record(db, a)
		}
		x.Prop = x.Prop[:0]
		return
	}
	if cmd.Name == "set" && len(x.Args) == 3 {
		// SET key value leaves the key without a TTL: its rewrite is
		// itself, recorded without the rewriter's closure and argument
		// slice (two allocations a write while a replica follows).
		j.Record(db, x.Args)
		return
	}
	if rw := cmd.Rewrite; rw != nil {
		rw(x, x.W.Buf[replyStart:], func(args ...[]byte) { j.Record(db, args) })
		return
	}
	j.Record(db, x.Args)
}

// RunPart runs fn (commands of a single-shard transaction) as one journal
// part of shard s when its journal records.
func RunPart(s *shard.Shard, fn func()) {
	j := s.Journal
	if !j.Active() || j.InPart() {
		fn()
		return
	}
	p := journal.NewPart(nil)
	prev := j.Enter(p)
	fn()
	j.Leave(prev)
	if p.Len() > 0 {
		j.Commit(p, tx.NewID(), []uint16{uint16(s.ID)})
	}
}

// JournalCommit journals a coordinator command at its transaction's commit
// (tx.Recorder).
func (x *Coord) JournalCommit(t *tx.Tx, wrote bool) {
	prop := x.Prop
	x.Prop = nil
	if !wrote || notJournaled[x.Cmd.Name] {
		return
	}
	if len(prop) > 0 {
		for _, a := range prop {
			t.Record(x.DB, a)
		}
		return
	}
	args := x.Args
	if x.Cmd.JournalArgs != nil {
		args = x.Cmd.JournalArgs(args)
	}
	t.Record(x.DB, args)
}

// RecordServed journals a write a blocked client's serve made on shard s
// (outside any transaction).
func RecordServed(s *shard.Shard, db int, args ...[]byte) {
	if j := s.Journal; j.Active() {
		j.Record(db, args)
	}
}

// JournaledByEffects reports whether the command is journaled by the
// writes it makes (a script's, EXEC's), not as itself.
func (cmd *Command) JournaledByEffects() bool { return effectsOnly[cmd.Name] }
