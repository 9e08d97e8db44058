// Package latency holds what LATENCY and INFO latencystats read: the
// latency monitor (events of spikes over latency-monitor-threshold, the
// "command" and "expire-cycle" events, their samples, graph and doctor's
// report), latency-tracking's per-command histograms (Tracker: one
// Recorder per shard, per loop and for the coordinators) and their replies.
// It knows no connection and no server: the server records into a Monitor
// and a Tracker and hands LATENCY's arguments to Monitor.Reply.
//
// Invariants: an event keeps at most Samples samples, one per second (a
// second's later samples keep the largest), and its all-time maximum; only
// spikes touch the Monitor's mutex. A Recorder is written by one goroutine
// and read by any: its mutex is never held across anything but one count
// or one copy, so neither side waits for long, and no shard ever stops for
// a reader (a scraper calls Tracker.Merged whenever it likes).
package latency
