// Command replload measures a master's SET latency before, during and after
// a replica's full sync. It drives redis-benchmark's SET load (-c clients,
// one request in flight each, keys key:NNNNNNNNNNNN drawn from -r, values of
// -d bytes) against -master and runs three phases:
//
//	idle    -idle of load with no replica;
//	sync    REPLICAOF sent to -replica, until its INFO says master_link_status:up;
//	stable  -stable more of load while the replica follows.
//
// A request counts in the phase it started in. It prints one line:
//
//	up_s idle_rps idle_p99 sync_rps sync_p99 stable_rps stable_p99 [cpu ...] [us ...]
//
// (seconds, requests/s, milliseconds), and with -pids the CPU seconds each
// of those processes (with its reaped children: Redis's fork) used during
// the sync phase, then for each process its CPU microseconds per request
// of the idle, sync and stable phases. CPU per request is the steadier
// figure on a shared machine: a neighbour moves latency and throughput far
// more than it moves what a request costs. repl.sh runs it for each pair.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	phaseIdle = iota
	phaseSync
	phaseStable
	phaseDone
	phases = phaseDone
)

// hist counts latencies in buckets of 1/8 of a power of two of
// microseconds (under 12.5% error), up to about 68 s.
type hist [36 * 8]uint64

func bucket(us uint64) int {
	if us < 8 {
		return int(us)
	}
	e := bits.Len64(us) - 4 // us>>e is in 8..15
	return min(e*8+int(us>>e), len(hist{})-1)
}

// upper is the largest latency (µs) bucket b holds.
func upper(b int) uint64 {
	if b < 8 {
		return uint64(b)
	}
	e, m := b/8-1, uint64(b%8+8) // bucket's inverse: b = (e+1)*8 + m-8
	return (m+1)<<e - 1
}

func (h *hist) add(o *hist) {
	for i := range h {
		h[i] += o[i]
	}
}

func (h *hist) count() (n uint64) {
	for _, c := range h {
		n += c
	}
	return n
}

// quantile is the upper bound (ms) of the bucket holding the q-quantile.
func (h *hist) quantile(q float64) float64 {
	n := h.count()
	if n == 0 {
		return 0
	}
	want := uint64(q*float64(n)) + 1
	var seen uint64
	for i, c := range h {
		if seen += c; seen >= want {
			return float64(upper(i)) / 1000
		}
	}
	return float64(upper(len(h)-1)) / 1000
}

func main() {
	master := flag.String("master", "127.0.0.1:6379", "master address (host:port)")
	replica := flag.String("replica", "", "replica address; REPLICAOF goes there")
	clients := flag.Int("c", 50, "clients, one request in flight each")
	rate := flag.Float64("rate", 0, "SETs per second, due at fixed times (open loop); 0: each client sends again as soon as it has its reply (closed loop)")
	keys := flag.Int("r", 1000000, "key space")
	size := flag.Int("d", 100, "value size")
	idle := flag.Duration("idle", 3*time.Second, "load before REPLICAOF")
	stable := flag.Duration("stable", 3*time.Second, "load after the link is up")
	timeout := flag.Duration("timeout", 120*time.Second, "longest wait for the link")
	pidList := flag.String("pids", "", "comma-separated process ids whose CPU time during the sync to print")
	timelinePath := flag.String("timeline", "", "write replies and the longest latency per 10 ms window to this file")
	syncCmd := flag.String("sync-cmd", "", "a shell command to run during the sync: started with REPLICAOF, sent SIGINT when the link is up (a profiler: perf record -p PID ...)")
	flag.Parse()
	var pids []string
	if *pidList != "" {
		pids = strings.Split(*pidList, ",")
	}
	if *replica == "" {
		fail(errors.New("-replica is required"))
	}
	host, port, err := net.SplitHostPort(*master)
	if err != nil {
		fail(err)
	}

	var phase atomic.Int32
	hists := make([][phases]hist, *clients)
	value := bytes.Repeat([]byte{'x'}, *size)
	errs := make(chan error, 1)
	timeline.on, timeline.start, timeline.phase = *timelinePath != "", time.Now(), &phase
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		if err := drive(*master, *clients, *rate, &phase, hists, *keys, value); err != nil {
			errs <- err
		}
	}()
	start := time.Now()
	var at [phases + 1]time.Time
	var cpuAt [phases + 1][]float64
	at[phaseIdle] = start
	cpuAt[phaseIdle] = cpuTimes(pids)
	time.Sleep(*idle)
	at[phaseSync] = time.Now()
	phase.Store(phaseSync)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: *replica, PoolSize: 1, Protocol: 2, DisableIdentity: true})
	defer rc.Close()
	linkUp := func() bool {
		s, err := rc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(s, "master_link_status:up")
	}
	var prof *exec.Cmd
	if *syncCmd != "" {
		prof = exec.Command("sh", "-c", "exec "+*syncCmd)
		prof.Stdout, prof.Stderr = os.Stderr, os.Stderr
		if err := prof.Start(); err != nil {
			fail(err)
		}
		time.Sleep(100 * time.Millisecond) // let it attach
	}
	cpu0 := cpuTimes(pids)
	cpuAt[phaseSync] = cpu0
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		fail(err)
	}
	for !linkUp() {
		if time.Since(at[phaseSync]) > *timeout {
			fail(fmt.Errorf("the replica's link is not up after %v", *timeout))
		}
		select {
		case err := <-errs:
			fail(err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	at[phaseStable] = time.Now()
	phase.Store(phaseStable)
	cpu1 := cpuTimes(pids)
	if prof != nil {
		prof.Process.Signal(os.Interrupt)
		prof.Wait()
	}
	cpuAt[phaseStable] = cpu1
	time.Sleep(*stable)
	at[phaseDone] = time.Now()
	phase.Store(phaseDone)
	cpuAt[phaseDone] = cpuTimes(pids)
	<-loadDone
	select {
	case err := <-errs:
		fail(err)
	default:
	}
	if timeline.on {
		if err := timeline.write(*timelinePath); err != nil {
			fail(err)
		}
	}
	var total [phases]hist
	for i := range hists {
		for p := range phases {
			total[p].add(&hists[i][p])
		}
	}
	fmt.Printf("%.2f", at[phaseStable].Sub(at[phaseSync]).Seconds())
	for p := range phases {
		secs := at[p+1].Sub(at[p]).Seconds()
		fmt.Printf(" %.0f %.3f", float64(total[p].count())/secs, total[p].quantile(0.99))
	}
	for i := range pids {
		fmt.Printf(" %.2f", cpu1[i]-cpu0[i])
	}
	for i := range pids {
		for p := range phases {
			fmt.Printf(" %.1f", (cpuAt[p+1][i]-cpuAt[p][i])*1e6/float64(max(total[p].count(), 1)))
		}
	}
	fmt.Println()
}

// cpuTimes reads each process's user+system time, with its reaped
// children's, in seconds (Linux /proc, clock ticks of 1/100 s).
func cpuTimes(pids []string) []float64 {
	out := make([]float64, len(pids))
	for i, pid := range pids {
		b, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/stat")
		if err != nil {
			fail(err)
		}
		// Fields after the command name (which may hold spaces) in ")".
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		for _, k := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			var v float64
			fmt.Sscan(f[k], &v)
			out[i] += v / 100
		}
	}
	return out
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "replload: %v\n", err)
	os.Exit(1)
}

// timeline, with -timeline FILE, records each window of timelineStep: the
// replies that arrived in it and the longest latency among them, written
// to FILE at the end (one line per window: ms since start, phase, replies,
// max latency in µs, then the replies of at least 0.5, 1, 1.5 ... 8 ms),
// to show when a phase's tail latency happens and which windows hold the
// replies past its p99.
var timeline timeLine

type timeLine struct {
	on    bool
	start time.Time
	phase *atomic.Int32
	win   []timelineWin
}

type timelineWin struct {
	phase int32
	n     uint32
	max   uint64
	over  [timelineSlow]uint32 // over[k]: replies of at least (k+1) x 500 µs
}

const (
	timelineStep = 10 * time.Millisecond
	timelineSlow = 16
)

// note records a reply of latency lat (µs) arriving now.
func (t *timeLine) note(lat uint64) {
	if !t.on {
		return
	}
	i := int(time.Since(t.start) / timelineStep)
	for len(t.win) <= i {
		t.win = append(t.win, timelineWin{phase: t.phase.Load()})
	}
	w := &t.win[i]
	w.n++
	w.max = max(w.max, lat)
	for k := range min(lat/500, timelineSlow) {
		w.over[k]++
	}
}

// write saves the windows to path.
func (t *timeLine) write(path string) error {
	var b []byte
	for i, w := range t.win {
		b = fmt.Appendf(b, "%d %d %d %d", i*int(timelineStep/time.Millisecond), w.phase, w.n, w.max)
		for _, c := range w.over {
			b = fmt.Appendf(b, " %d", c)
		}
		b = append(b, '\n')
	}
	return os.WriteFile(path, b, 0o644)
}
