package replica

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/dfly/dfly/command"
	_ "github.com/dfly/dfly/family" // SET
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// testHost is a server of running shards (no listener), what an applier
// needs of it and no more.
type testHost struct {
	shards []*shard.Shard
	table  *command.Table
}

// startShards is a server of n shards whose goroutines run, stopped when
// tb ends.
func startShards(tb testing.TB, n int) *testHost {
	h := &testHost{table: command.NewTable()}
	for i := 0; i < n; i++ {
		sh := shard.New(i, 16)
		sh.Start()
		h.shards = append(h.shards, sh)
	}
	tb.Cleanup(func() {
		for _, sh := range h.shards {
			sh.Stop()
		}
	})
	return h
}

// ShardOf hashes key's {tag} when it has one, as the server does.
func (h *testHost) ShardOf(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var n int
	for _, c := range key {
		n = n*31 + int(c)
	}
	return (n & 0x7fffffff) % len(h.shards)
}
func (h *testHost) Shards() []*shard.Shard { return h.shards }
func (h *testHost) Databases() int         { return 16 }
func (h *testHost) ProtoMaxBulk() int64    { return 512 << 20 }
func (h *testHost) Tiered() bool           { return false }

func (h *testHost) Server() command.Server    { return h }
func (h *testHost) NewClient() command.Client { return h }
func (h *testHost) Table() *command.Table     { return h.table }
func (h *testHost) Coord(command.Client, command.Coord) *command.Coord {
	panic("no coordinators in this test")
}
func (h *testHost) RunLocal(_ command.Client, cmd *command.Command, args [][]byte, w *resp.Writer) {
	cmd.Local(h, args, w)
}
func (h *testHost) CountCall(int, *command.Command) {}
func (h *testHost) FlushForSync()                   {}
func (h *testHost) SetLoading(bool)                 {}
func (h *testHost) NewLoader(*sync.WaitGroup) *rdbvalue.Loader {
	panic("no loads in this test")
}
func (h *testHost) BeginLoad(r io.Reader, _ int64) (io.Reader, func()) { return r, func() {} }
func (h *testHost) Tier() Tier                                         { return nil }
func (h *testHost) Noticef(string, ...any)                             {}
func (h *testHost) Warnf(string, ...any)                               {}

// onEach runs fn on every shard and waits.
func (h *testHost) onEach(fn func(*shard.Shard)) {
	var wg sync.WaitGroup
	wg.Add(len(h.shards))
	for _, sh := range h.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) { fn(sh); wg.Done() }))
	}
	wg.Wait()
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
	s.onEach(func(sh *shard.Shard) {
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
	other := NewShardApplier(s)
	b := other.batches[sid]
	b.ops = append(b.ops, Cmd{Cmd: s.table.Lookup([]byte("set")), DB: 0, Args: [][]byte{[]byte("set"), []byte("{t}other"), []byte("x")}})
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
	s.onEach(func(sh *shard.Shard) {
		if sh.MasterApply {
			t.Errorf("shard %d: MasterApply still set after the transaction and the batch", sh.ID)
		}
	})
}
