package server

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/lock"
	"github.com/dfly/dfly/master"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Replica side of replication (issue 8): REPLICAOF/SLAVEOF, ROLE and INFO
// for a replica, refusing client writes (replica-read-only yes), and the
// link to the master (package replica) applying its stream into the shards
// through replica.ShardApplier, which sees the server as replicaHost.
//
// While a replica, every shard is in shard.ReplicaMode: no active expiry,
// and lazy expiry hides logically expired keys from clients without
// deleting them; the master's DELs delete them.

// replicaLink is a master link and the master it follows.
type replicaLink struct {
	client replLink // *replica.Link (native, or Redis protocol through its fallback)
	host   string
	port   int
}

// replicaState is the server's replica side; Server.replica.
type replicaState struct {
	// mu serializes REPLICAOF changes.
	mu sync.Mutex
	// link is the current master link, nil when not a replica. INFO and
	// ROLE (on event loops) read it without mu, which REPLICAOF holds
	// while a link stops.
	link atomic.Pointer[replicaLink]
	// active: this server is a replica (writes refused, ROLE "slave").
	active atomic.Bool
	// loading: a full sync is replacing the dataset; clients get LOADING.
	loading atomic.Bool
	// final is the position of a link stopped for a shutdown's save.
	final atomic.Pointer[replpos.Position]
}

const (
	errReadonlyReplica = "READONLY You can't write against a read only replica."
	errLoading         = "LOADING Redis is loading the dataset in memory"
)

func init() { command.Register("server", replicaCommands) }

func replicaCommands() []*command.Command {
	f := command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale
	return []*command.Command{
		{Name: "replicaof", Arity: 3, Flags: f, InfoFlags: command.FlagNoAsyncLoading, Multi: viaCoord(cmdReplicaOf)},
		{Name: "slaveof", Arity: 3, Flags: f, InfoFlags: command.FlagNoAsyncLoading, Multi: viaCoord(cmdReplicaOf)},
		{Name: "failover", Arity: -1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagStale, Local: viaConn(cmdFailover)},
		{Name: "role", Arity: 1, Flags: command.FlagNoScript | command.FlagLoading | command.FlagStale | command.FlagFast, ACLCats: "admin dangerous",
			Local: viaConn(func(c *Conn, _ [][]byte, w *resp.Writer) { c.srv.writeRole(w) })},
	}
}

// isReplica reports whether this server replicates from a master.
func (s *Server) isReplica() bool { return s.replica.active.Load() }

// replicaRefusal is the error a client command gets: LOADING while a load
// (start-up, a full sync) replaces the dataset, READONLY for writes on a
// replica; "" when it may run. Called for every command (Conn.prepare).
// EVAL and EVALSHA run, as on Redis 7 (where they are not write
// commands): a script's writes fail instead (luaVM.call).
func (s *Server) replicaRefusal(cmd *command.Command, args [][]byte) string {
	if cmd.Flags&command.FlagLoading == 0 && (s.persist.Loading() || s.replica.loading.Load()) ||
		(cmd.Name == "replicaof" || cmd.Name == "slaveof") && s.persist.LoadingAtStart() { // as Redis's
		return errLoading
	}
	if !s.replica.active.Load() {
		return ""
	}
	if cmd.Flags&command.FlagWrite != 0 && cmd.Name != "eval" && cmd.Name != "evalsha" && cmd.Name != "fcall" &&
		(cmd.Name != "function" || len(args) < 2 || functionWrites(args[1])) {
		return errReadonlyReplica
	}
	return ""
}

// cmdReplicaOf is REPLICAOF host port | NO ONE. It runs on a coordinator
// goroutine: stopping a link waits for its last apply.
func cmdReplicaOf(x *Coord) {
	s := x.Srv
	host, portArg := string(x.Args[1]), string(x.Args[2])
	if strings.EqualFold(host, "no") && strings.EqualFold(portArg, "one") {
		// Within EXEC (Sentinel's failover transaction) the promotion's cut
		// is a step of EXEC's transaction, which holds every shard.
		var t *tx.Tx
		if x.InTx {
			t = x.Tx()
		}
		s.replicaNoOne("user request from REPLICAOF NO ONE", t)
		x.W.SimpleString("OK")
		return
	}
	port, err := strconv.Atoi(portArg)
	if err != nil || port < 0 || port > 65535 {
		x.W.Error("ERR Invalid master port")
		return
	}
	if !s.replicaOf(host, port) {
		x.W.SimpleString("OK Already connected to specified master")
		return
	}
	x.W.SimpleString("OK")
}

// replicaOf starts following host:port; false when it already does.
func (s *Server) replicaOf(host string, port int) bool {
	return s.replicaOfHistory(host, port, "", 0, nil)
}

// replicaOfHistory is replicaOf offering a master's history (replid,
// offset: a master that fails over offers its own; own: the same in its
// dfly form) when the server is not a replica yet; one that is offers the
// history it reached.
func (s *Server) replicaOfHistory(host string, port int, replid string, offset int64, own *master.History) bool {
	rs := &s.replica
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return s.replicaOfLocked(host, port, replid, offset, own)
}

// followMaster makes the replica follow host:port instead of the master
// of link from, which turned out to be a replica of host:port and serves
// none (replica.Link.redirected) — unless from is no longer the link (a
// REPLICAOF came first).
func (s *Server) followMaster(from replLink, host string, port int) {
	rs := &s.replica
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.link.Load()
	if l == nil || l.client != from || l.host == host && l.port == port {
		return
	}
	s.log.Noticef("MASTER %s:%d is a replica of %s:%d and serves no replicas: following %s:%d",
		l.host, l.port, host, port, host, port)
	s.replicaOfLocked(host, port, "", 0, nil)
}

// replicaOfLocked is replicaOfHistory with replica.mu held.
func (s *Server) replicaOfLocked(host string, port int, replid string, offset int64, own *master.History) bool {
	rs := &s.replica
	offer := own
	if l := rs.link.Load(); l != nil {
		if l.host == host && l.port == port {
			return false
		}
		// Switching masters: offer the history reached so far (psync2);
		// a master that does not share it answers FULLRESYNC.
		replid, offset = l.client.Stop()
		rs.link.Store(nil)
		offer = nil
		if fl, ok := l.client.(*replica.Link); ok {
			offer = fl.History()
			if !fl.Fallback() {
				// A flow link's position counts LSNs, not a Redis-protocol
				// offset: a Redis master taking it as one resends what the
				// replica applied already (a list pushed twice). The dfly
				// history is what it offers.
				replid, offset = "", 0
			}
		}
	} else if replid == "" && own == nil && !rs.active.Load() {
		// A master whose data is still its file's: the file's position.
		pos := s.persist.LoadedPosition()
		replid, offset, offer = pos.ReplID, pos.Offset, master.FlowHistory(pos)
	}
	// Its own history ends here: from now on its data follows the new
	// master's.
	s.master.ClearHandover()
	s.OnEachShard(func(sh *shard.Shard) { sh.ReplicaMode = true })
	wasMaster := !rs.active.Load()
	rs.active.Store(true)
	if wasMaster {
		s.dropReplicas()
	}
	s.log.Noticef("Connecting to MASTER %s:%d", host, port)
	listenPort := s.cfg.Port // or replica-announce-port: slaveN's port= on the master
	if p, _ := strconv.Atoi(s.cfg.Value("replica-announce-port")); p > 0 {
		listenPort = p
	}
	s.cfg.Mu.RLock()
	user, pass := s.cfg.MasterUser, s.cfg.MasterAuth
	timeout := time.Duration(s.cfg.ReplTimeout) * time.Second
	s.cfg.Mu.RUnlock()
	client := replica.StartLink((*replicaHost)(s), replica.Config{
		Addr:        net.JoinHostPort(host, strconv.Itoa(port)),
		ListenPort:  listenPort,
		AnnounceIP:  s.cfg.Value("replica-announce-ip"),
		Applier:     replica.NewShardApplier((*replicaHost)(s)),
		Logf:        s.log.Noticef,
		MaxBulkLen:  s.cfg.ProtoMaxBulk,
		MaxQueryBuf: int(s.cfg.QueryBufMax),
		User:        user,
		Password:    pass,
		ReplID:      replid,
		Offset:      offset,
		Timeout:     timeout,
	}, offer)
	rs.link.Store(&replicaLink{client: client, host: host, port: port})
	return true
}

// dropReplicas disconnects this server's own replicas, dfly and
// Redis-protocol ones, when it becomes a replica itself (as Redis does).
// It serves none as a replica (no chained replication): they reconnect
// and are refused (chainedRefusal), which names its master; dfly replicas
// follow that master (replica.Link.redirected), Redis-protocol ones show
// their link down. Left attached, they would keep a link that looks up
// and receives nothing of what the new master writes.
func (s *Server) dropReplicas() {
	if n := s.master.DropReplicas(); n > 0 {
		s.log.Noticef("Disconnected %d replica connections: a replica serves no replicas", n)
	}
}

// replicaNoOne promotes the replica: the link stops after its last apply,
// the data stays, writes are accepted and keys expire again. why is for
// the log; t is the transaction the promotion's cut runs in, nil for one
// of its own (master.StartHandover).
func (s *Server) replicaNoOne(why string, t *tx.Tx) {
	rs := &s.replica
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.link.Load()
	if l == nil {
		return
	}
	replid, offset := l.client.Stop()
	fl, native := l.client.(*replica.Link)
	var hist *master.History
	if native {
		hist = fl.History()
	}
	if hist != nil {
		// All of a dfly master's history up to a place: servers whose
		// data is at the same place continue from here (DFLY HANDOVER).
		s.master.StartHandover(hist, t)
	} else if native && fl.Fallback() && replid != "" {
		// A Redis-protocol history: this server continues it, so the
		// master's other replicas (and, after a FAILOVER, the old master)
		// can PSYNC here with replid2. The feed records from the
		// promotion on, before any client may write: a partial sync then
		// misses nothing written since.
		s.master.Promote(replid, offset)
		s.master.StartFeed(t)
	}
	rs.link.Store(nil)
	rs.loading.Store(false)
	lock.Promote() // this server's grants outrank every grant the old master could still make
	s.OnEachShard(func(sh *shard.Shard) { sh.ReplicaMode, sh.MasterApply = false, false })
	rs.active.Store(false)
	s.log.Noticef("MASTER MODE enabled (%s)", why)
}

// stopLinkForSave stops a replica's link before a shutdown's save, so the
// file keeps exactly the position its data is at (persistHost.PositionCut);
// resume follows the master again from there when the shutdown does not
// happen.
func (s *Server) stopLinkForSave() (resume func()) {
	rs := &s.replica
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.link.Load()
	if l == nil {
		return func() {}
	}
	pos := &replpos.Position{}
	replid, offset := l.client.Stop()
	var own *master.History
	if fl, ok := l.client.(*replica.Link); ok {
		if fl.Fallback() {
			pos.ReplID, pos.Offset = replid, offset
		} else if own = fl.History(); own != nil {
			pos.FlowID, pos.LSNs = own.ReplID, own.LSNs
		}
	}
	rs.link.Store(nil)
	rs.final.Store(pos)
	return func() {
		rs.final.Store(nil)
		s.replicaOfHistory(l.host, l.port, pos.ReplID, pos.Offset, own)
	}
}

// flushForSync starts a full sync: every database emptied and the shards
// in replica mode (they expire nothing themselves), in one step holding
// every shard, and the function libraries dropped.
func (s *Server) flushForSync() {
	t := tx.New(s.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		sh.ReplicaMode = true
		for _, db := range sh.DBs {
			db.Flush()
		}
	})
	s.flushFunctions()
}

// replLink is a replica's link to its master, native or Redis-protocol.
type replLink interface {
	Stop() (replid string, offset int64)
	Status() replica.Status
}

// replicaHost is the Server as a replica.Link and its appliers see it
// (replica.Host, replica.ApplyHost).
type replicaHost Server

func (h *replicaHost) NewApplier() replica.Applier { return replica.NewShardApplier(h) }

func (h *replicaHost) Server() command.Server { return (*Server)(h) }

// NewClient is the connection an applier's commands run for: the master's
// user, no socket.
func (h *replicaHost) NewClient() command.Client {
	s := (*Server)(h)
	c := &Conn{srv: s, proto: 2, loop: -1, authed: true, gone: make(chan struct{}), user: acl.Master}
	c.info.user = acl.Master
	c.ID = s.nextConnID.Add(1)
	c.protoShared.Store(2)
	return c
}

func (h *replicaHost) Coord(c command.Client, x command.Coord) *command.Coord {
	inner := &Coord{Coord: x, Srv: (*Server)(h), Conn: c.(*Conn)}
	return inner.bind()
}

func (h *replicaHost) RunLocal(c command.Client, cmd *command.Command, args [][]byte, w *resp.Writer) {
	runLocal(cmd, c.(*Conn), args, w)
}

func (h *replicaHost) CountCall(sid int, cmd *command.Command) {
	(*Server)(h).countShardCall(sid, cmd, nil, 0)
}

func (h *replicaHost) BeginLoad(r io.Reader, size int64) (io.Reader, func()) {
	end := h.persist.BeginLoad(size, 0)
	return h.persist.Progress(r), end
}

func (h *replicaHost) Tier() replica.Tier {
	if h.tiered == nil {
		return nil
	}
	return (*replicaTier)(h)
}

func (h *replicaHost) Noticef(format string, args ...any) { h.log.Noticef(format, args...) }

func (h *replicaHost) Warnf(format string, args ...any) { h.log.Warnf(format, args...) }

func (h *replicaHost) NewLoader(pending *sync.WaitGroup) *rdbvalue.Loader {
	return (*Server)(h).replicaLoader(pending)
}

func (h *replicaHost) FlushForSync() { (*Server)(h).flushForSync() }

func (h *replicaHost) SetLoading(loading bool) {
	h.replica.loading.Store(loading)
	if !loading {
		h.aof.Resync() // a full sync's data is in no AOF file yet
	}
}

func (h *replicaHost) Follow(link *replica.Link, host string, port int) {
	(*Server)(h).followMaster(link, host, port)
}

// applyLoadInflight bounds the decoded RDB batches queued per shard.
const applyLoadInflight = 8

// replicaLoader is a Loader of a master's baseline: its batches go to the
// shards asynchronously, at most applyLoadInflight per shard at a time
// (pending counts those not yet applied), and it loads keys this server's
// clock considers expired (Redis does too): the master may still write
// them before its DEL arrives.
func (s *Server) replicaLoader(pending *sync.WaitGroup) *rdbvalue.Loader {
	inflight := make([]chan struct{}, len(s.shards))
	for i := range inflight {
		inflight[i] = make(chan struct{}, applyLoadInflight)
	}
	free := make(chan []rdbvalue.Item, (applyLoadInflight+1)*len(s.shards))
	l := s.persist.NewLoader(func(sid int, items []rdbvalue.Item) {
		inflight[sid] <- struct{}{}
		pending.Add(1)
		s.shards[sid].Send(shard.Func(func(sh *shard.Shard) {
			rdbvalue.Apply(sh, items)
			rdbvalue.Recycle(free, items)
			<-inflight[sid]
			pending.Done()
		}))
	})
	l.Free = free
	l.KeepExpired()
	return l
}

// replicaTier is tiered storage as an applier sees it (tiered_coord.go).
type replicaTier Server

// Preload: the offloaded values that the commands of a multi-shard step
// read are loaded into memory first and pinned until unpin (tierPins), the
// applier's goroutine waiting, so the shards find them in memory under the
// step's locks. A failed read is tried again (tierRetry) until it
// succeeds, as in an apply batch (replica/apply.go).
func (t *replicaTier) Preload(cmds []replica.Cmd) (unpin func()) {
	p := &tierPins{srv: (*Server)(t)}
	for _, c := range cmds {
		if c.Cmd.Local == nil {
			p.add(c.DB, c.Cmd, c.Args)
		}
	}
	if p.keys == nil {
		return nil
	}
	for retries := 1; !p.load(); retries++ {
		time.Sleep(tierRetry(retries))
	}
	return p.unpin
}

func (t *replicaTier) Load(s *shard.Shard, c *replica.Cmd, done func(failed bool)) bool {
	ts, ok := s.Tier().(*offload.Shard)
	return ok && tierApplyLoad(ts, s, c.Cmd, c.DB, c.Args, done)
}

func (t *replicaTier) NoLoad(s *shard.Shard, c *replica.Cmd) bool {
	return tierNoLoad(s, c.Cmd, c.Args)
}

func (t *replicaTier) Retry(retries int) time.Duration { return tierRetry(retries) }

// replicaStatus is the link's state, ok=false when not a replica.
func (s *Server) replicaStatus() (st replica.Status, host string, port int, ok bool) {
	l := s.replica.link.Load()
	if l == nil {
		return st, "", 0, false
	}
	return l.client.Status(), l.host, l.port, true
}

// ParseReplicaOf parses the replicaof setting, "<host> <port>".
func ParseReplicaOf(v string) (host string, port int, err error) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return "", 0, errors.New(`want "<host> <port>"`)
	}
	port, err = strconv.Atoi(f[1])
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, errors.New("invalid master port")
	}
	return f[0], port, nil
}

// StartReplicaOf makes the server a replica of --replicaof's master as
// soon as it serves; nothing when the flag is unset.
func (s *Server) StartReplicaOf() {
	host, port, err := ParseReplicaOf(s.cfg.ReplicaOf)
	if err != nil {
		return
	}
	go func() {
		select {
		case <-s.ready: // and loaded: the file's position is offered
			s.replicaOf(host, port)
		case <-s.done:
		}
	}()
}

// configRewrite is CONFIG REWRITE: the configuration file gets the current
// values (config.Rewrite), and replicaof this server's replication state,
// so a restarted server comes back as what Sentinel made it.
func (s *Server) configRewrite(w *resp.Writer) {
	path := s.cfg.ConfigFile
	if path == "" {
		w.Error("ERR The server is running without a config file")
		return
	}
	state := map[string]string{"replicaof": ""}
	s.replica.mu.Lock()
	if l := s.replica.link.Load(); l != nil {
		state["replicaof"] = l.host + " " + strconv.Itoa(l.port)
	}
	s.replica.mu.Unlock()
	if err := s.cfg.Rewrite(path, state); err != nil {
		s.log.Warnf("CONFIG REWRITE failed: %v", err)
		w.Error("ERR Rewriting config file: " + err.Error())
		return
	}
	s.log.Noticef("CONFIG REWRITE executed with success.")
	w.SimpleString("OK")
}
