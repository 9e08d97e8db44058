package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // served only when DFLY_PPROF is set
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/dfly/dfly/atomicfile"
	"github.com/dfly/dfly/cluster"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/metrics"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/server"
	_ "github.com/dfly/dfly/txn" // TXN and KEYVERSION register themselves
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "cluster" {
		return runCluster(args[1:], os.Stdout, stderr) // cluster.go
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "dfly: %v\n", err)
		return 2
	}
	logOut := stderr
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "dfly: can't open the log file: %v\n", err)
			return 1
		}
		defer f.Close()
		logOut = f
	}
	log := server.NewLogger(logOut, cfg.LogLevel)
	if path := os.Getenv("DFLY_CPUPROFILE"); path != "" {
		// A development aid: profile the whole run, written at shutdown.
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	if addr := os.Getenv("DFLY_PPROF"); addr != "" {
		// A development aid: /debug/pprof (profiles, execution traces) on addr.
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
	tuneGC(cfg)
	srv := server.New(cfg, log)
	if err := srv.LoadACLFile(); err != nil {
		log.Warnf("Aborting startup because of ACL errors: %v", err)
		fmt.Fprintf(stderr, "dfly: %v\n", err)
		return 1
	}
	if cfg.ClusterEtcd != "" {
		if err := watchEtcd(srv, cfg.ClusterEtcd, cfg.ClusterName, cfg.ClusterAnnounceIP, cfg.Port, log); err != nil {
			fmt.Fprintf(stderr, "dfly: %v\n", err)
			return 1
		}
	}
	var loadFailed atomic.Bool
	srv.LoadOnStart(func(err error) { // listen first, load after, as Redis
		if err != nil {
			log.Warnf("Fatal error loading the DB: %v. Exiting.", err)
			fmt.Fprintf(stderr, "dfly: %v\n", err)
			loadFailed.Store(true)
			srv.Shutdown()
			return
		}
		srv.StartReplicaOf() // --replicaof: follow a master once loaded, as Redis
	})
	srv.StartSaveSchedule()
	if cfg.MetricsPort > 0 {
		var addrs []string
		for _, b := range strings.Fields(cfg.Bind) {
			addrs = append(addrs, net.JoinHostPort(strings.TrimPrefix(b, "-"), strconv.Itoa(cfg.MetricsPort)))
		}
		stop, err := metrics.Listen(addrs, srv.MetricsHandler())
		if err != nil {
			fmt.Fprintf(stderr, "dfly: --metrics_port: %v\n", err)
			return 1
		}
		defer stop()
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		log.Warnf("Received %s, scheduling shutdown...", s)
		srv.ShutdownOnSignal()
	}()
	err = srv.Serve()
	atomicfile.RemoveAll() // a background save's temporary file goes, as Redis's child's
	if err != nil {
		log.Warnf("%v", err)
		return 1
	}
	if loadFailed.Load() {
		return 1
	}
	log.Warnf("dfly is now ready to exit, bye bye...")
	return 0
}

// tuneGC gives the collector a room for garbage that does not grow with
// the dataset (reclaim.Headroom) unless the user set GOGC, and caps the
// heap at maxmemory (plus headroom) when it is set (reclaim.LimitHeap).
func tuneGC(cfg *config.Config) {
	if os.Getenv("GOGC") == "" {
		if cfg.TieredPrefix != "" && cfg.MaxMemory > 0 {
			// Tiered storage keeps the live heap near half of maxmemory
			// (package offload): a heap goal of twice that fits it.
			debug.SetGCPercent(100)
		} else {
			// Until the first cycle's live heap is known; then the
			// headroom sets it after each cycle (reclaim/hold.go).
			debug.SetGCPercent(reclaim.DefaultHeadroom.MaxPercent)
			reclaim.SetHeadroom(reclaim.DefaultHeadroom)
		}
	}
	reclaim.LimitHeap(cfg.MaxMemory, cfg.TieredPrefix != "")
}

func parseFlags(args []string, stderr io.Writer) (*config.Config, error) {
	cfg := config.Default()
	fs := flag.NewFlagSet("dfly", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.Port, "port", cfg.Port, "TCP port to listen on")
	fs.StringVar(&cfg.Bind, "bind", cfg.Bind, "addresses to listen on, space separated")
	// As in Dragonfly, --proactor_threads is the number of threads (event
	// loops) and the shard count follows it unless --shards (Dragonfly's
	// --num_shards) sets it; either alone defaults the other as below.
	fs.IntVar(&cfg.Shards, "shards", 0, "number of shards (default --proactor_threads, else GOMAXPROCS)")
	fs.IntVar(&cfg.Loops, "proactor_threads", 0, "number of threads (event loops; default GOMAXPROCS); also the shard count unless --shards is given")
	fs.StringVar(&cfg.Requirepass, "requirepass", "", "password of the default user")
	fs.StringVar(&cfg.ACLFile, "aclfile", "", "file of the ACL users: loaded at start, written by ACL SAVE, read by ACL LOAD")
	fs.StringVar(&cfg.MasterAuth, "masterauth", "", "password a replica authenticates to its master with")
	fs.StringVar(&cfg.MasterUser, "masteruser", "", "user a replica authenticates to its master as")
	fs.Func("replicaof", `"<host> <port>": start as a replica of that master`, func(v string) error {
		if _, _, err := server.ParseReplicaOf(v); err != nil {
			return err
		}
		cfg.ReplicaOf = v
		return nil
	})
	fs.Func("cluster_mode", "cluster mode: emulated (one node owning every slot) or yes (a topology from DFLYCLUSTER CONFIG or etcd)", func(v string) error {
		mode, err := cluster.ParseMode(v)
		cfg.ClusterMode = v
		if err == nil && mode != cluster.Off {
			err = cfg.SetAtStart("cluster-enabled", "yes") // CONFIG GET cluster-enabled
		}
		return err
	})
	fs.StringVar(&cfg.ClusterNodeID, "cluster_node_id", "", "this node's id in the cluster topology (default: random at each start)")
	fs.StringVar(&cfg.ClusterAnnounceIP, "cluster_announce_ip", "", "the address CLUSTER replies name this node by in emulated mode (default: the one the client connected to)")
	fs.IntVar(&cfg.AdminPort, "admin_port", 0, "an extra port to listen on, for administration (DFLYCLUSTER); 0 = none")
	fs.StringVar(&cfg.ClusterEtcd, "cluster_etcd", "", "etcd endpoints (comma separated) holding the cluster topology; with --cluster_mode=yes")
	fs.StringVar(&cfg.ClusterName, "cluster_name", "dfly", "the cluster's name: its document in etcd is /dfly/<name>/topology")
	fs.IntVar(&cfg.MaxClients, "maxclients", cfg.MaxClients, "maximum number of connected clients")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "working directory for snapshots")
	fs.StringVar(&cfg.DBFilename, "dbfilename", cfg.DBFilename, "snapshot file name")
	fs.IntVar(&cfg.Databases, "databases", cfg.Databases, "number of databases")
	fs.Func("maxmemory", "memory limit (bytes, or 100mb, 2gb ...; 0 = none)", func(v string) error {
		n, err := config.ParseMemory(v)
		cfg.MaxMemory = n
		return err
	})
	fs.Func("maxmemory_policy", "which keys go over maxmemory: noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl or dfly's allkeys-tinylfu (also --maxmemory-policy)", func(v string) error {
		return cfg.SetAtStart("maxmemory-policy", v)
	})
	fs.StringVar(&cfg.LogFile, "logfile", "", "log file (default: stderr)")
	fs.StringVar(&cfg.LogLevel, "loglevel", cfg.LogLevel, "debug, verbose, notice, warning or nothing")
	fs.Func("protected-mode", "refuse non-loopback clients when no password is set (yes|no)", func(v string) error {
		switch v {
		case "yes":
			cfg.ProtectedMode = true
		case "no":
			cfg.ProtectedMode = false
		default:
			return errors.New("must be yes or no")
		}
		return nil
	})
	fs.Func("dbformat", "snapshot format SAVE writes: rdb (one Redis file) or dfly (a file per shard)", func(v string) error {
		if v != "rdb" && v != "dfly" {
			return errors.New("must be rdb or dfly")
		}
		cfg.DBFormat = v
		return nil
	})
	fs.Func("save", `BGSAVE schedule "<seconds> <changes> ..." ("" = none)`, func(v string) error {
		if _, err := persist.ParseSave(v); err != nil {
			return err
		}
		cfg.Save = strings.Join(strings.Fields(v), " ")
		return nil
	})
	fs.Func("proto-max-bulk-len", "largest bulk string accepted (default 512mb)", func(v string) error {
		n, err := config.ParseMemory(v)
		cfg.ProtoMaxBulk = n
		return err
	})
	fs.StringVar(&cfg.TieredPrefix, "tiered_prefix", "", "tiered storage: backing files PREFIX-NNNN, one per shard (\"\" = off)")
	fs.IntVar(&cfg.TieredMinValueSize, "tiered_min_value_size", cfg.TieredMinValueSize, "tiered storage: smallest string value offloaded")
	fs.Float64Var(&cfg.TieredOffloadThreshold, "tiered_offload_threshold", cfg.TieredOffloadThreshold,
		"tiered storage: share of maxmemory kept free by offloading (0..1)")
	fs.Func("tiered_max_file_size", "tiered storage: cap on each backing file (0 = none)", func(v string) error {
		n, err := config.ParseMemory(v)
		cfg.TieredMaxFileSize = n
		return err
	})
	fs.Func("serialization_max_chunk_size", "largest piece of a big value in a snapshot (default 64kb; 1kb..64mb)", func(v string) error {
		n, err := config.ParseMemory(v)
		if err == nil && (n < 1024 || n > 64<<20) {
			err = errors.New("must be from 1kb to 64mb")
		}
		cfg.SerializationMaxChunk = n
		return err
	})
	fs.StringVar(&cfg.SnapshotReference, "debug_snapshot_reference", "", "for tests: each BGSAVE also writes the dataset at its cut to this RDB file, stalling the cut")
	fs.DurationVar(&cfg.SnapshotStep, "snapshot_step", cfg.SnapshotStep, "work a snapshot does per step before the shard serves clients again")
	fs.IntVar(&cfg.MetricsPort, "metrics_port", 0, "serve Prometheus metrics over HTTP on this port too, /metrics (0 = not)")
	fs.BoolVar(&cfg.PrimaryPortHTTP, "primary_port_http_enabled", cfg.PrimaryPortHTTP, "answer an HTTP request on the main port (GET /metrics)")
	fs.BoolVar(&cfg.PointInTime, "point_in_time_snapshot", cfg.PointInTime, "replication full syncs send a point-in-time snapshot (false: non-PIT, the journal fills in)")
	fs.Func("repl_backlog_size", "replication backlog per shard (default 1mb; the PSYNC backlog is this times the shards)", func(v string) error {
		n, err := config.ParseMemory(v)
		cfg.ReplBacklogSize = n
		return err
	})
	fs.DurationVar(&cfg.ReplBacklogTTL, "repl_backlog_ttl", cfg.ReplBacklogTTL, "free the replication backlog after this long without replicas")
	fs.Func("repl_timeout", "seconds a replica waits for data or a heartbeat from its master before it reconnects, and a master for a dfly replica's ACKs (Redis's repl-timeout; default 60)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errors.New("must be a whole number of seconds, at least 1")
		}
		cfg.ReplTimeout = n
		return nil
	})
	fs.Func("repl_client_buffer_limit", "disconnect a replica whose unsent stream exceeds this (default 256mb; 0 = none): client-output-buffer-limit's replica hard limit", func(v string) error {
		n, err := config.ParseMemory(v)
		cfg.SetReplicaBufferLimit(n)
		return err
	})
	fs.Func("client-output-buffer-limit", `"<class> <hard> <soft> <seconds> ...": limits of unsent output per client class, normal, replica or pubsub, as Redis (default "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60")`, cfg.SetClientOutputBufferLimit)
	fs.Func("client-query-buffer-limit", "largest query buffer of a client (default 1gb; at least 1mb)", cfg.SetClientQueryBufferLimit)
	// Every other parameter of CONFIG GET/SET is a flag too, as Redis takes
	// them on its command line.
	for _, name := range config.Names() {
		if fs.Lookup(name) == nil {
			fs.Func(name, "CONFIG parameter "+name, func(v string) error { return cfg.SetAtStart(name, v) })
		}
	}
	// As redis-server's, a first argument that is not a flag is the
	// configuration file; its directives come before the flags, which win.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, err := filepath.Abs(args[0])
		if err != nil {
			return nil, err
		}
		ds, err := config.ReadFile(path)
		if err != nil {
			return nil, err
		}
		fileArgs, err := config.FlagArgs(path, ds, func(name string) bool { return fs.Lookup(name) != nil })
		if err != nil {
			return nil, err
		}
		cfg.ConfigFile = path
		args = append(fileArgs, args[1:]...)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["proactor_threads"] && !set["shards"] {
		cfg.Shards = cfg.Loops
	}
	if !set["shards"] && !set["proactor_threads"] {
		cfg.Shards = runtime.GOMAXPROCS(0)
	}
	if !set["proactor_threads"] {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags are written --name value)", fs.Arg(0))
	}
	switch {
	case cfg.Port < 0 || cfg.Port > 65535:
		return nil, fmt.Errorf("invalid --port %d: must be 0..65535", cfg.Port)
	case cfg.Loops < 1 || cfg.Loops > 1024: // first: --shards may be its copy
		return nil, fmt.Errorf("invalid --proactor_threads %d: must be 1..1024", cfg.Loops)
	case cfg.Shards < 1 || cfg.Shards > 1024:
		return nil, fmt.Errorf("invalid --shards %d: must be 1..1024", cfg.Shards)
	case cfg.Databases < 1 || cfg.Databases > 1<<16:
		return nil, fmt.Errorf("invalid --databases %d: must be 1..65536", cfg.Databases)
	case cfg.MaxClients < 1:
		return nil, fmt.Errorf("invalid --maxclients %d: must be at least 1", cfg.MaxClients)
	case cfg.TieredMinValueSize < 1:
		return nil, fmt.Errorf("invalid --tiered_min_value_size %d: must be at least 1", cfg.TieredMinValueSize)
	case cfg.TieredOffloadThreshold < 0 || cfg.TieredOffloadThreshold > 1:
		return nil, fmt.Errorf("invalid --tiered_offload_threshold %v: must be 0..1", cfg.TieredOffloadThreshold)
	}
	if _, ok := server.LevelOf(cfg.LogLevel); !ok {
		return nil, fmt.Errorf("invalid --loglevel %q: must be debug, verbose, notice, warning or nothing", cfg.LogLevel)
	}
	return cfg, nil
}
