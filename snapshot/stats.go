package snapshot

import (
	"sync/atomic"
	"time"
)

// Counters of every snapshot of the process, for INFO (the seed's
// observability list). Written on shard goroutines, read anywhere.
var stats struct {
	started, finished       atomic.Int64
	bucketsSerializing      atomic.Int64 // buckets now Serializing or DelayedPending
	bigChunks               atomic.Int64 // pieces of big values emitted
	parked                  atomic.Int64 // writers held back by a pinned key or a full output
	congested               atomic.Int64 // of which for a full output
	deferredDeletions       atomic.Int64 // expiry deletes deferred to a bucket's Covered
	journalWhileSerializing atomic.Int64 // journal entries met while a bucket was busy
	movedSaved              atomic.Int64 // non-PIT buckets written again on OnMoved
	drains                  atomic.Int64 // mutations that had to finish a big value inline
	delayedLoads            atomic.Int64 // values read from disk for a snapshot
	maxStall                atomic.Int64 // longest step or hook serialization, ns
}

// Stats is a copy of the counters.
type Stats struct {
	Started, Finished       int64
	BucketsSerializing      int64
	BigValueChunks          int64
	ParkedMutations         int64
	CongestedMutations      int64
	DeferredDeletions       int64
	JournalWhileSerializing int64
	MovedSaved              int64
	InlineDrains            int64
	DelayedLoads            int64
	MaxStall                time.Duration
}

// ReadStats returns the counters.
func ReadStats() Stats {
	return Stats{
		Started: stats.started.Load(), Finished: stats.finished.Load(),
		BucketsSerializing:      stats.bucketsSerializing.Load(),
		BigValueChunks:          stats.bigChunks.Load(),
		ParkedMutations:         stats.parked.Load(),
		CongestedMutations:      stats.congested.Load(),
		DeferredDeletions:       stats.deferredDeletions.Load(),
		JournalWhileSerializing: stats.journalWhileSerializing.Load(),
		MovedSaved:              stats.movedSaved.Load(),
		InlineDrains:            stats.drains.Load(),
		DelayedLoads:            stats.delayedLoads.Load(),
		MaxStall:                time.Duration(stats.maxStall.Load()),
	}
}

// ResetMaxStall clears the longest stall (CONFIG RESETSTAT).
func ResetMaxStall() { stats.maxStall.Store(0) }

func noteStall(d time.Duration) {
	for {
		cur := stats.maxStall.Load()
		if int64(d) <= cur || stats.maxStall.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}
