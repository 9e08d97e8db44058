package latency

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// Redis's latency histograms (latency-tracking): nanoseconds from 1 to one
// second (a longer call counts as one second), two significant digits.
const (
	lowestNs  = 1
	highestNs = 1_000_000_000
	digits    = 2
)

// Recorder holds the per-command latency histograms one goroutine records
// into: a shard's, a loop's, or the coordinators' (shared). Any goroutine
// may read them meanwhile (Tracker.Merged, a scraper): the mutex is held
// only by the recorder for one RecordValue and by a reader copying, so the
// recording goroutine never waits for a stop of anything. Recording
// allocates only the first call of a command.
type Recorder struct {
	mu    sync.Mutex
	hists map[*command.Command]*hdrhistogram.Histogram
}

// Record counts a call of cmd that took ns nanoseconds.
func (r *Recorder) Record(cmd *command.Command, ns int64) {
	ns = min(max(ns, lowestNs), highestNs)
	r.mu.Lock()
	h := r.hists[cmd]
	if h == nil {
		if r.hists == nil {
			r.hists = make(map[*command.Command]*hdrhistogram.Histogram)
		}
		h = hdrhistogram.New(lowestNs, highestNs, digits)
		r.hists[cmd] = h
	}
	_ = h.RecordValue(ns) // in range: clamped above
	r.mu.Unlock()
}

// Tracker is every recorder of a server: one per shard, per loop, and one
// the coordinators share.
type Tracker struct {
	recorders []Recorder
}

// NewTracker makes a tracker of n recorders.
func NewTracker(n int) *Tracker { return &Tracker{recorders: make([]Recorder, n)} }

// Recorder is recorder i.
func (t *Tracker) Recorder(i int) *Recorder { return &t.recorders[i] }

// Merged is every command's histogram over all recorders, copies the
// caller owns.
func (t *Tracker) Merged() map[*command.Command]*hdrhistogram.Histogram {
	out := map[*command.Command]*hdrhistogram.Histogram{}
	for i := range t.recorders {
		r := &t.recorders[i]
		r.mu.Lock()
		for cmd, h := range r.hists {
			if m := out[cmd]; m != nil {
				m.Merge(h)
			} else {
				out[cmd] = h.Clone()
			}
		}
		r.mu.Unlock()
	}
	return out
}

// Reset drops every histogram (CONFIG RESETSTAT).
func (t *Tracker) Reset() {
	for i := range t.recorders {
		r := &t.recorders[i]
		r.mu.Lock()
		r.hists = nil
		r.mu.Unlock()
	}
}

// WriteHistogram is LATENCY HISTOGRAM [command ...]: a map of each
// command's full name to its calls and cumulative counts by power-of-two
// microsecond buckets (Redis's fillCommandCDF). With names, each known
// command with calls and each of its subcommands with calls, in the order
// asked (twice if asked twice, as Redis); without, every command with
// calls, by name.
func WriteHistogram(w *resp.Writer, t *command.Table, hists map[*command.Command]*hdrhistogram.Histogram, names [][]byte) {
	var cmds []*command.Command
	if len(names) == 0 {
		for cmd := range hists {
			cmds = append(cmds, cmd)
		}
		slices.SortFunc(cmds, func(a, b *command.Command) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, name := range names {
		cmd := t.LookupInfo(name)
		if cmd == nil {
			continue
		}
		if hists[cmd] != nil {
			cmds = append(cmds, cmd)
		}
		for _, sub := range cmd.InfoSubs() {
			if hists[sub] != nil {
				cmds = append(cmds, sub)
			}
		}
	}
	w.Map(len(cmds))
	for _, cmd := range cmds {
		h := hists[cmd]
		w.BulkString(cmd.Name)
		w.Map(2)
		w.BulkString("calls")
		w.Int(h.TotalCount())
		w.BulkString("histogram_usec")
		buckets := cdf(h)
		w.Map(len(buckets) / 2)
		for _, v := range buckets {
			w.Int(v)
		}
	}
}

// cdf is h's cumulative distribution as Redis reports it (its
// logarithmic iteration from 1024 ns by a factor of 2): pairs of a bucket
// and the calls up to it, a bucket ending at 1024 ns times a power of two
// L and reported as L's highest equivalent value in whole microseconds (1,
// 2, 4 ... 16, 33, 65, 131 ...); only buckets where the count grew. A
// bucket's range of equivalent values never straddles an L; the last L
// inside the histogram is 2^29 ns, so calls past it (over 0.54 s) count
// in no bucket, as in Redis.
func cdf(h *hdrhistogram.Histogram) []int64 {
	var out []int64
	var cum int64
	level := int64(1024)
	for _, bar := range h.Distribution() {
		for bar.From > level {
			if cum > 0 && (len(out) == 0 || out[len(out)-1] < cum) {
				out = append(out, highestEquivalent(level)/1000, cum)
			}
			level *= 2
		}
		cum += bar.Count
	}
	if level < 1<<30 && cum > 0 && (len(out) == 0 || out[len(out)-1] < cum) {
		out = append(out, highestEquivalent(level)/1000, cum)
	}
	return out
}

// highestEquivalent is the highest value the histograms count as equal to
// l, a power of two of at least 256: with two significant digits, values
// from 2^m on are counted in steps of 2^(m-7).
func highestEquivalent(l int64) int64 { return l + l>>7 - 1 }

// WritePercentiles writes INFO latencystats' lines: per command with
// calls, by name, latency_percentiles_usec_<name>:p50=1.003,p99=...
// at the percentiles asked (latency-tracking-info-percentiles).
func WritePercentiles(b *strings.Builder, hists map[*command.Command]*hdrhistogram.Histogram, percentiles []float64) {
	cmds := make([]*command.Command, 0, len(hists))
	for cmd := range hists {
		cmds = append(cmds, cmd)
	}
	slices.SortFunc(cmds, func(a, b *command.Command) int { return strings.Compare(a.Name, b.Name) })
	for _, cmd := range cmds {
		h := hists[cmd]
		b.WriteString("latency_percentiles_usec_" + cmd.Name + ":")
		for i, p := range percentiles {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%.3f", strconv.FormatFloat(p, 'f', -1, 64), float64(h.ValueAtPercentile(p))/1000)
		}
		b.WriteString("\r\n")
	}
}
