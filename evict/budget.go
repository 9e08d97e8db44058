package evict

import (
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// TimeLimit is how long one eviction pass may run before it yields to
// the shard's other work, from maxmemory-eviction-tenacity as Redis's
// evictionTimeLimitUs: 50 us per unit up to 10 (500 us), then 15% more
// per unit, unlimited at 100.
func TimeLimit(tenacity int64) time.Duration {
	if tenacity <= 0 {
		return 0
	}
	if tenacity <= 10 {
		return time.Duration(50*tenacity) * time.Microsecond
	}
	if tenacity < 100 {
		return time.Duration(500*math.Pow(1.15, float64(tenacity-10))) * time.Microsecond
	}
	return time.Duration(math.MaxInt64)
}

// Budget turns the process's used memory into each shard's share to
// free. Used memory is sampled (the Go heap's objects, server/oom.go) and
// counts freed values until the collector has run: the bytes the shards
// evicted since the last completed cycle are subtracted, or every shard
// would evict again for garbage it already made.
type Budget struct {
	freed  atomic.Int64  // estimated bytes evicted since cycles
	cycles atomic.Uint64 // GC cycles completed when freed was last reset
	// Stuck: a shard over its share found nothing it may evict (volatile-*
	// without keys with a TTL): writes get the OOM error until it evicts
	// again.
	Stuck atomic.Bool
	// lastCollect, collectCost: when the last forced collection ran and
	// how long it took (Collect), owned by the memory watcher.
	lastCollect time.Time
	collectCost time.Duration
}

// CollectDue reports whether the watcher should force a collection
// before evicting: over maxmemory, the heap's objects count garbage (the
// collector's headroom is 64 MiB at least, reclaim.Headroom), which
// eviction cannot free. At most one per 20 ms, and no more than a
// quarter of the time.
func (b *Budget) CollectDue(now time.Time) bool {
	return now.Sub(b.lastCollect) >= max(20*time.Millisecond, 4*b.collectCost)
}

// Collect runs a full collection and reads sample again (its first
// metric is the used memory); it returns the used memory.
func (b *Budget) Collect(sample []metrics.Sample) int64 {
	start := time.Now()
	runtime.GC()
	b.lastCollect, b.collectCost = time.Now(), time.Since(start)
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// Over is how far used memory is over limit, net of what was evicted
// since the last collection (gcCycles: cycles completed so far); 0 when
// under.
func (b *Budget) Over(used, limit int64, gcCycles uint64) int64 {
	if old := b.cycles.Load(); old != gcCycles && b.cycles.CompareAndSwap(old, gcCycles) {
		b.freed.Store(0)
	}
	over := used - b.freed.Load() - limit
	if over <= 0 {
		return 0
	}
	return over
}

// Freed records bytes a shard evicted.
func (b *Budget) Freed(n int64) { b.freed.Add(n) }

// Share is one shard's part of over (maxmemory / shards each): at least
// a little, so one pass frees something worth its round trip.
func Share(over int64, shards int) int64 {
	const least = 16 << 10
	return max(over/int64(max(shards, 1)), least)
}
