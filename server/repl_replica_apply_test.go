package server

import (
	"io"
	"testing"

	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// startShards is a server of n shards whose goroutines run (no
// listener), stopped when tb ends.
func startShards(tb testing.TB, n int) *Server {
	cfg := config.Default()
	cfg.Shards = n
	s := New(cfg, NewLogger(io.Discard, "warning"))
	for _, sh := range s.shards {
		sh.Start()
	}
	tb.Cleanup(func() {
		for _, sh := range s.shards {
			sh.Stop()
		}
	})
	return s
}

// A dfly replica applies each master shard's flow with an applier of its
// own. One applier's transaction (applyCoord, applyTx) holds whole shards
// with MasterApply set across its steps; another flow's batch meeting
// those locks parks, and must leave MasterApply as it found it: cleared,
// the transaction's next step ran the master's command without seeing
// the keys the replica hides (past TTL, DEL not yet come). Seen as
// replicas whose HLLs missed a PFMERGE, or keys left hidden whose PERSIST
// or EXPIRE missed them (the checker's seed 1074, restart mid-sync).
func TestReplicaBatchParkedInTransactionKeepsMasterApply(t *testing.T) {
	s := startShards(t, 2)
	hidden := []byte("{t}hidden")
	sid := s.ShardOf(hidden)
	s.OnEachShard(func(sh *shard.Shard) {
		sh.ReplicaMode = true
		if sh.ID == sid {
			db := sh.DBs[0]
			it := db.Set(hidden, shard.NewString([]byte("v")), false)
			db.SetExpire(it, sh.Now()-1000) // passed on the replica's clock
		}
	})

	// Flow 0's transaction holds every shard with MasterApply set.
	coord := tx.New(s.shards)
	coord.AddAllShards()
	coord.Lock()
	coord.RunAll(setMasterApply(true))

	// Flow 1's batch for the same shard meets the locks and parks.
	other := newReplApplier(s)
	b := other.batches[sid]
	b.ops = append(b.ops, applyOp{cmd: s.table.Lookup([]byte("set")), db: 0, args: [][]byte{[]byte("set"), []byte("{t}other"), []byte("x")}})
	other.wg.Add(1)
	s.shards[sid].Send(b)

	// The transaction's next step, after the batch (one inbox): the
	// master's command still sees the hidden key.
	seen := false
	coord.Run(sid, func(sh *shard.Shard) {
		_, v := sh.DBs[0].Find(hidden)
		seen = v != nil
	})
	coord.Finish(setMasterApply(false))
	other.wg.Wait() // the batch ran once the locks were free
	if !seen {
		t.Fatal("a step of the master's transaction did not see a key the replica hides: a parked batch cleared MasterApply")
	}
	s.OnEachShard(func(sh *shard.Shard) {
		if sh.MasterApply {
			t.Errorf("shard %d: MasterApply still set after the transaction and the batch", sh.ID)
		}
	})
}
