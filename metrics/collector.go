package metrics

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// Source is what a scrape reads of the server. Every method may be called
// on any goroutine while the shards run, and stops none of them.
type Source interface {
	// Info calls field with INFO's fields, every section but
	// latencystats, as INFO words them (values print as INFO prints them).
	Info(field func(key string, value any))
	// Shards are each shard's figures, by shard id.
	Shards() []Shard
	// Flows are the attached dfly replication flows.
	Flows() []Flow
	// Latency is each command's latency histogram (latency-tracking), by
	// full name (config|get); copies the caller owns.
	Latency() map[string]*hdrhistogram.Histogram
}

// Shard is one shard's figures as of its last tick.
type Shard struct {
	// Keys is the keys of each database, by database index.
	Keys []int
	// UsedBytes is the memory the shard's tables (keys, slots, directory)
	// and packed small strings hold; other values' own memory is not
	// counted.
	UsedBytes int64
	Commands  uint64
	// JournalLSN is the last LSN the shard's journal handed out (0: none
	// yet); JournalBacklogBytes the bytes its ring backlog holds.
	JournalLSN          uint64
	JournalBacklogBytes int64
}

// Flow is one dfly replication flow: a replica's connection for one shard.
type Flow struct {
	Replica string // ip:port
	Shard   int
	Synced  bool // stable sync: the baseline is sent
	// AckedLSN is the last journal entry the replica acknowledged;
	// QueuedBytes the journal frames queued for it, not yet written to its
	// socket; SentBytes all it was sent.
	AckedLSN               uint64
	QueuedBytes, SentBytes int64
}

// Collector is a prometheus.Collector of a Source.
type Collector struct{ src Source }

// NewCollector makes src's collector.
func NewCollector(src Source) *Collector { return &Collector{src: src} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	upDesc        = desc("redis_up", "Whether the server answers (always 1 when it does).")
	instanceDesc  = desc("redis_instance_info", "The server's identity, from INFO; the value is 1.", instanceLabels...)
	commandsDesc  = desc("redis_commands_total", "Calls of a command (INFO commandstats calls).", "cmd")
	durationDesc  = desc("redis_commands_duration_seconds_total", "Time spent in a command (INFO commandstats usec).", "cmd")
	rejectedDesc  = desc("redis_commands_rejected_calls_total", "Calls of a command refused before running (INFO commandstats rejected_calls).", "cmd")
	failedDesc    = desc("redis_commands_failed_calls_total", "Calls of a command that replied an error (INFO commandstats failed_calls).", "cmd")
	errorsDesc    = desc("redis_errors_total", "Error replies by error code (INFO errorstats).", "err")
	dbKeysDesc    = desc("redis_db_keys", "Keys of a database (INFO keyspace keys).", "db")
	dbExpireDesc  = desc("redis_db_keys_expiring", "Keys with a TTL of a database (INFO keyspace expires).", "db")
	dbTTLDesc     = desc("redis_db_avg_ttl_seconds", "Average TTL of a database's keys (INFO keyspace avg_ttl).", "db")
	slaveLabels   = []string{"slave_ip", "slave_port", "slave_state"}
	slaveOffDesc  = desc("redis_connected_slave_offset_bytes", "A replica's acknowledged offset (INFO replication slaveN offset).", slaveLabels...)
	slaveLagDesc  = desc("redis_connected_slave_lag_seconds", "Seconds since a replica's last acknowledgement (INFO replication slaveN lag).", slaveLabels...)
	shardKeysDesc = desc("dfly_shard_keys", "Keys of a database on a shard.", "shard", "db")
	shardMemDesc  = desc("dfly_shard_used_memory_bytes", "Memory of a shard's tables and packed small strings.", "shard")
	shardCmdDesc  = desc("dfly_shard_commands_total", "Commands a shard ran.", "shard")
	lsnDesc       = desc("dfly_journal_lsn", "The last LSN a shard's journal handed out.", "shard")
	backlogDesc   = desc("dfly_journal_backlog_bytes", "Bytes a shard's journal backlog holds.", "shard")
	flowLabels    = []string{"replica", "shard"}
	flowRecDesc   = desc("dfly_replication_flow_lag_records", "Journal entries of the flow's shard its replica has not acknowledged.", flowLabels...)
	flowByteDesc  = desc("dfly_replication_flow_lag_bytes", "Journal bytes queued for a flow, not yet written to its replica.", flowLabels...)
	flowSentDesc  = desc("dfly_replication_flow_sent_bytes_total", "Bytes a flow sent its replica, baseline included.", flowLabels...)
	flowSyncDesc  = desc("dfly_replication_flow_synced", "Whether a flow is in stable sync (its baseline sent).", flowLabels...)
	latencyDesc   = desc("dfly_command_latency_seconds", "Latency of a command's calls (latency-tracking, LATENCY HISTOGRAM).", "cmd")
)

var fixedDescs = []*prometheus.Desc{upDesc, instanceDesc, commandsDesc, durationDesc, rejectedDesc, failedDesc,
	errorsDesc, dbKeysDesc, dbExpireDesc, dbTTLDesc, slaveOffDesc, slaveLagDesc, shardKeysDesc, shardMemDesc,
	shardCmdDesc, lsnDesc, backlogDesc, flowRecDesc, flowByteDesc, flowSentDesc, flowSyncDesc, latencyDesc}

// Describe is prometheus.Collector's: every series the collector may
// report.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range fixedDescs {
		ch <- d
	}
	for _, s := range infoTable {
		ch <- s.desc
	}
}

// Collect is prometheus.Collector's: one scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	c.collectInfo(ch)
	shards := c.src.Shards()
	for i, sh := range shards {
		id := strconv.Itoa(i)
		for db, n := range sh.Keys {
			if n > 0 || db == 0 { // empty databases but the first are left out
				ch <- prometheus.MustNewConstMetric(shardKeysDesc, prometheus.GaugeValue, float64(n), id, strconv.Itoa(db))
			}
		}
		ch <- prometheus.MustNewConstMetric(shardMemDesc, prometheus.GaugeValue, float64(sh.UsedBytes), id)
		ch <- prometheus.MustNewConstMetric(shardCmdDesc, prometheus.CounterValue, float64(sh.Commands), id)
		ch <- prometheus.MustNewConstMetric(lsnDesc, prometheus.GaugeValue, float64(sh.JournalLSN), id)
		ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(sh.JournalBacklogBytes), id)
	}
	for _, f := range c.src.Flows() {
		labels := []string{f.Replica, strconv.Itoa(f.Shard)}
		var lag uint64
		if f.Shard < len(shards) && shards[f.Shard].JournalLSN > f.AckedLSN {
			lag = shards[f.Shard].JournalLSN - f.AckedLSN
		}
		synced := 0.0
		if f.Synced {
			synced = 1
		}
		ch <- prometheus.MustNewConstMetric(flowRecDesc, prometheus.GaugeValue, float64(lag), labels...)
		ch <- prometheus.MustNewConstMetric(flowByteDesc, prometheus.GaugeValue, float64(f.QueuedBytes), labels...)
		ch <- prometheus.MustNewConstMetric(flowSentDesc, prometheus.CounterValue, float64(f.SentBytes), labels...)
		ch <- prometheus.MustNewConstMetric(flowSyncDesc, prometheus.GaugeValue, synced, labels...)
	}
	for name, h := range c.src.Latency() {
		count, sum, buckets := Buckets(h)
		ch <- prometheus.MustNewConstHistogram(latencyDesc, count, sum, buckets, name)
	}
}

// collectInfo reports INFO's fields: the table's, the instance's labels
// and the labelled families.
func (c *Collector) collectInfo(ch chan<- prometheus.Metric) {
	labels := map[string]string{}
	c.src.Info(func(key string, value any) {
		if s, ok := infoTable[key]; ok {
			if v, ok := number(key, value); ok {
				ch <- prometheus.MustNewConstMetric(s.desc, s.kind, v*s.scale)
			}
			if key != "role" {
				return
			}
		}
		text := fmt.Sprint(value)
		switch {
		case strings.HasPrefix(key, "cmdstat_"):
			f := pairs(text)
			cmd := key[len("cmdstat_"):]
			ch <- prometheus.MustNewConstMetric(commandsDesc, prometheus.CounterValue, f["calls"], cmd)
			ch <- prometheus.MustNewConstMetric(durationDesc, prometheus.CounterValue, f["usec"]/1e6, cmd)
			ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.CounterValue, f["rejected_calls"], cmd)
			ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.CounterValue, f["failed_calls"], cmd)
		case strings.HasPrefix(key, "errorstat_"):
			ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, pairs(text)["count"], key[len("errorstat_"):])
		case isNumbered(key, "db"):
			f := pairs(text)
			ch <- prometheus.MustNewConstMetric(dbKeysDesc, prometheus.GaugeValue, f["keys"], key)
			ch <- prometheus.MustNewConstMetric(dbExpireDesc, prometheus.GaugeValue, f["expires"], key)
			ch <- prometheus.MustNewConstMetric(dbTTLDesc, prometheus.GaugeValue, f["avg_ttl"]/1000, key)
		case isNumbered(key, "slave"):
			l := labelPairs(text)
			f := pairs(text)
			ch <- prometheus.MustNewConstMetric(slaveOffDesc, prometheus.GaugeValue, f["offset"], l["ip"], l["port"], l["state"])
			ch <- prometheus.MustNewConstMetric(slaveLagDesc, prometheus.GaugeValue, f["lag"], l["ip"], l["port"], l["state"])
		default:
			labels[key] = text
		}
	})
	values := make([]string, len(instanceLabels))
	for i, l := range instanceLabels {
		values[i] = labels[l]
	}
	ch <- prometheus.MustNewConstMetric(instanceDesc, prometheus.GaugeValue, 1, values...)
}

// number is an INFO value as a number: INFO's numbers, and its two
// statuses (rdb_last_bgsave_status ok, master_link_status up) as 1.
func number(key string, v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint32:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	s := fmt.Sprint(v)
	switch key {
	case "rdb_last_bgsave_status":
		return b2f(s == "ok"), true
	case "master_link_status":
		return b2f(s == "up"), true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// isNumbered reports whether key is prefix followed by a number (db0,
// slave1).
func isNumbered(key, prefix string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// pairs are the numbers of an INFO value "a=1,b=2.5,c=x" (c left out).
func pairs(s string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(p, "=")
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		}
	}
	return out
}

// labelPairs are an INFO value "a=1,b=x" as text.
func labelPairs(s string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(p, "=")
		out[k] = v
	}
	return out
}

func mustFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic("metrics: bad scale " + s)
	}
	return f
}

// Latency buckets: upper bounds at 2^firstBucket ... 2^lastBucket ns.
const (
	firstBucket = 10
	lastBucket  = 30
)

// Buckets converts h, in nanoseconds, into a Prometheus histogram in
// seconds: its count, sum (mean times count) and cumulative counts at the
// powers of two from 1024 ns to 2^30 ns (see doc.go: exact, as no range
// of HdrHistogram's equivalent values straddles a power of two).
func Buckets(h *hdrhistogram.Histogram) (count uint64, sum float64, buckets map[float64]uint64) {
	var counts [lastBucket + 1]uint64
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// The first bound above every value of the bar: bar.To is its
		// highest equivalent value, so values up to 2^k - 1 fall under 2^k.
		k := max(bits.Len64(uint64(bar.To)), firstBucket)
		if k <= lastBucket {
			counts[k] += uint64(bar.Count)
		}
	}
	buckets = make(map[float64]uint64, lastBucket-firstBucket+1)
	var cum uint64
	for k := firstBucket; k <= lastBucket; k++ {
		cum += counts[k]
		buckets[float64(uint64(1)<<k)/1e9] = cum
	}
	count = uint64(h.TotalCount())
	return count, h.Mean() * float64(count) / 1e9, buckets
}
