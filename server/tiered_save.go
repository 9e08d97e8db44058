package server

import (
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Tiered storage and snapshots: serializing a dataset whose strings may
// be offloaded, reading them without blocking a shard. See tiered.go.

// serializeAsync is serialize (DEBUG RELOAD) with tiering, run by a
// caller that may wait (not a shard goroutine) while t holds every shard:
// in rounds, each shard encodes buckets until it meets one holding
// offloaded strings not read yet, issues the reads of those and of the
// next buckets' (offload.ReadAhead), and the caller waits for them
// before the next round; no shard goroutine blocks on a read. The bytes
// are read as the values are when read: t keeps commands out, and a
// value offloaded (or expired) between rounds is read then (or skipped).
func (s *Server) serializeAsync(t *tx.Tx) []persist.ShardRecords {
	ws := make([]*tierEncoder, len(s.shards))
	t.RunAll(func(sh *shard.Shard) { ws[sh.ID] = newTierEncoder(sh) })
	for {
		var wg sync.WaitGroup
		var more atomic.Bool
		t.RunAll(func(sh *shard.Shard) {
			if ws[sh.ID].round(&wg) {
				more.Store(true)
			}
		})
		wg.Wait()
		if !more.Load() {
			break
		}
	}
	snap := make([]persist.ShardRecords, len(s.shards))
	t.RunAll(func(sh *shard.Shard) { snap[sh.ID] = ws[sh.ID].finish() })
	snap[0].Funcs = s.cutFunctions()
	return snap
}

// tierEncoder is a persist.ShardEncoder whose offloaded strings are read
// ahead.
type tierEncoder struct {
	w     *persist.ShardEncoder
	ahead *offload.ReadAhead
}

func newTierEncoder(sh *shard.Shard) *tierEncoder {
	x := &tierEncoder{ahead: offload.NewReadAhead(sh)}
	x.w = persist.NewShardEncoder(sh, x.ahead.View)
	return x
}

// round encodes buckets until one needs reads, issues them (wg is done
// when they are back) and reports true; false when the shard is encoded.
func (x *tierEncoder) round(wg *sync.WaitGroup) bool {
	for {
		db := x.w.Current()
		if db == nil {
			return false
		}
		if x.ahead.Missing(db, x.w.Cursor()) {
			x.ahead.Fetch(db, x.w.Cursor(), wg)
			return true
		}
		x.w.Bucket()
	}
}

// finish releases the segments read ahead and returns the records.
func (x *tierEncoder) finish() persist.ShardRecords {
	x.ahead.Release()
	return x.w.Records()
}
