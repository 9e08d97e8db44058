package snapshot

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// BackgroundNice is how many nice steps below the loops' priority the
// threads that encode and write a BGSAVE's output run (BackgroundThread);
// env DFLY_BG_NICE overrides it and SectionNice, for measurements. It was
// 5 while the event loops' goroutines could change threads. Since they
// keep theirs during a snapshot (Start), nice 0 measured better on every
// figure of tests/bench/bgsave.sh, one run each, overwrite / growing
// load, .rdb: save 3.27 s / 4.59 s against 4.32 s / 6.31 s at nice 5,
// write p99 1.38x / 1.41x idle against 1.63x / 1.74x, peak 1.07x / 1.14x
// against 1.09x / 1.22x (a shorter save lets the growing load grow the
// data less).
var BackgroundNice = 0

// SectionNice is how many nice steps below the loops' priority a
// BackgroundSection runs: a replication flow sending its baseline, which
// also gives the CPU back every SectionYield of its work (Pacer). Where
// the flow has a CPU to itself the value changes nothing; where it shares
// one with the event loops it sets how the two split it, which trades the
// sync's length against the loops' latency. Measured with
// tests/bench/repl.sh PIN=1 (master and load on one CPU), dfly>dfly next
// to redis>redis, the ratios of each round (master SET p99 during the
// sync / idle; time to link up / Redis's):
//
//	nice 0  p99 2.77 2.17 2.17 2.80 2.36 (median 2.36x); link up 0.43 0.54 (0.48x)
//	nice 1  p99 2.00 1.60 2.40 1.80 2.40 1.50 1.44 (1.80x); link up 0.72 0.79 0.67 0.67 0.89 0.76 0.71 (0.72x)
//	nice 2  p99 1.69 2.25 1.67 2.20 1.60 2.00 2.20 (2.00x); link up 0.96 0.94 0.91 1.01 0.92 0.88 1.02 (0.94x)
//	redis   p99 2.22 2.29 2.33 3.50 2.31 1.80 2.14 2.50 2.18 2.55 2.60 2.73 2.15 3.70 2.50 2.46 (2.40x)
//
// (These rounds predate maxPending's growth to 32 MiB: most syncs then
// also parked every writer once for 50-70 ms, see slice.go.) nice 1 meets
// both of issue 8's targets in the median (p99 within 2x of
// idle, a full sync no slower than Redis's), though single rounds still
// pass 2x; nice 2 brings the sync to Redis's length for no better p99
// here; nice 0 has the fastest sync and the worst p99. Before the pacer,
// nice 5 measured better than nice 0 (link up in 4.20 s / 3.19 s and
// master write p99 4.2 / 3.5 ms, against 4.57 s / 4.13 s and 4.5 / 3.9
// ms). (Flows compress: with no compression at all, a dfly>dfly full sync
// of repl.sh's data under its load measured the replica's CPU 2.5-2.7 s
// against 2.0-2.1 s with LZF, and link up 3.9-4.2 s against 3.3-3.8 s.
// They now send fragments compressed whole with S2 instead of LZF value
// by value: see master/flows.go's serve.)
var SectionNice = 1

// SectionYield is how much CPU time a BackgroundSection's thread uses
// before it yields the CPU (Pacer.Step); env DFLY_BG_YIELD_US overrides
// it (0: never). On a CPU shared with an event loop the scheduler lets a
// runnable thread run for its whole slice, up to a timer tick (4 ms at
// HZ=250): every turn of the flow's thread held the loop's clients that
// long. Yielding after 100 us of work bounds those turns; at nice 0 the
// flow still gets its share of the CPU, so the sync stays faster than
// Redis's. Measured with tests/bench/repl.sh PIN=1 (master and load on one
// CPU), one run per line, link up / SET p99 during the sync / idle:
//
//	dfly>dfly, nice 5, no yields (before)  2.48 s 4.00x, 2.38 s 3.64x, 3.94 s 4.31x
//	dfly>dfly, nice 0, no yields           2.03 s 3.70x
//	dfly>dfly, nice 0, yield every 200 us  1.93 s 2.55x, 1.87 s 2.73x
//	dfly>dfly, nice 0, yield every 100 us  3.53 s 2.40x, 3.03 s 2.33x, 3.47 s 2.36x, 3.66 s 2.00x
//	dfly>dfly, nice 0, yield every 50 us   3.14 s 2.77x, 3.56 s 2.14x
//	redis>redis                            4.43-5.29 s, 1.78-2.00x
//
// (dfly's idle p99 is the lower one: during the sync both masters' p99
// was 3.3-4.6 ms.)
var SectionYield = 100 * time.Microsecond

// Pacer yields its thread's CPU every SectionYield of the thread's CPU
// time (a BackgroundSection's, or Complete's encoding thread). The zero
// value is ready.
//
// The thread's CPU clock is a system call (no vDSO for CPU clocks), and a
// flow steps once per chunk: reading it at every step was 1.65% of a
// master's CPU during a full sync (perf, tests/bench/repl.sh PIN=1). A
// thread uses no more CPU than wall time passes, so a step reads it only
// once the wall clock (vDSO) says the share may be used up: at most one
// read per SectionYield of wall time, more only when the thread waited.
type Pacer struct {
	started bool
	every   time.Duration // SectionYield, read at the first Step
	next    time.Duration // the thread's CPU time at which to yield
	wallAt  time.Time     // the wall time before which the share cannot be used up
	yields  int
	reads   int // of the thread's CPU clock
}

// Step yields the CPU if the thread has worked SectionYield since the last
// yield. Where thread CPU time cannot be read it does nothing.
func (p *Pacer) Step() {
	if !p.started {
		p.started, p.every = true, sectionYield()
		wall := time.Now() // before the CPU clock, as below
		if now := p.clock(); now >= 0 {
			p.next = now + p.every
			p.wallAt = wall.Add(p.every)
		}
	}
	if p.every <= 0 {
		return
	}
	wall := time.Now()
	if wall.Before(p.wallAt) {
		return
	}
	now := p.clock()
	if now < 0 {
		return
	}
	if now >= p.next {
		yieldThread()
		p.yields++
		wall = time.Now()
		now = p.clock()
		p.next = now + p.every
	}
	// Invariant: the thread's CPU time cannot reach next before wallAt
	// (it grows no faster than the wall clock, and wall was read before
	// now).
	p.wallAt = wall.Add(p.next - now)
}

func (p *Pacer) clock() time.Duration {
	p.reads++
	return threadClock()
}

func sectionYield() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("DFLY_BG_YIELD_US")); err == nil {
		return time.Duration(v) * time.Microsecond
	}
	return SectionYield
}

// Background threads. A snapshot's consumers (Complete's encoding, the
// file writers) compete with the event loops for the CPU, and with the
// loops alone only the loops' latency matters: a consumer that waits
// costs a slower save, a loop that waits costs every client on it.
//
// A consumer gets its own OS thread (which can be given a lower priority,
// BackgroundNice) and a processor (P) of its own: the Go scheduler knows nothing of
//
//	thread priorities, and a consumer holding one of the loops' Ps
//	while its thread waits for the CPU would make a loop wait for the
//	P. So each background thread adds a P while it lives
//	(GOMAXPROCS = loops + background threads), and the Ps go back when
//	the save ends; spare Ps all the time would cost the loops 20-30% of
//	their throughput in spinning threads (measured, SET/GET -c 50).
//	Replication flows need them too: without their Ps, a dfly>dfly full
//	sync (tests/bench/repl.sh, alternating) linked up sooner, 2.1-2.5 s
//	against 2.4-3.1 s, with less master CPU, but the master's SET p99
//	during the sync was 20-29 ms against 6.1-7.7 ms.
//
// Changing GOMAXPROCS stops the world, which is a stall on every loop: Ps
// are added as threads start, but given back only when the last one ends
// (once per save, not once per thread).
var background struct {
	mu    sync.Mutex
	n     int
	procs int // GOMAXPROCS without background threads
	added int // Ps added since n was last 0
}

// BackgroundSection is BackgroundThread for a stretch of a goroutine that
// goes on afterwards (a replication flow: its baseline is background
// work, its stable sync is not): end restores the thread's priority and
// lets the goroutine go, or, when the priority cannot be raised back
// (no CAP_SYS_NICE), keeps it on the lowered thread.
func BackgroundSection() (end func()) {
	done, base, lowered := backgroundThread(SectionNice)
	return func() {
		done()
		if !lowered || setThreadNice(base) {
			runtime.UnlockOSThread()
		}
	}
}

// BackgroundThread moves the calling goroutine, which must be one started
// for the purpose, to an OS thread of its own at nice BackgroundNice,
// with a P of its own. Call the returned func when the goroutine is done.
func BackgroundThread() (done func()) {
	done, _, _ = backgroundThread(BackgroundNice)
	return done
}

// backgroundThread locks the goroutine to its thread and lowers the
// thread's priority by nice (DFLY_BG_NICE overrides it): the values are
// increments over the thread's own, so that a server started at nice 10
// runs its background threads at 10 + nice, never above its loops. base
// is the thread's nice before; lowered reports whether it changed.
func backgroundThread(nice int) (done func(), base int, lowered bool) {
	runtime.LockOSThread()
	if v, err := strconv.Atoi(os.Getenv("DFLY_BG_NICE")); err == nil {
		nice = v
	}
	if b, ok := threadNice(); ok && nice > 0 {
		base, lowered = b, setThreadNice(min(b+nice, 19))
	}
	background.mu.Lock()
	if background.n == 0 && background.added == 0 {
		background.procs = runtime.GOMAXPROCS(0)
	}
	background.n++
	if background.n > background.added {
		background.added = background.n
		runtime.GOMAXPROCS(background.procs + background.added)
	}
	background.mu.Unlock()
	return func() {
		background.mu.Lock()
		background.n--
		if background.n == 0 {
			background.added = 0
			runtime.GOMAXPROCS(background.procs)
		}
		background.mu.Unlock()
		// The thread ends with the goroutine (still locked), so its
		// priority goes with it.
	}, base, lowered
}

// Loops keep their OS thread while a snapshot runs on one of their shards:
// lockLoop in Start, unlockLoop in finish, both on the shard's goroutine.
// Unlocked, a loop the Go scheduler preempted (or whose P it took during a
// system call) resumed on whichever thread next had a P: during a BGSAVE
// under tests/bench/bgsave.sh's SET load, hooks whose own work was tens of
// microseconds held the loop's clients 4.5-12.5 ms that way; locked,
// 0.26-0.38 ms, with no thread change. Loops are not locked for good: a
// replica applying a full sync (its loops woken by the flows' goroutines
// all the time) took 1.6x longer to link up with locked loops.
//
// Invariant: a goroutine's OS lock count is 1 while any Slice runs on it
// and 0 otherwise, never more. The Slice's big-value coroutines
// (iter.Pull) require it: the runtime aborts a coroutine switch whose
// goroutine's lock count differs from the one at its creation, so two
// Slices on one loop (two shards, or a BGSAVE and a flow) must not nest
// LockOSThread calls. The count of Slices is kept per locked thread: a
// thread locked to a goroutine runs only that goroutine, so the thread id
// names the goroutine.
var loopLocks struct {
	mu sync.Mutex
	n  map[int]int // thread id -> Slices running on its goroutine
}

// lockLoop returns the id of the thread the goroutine is now locked to,
// or -1 when loops stay unlocked (no thread ids on this system).
func lockLoop() int {
	tid := threadID()
	if tid < 0 {
		return -1
	}
	loopLocks.mu.Lock()
	defer loopLocks.mu.Unlock()
	if loopLocks.n == nil {
		loopLocks.n = map[int]int{}
	}
	if loopLocks.n[tid] > 0 {
		loopLocks.n[tid]++ // this goroutine holds the thread already
		return tid
	}
	runtime.LockOSThread()
	tid = threadID() // the thread is now the goroutine's for good
	loopLocks.n[tid] = 1
	return tid
}

func unlockLoop() {
	tid := threadID()
	if tid < 0 {
		return
	}
	loopLocks.mu.Lock()
	defer loopLocks.mu.Unlock()
	switch loopLocks.n[tid] {
	case 0: // Start ran on another goroutine (tests drive Slices by hand)
	case 1:
		delete(loopLocks.n, tid)
		runtime.UnlockOSThread()
	default:
		loopLocks.n[tid]--
	}
}
