package config

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/types/hash"
	"github.com/dfly/dfly/types/list"
	"github.com/dfly/dfly/types/set"
	"github.com/dfly/dfly/types/zset"
)

// binding is what a parameter means to dfly: its special syntax (check),
// and where its value lives (get, set; set receives the checked form).
type binding struct {
	check func(v string) (string, error)
	get   func(c *Config) string
	set   func(c *Config, v string) error
}

// bindings are the parameters of params.txt that mean something to dfly,
// and the special syntaxes; an alias follows its parameter's.
var bindings = map[string]binding{
	"port":         intField(func(c *Config) *int { return &c.Port }),
	"bind":         strField(func(c *Config) *string { return &c.Bind }),
	"requirepass":  strField(func(c *Config) *string { return &c.Requirepass }), // the server applies it to the default user
	"aclfile":      strField(func(c *Config) *string { return &c.ACLFile }),
	"maxclients":   intField(func(c *Config) *int { return &c.MaxClients }),
	"dir":          strField(func(c *Config) *string { return &c.Dir }),
	"dbfilename":   strField(func(c *Config) *string { return &c.DBFilename }),
	"databases":    intField(func(c *Config) *int { return &c.Databases }),
	"logfile":      strField(func(c *Config) *string { return &c.LogFile }),
	"loglevel":     strField(func(c *Config) *string { return &c.LogLevel }),
	"masterauth":   strField(func(c *Config) *string { return &c.MasterAuth }),
	"masteruser":   strField(func(c *Config) *string { return &c.MasterUser }),
	"repl-timeout": intField(func(c *Config) *int { return &c.ReplTimeout }),
	"replicaof":    {get: func(c *Config) string { return c.ReplicaOf }, set: func(c *Config, v string) error { c.ReplicaOf = v; return nil }},
	"maxmemory": {
		// Shown as given (up to 2^64-1, as Redis), applied up to 2^63-1.
		get: func(c *Config) string {
			if v, ok := c.stored["maxmemory"]; ok {
				if n, _ := strconv.ParseUint(v, 10, 64); int64(min(n, math.MaxInt64)) == c.MaxMemory {
					return v
				}
			}
			return strconv.FormatInt(c.MaxMemory, 10)
		},
		set: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 64)
			c.MaxMemory = int64(min(n, math.MaxInt64))
			c.store("maxmemory", v)
			return err
		}},
	"maxmemory-clients": {
		get: func(c *Config) string {
			if n := c.Limits.Memory.Load(); n < 0 {
				return strconv.FormatInt(-n, 10) + "%"
			} else {
				return strconv.FormatInt(n, 10)
			}
		},
		set: func(c *Config, v string) error { // the checked form: "10%" or bytes
			pct, isPct := strings.CutSuffix(v, "%")
			n, err := strconv.ParseInt(pct, 10, 64)
			if isPct {
				n = -n
			}
			c.Limits.Memory.Store(n)
			return err
		}},
	"proto-max-bulk-len": int64Field(func(c *Config) *int64 { return &c.ProtoMaxBulk }),
	"protected-mode": {get: func(c *Config) string { return YesNo(c.ProtectedMode) },
		set: func(c *Config, v string) error { c.ProtectedMode = v == "yes"; return nil }},
	"client-query-buffer-limit": {get: func(c *Config) string { return strconv.FormatInt(c.Limits.Query.Load(), 10) },
		set: (*Config).SetClientQueryBufferLimit},
	"client-output-buffer-limit": {get: (*Config).clientOutputBufferLimit, set: (*Config).SetClientOutputBufferLimit},
	"slowlog-log-slower-than":    atomicField(func(c *Config) *atomic64 { return &c.SlowlogSlowerThan }),
	"slowlog-max-len":            atomicField(func(c *Config) *atomic64 { return &c.SlowlogMaxLen }),
	"latency-monitor-threshold":  atomicField(func(c *Config) *atomic64 { return &c.LatencyThreshold }),
	"latency-tracking": {get: func(c *Config) string { return YesNo(c.LatencyTracking.Load()) },
		set: func(c *Config, v string) error { c.LatencyTracking.Store(v == "yes"); return nil }},
	// notify-keyspace-events: parsed from the letters given, not the form
	// shown, which hides n behind A (notify.Class.String).
	"notify-keyspace-events": {get: func(c *Config) string { return c.Events.Classes().String() },
		set: func(c *Config, v string) error {
			classes, err := notify.Parse(v)
			if err == nil {
				c.Events.SetClasses(classes)
			}
			return err
		}},
	"maxmemory-policy": {get: func(c *Config) string { return c.Evict.Policy().String() },
		check: func(v string) (string, error) { // Redis's eight, and dfly's allkeys-tinylfu
			p, err := evict.ParsePolicy(v)
			return p.String(), err
		},
		set: func(c *Config, v string) error {
			p, err := evict.ParsePolicy(v)
			if err == nil {
				c.Evict.SetPolicy(p)
			}
			return err
		}},
	"maxmemory-samples":           atomicField(func(c *Config) *atomic64 { return &c.Evict.Samples }),
	"lfu-log-factor":              atomicField(func(c *Config) *atomic64 { return &c.Evict.LogFactor }),
	"lfu-decay-time":              atomicField(func(c *Config) *atomic64 { return &c.Evict.DecayTime }),
	"maxmemory-eviction-tenacity": atomicField(func(c *Config) *atomic64 { return &c.Evict.Tenacity }),
	"busy-reply-threshold":        atomicField(func(c *Config) *atomic64 { return &c.BusyReplyThreshold }),
	"save": {
		check: func(v string) (string, error) {
			if _, err := persist.ParseSave(v); err != nil {
				return "", errors.New("Invalid save parameters")
			}
			return strings.Join(strings.Fields(v), " "), nil
		},
		get: func(c *Config) string { return c.Save },
		set: func(c *Config, v string) error { c.Save = v; return nil }},

	// The encodings' thresholds, read by types/* on every write.
	"hash-max-listpack-entries": threshold(hash.MaxListpackEntries, hash.SetMaxListpackEntries),
	"hash-max-listpack-value":   threshold(hash.MaxListpackValue, hash.SetMaxListpackValue),
	"zset-max-listpack-entries": threshold(zset.MaxListpackEntries, zset.SetMaxListpackEntries),
	"zset-max-listpack-value":   threshold(zset.MaxListpackValue, zset.SetMaxListpackValue),
	"set-max-intset-entries":    threshold(set.MaxIntsetEntries, set.SetMaxIntsetEntries),
	"list-max-listpack-size":    threshold(list.Fill, list.SetFill),
	"list-compress-depth":       threshold(list.CompressDepth, list.SetCompressDepth),

	// Numbers Redis adjusts as it applies them, shown adjusted.
	"hz":                clampInt(1, 500),
	"repl-backlog-size": clampInt(16<<10, math.MaxInt64),

	// Syntaxes of their own, values only stored.
	"latency-tracking-info-percentiles": {check: checkPercentiles},
	"oom-score-adj-values":              {check: checkOOMScoreAdj},
	"proc-title-template":               {check: checkProcTitle},
	"cluster-announce-hostname":         {check: checkHostname},
}

// extras are dfly's own parameters, after Redis's.
var extras = []param{
	{name: "shards", kind: kindSpecial, immutable: true, get: func(c *Config) string { return strconv.Itoa(c.Shards) }},
	{name: "dbformat", kind: kindSpecial, get: func(c *Config) string { return c.DBFormat }, set: func(c *Config, v string) error {
		if v != "rdb" && v != "dfly" {
			return errors.New("argument must be 'rdb' or 'dfly'")
		}
		c.DBFormat = v
		return nil
	}},
	{name: "serialization_max_chunk_size", kind: kindSpecial,
		get: func(c *Config) string { return strconv.FormatInt(c.SerializationMaxChunk, 10) },
		set: func(c *Config, v string) error {
			n, err := ParseMemory(v)
			if err != nil || n < 1024 || n > 64<<20 {
				return errors.New("argument must be a size from 1kb to 64mb")
			}
			c.SerializationMaxChunk = n
			return nil
		}},
	{name: "tiered_prefix", kind: kindSpecial, immutable: true, get: func(c *Config) string { return c.TieredPrefix }},
	{name: "tiered_min_value_size", kind: kindSpecial, immutable: true, get: func(c *Config) string { return strconv.Itoa(c.TieredMinValueSize) }},
	{name: "tiered_offload_threshold", kind: kindSpecial, immutable: true, get: func(c *Config) string {
		return strconv.FormatFloat(c.TieredOffloadThreshold, 'f', -1, 64)
	}},
}

func clampInt(lo, hi int64) binding {
	return binding{check: func(v string) (string, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		return strconv.FormatInt(min(max(n, lo), hi), 10), err
	}}
}

func strField(f func(c *Config) *string) binding {
	return binding{get: func(c *Config) string { return *f(c) }, set: func(c *Config, v string) error { *f(c) = v; return nil }}
}

// intField and the others receive values their type in params.txt has
// already checked and bounded.
func intField(f func(c *Config) *int) binding {
	return binding{get: func(c *Config) string { return strconv.Itoa(*f(c)) },
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			*f(c) = n
			return err
		}}
}

func int64Field(f func(c *Config) *int64) binding {
	return binding{get: func(c *Config) string { return strconv.FormatInt(*f(c), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 64)
			*f(c) = int64(min(n, math.MaxInt64))
			return err
		}}
}

func atomicField(f func(c *Config) *atomic64) binding {
	return binding{get: func(c *Config) string { return strconv.FormatInt(f(c).Load(), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			f(c).Store(n)
			return err
		}}
}

// threshold binds a process-wide limit of types/*: one server per process.
func threshold(load func() int64, store func(int64)) binding {
	return binding{get: func(*Config) string { return strconv.FormatInt(load(), 10) },
		set: func(_ *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			store(n)
			return err
		}}
}

// checkPercentiles reads latency-tracking-info-percentiles: numbers
// 0..100, one space apart, shown as C's %f without trailing zeros.
func checkPercentiles(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var out []string
	for _, f := range strings.Split(v, " ") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || strings.ContainsAny(f, "_xXpP") {
			return "", errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if x < 0 || x > 100 {
			return "", errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		s := strconv.FormatFloat(x, 'f', 6, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		out = append(out, s)
	}
	return strings.Join(out, " "), nil
}

// checkOOMScoreAdj reads oom-score-adj-values: three integers -2000..2000.
func checkOOMScoreAdj(v string) (string, error) {
	f := strings.Split(v, " ")
	if len(f) != 3 {
		return "", errors.New("wrong number of arguments")
	}
	for _, x := range f {
		n, err := strconv.Atoi(x)
		if err != nil || n < -2000 || n > 2000 {
			return "", errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
	}
	return v, nil
}

// checkProcTitle reads proc-title-template: known {variables} only, and
// something left once the ones that may be empty are.
func checkProcTitle(v string) (string, error) {
	bad := errors.New("template format is invalid or contains unknown variables")
	rest := ""
	for s := v; s != ""; {
		open := strings.IndexAny(s, "{}")
		if open < 0 {
			rest += s
			break
		}
		if s[open] == '}' {
			return "", bad
		}
		rest += s[:open]
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return "", bad
		}
		switch s[open : open+end+1] {
		case "{title}", "{server-mode}", "{unixsocket}", "{config-file}":
		case "{listen-addr}", "{port}", "{tls-port}":
			rest += "x"
		default:
			return "", bad
		}
		s = s[open+end+1:]
	}
	if rest == "" {
		return "", bad
	}
	return v, nil
}

func checkHostname(v string) (string, error) {
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '.') {
			return "", errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return v, nil
}
