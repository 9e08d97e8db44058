package tests

// The replication checker (issue 36): a randomized differential test of
// replication, built so that a replica that drifts from its master cannot
// hide. Four clients, each with its own random source drawn from one
// printed seed, run a random mix of every type, every multi-key and
// blocking command, MULTI/EXEC and scripts (replcheck_gen_test.go), with
// TTLs of 1-300 ms and up to a second that expire during the run, lazily
// (read by later commands, cross-shard ones too) and by the active sweep,
// against a dfly master of 2 or 3 shards, PIT or not. Thousands of keys
// with long TTLs slow the sweep down, so that most short TTLs end in a
// lazy expiry. Two observers replicate independently: a dfly replica of
// another shard count and a real redis-server replica; a raw PSYNC
// connection records the master's stream (replcheck_stream_test.go).
// Sub-second TTLs stop a little before the load does; when every one has
// passed and the master has read every key once (their DELs go out), a
// digest of every key (type, content, exact expiry) and each database's
// DBSIZE must be the same on the master and on both replicas. A failure
// prints the seed, the first differing keys on each side and their history:
// the stream lines and the clients' commands naming them.
//
// Scenarios (one per run, drawn from its seed with the shard counts and
// PIT): the replicas synced before the load (synced); their full syncs
// during it (fullsync); the replicas killed in the middle of their full
// syncs and started again on the same port (restart); links cut twice
// during the load, the dfly replica's by a proxy and the redis-server's
// by CLIENT KILL TYPE master, each continuing with a partial sync
// (linkcut). TestReplCheckRedis (replcheck_redis_test.go) is the second
// mode, dfly against redis-server itself.
//
//	go test ./tests/ -run TestReplCheck                      # CI: 4 runs, one per scenario
//	go test ./tests/ -run TestReplCheck -replcheck.runs 200 -replcheck.duration 3s
//	DFLY_TEST_SEED=<run seed> go test ./tests/ -run 'TestReplCheck$' -replcheck.runs 1   # one run again
//	go test ./tests/ -run 'TestReplCheck$/fullsync-m3pit' -replcheck.runs 400 -replcheck.skip SWAPDB,EVAL
//
// The last narrows a failure down: subtests are named after their
// scenario, shards and PIT, and -replcheck.skip leaves kinds of step out.
// A replica whose DBSIZE is larger than its keys show holds keys it hides
// as expired; the report names them (rcFindHidden) with their history.
//
// A run's seed decides its scenario, shard counts and PIT, and every
// client's commands; which client's command lands first does not repeat.

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	replCheckRuns = flag.Int("replcheck.runs", 0,
		"runs (seeds) of TestReplCheck and TestReplCheckRedis; 0: the CI set (4 and 2, half with -race)")
	replCheckDuration = flag.Duration("replcheck.duration", 3*time.Second, "how long each run's load lasts")
	replCheckSkip     = flag.String("replcheck.skip", "", "kinds of step left out of the mix, comma-separated (SWAPDB,MULTI,EVAL,DB3 ...: rcCommands' names), to narrow a failure down")
)

// rcKeep is the mix's filter from -replcheck.skip.
func rcKeep(c rcCommand) bool {
	for _, name := range strings.Split(*replCheckSkip, ",") {
		if strings.EqualFold(strings.TrimSpace(name), c.name) {
			return false
		}
	}
	return true
}

const (
	rcClients = 4
	// rcShortTTLs is the longest TTL drawn while short ones are (pttl), a
	// margin for a command sent just before they stop.
	rcShortTTLs = time.Second + 250*time.Millisecond
	// rcStable: a replica whose digest has not changed for this long,
	// link up, has stopped moving.
	rcStable = 3 * time.Second
	// rcShowKeys is how many differing keys a failure shows in full.
	rcShowKeys = 5
	// rcHistory is how many lines of each key's history it shows.
	rcHistory = 25
)

type rcScenario int

const (
	rcSynced rcScenario = iota
	rcFullSync
	rcRestart
	rcLinkCut
)

var rcScenarioNames = [...]string{"synced", "fullsync", "restart", "linkcut"}

// rcConfig is one run of the checker.
type rcConfig struct {
	seed          uint64
	scenario      rcScenario
	masterShards  int
	replicaShards int
	pit           bool
}

// rcConfigFor draws a run from its seed. Four consecutive seeds from a
// multiple of four take every scenario and every combination of master
// shards (2, 3) and PIT, so the CI set covers them all; the dfly replica
// has another shard count (1 to 4), each of the three in the CI set.
func rcConfigFor(seed uint64) rcConfig {
	c := rcConfig{
		seed:         seed,
		scenario:     rcScenario(seed % 4),
		masterShards: 2 + int((seed+seed/4)%2),
		pit:          (seed/2+seed/4)%2 == 0,
	}
	var others []int
	for n := 1; n <= 4; n++ {
		if n != c.masterShards {
			others = append(others, n)
		}
	}
	c.replicaShards = others[(seed+seed/4)%uint64(len(others))]
	return c
}

func (c rcConfig) name() string {
	pit := "nonpit"
	if c.pit {
		pit = "pit"
	}
	return fmt.Sprintf("%s-m%d%s-r%d-seed%d", rcScenarioNames[c.scenario], c.masterShards, pit, c.replicaShards, c.seed)
}

func (c rcConfig) rerun() string {
	return fmt.Sprintf("DFLY_TEST_SEED=%d go test ./tests/ -run 'TestReplCheck$' -replcheck.runs 1 -replcheck.duration %v", c.seed, *replCheckDuration)
}

// replCheckRunCount is -replcheck.runs, or def (halved with -race).
func replCheckRunCount(def int) int {
	if *replCheckRuns > 0 {
		return *replCheckRuns
	}
	if raceBuild() {
		return max(1, def/2)
	}
	return def
}

func TestReplCheck(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("replicates from a dfly master; it runs with the dfly target only")
	}
	base := newSeed(t)
	// The CI set starts at a multiple of four (rcConfigFor).
	if *replCheckRuns == 0 {
		base -= base % 4
	}
	for i := 0; i < replCheckRunCount(4); i++ {
		cfg := rcConfigFor(base + uint64(i))
		t.Run(cfg.name(), func(t *testing.T) {
			t.Parallel()
			replCheck(t, cfg)
		})
	}
}

func replCheck(t *testing.T, cfg rcConfig) {
	d := *replCheckDuration
	t.Logf("seed %d: %s; rerun: %s", cfg.seed, cfg.name(), cfg.rerun())
	master := StartServer(t, "--shards", strconv.Itoa(cfg.masterShards),
		"--point_in_time_snapshot="+strconv.FormatBool(cfg.pit), "--repl_backlog_size", "64mb")
	mc := master.Raw(t)
	rcFill(t, mc, cfg.scenario == rcFullSync || cfg.scenario == rcRestart)
	rec := recordStream(t, master)
	obs := &rcObservers{master: master, cfg: cfg}
	mix := newRCMix(false, rcKeep)

	var load *rcLoad
	switch cfg.scenario {
	case rcSynced:
		obs.start(t)
		obs.waitUp(t)
		load = startRCLoad(t, master.Addr, cfg.seed, d, mix)
	case rcLinkCut:
		obs.start(t)
		obs.waitUp(t)
		load = startRCLoad(t, master.Addr, cfg.seed, d, mix)
		for i := 1; i <= 2; i++ {
			time.Sleep(time.Until(load.began.Add(d * time.Duration(i) / 3)))
			obs.cut(t)
			obs.waitUp(t)
		}
	case rcFullSync:
		load = startRCLoad(t, master.Addr, cfg.seed, d, mix)
		time.Sleep(d / 4)
		obs.start(t)
		obs.waitUp(t)
	case rcRestart:
		load = startRCLoad(t, master.Addr, cfg.seed, d, mix)
		time.Sleep(d / 5)
		obs.start(t)
		obs.restartMidSync(t, rand.New(rand.NewPCG(cfg.seed, 99)))
		obs.waitUp(t)
	}
	load.wait(t)
	rcSettle(t, mc, load)
	obs.checkSyncs(t, mc)
	rcConverge(t, cfg, mc, obs, rec, load)
}

// rcFill writes keys with long TTLs for the active sweep to walk
// through (it visits a few hundred keys a second and shard), so most
// short TTLs end in a lazy expiry; and, for the scenarios whose full
// syncs run under the load, keys without TTLs that make them last.
func rcFill(t *testing.T, mc *RawConn, big bool) {
	t.Helper()
	n, pop := 20000, 100000
	if raceBuild() {
		n, pop = 5000, 20000
	}
	for done := 0; done < n; {
		batch := min(1000, n-done)
		for i := 0; i < batch; i++ {
			mc.Send("SET", "fill:"+strconv.Itoa(done+i), "f", "EX", "3600")
		}
		for i := 0; i < batch; i++ {
			mustOK(t, mc.MustRead(), "fill")
		}
		done += batch
	}
	if big {
		mustOK(t, mc.Do("DEBUG", "POPULATE", strconv.Itoa(pop), "fill:pop", "64"), "populate")
	}
}

// --- the observers ----------------------------------------------------------

// rcObserver is one replica of the master.
type rcObserver struct {
	name  string
	srv   *Server
	conn  *RawConn
	redis bool
	proxy *proxy // linkcut: the dfly replica's link to the master
}

// rcObservers are the run's replicas: a dfly replica and, where installed,
// a redis-server replica.
type rcObservers struct {
	master *Server
	cfg    rcConfig
	list   []*rcObserver
}

func (ob *rcObservers) start(t *testing.T) {
	t.Helper()
	host, port := splitAddr(t, ob.master.Addr)
	flags := []string{"--shards", strconv.Itoa(ob.cfg.replicaShards)}
	if ob.cfg.scenario == rcRestart {
		// Started as a replica: the same command line starts it again.
		flags = append(flags, "--replicaof", host+" "+port)
	}
	dfly := &rcObserver{name: fmt.Sprintf("dfly replica (%d shards)", ob.cfg.replicaShards)}
	dfly.srv = StartServer(t, flags...)
	dfly.conn = dfly.srv.Raw(t)
	if ob.cfg.scenario != rcRestart {
		if ob.cfg.scenario == rcLinkCut {
			dfly.proxy = startProxy(t, ob.master.Addr)
			host, port = splitAddr(t, dfly.proxy.ln.Addr().String())
		}
		mustOK(t, dfly.conn.Do("REPLICAOF", host, port), "REPLICAOF")
	}
	ob.list = append(ob.list, dfly)

	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Log("redis-server not installed: the redis-server replica observer is skipped (the dfly replica observes alone)")
		return
	}
	redis := &rcObserver{name: "redis-server replica", redis: true}
	redis.srv = rcStartRedisReplica(t, path, ob.master)
	redis.conn = redis.srv.Raw(t)
	ob.list = append(ob.list, redis)
}

// rcStartRedisReplica starts redis-server replicating master; DEBUG
// DIGEST-VALUE finds the keys it holds but hides as expired.
func rcStartRedisReplica(t *testing.T, path string, master *Server) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		s, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
			"--bind", "127.0.0.1", "--dir", t.TempDir(), "--replicaof", "127.0.0.1", strconv.Itoa(master.Port),
			"--repl-timeout", "60", "--enable-debug-command", "yes"}, port)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start the redis-server replica: %v", lastErr)
	return nil
}

func (ob *rcObservers) waitUp(t *testing.T) {
	t.Helper()
	for _, o := range ob.list {
		waitFor(t, 60*time.Second, o.name+": link up, sync done", func() bool {
			m := info(t, o.conn, "replication")
			return m["master_link_status"] == "up" && m["master_sync_in_progress"] == "0"
		})
	}
}

// cut breaks every replica's link: each reconnects and continues with a
// partial sync.
func (ob *rcObservers) cut(t *testing.T) {
	t.Helper()
	for _, o := range ob.list {
		if o.proxy != nil {
			o.proxy.cut()
		} else if r := o.conn.Do("CLIENT", "KILL", "TYPE", "master"); r.IsError() {
			t.Fatalf("%s: CLIENT KILL TYPE master: %s", o.name, r.Str)
		}
	}
	time.Sleep(50 * time.Millisecond) // the replicas notice
}

// restartMidSync kills each replica in the middle of its full sync (as
// soon as it started, plus up to 20 ms; the replicas sync at once, so
// each is watched in turn) and starts it again on the same port.
func (ob *rcObservers) restartMidSync(t *testing.T, r *rand.Rand) {
	t.Helper()
	killed := make([]bool, len(ob.list))
	deadline := time.Now().Add(30 * time.Second)
	for left := len(ob.list); left > 0; {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the replicas' full syncs to start")
		}
		for i, o := range ob.list {
			if killed[i] {
				continue
			}
			m := info(t, o.conn, "replication")
			if m["master_sync_in_progress"] != "1" && m["master_link_status"] != "up" {
				continue
			}
			time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
			then := info(t, o.conn, "replication")
			t.Logf("%s killed (sync in progress %s, link %s; %s, %s when killed)", o.name,
				m["master_sync_in_progress"], m["master_link_status"], then["master_sync_in_progress"], then["master_link_status"])
			killServer(o.srv)
			killed[i] = true
			left--
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, o := range ob.list {
		o.srv = restartServer(t, o.srv)
		o.conn = o.srv.Raw(t)
	}
}

// checkSyncs logs how the master synced its replicas; after linkcut's
// cuts each replica must have continued with a partial sync.
func (ob *rcObservers) checkSyncs(t *testing.T, mc *RawConn) {
	t.Helper()
	m := info(t, mc, "replication")
	s := info(t, mc, "stats")
	t.Logf("master syncs: dfly flows %s full, %s partial; PSYNC %s full, %s partial (the recorder's included)",
		m["dfly_flow_syncs_full"], m["dfly_flow_syncs_partial"], s["sync_full"], s["sync_partial_ok"])
	if ob.cfg.scenario != rcLinkCut {
		return
	}
	if n, _ := strconv.Atoi(m["dfly_flow_syncs_partial"]); n < 1 {
		t.Errorf("the dfly replica never synced partially after the cuts")
	}
	if n, _ := strconv.Atoi(s["sync_partial_ok"]); n < 1 && len(ob.list) > 1 {
		t.Errorf("the redis-server replica never synced partially after the cuts")
	}
}

// --- the load ----------------------------------------------------------------

// rcLoad runs the clients until its end, sub-second TTLs until shortEnd.
type rcLoad struct {
	began, shortEnd, end time.Time
	wg                   sync.WaitGroup
	mu                   sync.Mutex
	errs                 []string
	logs                 [][]rcEvent // per client, written by its goroutine only
	steps                atomic.Int64
}

// rcEvent is one command a client ran.
type rcEvent struct {
	at     time.Duration // since the load began
	client int
	db     string
	args   []string
	reply  string
}

func startRCLoad(t *testing.T, addr string, seed uint64, d time.Duration, mix *rcMix) *rcLoad {
	t.Helper()
	now := time.Now()
	l := &rcLoad{began: now, end: now.Add(d), logs: make([][]rcEvent, rcClients)}
	// Short TTLs stop early enough that each has passed a little after
	// the load ends (half the run when it is short).
	l.shortEnd = l.end.Add(-rcShortTTLs + 250*time.Millisecond)
	if l.shortEnd.Before(now.Add(d / 2)) {
		l.shortEnd = now.Add(d / 2)
	}
	for i := 0; i < rcClients; i++ {
		c, err := dialRC(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.conn.Close() })
		g := &rcGen{r: rand.New(rand.NewPCG(seed, uint64(i)+1))}
		l.wg.Add(1)
		go l.client(i, c, g, mix)
	}
	return l
}

func (l *rcLoad) client(id int, c *rcConn, g *rcGen, mix *rcMix) {
	defer l.wg.Done()
	db := "0"
	for {
		now := time.Now()
		if now.After(l.end) {
			return
		}
		g.short = now.Before(l.shortEnd)
		cmds := mix.step(g)
		replies, err := c.do(cmds)
		if err != nil {
			l.mu.Lock()
			l.errs = append(l.errs, fmt.Sprintf("client %d: %s: %v", id, rcLine(cmds[0]), err))
			l.mu.Unlock()
			return
		}
		for i, args := range cmds {
			l.logs[id] = append(l.logs[id], rcEvent{at: now.Sub(l.began), client: id, db: db, args: args, reply: rcSummary(replies[i])})
			if strings.EqualFold(args[0], "SELECT") && !replies[i].IsError() {
				db = args[1]
			}
		}
		l.steps.Add(1)
	}
}

// wait waits for the clients to stop; a connection error fails the run.
func (l *rcLoad) wait(t *testing.T) {
	t.Helper()
	l.wg.Wait()
	if len(l.errs) > 0 {
		t.Fatalf("load: %s", strings.Join(l.errs, "\n"))
	}
	n := 0
	for _, log := range l.logs {
		n += len(log)
	}
	t.Logf("load: %d steps, %d commands from %d clients in %v", l.steps.Load(), n, rcClients, time.Since(l.began).Round(time.Millisecond))
}

// naming returns the clients' commands that name key, the last limit of
// them, and how many there were.
func (l *rcLoad) naming(key string, limit int) ([]string, int) {
	var evs []rcEvent
	for _, log := range l.logs {
		for _, e := range log {
			if argsName(e.args, key) {
				evs = append(evs, e)
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	n := len(evs)
	evs = evs[max(0, n-limit):]
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%8.3fs c%d db%s %s -> %s", e.at.Seconds(), e.client, e.db, rcLine(e.args), e.reply)
	}
	return out, n
}

// rcConn is a load client's connection: it returns errors rather than
// failing the test, as it runs on its own goroutine.
type rcConn struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialRC(addr string) (*rcConn, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &rcConn{conn: conn, br: bufio.NewReader(conn)}, nil
}

// do sends cmds in one write and reads a reply for each.
func (c *rcConn) do(cmds [][]string) ([]Reply, error) {
	var b strings.Builder
	for _, args := range cmds {
		b.WriteString(EncodeCommand(args...))
	}
	c.conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return nil, err
	}
	out := make([]Reply, len(cmds))
	for i := range cmds {
		r, err := readReply(c.br)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// rcSummary renders a reply on one short line.
func rcSummary(r Reply) string {
	if !r.isContainer() {
		return truncate(r.scalar(), 60)
	}
	parts := make([]string, 0, 5)
	for i, e := range r.Elems {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("... %d in all", len(r.Elems)))
			break
		}
		parts = append(parts, rcSummary(e))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// rcSettle waits until every short TTL has passed, then reads every key
// on the master once (single-key reads): the expired ones go, and their
// DELs go to the replicas, so that the datasets compare exactly.
func rcSettle(t *testing.T, mc *RawConn, l *rcLoad) {
	t.Helper()
	time.Sleep(time.Until(l.shortEnd.Add(rcShortTTLs)))
	keys := rcKeyspace()
	for _, db := range rcDBs {
		mustOK(t, mc.Do("SELECT", db), "select")
		for _, k := range keys {
			mc.Send("EXISTS", k)
		}
		for range keys {
			mc.MustRead()
		}
	}
	mustOK(t, mc.Do("SELECT", "0"), "select")
}

// --- digests -------------------------------------------------------------------

// rcDigest renders every key of the checker's keyspace in each of rcDBs,
// and each database's DBSIZE (which also counts keys a replica holds but
// hides as expired). exactTTL compares absolute expiry times (they
// replicate as such); otherwise whether a key has a TTL.
func rcDigest(t *testing.T, c *RawConn, exactTTL bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	keys := rcKeyspace()
	for _, db := range rcDBs {
		mustOK(t, c.Do("SELECT", db), "select")
		types, replies := readKeys(c, keys, rcReads)
		for i, k := range keys {
			if types[i] != "none" {
				out[db+"/"+k] = rcRender(c, k, types[i], replies[i], exactTTL)
			}
		}
		out[db+"/(dbsize)"] = "DBSIZE " + c.Do("DBSIZE").String()
	}
	mustOK(t, c.Do("SELECT", "0"), "select")
	return out
}

// rcReads are the commands reading a key of type typ, its expiry last:
// describeReads', with a stream's metadata and groups in full.
func rcReads(typ, key string) [][]string {
	if typ != "stream" {
		return describeReads(typ, key)
	}
	return [][]string{{"XRANGE", key, "-", "+"}, {"XINFO", "STREAM", key}, {"XINFO", "GROUPS", key}, {"PEXPIRETIME", key}}
}

// rcRender renders the replies of rcReads on one line.
func rcRender(c *RawConn, key, typ string, rs []Reply, exactTTL bool) string {
	var val string
	switch typ {
	case "string":
		val = Quote(rs[0].Str)
		if strings.HasPrefix(rs[0].Str, "HYLL") {
			// Its cached count may differ; the estimate may not.
			val = "hll " + c.Do("PFCOUNT", key).String()
		}
	case "list":
		val = rcFlat(rs[0])
	case "hash":
		val = rcPairs(rs[0], false)
	case "set":
		ms := make([]string, len(rs[0].Elems))
		for i, e := range rs[0].Elems {
			ms[i] = Quote(e.Str)
		}
		slices.Sort(ms)
		val = "{" + strings.Join(ms, " ") + "}"
	case "zset":
		val = rcPairs(rs[0], true)
	case "stream":
		val = rcFlat(rs[0]) + " " + rcFields(rs[1], "length", "last-generated-id", "max-deleted-entry-id", "entries-added", "groups")
		var groups []string
		for _, g := range rs[2].Elems {
			groups = append(groups, rcFields(g, "name", "consumers", "pending", "last-delivered-id"))
		}
		slices.Sort(groups)
		val += " groups[" + strings.Join(groups, " ") + "]"
	}
	ttl := "persistent"
	if at := rs[len(rs)-1].Int; at >= 0 {
		ttl = "ttl"
		if exactTTL {
			ttl = "expireat=" + strconv.FormatInt(at, 10)
		}
	}
	return typ + " " + ttl + " " + val
}

// rcFlat renders a reply's elements, nested ones in brackets.
func rcFlat(r Reply) string {
	if !r.isContainer() {
		if r.Kind == KindBulk {
			return Quote(r.Str)
		}
		return r.scalar()
	}
	parts := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		parts[i] = rcFlat(e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// rcPairs renders field-value pairs sorted by field (hash), or
// member-score pairs in order with scores as numbers (zset, rcScore).
func rcPairs(r Reply, scores bool) string {
	var pairs []string
	for i := 0; i+1 < len(r.Elems); i += 2 {
		v := Quote(r.Elems[i+1].Str)
		if scores {
			v = rcScore(r.Elems[i+1].Str)
		}
		pairs = append(pairs, Quote(r.Elems[i].Str)+"="+v)
	}
	if !scores {
		slices.Sort(pairs)
	}
	return "{" + strings.Join(pairs, " ") + "}"
}

// rcScore renders a score: an integer (a geohash) exactly, a fraction
// to 13 digits. A replica computes GEOSEARCHSTORE ... STOREDIST's
// distances itself, and redis-server's last bit differs from dfly's.
func rcScore(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Quote(s)
	}
	if f == float64(int64(f)) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 13, 64)
}

// rcFields renders the named fields of a field-value reply.
func rcFields(r Reply, names ...string) string {
	var parts []string
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if slices.Contains(names, r.Elems[i].Str) {
			parts = append(parts, r.Elems[i].Str+"="+rcFlat(r.Elems[i+1]))
		}
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// rcDiff lists the digest keys that differ, sorted.
func rcDiff(want, got map[string]string) []string {
	var diff []string
	for k, w := range want {
		if got[k] != w {
			diff = append(diff, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	return diff
}

// --- convergence and the report ---------------------------------------------------

// rcConverge compares every replica with the master until each is equal,
// or has stopped changing (rcStable, link up), or 30 s pass; each one left
// different fails the run with a report.
func rcConverge(t *testing.T, cfg rcConfig, mc *RawConn, obs *rcObservers, rec *streamRecorder, load *rcLoad) {
	t.Helper()
	want := rcDigest(t, mc, true)
	if len(want) <= 2*len(rcDBs) {
		t.Fatal("the master holds no key of the load: the run proves nothing")
	}
	type progress struct {
		last    string // the last digest, rendered
		changed time.Time
	}
	seen := map[*rcObserver]*progress{}
	var failed []*rcFailure
	deadline := time.Now().Add(30 * time.Second)
	pending := obs.list
	for len(pending) > 0 {
		var next []*rcObserver
		for _, o := range pending {
			got := rcDigest(t, o.conn, true)
			diff := rcDiff(want, got)
			if len(diff) == 0 {
				t.Logf("%s equal to the master: %d keys and DBSIZEs", o.name, len(want))
				continue
			}
			p := seen[o]
			if p == nil {
				p = &progress{changed: time.Now()}
				seen[o] = p
			}
			rendered := fmt.Sprint(got)
			if rendered != p.last {
				p.last, p.changed = rendered, time.Now()
			}
			m := info(t, o.conn, "replication")
			up := m["master_link_status"] == "up" && m["master_sync_in_progress"] == "0"
			if time.Now().After(deadline) || (up && time.Since(p.changed) > rcStable) {
				failed = append(failed, &rcFailure{o: o, repl: m, got: got, diff: diff, hidden: map[string][]string{}})
				continue
			}
			next = append(next, o)
		}
		pending = next
		if len(pending) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	rcFindHidden(t, mc, want, failed)
	for _, f := range failed {
		t.Error(rcReport(cfg, f, want, rec, load))
	}
	if _, err := rec.lines(); err != nil {
		t.Errorf("the stream recorder stopped: %v", err)
	}
}

// rcFailure is a replica left different from the master.
type rcFailure struct {
	o      *rcObserver
	repl   map[string]string // its INFO replication
	got    map[string]string // its digest
	diff   []string
	hidden map[string][]string // per database, keys it holds but hides as expired
}

// rcFindHidden names, for each failed replica whose DBSIZE is larger than
// its keys show, the keys it holds but hides as expired (their DEL never
// came). A redis-server replica tells with DEBUG DIGEST-VALUE, which
// reads a key without expiring it. A dfly replica cannot tell: the master
// then APPENDs to every key of the keyspace it does not have, and the ones
// that stay invisible on the replica are the hidden keys (the append
// applies to the hidden value, which keeps its past TTL). That changes the
// data, so it comes last.
func rcFindHidden(t *testing.T, mc *RawConn, want map[string]string, failed []*rcFailure) {
	t.Helper()
	probe := map[string]bool{} // databases to probe
	var dfly []*rcFailure
	for _, f := range failed {
		for _, k := range f.diff {
			db, key, _ := strings.Cut(k, "/")
			if key != "(dbsize)" {
				continue
			}
			if f.o.redis {
				f.hidden[db] = rcHidden(t, f.o.conn, db, want)
				continue
			}
			probe[db] = true
			if !slices.Contains(dfly, f) {
				dfly = append(dfly, f)
			}
		}
	}
	if len(probe) == 0 {
		return
	}
	absent := map[string][]string{}
	for _, db := range rcDBs {
		if !probe[db] {
			continue
		}
		for _, k := range rcKeyspace() {
			if _, ok := want[db+"/"+k]; !ok {
				absent[db] = append(absent[db], k)
			}
		}
		mustOK(t, mc.Do("SELECT", db), "select")
		for _, k := range absent[db] {
			mc.Send("APPEND", k, "probe")
		}
		for range absent[db] {
			mc.MustRead()
		}
	}
	mustOK(t, mc.Do("SELECT", "0"), "select")
	time.Sleep(time.Second) // the appends reach the replicas
	for _, f := range dfly {
		for db, keys := range absent {
			mustOK(t, f.o.conn.Do("SELECT", db), "select")
			for _, k := range keys {
				if f.o.conn.Do("EXISTS", k).Int == 0 {
					f.hidden[db] = append(f.hidden[db], k)
				}
			}
		}
		mustOK(t, f.o.conn.Do("SELECT", "0"), "select")
	}
}

// rcReport describes how a replica differs from the master: the seed, the
// first differing keys on both sides and their history.
func rcReport(cfg rcConfig, f *rcFailure, want map[string]string, rec *streamRecorder, load *rcLoad) string {
	var b strings.Builder
	got := f.got
	fmt.Fprintf(&b, "%s differs from the master in %d of %d keys (seed %d, %s)\n", f.o.name, len(f.diff), len(want), cfg.seed, cfg.name())
	fmt.Fprintf(&b, "rerun: %s\n", cfg.rerun())
	fmt.Fprintf(&b, "replica: link %s, sync in progress %s, offset %s\n", f.repl["master_link_status"], f.repl["master_sync_in_progress"], f.repl["slave_repl_offset"])
	fmt.Fprintf(&b, "differing: %s\n", strings.Join(f.diff[:min(len(f.diff), 40)], " "))
	var show []string // db/key
	for _, k := range f.diff {
		db, key, _ := strings.Cut(k, "/")
		if key != "(dbsize)" {
			show = append(show, k)
			continue
		}
		fmt.Fprintf(&b, "%s: master %s, replica %s\n", k, want[k], got[k])
		fmt.Fprintf(&b, "  keys the replica holds but hides as expired: %s\n", strings.Join(f.hidden[db], ", "))
		for _, h := range f.hidden[db] {
			show = append(show, db+"/"+h)
			got[db+"/"+h] = "(held, hidden as expired: its DEL never came)"
		}
	}
	for _, k := range show[:min(len(show), rcShowKeys)] {
		_, key, _ := strings.Cut(k, "/")
		fmt.Fprintf(&b, "\n%s\n  master:  %s\n  replica: %s\n", k, rcOr(want, k), rcOr(got, k))
		lines, n := rec.naming(key, rcHistory)
		fmt.Fprintf(&b, "  stream (%d commands name it; the last %d, @offset):\n", n, len(lines))
		for _, l := range lines {
			fmt.Fprintf(&b, "    %s\n", l)
		}
		lines, n = load.naming(key, rcHistory)
		fmt.Fprintf(&b, "  clients (%d commands name it; the last %d):\n", n, len(lines))
		for _, l := range lines {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	return b.String()
}

func rcOr(d map[string]string, k string) string {
	if v, ok := d[k]; ok {
		return v
	}
	return "(no key)"
}

// rcHidden lists the keys of db a redis-server replica holds (DEBUG
// DIGEST-VALUE reads them without expiring them) that the master does
// not have.
func rcHidden(t *testing.T, c *RawConn, db string, want map[string]string) []string {
	t.Helper()
	mustOK(t, c.Do("SELECT", db), "select")
	defer c.Do("SELECT", "0")
	var hidden []string
	for _, k := range rcKeyspace() {
		if _, ok := want[db+"/"+k]; ok {
			continue
		}
		r := c.Do("DEBUG", "DIGEST-VALUE", k)
		if len(r.Elems) == 1 && strings.Trim(r.Elems[0].Str, "0") != "" {
			hidden = append(hidden, k)
		}
	}
	return hidden
}
