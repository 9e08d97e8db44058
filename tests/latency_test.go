package tests

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// latencyBuckets are the bucket names LATENCY HISTOGRAM may report (Redis
// 7's: 1024 ns times a power of two, as its histogram's highest equivalent
// value in whole microseconds), up to half a second.
var latencyBuckets = map[string]bool{
	"1": true, "2": true, "4": true, "8": true, "16": true, "33": true, "66": true, "132": true,
	"264": true, "528": true, "1056": true, "2113": true, "4227": true, "8454": true, "16908": true,
	"33816": true, "67633": true, "135266": true, "270532": true, "541065": true,
}

// checkHistogram checks one command's entry of LATENCY HISTOGRAM: calls,
// and cumulative counts growing by bucket to the calls.
func checkHistogram(t *testing.T, name string, entry Reply, calls int64) {
	t.Helper()
	if entry.Kind != KindMap && entry.Kind != KindArray || len(entry.Elems) != 4 ||
		entry.Elems[0].Str != "calls" || entry.Elems[2].Str != "histogram_usec" {
		t.Fatalf("%s: entry %s, want calls and histogram_usec", name, entry)
	}
	if got := entry.Elems[1].Int; got != calls {
		t.Errorf("%s: calls %d, want %d", name, got, calls)
	}
	buckets := entry.Elems[3].Elems
	if len(buckets) == 0 || len(buckets)%2 != 0 {
		t.Fatalf("%s: buckets %s", name, entry.Elems[3])
	}
	var prevBucket, prev int64 = -1, 0
	for i := 0; i < len(buckets); i += 2 {
		b, n := buckets[i], buckets[i+1]
		if b.Kind != KindInt || !latencyBuckets[strings.TrimSpace(b.String()[len("(integer) "):])] || b.Int <= prevBucket {
			t.Errorf("%s: bucket %s after %d: not one of Redis's, or out of order", name, b, prevBucket)
		}
		if n.Int <= prev {
			t.Errorf("%s: bucket %d counts %d after %d: cumulative counts must grow", name, b.Int, n.Int, prev)
		}
		prevBucket, prev = b.Int, n.Int
	}
	if prev != calls {
		t.Errorf("%s: last bucket counts %d, want every call (%d)", name, prev, calls)
	}
}

// histogramEntries maps LATENCY HISTOGRAM's reply by command name.
func histogramEntries(t *testing.T, r Reply) (names []string, entries map[string]Reply) {
	t.Helper()
	if r.Kind != KindMap && r.Kind != KindArray || len(r.Elems)%2 != 0 {
		t.Fatalf("LATENCY HISTOGRAM: %s", r)
	}
	entries = map[string]Reply{}
	for i := 0; i < len(r.Elems); i += 2 {
		names = append(names, r.Elems[i].Str)
		entries[r.Elems[i].Str] = r.Elems[i+1]
	}
	return names, entries
}

// latency-tracking (Redis 7's default yes) keeps a histogram of every
// command and subcommand: LATENCY HISTOGRAM's map in RESP2 and RESP3,
// the commands asked for (a container gives its subcommands), INFO
// latencystats' percentiles, CONFIG RESETSTAT and latency-tracking no.
func TestLatencyHistogram(t *testing.T) {
	srv := StartServer(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			c := srv.Raw(t)
			if proto == "3" {
				c.Do("HELLO", "3")
			}
			mustOK(t, c.Do("CONFIG", "SET", "latency-tracking", "yes"), "CONFIG SET")
			mustOK(t, c.Do("CONFIG", "RESETSTAT"), "RESETSTAT")
			for range 5 {
				mustOK(t, c.Do("SET", "k", "v"), "SET")
			}
			c.Do("GET", "k")
			c.Do("CONFIG", "GET", "maxmemory")
			c.Do("CONFIG", "SET", "nosuch", "1") // fails, still counted (as Redis)
			r := c.Do("LATENCY", "HISTOGRAM", "set", "CONFIG", "nosuch", "set")
			wantKind := KindArray
			if proto == "3" {
				wantKind = KindMap
			}
			if r.Kind != wantKind {
				t.Fatalf("LATENCY HISTOGRAM over RESP%s: %s", proto, r)
			}
			names, entries := histogramEntries(t, r)
			// Subcommands of a container in the server's order; the rest as asked.
			if len(names) != 5 || names[0] != "set" || names[4] != "set" ||
				strings.Join(slices.Sorted(slices.Values(names[1:4])), " ") != "config|get config|resetstat config|set" {
				t.Fatalf("LATENCY HISTOGRAM set CONFIG nosuch set: commands %q", names)
			}
			checkHistogram(t, "set", entries["set"], 5)
			checkHistogram(t, "config|get", entries["config|get"], 1)
			checkHistogram(t, "config|set", entries["config|set"], 1) // the failed one
			if entries["set"].Elems[3].Kind != wantKind {
				t.Errorf("histogram_usec is %s", entries["set"].Elems[3])
			}

			_, all := histogramEntries(t, c.Do("LATENCY", "HISTOGRAM"))
			for _, name := range []string{"set", "get", "config|get", "config|set", "config|resetstat"} {
				if _, ok := all[name]; !ok {
					t.Errorf("LATENCY HISTOGRAM has no %s: %v", name, all)
				}
			}
			checkHistogram(t, "get", all["get"], 1)
			if r := c.Do("LATENCY", "HISTOGRAM", "nosuch", "blpop"); len(r.Elems) != 0 {
				t.Errorf("LATENCY HISTOGRAM of commands without calls: %s", r)
			}

			info := c.Do("INFO", "latencystats").Str
			line := regexp.MustCompile(`latency_percentiles_usec_set:p50=[0-9]+\.[0-9]{3},p99=[0-9]+\.[0-9]{3},p99\.9=[0-9]+\.[0-9]{3}\r\n`)
			if !strings.Contains(info, "# Latencystats\r\n") || !line.MatchString(info) ||
				!strings.Contains(info, "latency_percentiles_usec_config|get:p50=") {
				t.Errorf("INFO latencystats:\n%s", info)
			}
			mustOK(t, c.Do("CONFIG", "SET", "latency-tracking-info-percentiles", "0 99.99 100"), "CONFIG SET")
			info = c.Do("INFO", "latencystats").Str
			if !regexp.MustCompile(`latency_percentiles_usec_set:p0=[0-9.]+,p99\.99=[0-9.]+,p100=[0-9.]+\r\n`).MatchString(info) {
				t.Errorf("INFO latencystats at 0 99.99 100:\n%s", info)
			}
			mustOK(t, c.Do("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"), "CONFIG SET")

			// Off: nothing recorded, INFO latencystats empty, the histograms kept.
			mustOK(t, c.Do("CONFIG", "SET", "latency-tracking", "no"), "CONFIG SET")
			c.Do("SET", "k", "v")
			_, entries = histogramEntries(t, c.Do("LATENCY", "HISTOGRAM", "set"))
			checkHistogram(t, "set while off", entries["set"], 5)
			if info := c.Do("INFO", "latencystats").Str; strings.Contains(info, "latency_percentiles") {
				t.Errorf("INFO latencystats with latency-tracking no:\n%s", info)
			}
			mustOK(t, c.Do("CONFIG", "SET", "latency-tracking", "yes"), "CONFIG SET")
			mustOK(t, c.Do("CONFIG", "RESETSTAT"), "RESETSTAT")
			if _, entries := histogramEntries(t, c.Do("LATENCY", "HISTOGRAM", "set")); len(entries) != 0 {
				t.Errorf("after CONFIG RESETSTAT: %v", entries)
			}
		})
	}
}

// INFO alone is INFO default, as Redis: titled sections, without
// commandstats and latencystats, which INFO all and INFO everything add.
func TestInfoSections(t *testing.T) {
	c := StartServer(t).Raw(t)
	c.Do("SET", "k", "v")
	titles := func(args ...string) string {
		var out []string
		for _, line := range strings.Split(c.Do(append([]string{"INFO"}, args...)...).Str, "\r\n") {
			if strings.HasPrefix(line, "# ") {
				out = append(out, line[2:])
			}
		}
		return strings.Join(out, " ")
	}
	for _, args := range [][]string{nil, {"default"}} {
		got := titles(args...)
		if !strings.HasPrefix(got, "Server Clients Memory Persistence Stats Replication CPU") ||
			!strings.HasSuffix(got, "Keyspace") || strings.Contains(got, "Commandstats") || strings.Contains(got, "Latencystats") {
			t.Errorf("INFO %v sections: %s", args, got)
		}
	}
	for _, args := range [][]string{{"all"}, {"everything"}, {"commandstats", "latencystats"}} {
		if got := titles(args...); !strings.Contains(got, "Commandstats") || !strings.Contains(got, "Latencystats") {
			t.Errorf("INFO %v sections: %s", args, got)
		}
	}
}

// TestLatencyHistogramInner: the commands EXEC and a script run count in
// their own histograms (and commandstats), as Redis 7.0 counts them.
func TestLatencyHistogramInner(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	expectReply(t, c.Do("CONFIG", "RESETSTAT"), "OK")
	c.Do("MULTI")
	c.Do("GET", "{t}k")
	c.Do("INCR", "{t}n")
	expectReply(t, c.Do("EXEC"), "(array)\n  (nil)\n  (integer) 1")
	expectReply(t, c.Do("EVAL", "redis.call('get', KEYS[1]); return redis.call('incr', KEYS[2])", "2", "{t}k", "{t}n"), "(integer) 2")
	_, entries := histogramEntries(t, c.Do("LATENCY", "HISTOGRAM", "get", "incr"))
	checkHistogram(t, "get", entries["get"], 2)
	checkHistogram(t, "incr", entries["incr"], 2)
	info := c.Do("INFO", "commandstats").Str
	for _, want := range []string{"cmdstat_get:calls=2,", "cmdstat_incr:calls=2,"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO commandstats lacks %q:\n%s", want, info)
		}
	}
}
