package server

import (
	"sync/atomic"
	"time"
)

// Traffic counters for INFO (total_net_input_bytes, total_net_output_bytes,
// the instantaneous_* rates): each event loop adds to a counter of its own
// (a cache line each, written by one loop), and a sampler sums them every
// 100 ms into rates averaged over the last 16 samples, as Redis does.

const (
	trafficSlots   = 64 // more than the loops there are; a loop's index picks its slot
	trafficSamples = 16
	trafficPeriod  = 100 * time.Millisecond
)

type trafficSlot struct {
	in, out, cmds atomic.Uint64
	_             [40]byte
}

type trafficStats struct {
	slots [trafficSlots]trafficSlot
	// The sampler's: last totals, and the rates of the last samples
	// (per second) with the next slot to fill.
	last   [3]uint64
	lastAt time.Time
	rates  [3][trafficSamples]float64
	next   int
	// Rates per second, rounded: commands, input bytes, output bytes.
	opsRate, inRate, outRate atomic.Uint64
	sampling                 atomic.Bool
}

func (t *trafficStats) slot(loop int) *trafficSlot { return &t.slots[loop&(trafficSlots-1)] }

// totals sums the slots: input bytes, output bytes, commands.
func (t *trafficStats) totals() (in, out, cmds uint64) {
	for i := range t.slots {
		s := &t.slots[i]
		in += s.in.Load()
		out += s.out.Load()
		cmds += s.cmds.Load()
	}
	return in, out, cmds
}

// startSampler starts the rates' sampler once; it ends with the server.
func (s *Server) startSampler() {
	t := &s.traffic
	if t.sampling.Swap(true) {
		return
	}
	go func() {
		tick := time.NewTicker(trafficPeriod)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case now := <-tick.C:
				t.sample(now)
			}
		}
	}()
}

func (t *trafficStats) sample(now time.Time) {
	in, out, cmds := t.totals()
	cur := [3]uint64{cmds, in, out}
	if !t.lastAt.IsZero() {
		secs := now.Sub(t.lastAt).Seconds()
		for i := range cur {
			t.rates[i][t.next] = float64(cur[i]-t.last[i]) / secs
		}
		t.next = (t.next + 1) % trafficSamples
		avg := func(i int) uint64 {
			sum := 0.0
			for _, r := range t.rates[i] {
				sum += r
			}
			return uint64(sum / trafficSamples)
		}
		t.opsRate.Store(avg(0))
		t.inRate.Store(avg(1))
		t.outRate.Store(avg(2))
	}
	t.last, t.lastAt = cur, now
}
