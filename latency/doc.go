// Package latency holds what LATENCY reads: the latency monitor (events of
// spikes over latency-monitor-threshold, their samples, graph and doctor's
// report) and LATENCY's replies. It knows no connection and no server: the
// server records into a Monitor and hands LATENCY's arguments to Reply.
//
// Invariants: an event keeps at most Samples samples, one per second (a
// second's later samples keep the largest), and its all-time maximum;
// only spikes touch the Monitor's mutex.
package latency
