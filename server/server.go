package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/panjf2000/gnet/v2"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/aof"
	"github.com/dfly/dfly/cluster"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/latency"
	"github.com/dfly/dfly/master"
	"github.com/dfly/dfly/metrics"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tracking"
)

// Version is what INFO and HELLO report; redis_version stays 7.x so
// clients enable the features they probe for by version.
const (
	Version      = "0.1.0"
	RedisVersion = "7.2.0"
)

// Server is a running dfly instance.
type Server struct {
	// clientsCronOnce starts clientsCron (clientbuf.go).
	clientsCronOnce sync.Once
	gnet.BuiltinEventEngine

	cfg         *config.Config
	slow        slowlog
	latency     latency.Monitor               // latency.go
	tracker     *latency.Tracker              // latency.go: shards', loops', coordinators' recorders
	pause       pauseState                    // CLIENT PAUSE (pause.go)
	failover    failoverState                 // FAILOVER (failover.go)
	scriptEng   atomic.Pointer[script.Engine] // scripts()
	reclaim     reclaim.Reclaimer             // gives free heap memory back to the OS after a burst
	oom         atomic.Bool                   // used memory over maxmemory: denyoom commands refused (oom.go)
	evictBudget evict.Budget                  // each shard's share of the memory over maxmemory (oom.go)
	// noReplicas: fewer good replicas than min-replicas-to-write, writes refused (repl.go)
	noReplicas atomic.Bool
	shards     []*shard.Shard
	table      *command.Table
	log        *Logger
	eng        gnet.Engine
	runID      string
	start      time.Time
	// startupHeap is the heap in use once the server was built, before any
	// data (MEMORY STATS startup.allocated).
	startupHeap int64

	nextConnID atomic.Int64
	connsMu    sync.Mutex
	conns      map[int64]*Conn
	// stats
	totalConns     atomic.Int64
	rejectedConns  atomic.Int64
	blockedClients atomic.Int64
	cmdStats       []command.Counts // per shard, owned by its goroutine
	// published: per shard, INFO's part of it as of its last tick, for
	// metrics scrapes (metrics.go); httpConns serves the main port's HTTP.
	published   []atomic.Pointer[shardInfo]
	metricsHTTP http.Handler
	httpConns   *metrics.Endpoint
	acl         *acl.Users         // users (package acl)
	errors      command.ErrorStats // error replies (errorstats.go)
	traffic     trafficStats       // bytes and commands (traffic.go)
	// evalCoords: per shard, the coordinator of the script running inline
	// on it (cmdEvalShard), owned by its goroutine: one script at a time.
	evalCoords []Coord
	pubsub     *pubsub
	monitors   monitors
	tracking   *tracking.Registry
	persist    *persist.Engine  // SAVE, BGSAVE, loading (cmd_persist.go)
	aof        *aof.Manager     // the append-only file (aof.go)
	tiered     *offload.Tiering // tiered storage, nil when off (tiered.go)
	master     *master.Master   // master side of replication (cmd_master.go)
	replica    replicaState     // replica side of replication (repl_replica.go)
	cluster    *cluster.State   // cluster mode (cluster.go)

	// loops are the engine's event loops; shardLoop[i] is the loop that
	// owns shard i. Both are set once, before any command is served.
	loops     []gnet.EventLoop
	shardLoop []int
	// lentTo[i]: the loop shard i was last lent to (written by its owner).
	lentTo  []int
	wakers  []*loopWaker // per loop: yielded work (loops.go)
	inboxes []*loopInbox // per loop: shard messages (loops.go)
	lends   []*loopLend  // per loop: borrowed runs (borrow.go)
	// loopsReady is set after discovery; connections that send commands
	// before it wait in early and are woken then.
	loopsReady atomic.Bool
	// discoverStarted is touched only by gnet's ticker goroutine.
	discoverStarted bool
	earlyMu         sync.Mutex
	early           []gnet.Conn

	ready    chan struct{}
	stopping atomic.Bool
	stopOnce sync.Once
	done     chan struct{}
}

// New builds a server with its shards; Serve starts it.
func New(cfg *config.Config, log *Logger) *Server {
	if cfg.Shards <= 0 {
		cfg.Shards = runtime.GOMAXPROCS(0)
	}
	if cfg.Loops <= 0 {
		// Fixed now: snapshots add Ps for their background threads
		// (snapshot.BackgroundThread), which are not loops.
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if cfg.SnapshotStep > 0 {
		snapshot.SetStepBudget(cfg.SnapshotStep)
	}
	s := &Server{cfg: cfg, log: log, table: command.NewTable(), conns: make(map[int64]*Conn),
		ready: make(chan struct{}), done: make(chan struct{}), start: time.Now(), pubsub: newPubsub()}
	s.acl = acl.New(s.table, cfg.Requirepass)
	cfg.Events.Publish = func(ch, msg []byte) { s.pubsub.publish(ch, msg, subChannel) }
	var id [20]byte
	_, _ = rand.Read(id[:])
	s.runID = hex.EncodeToString(id[:])
	s.shards = make([]*shard.Shard, cfg.Shards)
	s.cmdStats = make([]command.Counts, cfg.Shards)
	s.published = make([]atomic.Pointer[shardInfo], cfg.Shards)
	s.metricsHTTP = metrics.Handler((*metricsSource)(s))
	s.httpConns = metrics.NewEndpoint(s.metricsHTTP)
	s.tracker = latency.NewTracker(cfg.Shards + cfg.Loops + 1)
	s.evalCoords = make([]Coord, cfg.Shards)
	for i := range s.shards {
		s.shards[i] = shard.New(i, cfg.Databases)
		s.shards[i].ExpiryHorizon = s.scriptsStart
		s.shards[i].ExpireCycle = s.expireCycle // latency.go
		s.shards[i].Notify = &cfg.Events
		s.shards[i].Evict = cfg.Evict
		s.shards[i].Publish = s.publish // metrics.go
	}
	s.setupTiered() // tiered.go
	s.persist = persist.New(s.shards, s.ShardOf, (*persistHost)(s), log, RedisVersion)
	s.aof = aof.New(cfg, s.shards, s.persist, func() replica.Applier { return replica.NewShardApplier((*replicaHost)(s)) }, log)
	s.persist.StartupLoad = s.aof.StartupLoad(s.persist.LoadOnStart)
	s.master = master.New(s.shards, (*masterHost)(s), log)
	s.installTracking()
	s.setupCluster() // cluster.go
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.startupHeap = int64(ms.HeapAlloc)
	return s
}

// countShardCall counts a call of cmd with args that ran ns nanoseconds on
// shard sid, on its goroutine.
func (s *Server) countShardCall(sid int, cmd *command.Command, args [][]byte, ns int64) {
	s.trackLatency(sid, cmd, args, ns)
	s.cmdStats[sid].Add(cmd, ns)
}

// ShardOf maps a key to its shard by a hash of the key, or of its {tag}.
func (s *Server) ShardOf(key []byte) int {
	if len(s.shards) == 1 {
		return 0
	}
	return int(xxhash.Sum64(cluster.HashTag(key)) % uint64(len(s.shards)))
}

// singleShard is command.SingleShard on this server.
func (s *Server) singleShard(cmd *command.Command, args [][]byte, scratch *[]int) int {
	return command.SingleShard(s, cmd, args, scratch)
}

// OnShard runs fn on shard sid and waits.
func (s *Server) OnShard(sid int, fn func(*shard.Shard)) {
	done := make(chan struct{})
	s.shards[sid].Send(shard.Func(func(sh *shard.Shard) { fn(sh); close(done) }))
	<-done
}

// OnEachShard runs fn on every shard in parallel and waits for all.
func (s *Server) OnEachShard(fn func(*shard.Shard)) {
	var wg sync.WaitGroup
	wg.Add(len(s.shards))
	for _, sh := range s.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) { fn(sh); wg.Done() }))
	}
	wg.Wait()
}

// Addrs are the listen addresses for the configured bind list and port.
func (s *Server) Addrs() []string {
	var addrs []string
	for _, b := range strings.Fields(s.cfg.Bind) {
		b = strings.TrimPrefix(b, "-")
		addrs = append(addrs, "tcp://"+net.JoinHostPort(b, strconv.Itoa(s.cfg.Port)))
		if s.cfg.AdminPort > 0 {
			addrs = append(addrs, "tcp://"+net.JoinHostPort(b, strconv.Itoa(s.cfg.AdminPort)))
		}
	}
	return addrs
}

// loopCount is the number of event loops the server runs.
func (s *Server) loopCount() int {
	return s.cfg.Loops
}

// Serve starts the shards and the event loops and blocks until Shutdown.
func (s *Server) Serve() error {
	defer func() {
		for _, sh := range s.shards {
			sh.Stop()
		}
		close(s.done)
	}()
	loops := s.loopCount()
	err := gnet.Rotate(s, s.Addrs(),
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(loops),
		gnet.WithReusePort(false),
		gnet.WithReuseAddr(true),
		gnet.WithLoadBalancing(gnet.LeastConnections),
		gnet.WithTicker(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithTCPKeepAlive(5*time.Minute),
		gnet.WithLogger(s.log.gnetLogger()),
	)
	if err != nil && !s.stopping.Load() {
		// gnet reports a failed bind obscurely ("setsockopt: bad file
		// descriptor"): name the address and the system's reason.
		for _, a := range s.Addrs() {
			a = strings.TrimPrefix(a, "tcp://")
			ln, lerr := net.Listen("tcp", a)
			if lerr != nil {
				return fmt.Errorf("server: could not listen on %s: %w", a, lerr)
			}
			ln.Close()
		}
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// startReclaim gives the heap's free memory back to the OS once a burst
// is over (package reclaim): an idle server falls back to what its data
// needs without MEMORY PURGE. Each release is logged (verbose).
func (s *Server) startReclaim() {
	s.reclaim.OnRelease = func(why reclaim.Reason, took time.Duration, bytes int64) {
		s.log.Verbosef("Returned %s of free memory to the OS (%s, %v)", humanBytes(bytes), why, took.Round(time.Millisecond))
	}
	go s.reclaim.Run(s.done)
	go s.watchMemory()
}

// Ready is closed once the server accepts connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// ShutdownOnSignal is SIGTERM's and SIGINT's shutdown: with save points
// configured it saves first, as Redis does (a failed save is logged; the
// server exits all the same: a signal has no client to answer).
func (s *Server) ShutdownOnSignal() {
	// loopsReady: the shards are attached to their loops (and this
	// goroutine sees it); a signal before that has nothing to save yet.
	if s.cfg.SavePoints() && s.loopsReady.Load() {
		_ = s.SaveBeforeShutdown()
	}
	s.Shutdown()
}

// Shutdown stops accepting, lets in-flight commands finish and write their
// replies (for up to a few seconds), then closes every connection.
func (s *Server) Shutdown() {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && s.busyConns() > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case <-s.ready:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.eng.Stop(ctx)
		default:
		}
		s.aof.Shutdown()
	})
}

// busyConns counts the connections with a command in flight, but for
// those parked at a pause (a shutdown's save holds writes: they wait for
// nothing).
func (s *Server) busyConns() int {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	n := 0
	for _, c := range s.conns {
		if c.busy.Load() && !c.parked.Load() {
			n++
		}
	}
	return n
}

// OnBoot records the engine.
func (s *Server) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	s.log.Noticef("dfly %s ready to accept connections on %s with %d shards", Version, strings.Join(s.Addrs(), ", "), len(s.shards))
	return gnet.None
}

// OnTick first fires once gnet has started its loops (the ticker goroutine
// is started after they are registered, which orders the discovery below
// after their creation); it then discovers the loops and attaches shards.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	if s.discoverStarted {
		return time.Hour, gnet.None
	}
	s.discoverStarted = true
	go func() {
		if err := s.discoverLoops(s.loopCount()); err != nil {
			s.log.Warnf("event loop discovery failed: %v", err)
			go s.Shutdown()
			return
		}
		s.loopsReady.Store(true)
		s.startSampler() // traffic.go
		s.startReclaim() // package reclaim: free memory back to the OS after a burst
		s.startTiered()  // tiered.go: offloading starts once shards have loops
		close(s.ready)
		s.earlyMu.Lock()
		for _, gc := range s.early {
			_ = gc.Wake(nil)
		}
		s.early = nil
		s.earlyMu.Unlock()
	}()
	return time.Hour, gnet.None
}

const protectedModeError = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// OnOpen admits a client, or refuses it with Redis's error.
func (s *Server) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	if s.stopping.Load() {
		return nil, gnet.Close
	}
	if gc.Context() != nil { // a loop probe enrolled by discoverLoops
		return nil, gnet.None
	}
	s.cfg.Mu.RLock()
	maxClients, protected, pass := s.cfg.MaxClients, s.cfg.ProtectedMode, s.cfg.Requirepass
	s.cfg.Mu.RUnlock()
	if protected && pass == "" && !isLoopback(gc.RemoteAddr()) {
		s.rejectedConns.Add(1)
		return []byte(protectedModeError), gnet.Close
	}
	s.connsMu.Lock()
	n := len(s.conns)
	s.connsMu.Unlock()
	if n >= maxClients {
		s.rejectedConns.Add(1)
		return []byte("-ERR max number of clients reached\r\n"), gnet.Close
	}
	c := newConn(s, gc)
	gc.SetContext(c)
	s.connsMu.Lock()
	s.conns[c.ID] = c
	s.connsMu.Unlock()
	s.totalConns.Add(1)
	return nil, gnet.None
}

func isLoopback(a net.Addr) bool {
	if a == nil {
		return true
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OnClose forgets the client. Work it dispatched still completes; its
// replies are dropped.
func (s *Server) OnClose(gc gnet.Conn, _ error) gnet.Action {
	if c, ok := gc.Context().(*Conn); ok {
		c.closed.Store(true)
		close(c.gone)
		c.dropSubscriptions()
		c.stopMonitor()
		c.stopTracking(true)
		if c.inflight.Load() == 0 {
			c.unwatch() // else the EXEC or WATCH in flight owns c.watch
		}
		s.connsMu.Lock()
		delete(s.conns, c.ID)
		s.connsMu.Unlock()
	}
	return gnet.None
}

// OnTraffic serves a client's input or the completion of its dispatched work.
func (s *Server) OnTraffic(gc gnet.Conn) gnet.Action {
	c, ok := gc.Context().(*Conn)
	if !ok {
		if _, probe := gc.Context().(loopProbe); probe {
			_, _ = gc.Discard(-1)
			if w := s.waker(gc.EventLoop()); w != nil && s.loopsReady.Load() {
				w.run()
			}
			return gnet.None
		}
		return gnet.Close
	}
	if c.loop < -1 {
		if !s.loopsReady.Load() {
			s.earlyMu.Lock()
			if !s.loopsReady.Load() {
				s.early = append(s.early, gc)
				s.earlyMu.Unlock()
				return gnet.None
			}
			s.earlyMu.Unlock()
		}
		c.loop = s.loopIndex(gc.EventLoop())
		if head, _ := gc.Peek(-1); s.cfg.PrimaryPortHTTP && metrics.IsHTTP(head) {
			return s.serveHTTP(c, gc) // the connection's first read only
		}
	}
	if c.loop >= 0 && s.lends != nil && s.inboxes[c.loop].lendMail.Load() {
		// A borrower on another loop waits for the answer to its ask (or
		// for a return): answer it now rather than after every connection
		// ready in this round of the loop. Between two connections' serves
		// the loop holds no borrowed shard and runs no borrowed run (both
		// live inside one serve), as when gnet drains the inbox between
		// rounds; scanInbox says why taking lend messages first keeps each
		// shard's order. Measured (dfly --shards 2, txbench -raw -P 8 -c 50
		// on CPU 1, random keys): an ask waited 33 us on average before;
		// 64-68k -> 74-93k EVAL/s.
		s.lends[c.loop].scanInbox()
	}
	return c.serve()
}

// Shards is command.Server's: every shard, by id.
func (s *Server) Shards() []*shard.Shard { return s.shards }

// Databases is command.Server's: --databases.
func (s *Server) Databases() int { return s.cfg.Databases }

// ProtoMaxBulk is command.Server's: proto-max-bulk-len.
func (s *Server) ProtoMaxBulk() int64 { return s.cfg.ProtoMaxBulk }

// Tiered is command.Server's: whether values may be offloaded.
func (s *Server) Tiered() bool { return s.tiered != nil }
