package config

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/persist"
)

// Config is the server's configuration: flags at start, CONFIG SET later.
type Config struct {
	Port   int
	Bind   string
	Shards int
	// Loops is the number of event loops (0: GOMAXPROCS at start).
	Loops       int
	Requirepass string
	// ACLFile keeps the ACL users (ACL SAVE, ACL LOAD, loaded at start).
	ACLFile      string
	MaxClients   int
	Dir          string
	DBFilename   string
	Databases    int
	MaxMemory    int64
	LogFile      string
	LogLevel     string
	ProtoMaxBulk int64
	QueryBufMax  int64
	// ProtectedMode refuses non-loopback clients when no password is set.
	ProtectedMode bool
	// DBFormat is the snapshot format SAVE writes: "rdb" or "dfly"
	// (persist_dfly.go).
	DBFormat string
	// MasterUser and MasterAuth authenticate a replica to its master
	// (masteruser, masterauth; repl_replica.go).
	MasterUser, MasterAuth string
	// ReplicaOf is "<host> <port>" of the master to follow from the start
	// ("" = none; repl_replica.go).
	ReplicaOf string
	// Save is the BGSAVE schedule, "<seconds> <changes> ..." ("" = none;
	// persist_schedule.go).
	Save string
	// Tiered storage (tiered.go): backing files PREFIX-NNNN ("" = off),
	// the smallest value offloaded, the share of maxmemory kept free by
	// offloading, and a cap on each file (0 = none).
	TieredPrefix           string
	TieredMinValueSize     int
	TieredOffloadThreshold float64
	TieredMaxFileSize      int64
	// SerializationMaxChunk bounds one piece of a big value in a snapshot
	// (--serialization_max_chunk_size, snapshot/).
	SerializationMaxChunk int64
	// PointInTime selects PIT snapshots for replication full syncs
	// (non-PIT when false; backups are always PIT).
	PointInTime bool
	// SnapshotReference, for tests: every BGSAVE also writes the dataset
	// at its cut to this RDB file, synchronously, in the cut's own step.
	SnapshotReference string
	// SnapshotStep is a snapshot's work per step (--snapshot_step).
	SnapshotStep time.Duration
	// Replication (package master): each shard's journal backlog in bytes
	// (the stream backlog for PSYNC holds this times the shard count) and
	// how long the backlog outlives the last replica. How far a replica
	// may fall behind is client-output-buffer-limit's replica class
	// (limits, SetReplicaBufferLimit).
	ReplBacklogSize int64
	ReplBacklogTTL  time.Duration
	// ReplTimeout is Redis's repl-timeout in seconds: a replica whose
	// master sent nothing (not even a heartbeat) for this long drops the
	// link and reconnects.
	ReplTimeout int

	// SLOWLOG's settings (slowlog.go), read on every command without mu,
	// and the latency monitor's threshold in ms (latency.go; 0: off).
	SlowlogSlowerThan, SlowlogMaxLen atomic.Int64
	LatencyThreshold                 atomic.Int64
	// Limits: client-output-buffer-limit, client-query-buffer-limit
	// (clientbuf.go), read without mu.
	Limits ClientLimits

	Mu sync.RWMutex
}

// SavePoints reports whether a save schedule is configured (save).
func (c *Config) SavePoints() bool {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return c.Save != ""
}

// Timing reports whether commands are timed: SLOWLOG or the latency
// monitor is on.
func (c *Config) Timing() bool {
	return c.SlowlogSlowerThan.Load() >= 0 || c.LatencyThreshold.Load() > 0
}

// Default has Redis's defaults where Redis has one.
func Default() *Config {
	c := &Config{
		Port: 6379, Bind: "127.0.0.1", MaxClients: 10000, Dir: ".", DBFilename: "dump.rdb",
		Databases: 16, LogLevel: "notice", ProtoMaxBulk: 512 << 20, QueryBufMax: 1 << 30,
		ProtectedMode: true, DBFormat: "rdb",
		TieredMinValueSize: 64, TieredOffloadThreshold: 0.5,
		SerializationMaxChunk: 64 << 10, PointInTime: true, SnapshotStep: 100 * time.Microsecond,
		ReplBacklogSize: 1 << 20, ReplBacklogTTL: time.Hour,
		ReplTimeout: 60,
	}
	c.Limits.setDefaults()
	c.SlowlogSlowerThan.Store(10000)
	c.SlowlogMaxLen.Store(128)
	return c
}

// Get is CONFIG GET's reply: each parameter matching one of patterns
// (Redis's glob, case-insensitive), once, as name and value.
func (c *Config) Get(patterns [][]byte) []string {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	var out []string
	seen := map[string]bool{}
	for _, pat := range patterns {
		for _, p := range params {
			if !seen[p.name] && glob.Match(pat, []byte(p.name), true) {
				seen[p.name] = true
				out = append(out, p.name, p.get(c))
			}
		}
	}
	return out
}

// Set is CONFIG SET of one parameter, with the caller holding Mu: the
// error reply, "" when it applied.
func (c *Config) Set(given, value string) string {
	name := strings.ToLower(given)
	var p *param
	for j := range params {
		if params[j].name == name {
			p = &params[j]
		}
	}
	if p == nil {
		return "ERR Unknown option or number of arguments for CONFIG SET - '" + given + "'"
	}
	if p.set == nil {
		return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config"
	}
	if err := p.set(c, value); err != nil {
		return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error()
	}
	return ""
}

// param is one CONFIG GET/SET parameter.
type param struct {
	name string
	get  func(c *Config) string
	set  func(c *Config, v string) error // nil: read-only at run time
}

func intParam(name string, p func(c *Config) *int, min int) param {
	return param{name,
		func(c *Config) string { return strconv.Itoa(*p(c)) },
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			*p(c) = n
			return nil
		}}
}

func memParam(name string, p func(c *Config) *int64) param {
	return param{name,
		func(c *Config) string { return strconv.FormatInt(*p(c), 10) },
		func(c *Config, v string) error {
			n, err := ParseMemory(v)
			if err != nil {
				return err
			}
			*p(c) = n
			return nil
		}}
}

func strParam(name string, p func(c *Config) *string, settable bool) param {
	pr := param{name: name, get: func(c *Config) string { return *p(c) }}
	if settable {
		pr.set = func(c *Config, v string) error { *p(c) = v; return nil }
	}
	return pr
}

func fixed(name, value string) param {
	return param{name: name, get: func(*Config) string { return value }}
}

var params = []param{
	intParam("port", func(c *Config) *int { return &c.Port }, 0),
	strParam("bind", func(c *Config) *string { return &c.Bind }, false),
	strParam("requirepass", func(c *Config) *string { return &c.Requirepass }, true),
	strParam("aclfile", func(c *Config) *string { return &c.ACLFile }, false),
	intParam("maxclients", func(c *Config) *int { return &c.MaxClients }, 1),
	strParam("dir", func(c *Config) *string { return &c.Dir }, true),
	strParam("dbfilename", func(c *Config) *string { return &c.DBFilename }, true),
	{name: "databases", get: func(c *Config) string { return strconv.Itoa(c.Databases) }},
	memParam("maxmemory", func(c *Config) *int64 { return &c.MaxMemory }),
	memParam("proto-max-bulk-len", func(c *Config) *int64 { return &c.ProtoMaxBulk }),
	{name: "client-query-buffer-limit", get: func(c *Config) string { return strconv.FormatInt(c.Limits.Query.Load(), 10) },
		set: (*Config).SetClientQueryBufferLimit},
	{name: "client-output-buffer-limit", get: (*Config).clientOutputBufferLimit, set: (*Config).SetClientOutputBufferLimit},
	strParam("logfile", func(c *Config) *string { return &c.LogFile }, false),
	{name: "loglevel", get: func(c *Config) string { return c.LogLevel }, set: func(c *Config, v string) error {
		switch v {
		case "debug", "verbose", "notice", "warning", "nothing":
			c.LogLevel = v
			return nil
		}
		return fmt.Errorf("argument(s) must be one of the following: debug, verbose, notice, warning, nothing")
	}},
	{name: "protected-mode", get: func(c *Config) string { return YesNo(c.ProtectedMode) }, set: func(c *Config, v string) error {
		b, err := ParseYesNo(v)
		c.ProtectedMode = b
		return err
	}},
	{name: "slowlog-log-slower-than", get: func(c *Config) string { return strconv.FormatInt(c.SlowlogSlowerThan.Load(), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			c.SlowlogSlowerThan.Store(n)
			return nil
		}},
	{name: "latency-monitor-threshold", get: func(c *Config) string { return strconv.FormatInt(c.LatencyThreshold.Load(), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			if n < 0 {
				return fmt.Errorf("argument must be between 0 and 9223372036854775807 inclusive")
			}
			c.LatencyThreshold.Store(n)
			return nil
		}},
	fixed("latency-tracking", "no"), // per-command histograms: not kept (latency.go)
	{name: "slowlog-max-len", get: func(c *Config) string { return strconv.FormatInt(c.SlowlogMaxLen.Load(), 10) },
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			c.SlowlogMaxLen.Store(n)
			return nil
		}},
	{name: "shards", get: func(c *Config) string { return strconv.Itoa(c.Shards) }},
	fixed("appendonly", "no"),
	{name: "save", get: func(c *Config) string { return c.Save }, set: func(c *Config, v string) error {
		if _, err := persist.ParseSave(v); err != nil {
			return err
		}
		c.Save = strings.Join(strings.Fields(v), " ")
		return nil
	}},
	{name: "dbformat", get: func(c *Config) string { return c.DBFormat }, set: func(c *Config, v string) error {
		if v != "rdb" && v != "dfly" {
			return fmt.Errorf("argument must be 'rdb' or 'dfly'")
		}
		c.DBFormat = v
		return nil
	}},
	{name: "serialization_max_chunk_size", get: func(c *Config) string { return strconv.FormatInt(c.SerializationMaxChunk, 10) },
		set: func(c *Config, v string) error {
			n, err := ParseMemory(v)
			if err != nil || n < 1024 || n > 64<<20 {
				return fmt.Errorf("argument must be a size from 1kb to 64mb")
			}
			c.SerializationMaxChunk = n
			return nil
		}},
	fixed("maxmemory-policy", "noeviction"),
	strParam("tiered_prefix", func(c *Config) *string { return &c.TieredPrefix }, false),
	{name: "tiered_min_value_size", get: func(c *Config) string { return strconv.Itoa(c.TieredMinValueSize) }},
	{name: "tiered_offload_threshold", get: func(c *Config) string {
		return strconv.FormatFloat(c.TieredOffloadThreshold, 'f', -1, 64)
	}},
	fixed("replica-read-only", "yes"), // issue 8: replicas always refuse client writes
	strParam("masterauth", func(c *Config) *string { return &c.MasterAuth }, true),
	strParam("masteruser", func(c *Config) *string { return &c.MasterUser }, true),
	fixed("slave-read-only", "yes"),
	intParam("repl-timeout", func(c *Config) *int { return &c.ReplTimeout }, 1),
	fixed("timeout", "0"),
}

// YesNo is how CONFIG GET shows a boolean.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ParseYesNo reads a boolean as CONFIG SET takes it.
func ParseYesNo(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, fmt.Errorf("argument must be 'yes' or 'no'")
}

// ParseMemory parses Redis memory sizes: 100, 1k, 1kb, 5mb, 2gb (k = 1000,
// kb = 1024, as Redis's memtoull).
func ParseMemory(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("argument must be a memory value")
	}
	return n * mul, nil
}
