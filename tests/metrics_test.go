package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// /metrics (package metrics): the Prometheus text format on the main port
// (a connection whose first bytes are an HTTP request) and on
// --metrics_port, parsed with Prometheus's own parser; the series the
// README documents, values that move with the commands run, a dfly
// replica's flows, and a real Prometheus scraping dfly.

// scrape fetches addr's /metrics and parses it.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s/metrics: %s\n%s", addr, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s/metrics: %v", addr, err)
	}
	return fams
}

// metricValue is family name's value for the series with labels (a
// counter's, a gauge's, or a histogram's count); -1 when absent.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// metricSum is the sum of family name's values over its series.
func metricSum(fams map[string]*dto.MetricFamily, name string) float64 {
	sum := 0.0
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

// documentedSeries are the series names README.md's Prometheus table
// lists.
func documentedSeries(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Monitoring with Prometheus")
	if !ok {
		t.Fatal("README.md has no Prometheus section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	out := map[string]bool{}
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			out[m[1]] = true
		}
	}
	return out
}

func TestMetricsEndpoint(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only: /metrics")
	}
	mport := freePort(t)
	srv := StartServer(t, "--shards", "2", "--metrics_port", strconv.Itoa(mport))
	c := srv.Raw(t)
	metricsAddr := "127.0.0.1:" + strconv.Itoa(mport)

	before := scrape(t, srv.Addr)
	documented := documentedSeries(t)
	for name := range before {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		if !documented[name] {
			t.Errorf("series %s is not in README.md's table", name)
		}
	}
	for _, name := range []string{"redis_up", "redis_instance_info", "redis_connected_clients", "redis_memory_used_bytes",
		"redis_commands_processed_total", "redis_keyspace_hits_total", "redis_keyspace_misses_total",
		"redis_expired_keys_total", "redis_evicted_keys_total", "redis_rdb_last_save_timestamp_seconds",
		"redis_connected_slaves", "redis_master_repl_offset", "dfly_shard_keys", "dfly_shard_used_memory_bytes",
		"dfly_journal_lsn", "dfly_journal_backlog_bytes", "dfly_snapshot_buckets_serialized_total",
		"dfly_snapshot_parked_mutations_total", "dfly_snapshot_deferred_deletions_total", "dfly_snapshot_max_stall_seconds",
		"dfly_script_borrowed_runs_total", "dfly_lock_grants_total", "dfly_tiered_enabled", "go_goroutines",
		"process_cpu_seconds_total"} {
		if before[name] == nil {
			t.Errorf("no series %s", name)
		}
	}
	if got := metricValue(before, "redis_instance_info", "role", "master"); got != 1 {
		t.Errorf("redis_instance_info{role=master} = %v", got)
	}
	// The same series on --metrics_port.
	if other := scrape(t, metricsAddr); other["redis_commands_processed_total"] == nil || other["dfly_shard_keys"] == nil {
		t.Errorf("--metrics_port serves other series: %d families", len(other))
	}

	// Values move with commands: 20 SETs over both shards, GETs that hit
	// and miss, an error, a BGSAVE.
	for i := 0; i < 20; i++ {
		mustOK(t, c.Do("SET", fmt.Sprintf("metrics:%d", i), "v"), "set")
	}
	c.Do("GET", "metrics:1")
	c.Do("GET", "metrics:none")
	c.Do("LPUSH", "metrics:1", "x") // WRONGTYPE
	c.Do("BGSAVE")
	var after map[string]*dto.MetricFamily
	// Per-shard figures are the shards' last tick's (100 ms); INFO's and
	// the per-shard series are read one after the other, so a tick may
	// fall between them: wait until both show the writes.
	waitFor(t, 10*time.Second, "the shards' figures to move", func() bool {
		after = scrape(t, srv.Addr)
		return metricSum(after, "dfly_shard_keys")-metricSum(before, "dfly_shard_keys") >= 20 &&
			metricValue(after, "redis_db_keys", "db", "db0") >= 20 &&
			metricValue(after, "redis_keyspace_misses_total") >= 1 &&
			metricValue(after, "dfly_snapshot_buckets_serialized_total") > 0
	})
	moved := []struct {
		name   string
		labels []string
		by     float64
	}{
		{"redis_commands_total", []string{"cmd", "set"}, 20},
		{"redis_commands_duration_seconds_total", []string{"cmd", "set"}, 1e-9},
		{"dfly_command_latency_seconds", []string{"cmd", "set"}, 20},
		{"redis_db_keys", []string{"db", "db0"}, 20},
		{"redis_keyspace_hits_total", nil, 1},
		{"redis_keyspace_misses_total", nil, 1},
		{"redis_errors_total", []string{"err", "WRONGTYPE"}, 1},
		{"redis_commands_failed_calls_total", []string{"cmd", "lpush"}, 1},
		{"redis_commands_processed_total", nil, 24},
		{"redis_rdb_saves_total", nil, 1},
	}
	for _, m := range moved {
		b, a := max(metricValue(before, m.name, m.labels...), 0), metricValue(after, m.name, m.labels...)
		if a-b < m.by {
			t.Errorf("%s%v: %v before, %v after: want a rise of %v", m.name, m.labels, b, a, m.by)
		}
	}
	if s := metricSum(after, "dfly_shard_commands_total") - metricSum(before, "dfly_shard_commands_total"); s < 22 {
		t.Errorf("dfly_shard_commands_total rose by %v over the shards, want at least 22", s)
	}
	for _, shard := range []string{"0", "1"} {
		if v := metricValue(after, "dfly_shard_keys", "shard", shard, "db", "0"); v <= 0 {
			t.Errorf("dfly_shard_keys{shard=%s,db=0} = %v: 20 keys should spread over both shards", shard, v)
		}
	}

	// The main port still speaks RESP after serving HTTP, and a request
	// for another path is a 404.
	mustOK(t, c.Do("SET", "after-http", "1"), "set after scrapes")
	resp, err := http.Get("http://" + srv.Addr + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %s", resp.Status)
	}
}

// A dfly replica's flows: per-replica offset and lag (INFO's slaveN) and
// per-flow lag in records and bytes.
func TestMetricsReplication(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only: /metrics")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	rep := StartServer(t, "--shards", "2")
	rc := rep.Raw(t)
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	for i := 0; i < 10; i++ {
		mustOK(t, mc.Do("SET", fmt.Sprintf("r:%d", i), "v"), "set")
	}
	var fams map[string]*dto.MetricFamily
	waitFor(t, 10*time.Second, "the flows' series, the journal's LSNs", func() bool {
		fams = scrape(t, master.Addr)
		return metricSum(fams, "dfly_journal_lsn") >= 10 && fams["dfly_replication_flow_lag_records"] != nil &&
			fams["redis_connected_slave_offset_bytes"] != nil
	})
	if n := len(fams["dfly_replication_flow_lag_records"].Metric); n != 2 {
		t.Errorf("%d flows reported, want 2 (one per master shard)", n)
	}
	for _, name := range []string{"dfly_replication_flow_lag_bytes", "dfly_replication_flow_sent_bytes_total",
		"dfly_replication_flow_synced", "redis_connected_slave_lag_seconds"} {
		if fams[name] == nil {
			t.Errorf("no series %s", name)
		}
	}
	if v := metricValue(fams, "redis_connected_slaves"); v != 1 {
		t.Errorf("redis_connected_slaves = %v", v)
	}
	// The replica acknowledges every entry in time: the lag in records
	// goes to 0 and the offset reaches the writes.
	waitFor(t, 10*time.Second, "the flows' lag to reach 0", func() bool {
		fams = scrape(t, master.Addr)
		return metricSum(fams, "dfly_replication_flow_lag_records") == 0 &&
			metricSum(fams, "redis_connected_slave_offset_bytes") >= 10
	})
	if v := metricValue(scrape(t, rep.Addr), "redis_master_link_up"); v != 1 {
		t.Errorf("the replica's redis_master_link_up = %v", v)
	}
}

// A real Prometheus scrapes dfly on loopback; a query over its HTTP API
// returns a dfly series.
func TestMetricsPrometheusScrape(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only: /metrics")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian's prometheus package; .ci/run installs it)")
	}
	srv := StartServer(t, "--shards", "2")
	mustOK(t, srv.Raw(t).Do("SET", "scraped", "1"), "set")
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: dfly\n    static_configs:\n      - targets: ['" + srv.Addr + "']\n"
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	web := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	})
	query := "http://" + web + "/api/v1/query?query=" + url.QueryEscape(`dfly_shard_keys{job="dfly"}`)
	c := &http.Client{Timeout: 5 * time.Second}
	var result struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  []any
			}
		}
	}
	waitFor(t, 60*time.Second, "Prometheus to return dfly_shard_keys", func() bool {
		resp, err := c.Get(query)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		result.Data.Result = nil
		return json.NewDecoder(resp.Body).Decode(&result) == nil && result.Status == "success" && len(result.Data.Result) > 0
	})
	if got := result.Data.Result[0].Metric["__name__"]; got != "dfly_shard_keys" {
		t.Errorf("query returned %v", result.Data.Result[0].Metric)
	}
}
