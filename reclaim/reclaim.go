package reclaim

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Tick is how often the Reclaimer samples the runtime.
const Tick = time.Second

// Reclaimer runs a Policy on its own goroutine (Run) and releases memory
// when it says so. Its other methods may be called from any goroutine.
type Reclaimer struct {
	flushed  atomic.Bool
	releases atomic.Uint64
	// OnRelease, when set before Run, hears of each release: why, how
	// long it took and the heap bytes it returned.
	OnRelease func(why Reason, took time.Duration, bytes int64)
}

// Flushed tells the Reclaimer that the dataset was dropped (FLUSHALL,
// FLUSHDB): what the last GC found live is garbage now.
func (r *Reclaimer) Flushed() { r.flushed.Store(true) }

// Releases is the number of releases so far.
func (r *Reclaimer) Releases() uint64 { return r.releases.Load() }

var names = []string{
	"/gc/heap/allocs:bytes",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/gogc:percent",
}

// Run samples the runtime every Tick until done is closed.
func (r *Reclaimer) Run(done <-chan struct{}) {
	samples := make([]metrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	read := func(now time.Time, takeFlush bool) Sample {
		metrics.Read(samples)
		u := func(i int) uint64 {
			if samples[i].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return samples[i].Value.Uint64()
		}
		return Sample{At: now, Allocs: u(0), GCs: u(1), Live: u(2), Goal: u(3), Objects: u(4), Free: u(5),
			GCOff: int64(u(6)) < 0, Flushed: takeFlush && r.flushed.Swap(false)}
	}
	var p Policy
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			s := read(now, true)
			retune(s.Live) // the collector's headroom (hold.go)
			why := p.Step(s)
			if why == None {
				continue
			}
			start := time.Now()
			if why != Excess {
				// Quiet: a first cycle moves sync.Pool's caches to their
				// victim caches, the second frees them (the connections'
				// I/O buffers of the burst).
				runtime.GC()
			}
			debug.FreeOSMemory()
			end := time.Now()
			after := read(end, false)
			returned := int64(s.Objects+s.Free) - int64(after.Objects+after.Free)
			p.Released(end, end.Sub(start), uint64(max(returned, 0)))
			r.releases.Add(1)
			if r.OnRelease != nil {
				r.OnRelease(why, end.Sub(start), returned)
			}
		}
	}
}
