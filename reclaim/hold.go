package reclaim

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// HoldCollections keeps the collector from starting a cycle while a
// snapshot runs (a BGSAVE, a full sync's baseline): the first hold raises
// the heap's goal by a quarter of the live heap, the last release puts the
// collector's percent back, and a cycle the heap then owes runs with the
// loops' own Ps.
//
// A cycle that starts while a snapshot runs has a quarter of the Ps
// snapshot.BackgroundThread adds for its marking, more than a quarter of the
// machine, on the loops' CPUs: measured with tests/bench/repl.sh (PIN=1,
// RATE=20000, dfly>dfly), one took 234 ms and the master's SET p99 during
// the sync went to 115 ms (2.6 ms idle). Snapshots used to run a cycle
// before their cut when the heap had used half its room; that moved the
// cycle, it did not save it (it came early, so cycles came more often):
// with a million keys a cycle is 30-40 ms of CPU, and at the start of a
// sync under load (repl.sh PIN=1, a perf record of CPU 0) it took 40-70%
// of the master's core for 90 ms, in which the loop served a third to a
// half of its usual replies with stalls up to 10 ms. With the hold
// instead, dfly>dfly's sync p99 / idle p99 measured 1.67x and 1.60x
// (redis>redis 1.78x and 1.67x) in one PIN=1 run of two rounds.
//
// The owed cycle then runs with the loops' Ps. With one P (a pinned
// server) the collector's fractional worker takes that P in bursts of
// milliseconds: repl.sh PIN=1 with GODEBUG=gctrace=1 showed it 100-230 ms
// long after a full sync, in the first 400 ms of stable sync, with replies
// up to 9-16 ms (any cycle at one P would do the same; the sync only
// decides when it comes). Running it instead with runtime.GC before the
// flow gives its P back, at 2 Ps or at 4 (so that a dedicated worker
// marks), did not help: 12.7-14.7 ms, and at 4 Ps a 4 ms stop and the idle
// workers of the spare Ps competing with the loop for its CPU.
//
// The bound is memory: the goal grows by a quarter of the live heap (at
// least holdMinRoom) and no more, so a snapshot that makes more garbage
// than that still collects; a memory limit (--maxmemory) is untouched and
// still triggers cycles; a collector that is off (GOGC=off, the start-up
// load's pauseGC) is left off. Release restores the percent the first
// hold found, unless something else set another meanwhile, and is
// idempotent.
func HoldCollections() (release func()) {
	gcHold.mu.Lock()
	defer gcHold.mu.Unlock()
	gcHold.n++
	if gcHold.n == 1 {
		gcHold.active = false
		goal, live, gogc, ok := gcState()
		if ok && live > 0 && goal > live && gogc >= 0 {
			room := max(live/4, holdMinRoom)
			if pct := int((goal + room - live) * 100 / live); pct > gogc {
				gcHold.old, gcHold.set, gcHold.active = debug.SetGCPercent(pct), pct, true
			}
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			gcHold.mu.Lock()
			defer gcHold.mu.Unlock()
			gcHold.n--
			if gcHold.n == 0 && gcHold.active {
				gcHold.active = false
				if cur := debug.SetGCPercent(gcHold.old); cur != gcHold.set {
					debug.SetGCPercent(cur) // set by someone else meanwhile: it stays
				}
			}
		})
	}
}

// gcState reads the heap's goal and live bytes and the collector's
// percent (GCPercent, -1 when off) without changing anything; ok is false
// where the runtime does not have these metrics.
func gcState() (goal, live uint64, gogc int, ok bool) {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			return 0, 0, 0, false
		}
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64(), int(int64(s[2].Value.Uint64())), true
}

// holdMinRoom is the least room HoldCollections adds to the heap's goal.
const holdMinRoom = 32 << 20

var gcHold struct {
	mu       sync.Mutex
	n        int  // holds taken and not released
	active   bool // the first hold changed the percent: old to set
	old, set int
}

// The collector's headroom. Go's collector lets the heap grow to the live
// heap × (1 + percent/100) before its next cycle, and the dataset lives in
// that heap: at a fixed percent the room for garbage grows with the data.
// At the GOGC 200 dfly ran with before, a million 1 KiB values (1.04 GB of
// keys and values) peaked at 1.59x the data under a write load
// (TestMemoryUnderLoad; Redis: 1.34x), where a malloc-based server stays
// near its data. With a Headroom set (SetHeadroom), the Reclaimer sets the
// percent after each cycle so that the room is max(MinRoom, live/Div): a
// large dataset runs within a sixteenth of its size (the same run: 1.15x),
// a small one keeps at least 64 MiB to collect in, and no percent goes
// above MaxPercent.
//
// What it costs is cycles: one per room's worth of allocation, each
// marking the live heap. Measured in that run (GODEBUG=gctrace=1): a cycle
// every 2-2.5 s taking 70-250 ms of CPU, 3% of the process's; at 340 MB
// of data (1.3M keys) one every 5 s, 1%.
//
// Invariants: a hold (HoldCollections) wins: no percent is set while one
// is taken, and the hold's release restores what it found (the headroom's
// percent, retuned at the next tick). A collector that is off (GOGC=off,
// the start-up load's pauseGC) is left off. The headroom and the holds
// change the percent under one lock (gcHold.mu).
type Headroom struct {
	MinRoom    uint64
	Div        uint64
	MaxPercent int
}

// DefaultHeadroom is the server's, unless GOGC is set or tiered storage
// runs (cmd/dfly: offloading keeps its own model of the heap).
var DefaultHeadroom = Headroom{MinRoom: 64 << 20, Div: 16, MaxPercent: 200}

// Percent is the collector's percent that gives a live heap of live bytes
// its room.
func (h Headroom) Percent(live uint64) int {
	if live == 0 {
		return h.MaxPercent
	}
	room := max(h.MinRoom, live/max(h.Div, 1))
	return int(min(room*100/live, uint64(h.MaxPercent)))
}

var headroom struct {
	on bool
	h  Headroom
}

// SetHeadroom has the Reclaimer retune the collector's percent after each
// cycle (see Headroom); the zero Headroom turns it off.
func SetHeadroom(h Headroom) {
	gcHold.mu.Lock()
	defer gcHold.mu.Unlock()
	headroom.on, headroom.h = h != Headroom{}, h
}

// retune sets the percent the headroom gives a live heap of live bytes,
// unless it is off, a hold is taken or the collector is off.
func retune(live uint64) {
	gcHold.mu.Lock()
	defer gcHold.mu.Unlock()
	if !headroom.on || gcHold.n > 0 || live == 0 {
		return
	}
	_, _, gogc, ok := gcState()
	if !ok || gogc < 0 {
		return
	}
	if pct := headroom.h.Percent(live); pct != gogc {
		debug.SetGCPercent(pct)
	}
}
