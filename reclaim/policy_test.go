package reclaim

import (
	"testing"
	"time"
)

const mb = 1 << 20

// run drives a Policy through a script of ticks, one a second; each tick
// says what the runtime shows and what the Policy must answer. A release
// it asks for is recorded as taking cost, and the figures of the next
// tick are the script's.
type tick struct {
	allocs, gcs, live, goal, objects, free uint64 // allocs: MB allocated during the tick
	flushed, gcOff                         bool
	want                                   Reason
	returned                               uint64 // MB the release asked for gives back
}

func run(t *testing.T, cost time.Duration, ticks []tick) {
	t.Helper()
	var p Policy
	at := time.Unix(1000, 0)
	var allocs uint64
	for i, k := range ticks {
		at = at.Add(time.Second)
		allocs += k.allocs * mb
		s := Sample{At: at, Allocs: allocs, GCs: k.gcs, Live: k.live * mb, Goal: k.goal * mb,
			Objects: k.objects * mb, Free: k.free * mb, GCOff: k.gcOff, Flushed: k.flushed}
		got := p.Step(s)
		if got != k.want {
			t.Fatalf("tick %d (%+v): %s, want %s", i, k, got, k.want)
		}
		if got != None {
			p.Released(at, cost, k.returned*mb)
		}
	}
}

// repeat is n copies of k.
func repeat(n int, k tick) []tick {
	out := make([]tick, n)
	for i := range out {
		out[i] = k
	}
	return out
}

func concat(parts ...[]tick) []tick {
	var out []tick
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// An idle server with a small heap is left alone.
func TestIdleSmallHeap(t *testing.T) {
	run(t, time.Millisecond, repeat(120, tick{gcs: 3, live: 2, goal: 8, objects: 3, free: 20}))
}

// A load, then FLUSHALL: no GC has run since, so the heap's objects still
// look live; once the process has been quiet for 2 s, one release.
func TestFlushThenQuiet(t *testing.T) {
	run(t, 100*time.Millisecond, concat(
		repeat(10, tick{allocs: 50, gcs: 4, live: 300, goal: 900, objects: 420, free: 10}),
		[]tick{{allocs: 0, gcs: 4, live: 300, goal: 900, objects: 420, free: 10, flushed: true}},
		[]tick{{gcs: 4, live: 300, goal: 900, objects: 420, free: 10, want: Quiet, returned: 428}},
		// The release's GC: figures fresh and small; nothing more.
		repeat(60, tick{gcs: 5, live: 1, goal: 8, objects: 2, free: 1}),
	))
}

// Without a flush, a quiet server whose last GC saw its data live is not
// touched while that data may still be live...
func TestQuietWithLiveData(t *testing.T) {
	var ticks []tick
	for i := 0; i < 5; i++ { // each second's 50 MB collected by a GC
		ticks = append(ticks, tick{allocs: 50, gcs: uint64(i), live: 300, goal: 900, objects: 330, free: 5})
	}
	run(t, time.Millisecond, append(ticks, repeat(120, tick{gcs: 4, live: 300, goal: 900, objects: 330, free: 5})...))
}

// ... but when it allocated 64 MB or more since that GC, after 30 s of
// quiet the garbage no GC has seen is collected: once.
func TestStaleAfterLongQuiet(t *testing.T) {
	run(t, time.Millisecond, concat(
		[]tick{{allocs: 10, gcs: 4, live: 300, goal: 900, objects: 300, free: 5}},
		repeat(8, tick{allocs: 30, gcs: 5, live: 300, goal: 900, objects: 540, free: 5}), // a client's buffers
		repeat(29, tick{gcs: 5, live: 300, goal: 900, objects: 540, free: 5}),            // quiet since the last busy tick
		[]tick{{gcs: 5, live: 300, goal: 900, objects: 540, free: 5, want: Stale, returned: 245}},
		repeat(120, tick{gcs: 6, live: 300, goal: 900, objects: 300, free: 0}),
	))
}

// Free pages beyond the live heap on a quiet server (the runtime kept
// them after its own GC): released once quiet, and not again while the
// heap stays as it is.
func TestQuietFreePages(t *testing.T) {
	run(t, time.Millisecond, concat(
		repeat(3, tick{allocs: 100, gcs: 9, live: 100, goal: 300, objects: 250, free: 40}),
		[]tick{{gcs: 10, live: 100, goal: 300, objects: 100, free: 200}},
		[]tick{{gcs: 10, live: 100, goal: 300, objects: 100, free: 200, want: Quiet, returned: 200}},
		repeat(60, tick{gcs: 11, live: 100, goal: 300, objects: 100, free: 0}),
	))
}

// A busy server in its steady state (the heap within the GC's goal) is
// never touched, however much it allocates.
func TestBusySteady(t *testing.T) {
	var ticks []tick
	for i := 0; i < 300; i++ {
		ticks = append(ticks, tick{allocs: 200, gcs: uint64(i / 2), live: 500, goal: 1500, objects: 500 + uint64(i%2)*900, free: 1000 - uint64(i%2)*900})
	}
	run(t, 50*time.Millisecond, ticks)
}

// A busy server after a burst: the goal fell with the live heap, the
// pages stayed. Released, then not again for 30 s.
func TestBusyAfterBurst(t *testing.T) {
	run(t, 50*time.Millisecond, concat(
		[]tick{{allocs: 200, gcs: 20, live: 50, goal: 150, objects: 100, free: 2000, want: Excess, returned: 2000}},
		repeat(29, tick{allocs: 200, gcs: 21, live: 50, goal: 150, objects: 100, free: 2000}),
		[]tick{{allocs: 200, gcs: 22, live: 50, goal: 150, objects: 100, free: 2000, want: Excess}},
	))
}

// An excess release that took long delays the next by 100 times as much.
func TestCostDelays(t *testing.T) {
	run(t, time.Second, concat(
		[]tick{{allocs: 200, gcs: 20, live: 50, goal: 150, objects: 100, free: 2000, want: Excess}},
		repeat(99, tick{allocs: 200, gcs: 21, live: 50, goal: 150, objects: 100, free: 2000}),
		[]tick{{allocs: 200, gcs: 22, live: 50, goal: 150, objects: 100, free: 2000, want: Excess}},
	))
}

// With the collector off nothing is done.
func TestGCOff(t *testing.T) {
	run(t, time.Millisecond, concat(
		[]tick{{allocs: 0, gcs: 2, live: 1, goal: 8, objects: 900, free: 900, gcOff: true, flushed: true}},
		repeat(60, tick{gcs: 2, live: 1, goal: 8, objects: 900, free: 900, gcOff: true}),
	))
}

// A quiet release that gave back little (the growth since the last GC
// was live data, not garbage) delays the next by 100 times its cost; one
// that gave back much does not.
func TestWastedReleaseBacksOff(t *testing.T) {
	grown := tick{gcs: 4, live: 100, goal: 300, objects: 300, free: 5}
	wasted := grown
	wasted.want, wasted.returned = Quiet, 10
	useful := grown
	useful.want, useful.returned = Quiet, 200
	// After each release the heap grows again (objects 300 against a live
	// heap of 100 that the script keeps stale).
	run(t, 500*time.Millisecond, concat(
		repeat(2, tick{allocs: 100, gcs: 4, live: 100, goal: 300, objects: 300, free: 5}),
		[]tick{grown, wasted},
		repeat(49, grown),
		[]tick{useful},
		repeat(9, grown),
		[]tick{useful},
	))
}
