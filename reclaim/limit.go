package reclaim

import (
	"math"
	"os"
	"runtime/debug"
)

// userLimit: GOMEMLIMIT was set in the environment; it stays as given.
var userLimit = os.Getenv("GOMEMLIMIT") != ""

// LimitHeap caps the Go heap at maxmemory plus a quarter, 64 MiB at least
// (the collector runs harder as the heap nears it, so garbage does not
// push the process far over maxmemory; with less room than the
// headroom's, a small maxmemory had it collect back to back: an eviction
// benchmark at 14 MB served a fifth of its requests), or twice maxmemory
// with tiered storage, which keeps
// the live heap near half of it but whose offloading at random leaves its
// size classes' spans partly empty (at 1.25x the collector ran nearly
// back to back: GET 0.4x vs 0.8x at 2x). maxmemory 0 lifts the cap. At
// start and at every CONFIG SET of maxmemory, unless GOMEMLIMIT was set.
func LimitHeap(maxmemory int64, tiered bool) {
	if userLimit {
		return
	}
	limit := int64(math.MaxInt64)
	switch {
	case maxmemory > 0 && tiered:
		limit = 2 * min(maxmemory, math.MaxInt64/2)
	case maxmemory > 0:
		room := max(min(maxmemory, math.MaxInt64-maxmemory)/4, int64(DefaultHeadroom.MinRoom))
		limit = maxmemory + min(room, math.MaxInt64-maxmemory)
	}
	debug.SetMemoryLimit(limit)
}

// HeapLimit is the Go heap's cap now (math.MaxInt64: none), INFO's
// gc_memory_limit.
func HeapLimit() int64 { return debug.SetMemoryLimit(-1) }
