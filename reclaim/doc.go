// Package reclaim gives the Go heap's free memory back to the operating
// system once a burst of allocation is over, so that a server left idle
// after a load (a FLUSHALL, a client gone with its buffers) falls back to
// the memory its data needs, as Redis's allocator does, without an
// operator's MEMORY PURGE.
//
// Why the runtime alone does not: an idle process runs no GC, so garbage
// a flush made is not known to be free until the GC the runtime forces
// every two minutes; and even after a GC the runtime's scavenger returned
// nothing here (Go 1.26: 420 MB freed, a GC, RSS still 440 MB minutes
// later; its goal is computed at the end of the GC from the heap in use
// then, before sweeping frees the spans). debug.FreeOSMemory does both: a
// GC, then every free page released.
//
// That costs a GC, whose work grows with the live heap, and holds the
// heap's lock while the pages go back (about 150 ms per GB here), so the
// Policy asks for it rarely:
//   - quiet: the process has allocated under 1 MiB a second for 2 s, and
//     what a GC and a release would return (free pages, and the objects
//     beyond the live heap of the last GC) exceeds max(64 MiB, live heap).
//     Once done, the condition needs as many bytes allocated again as the
//     live heap before it holds: the GCs it adds cost no more per
//     allocated byte than GOGC=100's own.
//   - stale: quiet for 30 s with no GC since the last 64 MiB allocated:
//     what was allocated may be garbage no GC has seen (a client's
//     buffers); once per such quiet spell.
//   - excess, whether quiet or not: the heap holds more than the GC's goal
//     by max(64 MiB, live heap), which is what a burst leaves once the goal
//     has fallen with the live heap; at most every 30 s.
//
// A quiet release runs two GCs, so that sync.Pool's caches (kept through
// one cycle) go too. A release comes at most every 10 s; after one that
// took d and gave back less than 64 MiB (what the last GC's figures took
// for garbage was live data grown since), not before 100·d has passed,
// nor after an excess release: such releases take at most 1% of the
// time. With the collector off (GOGC=off, or paused while the dataset
// loads) nothing is done.
// Flushed says the dataset was dropped: the last GC's live heap is then
// taken as 0 until the next GC.
//
// The Policy is a state machine without I/O, fed one Sample of the
// runtime's figures a tick (see policy_test.go); the Reclaimer samples
// runtime/metrics, runs it on its own goroutine and releases.
//
// The package also keeps the collector's percent (hold.go): the room a
// Headroom gives the heap for garbage, retuned at each tick from the live
// heap, so that the dataset's size does not multiply it; and the holds a
// snapshot takes so that no cycle starts while it runs
// (HoldCollections). Both set the percent under one lock, and a hold wins.
// And the heap's cap (limit.go: LimitHeap, GOMEMLIMIT from maxmemory, at
// start and at each CONFIG SET of it).
package reclaim
