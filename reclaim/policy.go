package reclaim

import "time"

// Thresholds of the Policy (see the package comment).
const (
	Floor      = 64 << 20 // bytes worth a release, at the least
	QuietRate  = 1 << 20  // bytes allocated per second below which the process is quiet
	QuietAfter = 2 * time.Second
	StaleAfter = 30 * time.Second
	MinGap     = 10 * time.Second // between two releases
	ExcessGap  = 30 * time.Second // after a release, before one for excess
	CostFactor = 100              // a release that took d waits CostFactor·d before the next
)

// Sample is the runtime's figures at one tick (runtime/metrics names).
type Sample struct {
	At      time.Time
	Allocs  uint64 // /gc/heap/allocs:bytes, cumulative
	GCs     uint64 // /gc/cycles/total:gc-cycles
	Live    uint64 // /gc/heap/live:bytes, as the last GC found it
	Goal    uint64 // /gc/heap/goal:bytes
	Objects uint64 // /memory/classes/heap/objects:bytes: live and garbage not yet swept
	Free    uint64 // /memory/classes/heap/free:bytes: free pages not yet returned
	GCOff   bool   // /gc/gogc:percent < 0
	Flushed bool   // the dataset was dropped since the previous sample
}

// Reason says why the Policy asks for a release.
type Reason uint8

const (
	None   Reason = iota
	Quiet         // quiet, and much to return
	Stale         // quiet for long after allocating, with no GC since
	Excess        // the heap holds much more than the GC's goal
)

func (r Reason) String() string {
	return [...]string{"none", "quiet", "stale", "excess"}[r]
}

// Policy decides when to release. Step is fed a Sample each tick; after
// a release, Released is told what it took.
type Policy struct {
	started    bool
	prev       Sample
	quietSince time.Time // zero: not quiet
	// gcAllocs: Allocs when the GC count last changed (or a release ran);
	// gcs: that count.
	gcAllocs, gcs uint64
	// flushedGCs: the GC count when the dataset was dropped; the last
	// GC's live heap is stale while it holds (flushed).
	flushed    bool
	flushedGCs uint64
	last       time.Time     // the last release
	lastCost   time.Duration // what it took
	lastWasted bool          // it gave back less than Floor: the live heap had grown, not garbage
}

// Step takes a tick's sample and says whether to release now, and why.
func (p *Policy) Step(s Sample) Reason {
	if !p.started {
		p.started, p.prev, p.gcAllocs, p.gcs = true, s, s.Allocs, s.GCs
	}
	rate := uint64(0)
	if dt := s.At.Sub(p.prev.At); dt > 0 && s.Allocs > p.prev.Allocs {
		rate = uint64(float64(s.Allocs-p.prev.Allocs) / dt.Seconds())
	}
	switch {
	case rate >= QuietRate:
		p.quietSince = time.Time{}
	case p.quietSince.IsZero():
		p.quietSince = p.prev.At
	}
	if s.GCs != p.gcs {
		p.gcs, p.gcAllocs = s.GCs, s.Allocs
	}
	if s.Flushed {
		p.flushed, p.flushedGCs = true, s.GCs
	} else if p.flushed && s.GCs != p.flushedGCs {
		p.flushed = false // a GC since: its live heap is the truth
	}
	p.prev = s
	if s.GCOff {
		return None
	}
	live := s.Live
	if p.flushed {
		live = 0
	}
	floor := max(uint64(Floor), live)
	since := s.At.Sub(p.last)
	costly := CostFactor * p.lastCost
	if !p.last.IsZero() && (since < MinGap || p.lastWasted && since < costly) {
		return None
	}
	quiet := !p.quietSince.IsZero() && s.At.Sub(p.quietSince) >= QuietAfter
	returnable := s.Free + s.Objects - min(live, s.Objects)
	switch {
	case quiet && returnable > floor:
		return Quiet
	case quiet && s.At.Sub(p.quietSince) >= StaleAfter && s.Allocs-p.gcAllocs >= Floor &&
		s.Objects+s.Free > Floor:
		return Stale
	case s.Objects+s.Free > s.Goal+floor && (p.last.IsZero() || since >= max(ExcessGap, costly)):
		return Excess
	}
	return None
}

// Released records a release that ended at now, took cost and gave back
// returned bytes. It ran a GC, so the next sample's figures are fresh.
func (p *Policy) Released(now time.Time, cost time.Duration, returned uint64) {
	p.last, p.lastCost, p.lastWasted = now, cost, returned < Floor
	p.gcAllocs, p.flushed = p.prev.Allocs, false
}
