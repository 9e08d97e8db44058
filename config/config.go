package config

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/notify"
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
	// ConfigFile is the configuration file the server started with, an
	// absolute path ("" = none): CONFIG REWRITE's, INFO's config_file.
	ConfigFile string
	// ReplicaOf is "<host> <port>" of the master to follow from the start
	// ("" = none; repl_replica.go).
	ReplicaOf string
	// Cluster mode (package cluster): --cluster_mode ("", emulated, yes),
	// the node's id ("" = random), the address it announces, the extra
	// admin listener (0 = none), and etcd's endpoints and the cluster's
	// name there ("" = no etcd).
	ClusterMode, ClusterNodeID, ClusterAnnounceIP string
	AdminPort                                     int
	ClusterEtcd, ClusterName                      string
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
	// MetricsPort serves /metrics over HTTP on its own port (0: none);
	// PrimaryPortHTTP answers an HTTP request on the main port too
	// (--primary_port_http_enabled, Dragonfly's; package metrics).
	MetricsPort     int
	PrimaryPortHTTP bool
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
	// LatencyTracking: per-command latency histograms are recorded
	// (latency-tracking, package latency), read on every command.
	LatencyTracking atomic.Bool
	// BusyReplyThreshold (lua-time-limit), in ms: past it a running
	// script is busy (BUSY replies, SCRIPT KILL); read without mu.
	BusyReplyThreshold atomic.Int64
	// Events publishes keyspace notifications (notify-keyspace-events),
	// read on every write without mu; the server sets its Publish.
	Events notify.Notifier
	// Evict: maxmemory-policy, maxmemory-samples, lfu-log-factor,
	// lfu-decay-time, maxmemory-eviction-tenacity (package evict), read
	// by the shards on every access without mu.
	Evict *evict.Settings
	// Limits: client-output-buffer-limit, client-query-buffer-limit
	// (clientbuf.go), read without mu.
	Limits ClientLimits

	// stored holds the parameters that mean nothing to dfly, by name (an
	// alias's under its parameter's), once CONFIG SET changed them.
	stored map[string]string

	Mu sync.RWMutex
}

type atomic64 = atomic.Int64

// SavePoints reports whether a save schedule is configured (save).
func (c *Config) SavePoints() bool {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return c.Save != ""
}

// Timing reports whether commands are timed: SLOWLOG, the latency
// monitor or latency tracking is on.
func (c *Config) Timing() bool {
	return c.SlowlogSlowerThan.Load() >= 0 || c.LatencyThreshold.Load() > 0 || c.LatencyTracking.Load()
}

// Value is parameter name's value as CONFIG GET shows it ("" for none).
func (c *Config) Value(name string) string {
	p := byName[name]
	if p == nil {
		return ""
	}
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return c.value(p)
}

// Percentiles are latency-tracking-info-percentiles' numbers.
func (c *Config) Percentiles() []float64 {
	var out []float64
	for _, f := range strings.Fields(c.Value("latency-tracking-info-percentiles")) {
		if x, err := strconv.ParseFloat(f, 64); err == nil {
			out = append(out, x)
		}
	}
	return out
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
		ReplTimeout: 60, Evict: evict.NewSettings(), PrimaryPortHTTP: true,
	}
	c.Limits.setDefaults()
	c.SlowlogSlowerThan.Store(10000)
	c.SlowlogMaxLen.Store(128)
	c.LatencyTracking.Store(true)
	c.BusyReplyThreshold.Store(5000)
	// Redis's default is no; dfly's tests, benchmarks and tools send DEBUG
	// over loopback (debug/doc.go).
	c.store("enable-debug-command", "local")
	return c
}

// params is every CONFIG parameter: Redis 7.0's (params.txt), bound to
// dfly's meaning where it has one (bound.go), then dfly's own (extras).
var params, byName = func() ([]param, map[string]*param) {
	ps, err := parseParams(paramsText)
	if err != nil {
		panic(err)
	}
	ps = append(ps, extras...)
	m := make(map[string]*param, len(ps))
	for i := range ps {
		p := &ps[i]
		if b, ok := bindings[p.key()]; ok {
			p.check, p.get, p.set = b.check, b.get, b.set
		}
		m[p.name] = p
	}
	return ps, m
}()

// key is where a parameter's value is stored: an alias shares its
// parameter's.
func (p *param) key() string {
	if p.alias != "" {
		return p.alias
	}
	return p.name
}

// value is the parameter's value as CONFIG GET shows it; Mu held.
func (c *Config) value(p *param) string {
	if p.get != nil {
		return p.get(c)
	}
	if v, ok := c.stored[p.key()]; ok {
		return v
	}
	return p.def
}

// apply sets p to v, checked first; Mu held.
func (c *Config) apply(p *param, v string) error {
	v, err := p.normalize(v)
	if err != nil {
		return err
	}
	if p.set != nil {
		return p.set(c, v)
	}
	c.store(p.key(), v)
	return nil
}

func (c *Config) store(name, v string) {
	if c.stored == nil {
		c.stored = map[string]string{}
	}
	c.stored[name] = v
}

// Get is CONFIG GET's reply: each parameter one of patterns names (Redis's
// glob, case-insensitive), once, as name and value. A pattern without glob
// characters is a name, echoed as given (as Redis).
func (c *Config) Get(patterns [][]byte) []string {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	var out []string
	seen := map[*param]bool{}
	for _, pat := range patterns {
		if !strings.ContainsAny(string(pat), "[*?") {
			if p := byName[strings.ToLower(string(pat))]; p != nil && !seen[p] {
				seen[p] = true
				out = append(out, string(pat), c.value(p))
			}
			continue
		}
		for i := range params {
			p := &params[i]
			if !seen[p] && glob.Match(pat, []byte(p.name), true) {
				seen[p] = true
				out = append(out, p.name, c.value(p))
			}
		}
	}
	return out
}

// Set is CONFIG SET of name, value pairs: all apply or none (the values
// before are put back when one fails), with Redis 7.0's checks in its
// order (unknown names, immutable or protected ones, duplicates, then
// each value) and its error texts. It returns the error reply, "" when
// everything applied.
func (c *Config) Set(pairs []string) string {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	ps := make([]*param, len(pairs)/2)
	for i := range ps {
		given := pairs[2*i]
		p := byName[strings.ToLower(given)]
		if p == nil {
			return "ERR Unknown option or number of arguments for CONFIG SET - '" + given + "'"
		}
		failed := func(why string) string {
			return "ERR CONFIG SET failed (possibly related to argument '" + given + "') - " + why
		}
		switch {
		case p.immutable:
			return failed("can't set immutable config")
		case p.protected && c.value(byName["enable-protected-configs"]) == "no":
			return failed("can't set protected config")
		}
		for _, q := range ps[:i] {
			if q == p {
				return failed("duplicate parameter")
			}
		}
		ps[i] = p
	}
	old := make([]string, len(ps))
	for i, p := range ps {
		old[i] = c.value(p)
	}
	for i, p := range ps {
		if err := c.apply(p, pairs[2*i+1]); err != nil {
			for j := i; j >= 0; j-- {
				c.apply(ps[j], old[j]) // a value shown is a value taken back
			}
			return "ERR CONFIG SET failed (possibly related to argument '" + p.name + "') - " + err.Error()
		}
	}
	return ""
}

// SetAtStart applies a parameter given at start (a flag), immutable ones
// included.
func (c *Config) SetAtStart(name, value string) error {
	p := byName[strings.ToLower(name)]
	if p == nil {
		return fmt.Errorf("unknown parameter %q", name)
	}
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.apply(p, value)
}

// Names lists every parameter CONFIG GET knows, aliases included.
func Names() []string {
	out := make([]string, len(params))
	for i := range params {
		out[i] = params[i].name
	}
	return out
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
