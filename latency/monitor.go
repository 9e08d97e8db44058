package latency

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// Monitor is the latency monitor, as Redis's: with latency-monitor-threshold
// at N > 0 milliseconds, every command that ran for at least N ms (timed as
// for SLOWLOG: its own execution) adds a sample to the "command" event.
// An event keeps its last Samples samples, one per second (a second's
// later samples keep the largest), and its all-time maximum; LATENCY reads
// them. Only commands over the threshold touch the monitor (a mutex), so
// it costs the others one atomic load.
//
// Not done: the events dfly has no cause for (eviction-cycle, fork, aof-*:
// dfly has no fork or AOF).
type Monitor struct {
	mu     sync.Mutex
	events map[string]*series
}

// Samples is how many samples an event keeps (Redis's 160).
const Samples = 160

type sample struct {
	at int64 // unix seconds
	ms int64
}

type series struct {
	samples []sample // oldest first, at most Samples
	max     int64
}

// AddOver records ms for event now when the monitor is on (threshold,
// latency-monitor-threshold in ms, above 0) and ms reached threshold.
func (m *Monitor) AddOver(event string, ms, threshold int64) {
	if threshold > 0 && ms >= threshold {
		m.Add(event, ms)
	}
}

// Add records ms for event now.
func (m *Monitor) Add(event string, ms int64) {
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*series{}
	}
	ev := m.events[event]
	if ev == nil {
		ev = &series{}
		m.events[event] = ev
	}
	ev.max = max(ev.max, ms)
	if n := len(ev.samples); n > 0 && ev.samples[n-1].at == now {
		ev.samples[n-1].ms = max(ev.samples[n-1].ms, ms)
		return
	}
	if len(ev.samples) == Samples {
		ev.samples = append(ev.samples[:0], ev.samples[1:]...)
	}
	ev.samples = append(ev.samples, sample{now, ms})
}

// names are the events with samples, sorted.
func (m *Monitor) names() []string {
	out := make([]string, 0, len(m.events))
	for k := range m.events {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Subcommands describe LATENCY's subcommands: arity, flags, key specs, ACL categories.
var Subcommands = []command.SubcommandInfo{
	{Name: "doctor", Tips: "nondeterministic_output request_policy:all_nodes response_policy:special", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "graph", Tips: "nondeterministic_output request_policy:all_nodes response_policy:special", Arity: 3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "histogram", Tips: "nondeterministic_output request_policy:all_nodes response_policy:special", Arity: -2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "history", Tips: "nondeterministic_output request_policy:all_nodes response_policy:special", Arity: 3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "latest", Tips: "nondeterministic_output request_policy:all_nodes response_policy:special", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "reset", Tips: "request_policy:all_nodes response_policy:all_succeeded", Arity: -2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
}

// Reply answers LATENCY with arguments a (the command's name first);
// threshold is latency-monitor-threshold; histogram writes LATENCY
// HISTOGRAM's reply for the commands named.
func (m *Monitor) Reply(w *resp.Writer, a [][]byte, threshold int64, histogram func(w *resp.Writer, names [][]byte)) {
	sub := command.Subcommand(w, a, "latency", Subcommands)
	if sub == "" || sub == "help" {
		if sub == "help" {
			command.WriteHelp(w, help)
		}
		return
	}
	if sub == "histogram" {
		histogram(w, a[2:])
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch sub {
	case "latest":
		names := m.names()
		w.Array(len(names))
		for _, name := range names {
			ev := m.events[name]
			last := ev.samples[len(ev.samples)-1]
			w.Array(4)
			w.BulkString(name)
			w.Int(last.at)
			w.Int(last.ms)
			w.Int(ev.max)
		}
	case "history":
		ev := m.events[string(a[2])]
		if ev == nil {
			w.Array(0)
			return
		}
		w.Array(len(ev.samples))
		for _, s := range ev.samples {
			w.Array(2)
			w.Int(s.at)
			w.Int(s.ms)
		}
	case "reset":
		n := 0
		if len(a) == 2 {
			n = len(m.events)
			m.events = nil
		} else {
			for _, e := range a[2:] {
				if _, ok := m.events[string(e)]; ok {
					delete(m.events, string(e))
					n++
				}
			}
		}
		w.Int(int64(n))
	case "graph":
		ev := m.events[string(a[2])]
		if ev == nil {
			w.Error("ERR No samples available for event '" + string(a[2]) + "'")
			return
		}
		w.Verbatim("txt", []byte(graph(string(a[2]), ev, time.Now().Unix())))
	case "doctor":
		w.Verbatim("txt", []byte(m.doctor(threshold)))
	}
}

var help = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
	"HELP",
	"    Prints this help.",
}

// graph draws ev's samples as columns of height 0-4, oldest on the
// left, under a title with the range, and each column's age below it,
// written downwards ("12s", "3m").
func graph(name string, ev *series, now int64) string {
	lo, hi := ev.samples[0].ms, ev.samples[0].ms
	for _, s := range ev.samples {
		lo, hi = min(lo, s.ms), max(hi, s.ms)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", name, hi, lo, ev.max)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	const rows = 4
	height := func(ms int64) int {
		if hi == lo {
			return rows
		}
		return 1 + int((ms-lo)*(rows-1)/(hi-lo))
	}
	for r := rows; r >= 1; r-- {
		for _, s := range ev.samples {
			switch h := height(s.ms); {
			case h > r:
				b.WriteByte('|')
			case h == r:
				b.WriteByte('#')
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	ages := make([]string, len(ev.samples))
	width := 0
	for i, s := range ev.samples {
		ages[i] = age(now - s.at)
		width = max(width, len(ages[i]))
	}
	for k := 0; k < width; k++ {
		for _, a := range ages {
			if k < len(a) {
				b.WriteByte(a[k])
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// age is an age in seconds, short: 5s, 12m, 3h, 2d.
func age(sec int64) string {
	switch {
	case sec < 60:
		return strconv.FormatInt(max(sec, 0), 10) + "s"
	case sec < 3600:
		return strconv.FormatInt(sec/60, 10) + "m"
	case sec < 86400:
		return strconv.FormatInt(sec/3600, 10) + "h"
	}
	return strconv.FormatInt(sec/86400, 10) + "d"
}

// doctor is LATENCY DOCTOR's report: per event, the spikes kept, their
// mean and mean deviation, the period between them and the worst one,
// then what to look at.
func (m *Monitor) doctor(threshold int64) string {
	var b strings.Builder
	if threshold <= 0 {
		b.WriteString("The latency monitor is off: CONFIG SET latency-monitor-threshold <milliseconds> turns it on, and commands that run at least that long are then recorded.\n")
	}
	if len(m.events) == 0 {
		b.WriteString("No latency spike has been recorded since this instance started (or since the last LATENCY RESET).\n")
		return b.String()
	}
	b.WriteString("Latency spikes have been recorded:\n\n")
	for i, name := range m.names() {
		ev := m.events[name]
		var sum int64
		for _, s := range ev.samples {
			sum += s.ms
		}
		n := int64(len(ev.samples))
		mean := float64(sum) / float64(n)
		var dev float64
		for _, s := range ev.samples {
			dev += abs(float64(s.ms) - mean)
		}
		dev /= float64(n)
		period := int64(0)
		if n > 1 {
			period = (ev.samples[n-1].at - ev.samples[0].at) / (n - 1)
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %.0f ms, mean deviation %.0f ms, period %d sec). Worst all time event %d ms.\n",
			i+1, name, n, mean, dev, period, ev.max)
	}
	b.WriteString("\nA \"command\" spike is a command that ran at least latency-monitor-threshold ms: SLOWLOG GET shows the slowest ones with their arguments. Commands over large values or whole keyspaces (KEYS, SORT, big SUNION/ZUNIONSTORE, DEL of a huge key) hold their shard while they run.\n")
	return b.String()
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
