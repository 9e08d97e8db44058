package offload

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// When to offload: a ticker samples the heap every 10 ms and gives each
// shard a budget of bytes to offload (doc.go).

// Start runs the offload ticker once the shards run on their goroutines;
// when done is closed it stops, and closes and removes the files.
func (ts *Tiering) Start(done <-chan struct{}) {
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		// The live heap at the last GC, less what offloading released since:
		// heap objects would count garbage and offload far too much.
		samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"},
			{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"}}
		var lastGC uint64
		var lastFree time.Time
		for {
			select {
			case <-done:
				ts.Close()
				return
			case <-tick.C:
			}
			budget := int64(1) << 62 // maxmemory 0: offload every eligible value
			if max := ts.cfg.MaxMemory(); max > 0 {
				metrics.Read(samples)
				if gc := samples[1].Value.Uint64(); gc != lastGC {
					lastGC = gc
					ts.offloadedSinceGC.Store(0)
				}
				since := ts.offloadedSinceGC.Load()
				over := overBy(max, ts.cfg.OffloadThreshold, int64(samples[0].Value.Uint64())-since,
					int64(samples[3].Value.Uint64()+samples[4].Value.Uint64())-since)
				budget = 0
				if over > 0 {
					budget = over/int64(len(ts.shards)) + 1
				}
				// Offloading is for resident memory: when an eighth of
				// maxmemory is free heap not yet returned to the OS, return
				// it (a GC of the small live heap, on this goroutine), at
				// most every 5 s; the runtime's own scavenger is paced to
				// 1% of a CPU and lags behind offloading.
				if free := int64(samples[2].Value.Uint64()); free > max/8 && time.Since(lastFree) > 5*time.Second {
					lastFree = time.Now()
					debug.FreeOSMemory()
				}
			}
			for _, t := range ts.shards {
				t.budget.Store(budget)
				if (budget > 0 || t.hasLater.Load()) && !t.queued.Swap(true) {
					t.sh.Send(t)
				}
			}
		}
	}()
}

// overBy is how many bytes the heap is over its targets: the live heap
// (less what offloading released since the last GC) over (1 - threshold)
// × max, or the heap's spans in use over max, whichever is more.
func overBy(max int64, threshold float64, live, inuse int64) int64 {
	over := live - int64(float64(max)*(1-threshold))
	// The heap's spans in use (objects and the holes between them) stay
	// under maxmemory too: values offloaded at random leave most spans
	// partly used, so the live heap alone lets resident memory exceed
	// maxmemory; offloading more frees whole spans.
	if inuse-max > over {
		over = inuse - max
	}
	return over
}
