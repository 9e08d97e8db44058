// Package metrics is dfly's Prometheus endpoint: a prometheus.Collector
// that turns, per scrape, what the server reports into series (built with
// client_golang: nothing here writes the exposition format), the HTTP
// handler that serves them on /metrics, and the hand-over of a main-port
// connection whose first bytes are an HTTP request (Endpoint, as Dragonfly
// answers HTTP on its main port).
//
// It reads the server through Source, a narrow interface the server
// implements; it imports no server, shard or replication package. The
// series come from three places:
//   - INFO's fields (Source.Info), mapped by the table in info.go onto
//     redis_exporter's names (redis_connected_clients,
//     redis_commands_total{cmd} ...), so that Redis dashboards work
//     unchanged, and onto dfly_ names for dfly's own fields (snapshot,
//     tiered storage, script placement, locks). A field the table does not
//     name is not exported: a new INFO field needs a line there.
//   - Per-shard and per-flow figures (Source.Shards, Source.Flows).
//   - The per-command latency histograms of latency-tracking
//     (Source.Latency, HdrHistogram).
//
// What it never does: stop a shard. The server answers Source from
// figures each shard publishes on its own 100 ms tick (shard.Publish) and
// from atomics, so a scrape sees the shards as of their last tick (at most
// about 100 ms old) and costs them nothing but that copy.
//
// Latency histograms: each command's HdrHistogram (two significant
// digits, 1 ns to 1 s) is converted into a classic Prometheus histogram
// with cumulative buckets at the powers of two from 1024 ns to 2^30 ns
// (1.024 µs ... 1.07 s; le in seconds). HdrHistogram's ranges of
// equivalent values never straddle such a power of two, so every bucket's
// count is exact, not interpolated; the sum is the histogram's mean times
// its count (HdrHistogram keeps no exact sum; within its 1% precision).
// client_golang's native histograms are not used: a constant native
// histogram would need HdrHistogram's sub-buckets re-bucketed into
// Prometheus's exponential schema (inexact), and Prometheus 2.42 scrapes
// native histograms only behind a feature flag and over protobuf.
package metrics
