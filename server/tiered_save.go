package server

import (
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
	"github.com/dfly/dfly/tx"
)

// Tiered storage and snapshots: serializing a dataset whose strings may
// be offloaded, reading them without blocking a shard. See tiered.go.

// tierPrefetchBytes bounds the offloaded bytes a shard reads ahead for
// serializeAsync in one round.
const tierPrefetchBytes = 8 << 20

// serializeAsync is serialize (DEBUG RELOAD) with tiering, run by a
// caller that may wait (not a shard goroutine) while t holds every shard:
// in rounds, each shard encodes buckets until it meets one holding
// offloaded strings not read yet, issues the reads of those and of the
// next buckets' (up to tierPrefetchBytes), and the caller waits for them
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
	sh    *shard.Shard
	w     *persist.ShardEncoder
	t     *tierShard
	ready map[int64][]byte // bytes read, by offset; retained until used
	segs  []tiered.Segment // segments retained
}

func newTierEncoder(sh *shard.Shard) *tierEncoder {
	x := &tierEncoder{sh: sh, t: sh.Tier().(*tierShard), ready: map[int64][]byte{}}
	x.w = persist.NewShardEncoder(sh, x.view)
	return x
}

// view is v with its bytes: those read ahead, else read blocking (the
// read failed: tierView fails the encoder).
func (x *tierEncoder) view(e *rdb.Encoder, v *shard.Value) *shard.Value {
	if !v.IsExternal() {
		return v
	}
	seg := segOf(v)
	if data, ok := x.ready[seg.Off]; ok && len(data) == int(seg.Len) {
		delete(x.ready, seg.Off)
		c := *v
		c.SetStr(data) // a shared read's bytes, never modified
		return &c
	}
	return tierView(x.sh, e, v)
}

// missing reports whether the next bucket holds an offloaded string not
// read yet.
func (x *tierEncoder) missing(db *shard.DB) bool {
	found := false
	db.Table.Traverse(x.w.Cursor(), func(it shard.Iterator) {
		if v := db.Table.Value(it); v.IsExternal() {
			if _, ok := x.ready[segOf(v).Off]; !ok {
				found = true
			}
		}
	})
	return found
}

// round encodes buckets until one needs reads, issues them (wg is done
// when they are back) and reports true; false when the shard is encoded.
func (x *tierEncoder) round(wg *sync.WaitGroup) bool {
	for {
		db := x.w.Current()
		if db == nil {
			return false
		}
		if x.missing(db) {
			x.fetch(db, wg)
			return true
		}
		x.w.Bucket()
	}
}

// fetch reads the offloaded strings of the next buckets of db, up to
// tierPrefetchBytes (at least those of the next bucket).
func (x *tierEncoder) fetch(db *shard.DB, wg *sync.WaitGroup) {
	var n int64
	for cursor := x.w.Cursor(); ; {
		cursor = db.Table.Traverse(cursor, func(it shard.Iterator) {
			v := db.Table.Value(it)
			if !v.IsExternal() {
				return
			}
			seg := segOf(v)
			if _, ok := x.ready[seg.Off]; ok {
				return
			}
			x.ready[seg.Off] = nil // being read
			n += int64(seg.Len)
			x.segs = append(x.segs, seg)
			x.t.store.Retain(seg) // until finish: space not reused while read ahead
			x.t.serialReads++
			wg.Add(1)
			x.t.store.Read(seg, func(data []byte, err error) {
				if err == nil {
					x.ready[seg.Off] = data
				} // else left nil, not read again here: view reads it blocking, and fails
				wg.Done()
			})
		})
		if cursor == 0 || n >= tierPrefetchBytes {
			return
		}
	}
}

// finish releases the segments read ahead and returns the records.
func (x *tierEncoder) finish() persist.ShardRecords {
	for _, g := range x.segs {
		x.t.store.Release(g)
	}
	return x.w.Records()
}
