package latency

import (
	"strings"
	"testing"
)

// A second's samples merge into one that keeps the largest; an event keeps
// its last Samples seconds and its all-time maximum.
func TestLatencyMonitorSamples(t *testing.T) {
	var m Monitor
	m.Add("command", 20)
	m.Add("command", 50)
	m.Add("command", 30)
	ev := m.events["command"]
	if len(ev.samples) != 1 || ev.samples[0].ms != 50 || ev.max != 50 {
		t.Fatalf("one second's samples: %+v max %d, want one of 50", ev.samples, ev.max)
	}
	// Older seconds, as add would have made them.
	ev.samples = ev.samples[:0]
	for i := range Samples {
		ev.samples = append(ev.samples, sample{at: int64(i), ms: int64(i % 7)})
	}
	m.Add("command", 10)
	if n := len(ev.samples); n != Samples || ev.samples[0].at != 1 || ev.samples[n-1].ms != 10 {
		t.Fatalf("kept %d samples from %d, last %d ms", n, ev.samples[0].at, ev.samples[n-1].ms)
	}
	if ev.max != 50 {
		t.Fatalf("max %d, want the all-time 50", ev.max)
	}
}

// The graph has a column per sample, as tall as its latency in the
// event's range, and each sample's age under it.
func TestLatencyGraph(t *testing.T) {
	ev := &series{samples: []sample{{at: 100, ms: 10}, {at: 130, ms: 40}, {at: 159, ms: 20}}, max: 90}
	g := graph("command", ev, 160)
	lines := strings.Split(strings.TrimRight(g, "\n"), "\n")
	want := []string{
		"command - high 40 ms, low 10 ms (all time high 90 ms)",
		strings.Repeat("-", 80),
		" # ",
		" | ",
		" |#",
		"#||",
		"",
		"131", // 1m, 30s, 1s ago
		"m0s",
		" s ",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("graph:\n%s\nwant:\n%s", g, strings.Join(want, "\n"))
	}
}
