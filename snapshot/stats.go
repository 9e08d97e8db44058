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
	bucketsSerialized       atomic.Int64 // buckets captured (their baseline begun), reported per step
	bigChunks               atomic.Int64 // pieces of big values emitted
	parked                  atomic.Int64 // writers held back by a pinned key or a full output
	congested               atomic.Int64 // of which for a full output
	deferredDeletions       atomic.Int64 // expiry deletes deferred to a bucket's Covered
	journalWhileSerializing atomic.Int64 // journal entries met while a bucket was busy
	movedSaved              atomic.Int64 // non-PIT buckets written again on OnMoved
	captured                atomic.Int64 // buckets written ahead for a multi-key command (Capture)
	drains                  atomic.Int64 // mutations that had to finish a big value inline
	delayedLoads            atomic.Int64 // values read from disk for a snapshot
	deferredCopies          atomic.Int64 // values copied before a change (Defer's copy-on-write)
	maxStall                atomic.Int64 // longest step or hook serialization, thread CPU ns
	maxStallWall            atomic.Int64 // the same in wall time (includes being descheduled)
	maxPending              atomic.Int64 // most output a Slice held beyond its consumer, bytes
}

// Stats is a copy of the counters.
type Stats struct {
	Started, Finished  int64
	BucketsSerializing int64
	// BucketsSerialized counts the buckets captured, by the walk or a
	// hook; a Slice adds its count at each step (Run), not per bucket.
	BucketsSerialized       int64
	BigValueChunks          int64
	ParkedMutations         int64
	CongestedMutations      int64
	DeferredDeletions       int64
	JournalWhileSerializing int64
	MovedSaved              int64
	MultiKeyCaptures        int64
	InlineDrains            int64
	DelayedLoads            int64
	DeferredCopies          int64
	// MaxStall is the longest step or hook serialization in CPU time of
	// the shard's thread: the work the snapshot made the shard do at once.
	// MaxStallWall is the same in wall time, which on a busy machine also
	// counts time the thread was not running at all.
	MaxStall, MaxStallWall time.Duration
	// MaxPending is the most output one Slice held beyond its consumer's
	// channel (bytes, values referenced by deferred records not counted):
	// the memory backpressure (maxPending) bounds.
	MaxPending int64
}

// ReadStats returns the counters.
func ReadStats() Stats {
	return Stats{
		Started: stats.started.Load(), Finished: stats.finished.Load(),
		BucketsSerializing:      stats.bucketsSerializing.Load(),
		BucketsSerialized:       stats.bucketsSerialized.Load(),
		BigValueChunks:          stats.bigChunks.Load(),
		ParkedMutations:         stats.parked.Load(),
		CongestedMutations:      stats.congested.Load(),
		DeferredDeletions:       stats.deferredDeletions.Load(),
		JournalWhileSerializing: stats.journalWhileSerializing.Load(),
		MovedSaved:              stats.movedSaved.Load(),
		MultiKeyCaptures:        stats.captured.Load(),
		InlineDrains:            stats.drains.Load(),
		DelayedLoads:            stats.delayedLoads.Load(),
		DeferredCopies:          stats.deferredCopies.Load(),
		MaxStall:                time.Duration(stats.maxStall.Load()),
		MaxStallWall:            time.Duration(stats.maxStallWall.Load()),
		MaxPending:              stats.maxPending.Load(),
	}
}

// ResetMaxStall clears the longest stall and the most output held
// (CONFIG RESETSTAT).
func ResetMaxStall() {
	stats.maxStall.Store(0)
	stats.maxStallWall.Store(0)
	stats.maxPending.Store(0)
}

// stallTimer measures one stretch of work on the shard's goroutine.
type stallTimer struct {
	wall  time.Time
	cpu   time.Duration
	tid   int
	fixed bool // tid is the thread the goroutine is locked to (lockLoop)
}

// startStall starts timing a stretch. tid is the id of the thread the
// calling goroutine is locked to (a Slice on its loop: Start's lockLoop),
// or -1 when it may change threads; a known thread saves two of the four
// system calls of a stretch (hooks time one on most writes while a
// snapshot runs).
func startStall(tid int) stallTimer {
	if tid >= 0 {
		return stallTimer{wall: time.Now(), cpu: threadClock(), tid: tid, fixed: true}
	}
	cpu, tid := threadCPU()
	return stallTimer{wall: time.Now(), cpu: cpu, tid: tid}
}

// done records the stretch. The CPU time is the thread's: the goroutine's
// own unless it was descheduled meanwhile (a step does not block; a
// preemption after 10 ms could let another goroutine run on the thread).
// A goroutine that moved to another thread (it lost its processor in a
// syscall) reads as its wall time.
//
// A stretch no longer than the longest CPU stall so far cannot raise it
// (its CPU time is at most its wall time), so it skips the thread clock
// at its end: most stretches are a hook's few microseconds, and the thread
// clock is a system call (no vDSO for CPU clocks). During a full sync under a SET
// load that inserts new keys, the two reads per hook were 8% of the
// master's CPU (pprof, repl.sh's load with the replica on another core).
func (t stallTimer) done() {
	wall := time.Since(t.wall)
	if wall <= time.Duration(stats.maxStall.Load()) {
		raise(&stats.maxStallWall, int64(wall))
		return
	}
	var cpu time.Duration
	tid := t.tid
	if t.fixed {
		cpu = threadClock()
	} else {
		cpu, tid = threadCPU()
	}
	cpu -= t.cpu
	if tid != t.tid || t.tid < 0 || cpu < 0 || cpu > wall {
		cpu = wall
	}
	raise(&stats.maxStall, int64(cpu))
	raise(&stats.maxStallWall, int64(wall))
}

func raise(v *atomic.Int64, d int64) {
	for {
		cur := v.Load()
		if d <= cur || v.CompareAndSwap(cur, d) {
			return
		}
	}
}
