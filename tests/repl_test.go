package tests

// Replication from a dfly master to a real redis-server replica (issue 8):
// full sync under a random write load of every type, stable sync, partial
// resync after a dropped link and after a replica restart, FLUSHALL and
// mass expiry during the sync, and a replica dropped for overrunning its
// output buffer. Each ends with a digest of every key (type, value, TTL
// within a tolerance) equal on both sides.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// needRedisReplica skips when the test cannot run a real redis replica.
func needRedisReplica(t *testing.T) string {
	t.Helper()
	if IsRedis() {
		t.Skip("dfly-only: a redis-server replica of a dfly master")
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed: replication to a Redis replica is not tested")
	}
	return path
}

// startRedisReplica starts redis-server replicating master, in dir.
func startRedisReplica(t *testing.T, master *Server, dir string, port int) *Server {
	t.Helper()
	path := needRedisReplica(t)
	if port == 0 {
		port = freePort(t)
	}
	s, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--bind", "127.0.0.1", "--dir", dir, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port),
		"--repl-timeout", "30", "--enable-debug-command", "yes"}, port)
	if err != nil {
		t.Fatalf("start redis replica: %v", err)
	}
	return s
}

func infoField(c *RawConn, section, name string) string {
	info := c.Do("INFO", section).Str
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return ""
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitLinkUp(t *testing.T, replica *RawConn) {
	t.Helper()
	waitFor(t, 60*time.Second, "master_link_status:up", func() bool {
		return infoField(replica, "replication", "master_link_status") == "up"
	})
}

// waitCaughtUp waits until the replica processed the master's whole stream.
func waitCaughtUp(t *testing.T, master, replica *RawConn) {
	t.Helper()
	waitFor(t, 60*time.Second, "replica offset = master offset", func() bool {
		m := infoField(master, "replication", "master_repl_offset")
		r := infoField(replica, "replication", "slave_repl_offset")
		return m != "" && m == r
	})
}

// replDBs are the databases the seeder writes.
var replDBs = []int{0, 3}

// digest describes every key of the databases: type, value and TTL class.
func digest(t *testing.T, c *RawConn) map[string]string {
	t.Helper()
	return digestMatch(t, c, "*")
}

// digestMatch is digest of the keys that match pattern (SCAN MATCH).
func digestMatch(t *testing.T, c *RawConn, pattern string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, db := range replDBs {
		mustOK(t, c.Do("SELECT", strconv.Itoa(db)), "select")
		cursor := "0"
		for {
			r := c.Do("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
			if r.IsError() {
				t.Fatalf("SCAN: %s", r.Str)
			}
			cursor = r.Elems[0].Str
			keys := make([]string, len(r.Elems[1].Elems))
			for i, k := range r.Elems[1].Elems {
				keys[i] = k.Str
			}
			for i, d := range describeKeys(c, keys) {
				out[fmt.Sprintf("%d/%s", db, keys[i])] = d
			}
			if cursor == "0" {
				break
			}
		}
	}
	mustOK(t, c.Do("SELECT", "0"), "select")
	return out
}

func describeKey(c *RawConn, key string) string { return describeKeys(c, []string{key})[0] }

// describeKeys is describeKey of each key, pipelined (readKeys).
func describeKeys(c *RawConn, keys []string) []string {
	types, replies := readKeys(c, keys, describeReads)
	out := make([]string, len(keys))
	for i := range keys {
		out[i] = describeRender(types[i], replies[i])
	}
	return out
}

// readKeys reads keys pipelined: every key's TYPE in one write, then every
// key's reads(type, key) in another; it returns the types and each key's
// replies. (A page of keys one round trip per command took seconds
// against a -race build.)
func readKeys(c *RawConn, keys []string, reads func(typ, key string) [][]string) (types []string, replies [][]Reply) {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(EncodeCommand("TYPE", k))
	}
	c.Write(b.String())
	types = make([]string, len(keys))
	for i := range keys {
		types[i] = c.MustRead().Str
	}
	b.Reset()
	counts := make([]int, len(keys))
	for i, k := range keys {
		cmds := reads(types[i], k)
		counts[i] = len(cmds)
		for _, cmd := range cmds {
			b.WriteString(EncodeCommand(cmd...))
		}
	}
	c.Write(b.String())
	replies = make([][]Reply, len(keys))
	for i, n := range counts {
		replies[i] = make([]Reply, n)
		for j := range replies[i] {
			replies[i][j] = c.MustRead()
		}
	}
	return types, replies
}

// describeReads are the commands describeKeys sends for a key of type
// typ: its contents, then its expiry (nothing for "none").
func describeReads(typ, key string) [][]string {
	var reads [][]string
	switch typ {
	case "none":
		return nil
	case "string":
		reads = [][]string{{"GET", key}}
	case "list":
		reads = [][]string{{"LRANGE", key, "0", "-1"}}
	case "hash":
		reads = [][]string{{"HGETALL", key}}
	case "set":
		reads = [][]string{{"SMEMBERS", key}}
	case "zset":
		reads = [][]string{{"ZRANGE", key, "0", "-1", "WITHSCORES"}}
	case "stream":
		reads = [][]string{{"XRANGE", key, "-", "+"}, {"XLEN", key}}
	}
	return append(reads, []string{"PEXPIRETIME", key})
}

// describeRender renders the replies of describeReads(typ, key).
func describeRender(typ string, replies []Reply) string {
	var val string
	switch typ {
	case "none":
		return "none"
	case "string", "list", "zset":
		val = replies[0].String()
	case "hash":
		val = unorderedString(replies[0], 2)
	case "set":
		val = unorderedString(replies[0], 1)
	case "stream":
		val = replies[0].String() + " len=" + replies[1].String()
	}
	// Expiries replicate as absolute times, so they compare exactly.
	at := replies[len(replies)-1].Int
	ttl := "persistent"
	if at >= 0 {
		ttl = "expireat=" + strconv.FormatInt(at, 10)
	}
	if len(val) > 200 {
		val = fmt.Sprintf("%d bytes %x", len(val), fnv64(val))
	}
	return typ + " " + ttl + " " + val
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// compareDigests waits for the replica to catch up and compares; a key
// whose TTL class straddles a bucket may differ once, so it retries.
func compareDigests(t *testing.T, master, replica *RawConn) {
	t.Helper()
	var diff []string
	for attempt := 0; attempt < 5; attempt++ {
		waitCaughtUp(t, master, replica)
		dm, dr := digest(t, master), digest(t, replica)
		diff = digestDiff(dm, dr)
		if len(diff) == 0 {
			t.Logf("digests equal: %d keys", len(dm))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	sort.Strings(diff)
	if len(diff) > 20 {
		diff = append(diff[:20], fmt.Sprintf("... %d more", len(diff)-20))
	}
	t.Fatalf("master and replica differ:\n%s", strings.Join(diff, "\n"))
}

// digestDiff lists the keys whose digests differ between master and replica.
func digestDiff(dm, dr map[string]string) []string {
	var diff []string
	for k, v := range dm {
		if dr[k] != v {
			diff = append(diff, fmt.Sprintf("%s: master %q replica %q", k, trunc(v), trunc(dr[k])))
		}
	}
	for k, v := range dr {
		if _, ok := dm[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: only on replica: %q", k, trunc(v)))
		}
	}
	return diff
}

func trunc(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// seeder drives a random mix of writes of every type against addr.
type seeder struct {
	addr string
	seed uint64
	// keys per type family; small so commands collide on keys.
	keys int
	// bigEvery: one value in bigEvery is large (chunked in the snapshot).
	bigEvery int
	// shortTTL: also write keys that expire within a second.
	shortTTL bool
	tally    loadTally
}

func (s *seeder) run(t *testing.T, workers int, stop <-chan struct{}) *sync.WaitGroup {
	return runLoad(t, s.addr, s.seed, workers, stop, s.step)
}

// runLoad runs step over and over on each of workers connections to addr
// (each with its own random source from seed) until stop is closed.
func runLoad(t *testing.T, addr string, seed uint64, workers int, stop <-chan struct{}, step func(c *RawConn, r *rand.Rand)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		c := DialRaw(t, addr)
		r := rand.New(rand.NewPCG(seed, uint64(w)))
		go func() {
			defer wg.Done()
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				step(c, r)
			}
		}()
	}
	return &wg
}

// loadTally counts the units of work a load completed and the connection
// errors it met.
type loadTally struct {
	mu   sync.Mutex
	ops  int64
	errs []string
}

// read reads the n replies of one unit of work and counts it; a
// connection error is recorded instead.
func (l *loadTally) read(c *RawConn, n int) {
	for i := 0; i < n; i++ {
		if _, err := c.Read(); err != nil {
			l.mu.Lock()
			l.errs = append(l.errs, err.Error())
			l.mu.Unlock()
			return
		}
	}
	l.mu.Lock()
	l.ops++
	l.mu.Unlock()
}

// check fails the test if the load met connection errors.
func (l *loadTally) check(t *testing.T, what string) {
	t.Helper()
	if len(l.errs) > 0 {
		t.Fatalf("%s connection errors: %v", what, l.errs[:min(5, len(l.errs))])
	}
	t.Logf("%s: %d commands", what, l.ops)
}

func (s *seeder) step(c *RawConn, r *rand.Rand) {
	k := func(prefix string) string { return fmt.Sprintf("%s:%d", prefix, r.IntN(s.keys)) }
	val := func() string {
		if s.bigEvery > 0 && r.IntN(s.bigEvery) == 0 {
			return strings.Repeat(strconv.Itoa(r.IntN(10)), 50_000+r.IntN(150_000))
		}
		return "v" + strconv.Itoa(r.IntN(1000))
	}
	db := replDBs[r.IntN(len(replDBs))]
	c.Send("SELECT", strconv.Itoa(db))
	var args []string
	switch r.IntN(32) {
	case 0, 1, 2:
		args = []string{"SET", k("s"), val()}
	case 3:
		args = []string{"SET", k("s"), val(), "EX", strconv.Itoa(100 + r.IntN(1000))}
	case 4:
		args = []string{"SETEX", k("s"), strconv.Itoa(100 + r.IntN(1000)), val()}
	case 5:
		args = []string{"EXPIRE", k("s"), strconv.Itoa(200 + r.IntN(1000))}
	case 6:
		if s.shortTTL {
			args = []string{"SET", k("short"), "x", "PX", strconv.Itoa(50 + r.IntN(700))}
		} else {
			args = []string{"PEXPIRE", k("s"), strconv.Itoa(300_000 + r.IntN(100_000))}
		}
	case 7:
		args = []string{"INCRBYFLOAT", k("f"), fmt.Sprintf("%.3f", r.Float64()*10-3)}
	case 8:
		args = []string{"HSET", k("h"), "f" + strconv.Itoa(r.IntN(20)), val()}
	case 9:
		args = []string{"HINCRBYFLOAT", k("h"), "n" + strconv.Itoa(r.IntN(3)), "1.25"}
	case 10:
		args = []string{"RPUSH", k("l"), val(), val()}
	case 11:
		args = []string{"LPOP", k("l")}
	case 12:
		args = []string{"SADD", k("set"), "m" + strconv.Itoa(r.IntN(50)), "m" + strconv.Itoa(r.IntN(50))}
	case 13:
		args = []string{"SPOP", k("set")}
	case 14:
		args = []string{"SPOP", k("set"), "2"}
	case 15:
		args = []string{"ZADD", k("z"), strconv.Itoa(r.IntN(100)), "m" + strconv.Itoa(r.IntN(30))}
	case 16:
		args = []string{"ZINCRBY", k("z"), "1.5", "m" + strconv.Itoa(r.IntN(30))}
	case 17:
		args = []string{"ZPOPMIN", k("z")}
	case 18:
		args = []string{"XADD", k("x"), "*", "f", val()}
	case 19:
		// Approximate trimming removes whole nodes: replicated exactly.
		args = []string{"XADD", "xa", "MAXLEN", "~", "150", "*", "f", val()}
	case 20:
		args = []string{"MSET", k("s"), val(), k("s"), val(), k("s"), val()}
	case 21:
		args = []string{"DEL", k("s"), k("h"), k("l")}
	case 22:
		// A cross-shard transaction.
		c.Send("MULTI")
		c.Send("INCR", k("cnt"))
		c.Send("INCR", k("cnt"))
		c.Send("SET", k("s"), val())
		c.Send("SADD", k("set"), "tx")
		args = []string{"EXEC"}
	case 23:
		args = []string{"EVAL", "redis.call('INCRBY', KEYS[1], 2); redis.call('SET', KEYS[2], ARGV[1]); return redis.call('SPOP', KEYS[3])",
			"3", k("cnt"), k("s"), k("set"), val()}
	case 24:
		args = []string{"EVAL", "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('EXPIRE', KEYS[1], 500)",
			"1", "{tag}" + k("s"), val()}
	case 25:
		args = []string{"RENAME", k("s"), k("s")}
	case 26:
		args = []string{"GETEX", k("s"), "EX", strconv.Itoa(1000 + r.IntN(100))}
	case 27:
		args = []string{"LMOVE", k("l"), k("l"), "LEFT", "RIGHT"}
	case 28:
		args = []string{"SETRANGE", k("s"), strconv.Itoa(r.IntN(20)), "zz"}
	case 29:
		// A blocking pop: served now or after its timeout, never a hang.
		args = []string{"BLPOP", k("l"), "0.01"}
	case 30:
		args = []string{"GEOADD", k("g"), fmt.Sprintf("%.4f", 13+r.Float64()*3), fmt.Sprintf("%.4f", 36+r.Float64()*3), "p" + strconv.Itoa(r.IntN(40))}
	case 31:
		// A search stored into a key of any shard (a transaction when
		// they differ); STORE keeps geohash scores, exact on every side.
		args = []string{"GEOSEARCHSTORE", k("z"), k("g"), "FROMLONLAT", "14.5", "37.5", "BYRADIUS", strconv.Itoa(20 + r.IntN(200)), "km", "ASC", "COUNT", "5"}
	}
	c.Send(args...)
	n := 2
	if args[0] == "EXEC" {
		n = 7
	}
	s.tally.read(c, n)
}

func (s *seeder) check(t *testing.T) {
	t.Helper()
	s.tally.check(t, "seeder")
}

// preload writes a baseline of every type, with big values.
func preload(t *testing.T, c *RawConn, n int) {
	t.Helper()
	for _, db := range replDBs {
		mustOK(t, c.Do("SELECT", strconv.Itoa(db)), "select")
		for i := 0; i < n; i++ {
			c.Send("SET", fmt.Sprintf("pre:s:%d", i), strconv.Itoa(i))
			c.Send("HSET", fmt.Sprintf("pre:h:%d", i%50), "f"+strconv.Itoa(i), "v")
			c.Send("RPUSH", fmt.Sprintf("pre:l:%d", i%50), strconv.Itoa(i))
			c.Send("SADD", fmt.Sprintf("pre:set:%d", i%50), strconv.Itoa(i))
			c.Send("ZADD", fmt.Sprintf("pre:z:%d", i%50), strconv.Itoa(i), strconv.Itoa(i))
			c.Send("SET", fmt.Sprintf("pre:t:%d", i), "x", "EX", "5000")
		}
		for i := 0; i < 6*n; i++ {
			if r := c.MustRead(); r.IsError() {
				t.Fatalf("preload: %s", r.Str)
			}
		}
		mustOK(t, c.Do("SET", "pre:big", strings.Repeat("B", 3<<20)), "big")
		mustOK(t, c.Do("SET", "", "the empty key"), "empty key")
		mustOK(t, c.Do("XADD", "pre:x", "*", "a", "1"), "xadd")
	}
	mustOK(t, c.Do("SELECT", "0"), "select")
}

func TestReplRedisReplicaUnderLoad(t *testing.T) {
	needTime(t, 60*time.Second)
	t.Parallel()
	needRedisReplica(t)
	seed := newSeed(t)
	master := StartServer(t, "--shards", "3")
	mc := master.Raw(t)
	preload(t, mc, 3000)

	sd := &seeder{addr: master.Addr, seed: seed, keys: 200, bigEvery: 500, shortTTL: true}
	stop := make(chan struct{})
	wg := sd.run(t, 4, stop)
	time.Sleep(300 * time.Millisecond)
	replica := startRedisReplica(t, master, t.TempDir(), 0) // full sync under load
	rc := replica.Raw(t)
	waitLinkUp(t, rc)
	time.Sleep(2 * time.Second) // stable sync under load
	close(stop)
	wg.Wait()
	sd.check(t)
	time.Sleep(1500 * time.Millisecond) // short TTLs pass; their DELs follow
	if r := mc.Do("WAIT", "1", "5000"); r.Int != 1 {
		t.Fatalf("WAIT 1 5000 = %s", r.String())
	}
	compareDigests(t, mc, rc)
	if v := infoField(mc, "stats", "sync_full"); v != "1" {
		t.Fatalf("sync_full = %q", v)
	}
	if v := infoField(mc, "replication", "connected_slaves"); v != "1" {
		t.Fatalf("connected_slaves = %q", v)
	}
	if v := infoField(mc, "replication", "slave0"); !strings.Contains(v, "state=online") {
		t.Fatalf("slave0 = %q", v)
	}
	role := mc.Do("ROLE")
	if role.IsError() && strings.Contains(role.Str, "unknown command") {
		t.Log("ROLE not registered yet (the replica side adds it)")
	} else if len(role.Elems) != 3 || role.Elems[0].Str != "master" || len(role.Elems[2].Elems) != 1 {
		t.Fatalf("ROLE = %s", role.String())
	}
}

func TestReplPartialResync(t *testing.T) {
	t.Parallel()
	needRedisReplica(t)
	seed := newSeed(t)
	master := StartServer(t, "--shards", "2", "--repl_backlog_size", "8mb")
	mc := master.Raw(t)
	preload(t, mc, 500)
	dir := t.TempDir()
	replica := startRedisReplica(t, master, dir, 0)
	rc := replica.Raw(t)
	waitLinkUp(t, rc)

	sd := &seeder{addr: master.Addr, seed: seed, keys: 100}
	stop := make(chan struct{})
	wg := sd.run(t, 2, stop)
	time.Sleep(500 * time.Millisecond)

	// A dropped link: the replica reconnects with PSYNC and continues.
	if r := rc.Do("CLIENT", "KILL", "TYPE", "master"); r.IsError() {
		t.Fatalf("CLIENT KILL TYPE master: %s", r.Str)
	}
	waitFor(t, 30*time.Second, "sync_partial_ok 1", func() bool { return infoField(mc, "stats", "sync_partial_ok") == "1" })
	waitLinkUp(t, rc)
	time.Sleep(500 * time.Millisecond)

	// A restarted replica: SHUTDOWN saves its replication id and offset,
	// the new process continues from them.
	port := replica.Port
	replica.terminated = true
	rc.Send("SHUTDOWN", "SAVE")
	select {
	case <-replica.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("replica did not shut down")
	}
	time.Sleep(300 * time.Millisecond)
	replica = startRedisReplica(t, master, dir, port)
	rc = replica.Raw(t)
	waitFor(t, 30*time.Second, "sync_partial_ok 2", func() bool { return infoField(mc, "stats", "sync_partial_ok") == "2" })
	waitLinkUp(t, rc)
	close(stop)
	wg.Wait()
	sd.check(t)
	compareDigests(t, mc, rc)
	if v := infoField(mc, "stats", "sync_full"); v != "1" {
		t.Fatalf("sync_full = %q, want 1 (both reconnections partial)", v)
	}
}

func TestReplFlushAllDuringSync(t *testing.T) {
	t.Parallel()
	needRedisReplica(t)
	seed := newSeed(t)
	master := StartServer(t, "--shards", "3")
	mc := master.Raw(t)
	preload(t, mc, 5000)
	sd := &seeder{addr: master.Addr, seed: seed, keys: 100}
	stop := make(chan struct{})
	wg := sd.run(t, 2, stop)
	replica := startRedisReplica(t, master, t.TempDir(), 0)
	rc := replica.Raw(t)
	time.Sleep(50 * time.Millisecond)
	mustOK(t, mc.Do("FLUSHALL"), "flushall")
	mustOK(t, mc.Do("SELECT", "3"), "select")
	mustOK(t, mc.Do("FLUSHDB"), "flushdb")
	mustOK(t, mc.Do("SELECT", "0"), "select")
	waitLinkUp(t, rc)
	time.Sleep(500 * time.Millisecond)
	mustOK(t, mc.Do("FLUSHALL"), "flushall")
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	sd.check(t)
	compareDigests(t, mc, rc)
}

func TestReplMassExpiryDuringSync(t *testing.T) {
	t.Parallel()
	needRedisReplica(t)
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	n := 20000
	if raceBuild() {
		n = 6000 // the same paths with fewer keys (raceBuild: CI's time budget)
	}
	for i := 0; i < n; i++ {
		mc.Send("SET", "exp:"+strconv.Itoa(i), strings.Repeat("e", 100), "PX", strconv.Itoa(200+i%1500))
		if i%3 == 0 {
			mc.Send("SET", "keep:"+strconv.Itoa(i), "k")
		}
	}
	for i := 0; i < n+(n+2)/3; i++ {
		mc.MustRead()
	}
	replica := startRedisReplica(t, master, t.TempDir(), 0)
	rc := replica.Raw(t)
	waitLinkUp(t, rc)
	// Lazy expiry on reads too.
	for i := 0; i < n; i += 7 {
		mc.Send("GET", "exp:"+strconv.Itoa(i))
	}
	for i := 0; i < n; i += 7 {
		mc.MustRead()
	}
	waitFor(t, 30*time.Second, "all exp: keys gone on the master", func() bool {
		return mc.Do("DBSIZE").Int == int64((n+2)/3)
	})
	compareDigests(t, mc, rc)
	waitFor(t, 10*time.Second, "replica DBSIZE", func() bool { return rc.Do("DBSIZE").Int == int64((n+2)/3) })
}

func TestReplSlowReplicaDropped(t *testing.T) {
	t.Parallel()
	needRedisReplica(t)
	master := StartServer(t, "--shards", "2", "--repl_client_buffer_limit", "1mb", "--repl_backlog_size", "64kb")
	mc := master.Raw(t)
	replica := startRedisReplica(t, master, t.TempDir(), 0)
	rc := replica.Raw(t)
	waitLinkUp(t, rc)
	// A stopped replica reads nothing: its buffer fills and the master
	// drops it rather than wait or grow.
	if err := syscall.Kill(replica.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("w", 64<<10)
	for i := 0; i < 200; i++ {
		mc.Send("SET", "w:"+strconv.Itoa(i%50), big)
	}
	for i := 0; i < 200; i++ {
		mc.MustRead()
	}
	waitFor(t, 20*time.Second, "the slow replica dropped", func() bool {
		return infoField(mc, "replication", "connected_slaves") == "0"
	})
	if !strings.Contains(master.Output(), "overcoming of output buffer limits") {
		t.Fatalf("no log of the dropped replica:\n%s", master.Output())
	}
	if r := mc.Do("SET", "after", "1"); r.IsError() {
		t.Fatal(r.Str)
	}
	_ = syscall.Kill(replica.PID, syscall.SIGCONT)
	// It reconnects; the backlog no longer covers it: a full sync.
	waitFor(t, 30*time.Second, "sync_full 2", func() bool { return infoField(mc, "stats", "sync_full") == "2" })
	waitLinkUp(t, rc)
	compareDigests(t, mc, rc)
}

func TestReplconfAndWaitWithoutReplicas(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only")
	}
	s := StartServer(t)
	c := s.Raw(t)
	if r := c.Do("REPLCONF", "listening-port", "6380", "capa", "eof", "capa", "psync2"); r.Str != "OK" {
		t.Fatalf("REPLCONF = %s", r.String())
	}
	if r := c.Do("REPLCONF", "bogus", "1"); !r.IsError() || !strings.Contains(r.Str, "Unrecognized REPLCONF option") {
		t.Fatalf("REPLCONF bogus = %s", r.String())
	}
	if r := c.Do("REPLCONF", "listening-port"); !r.IsError() {
		t.Fatalf("REPLCONF odd args = %s", r.String())
	}
	if r := c.Do("WAIT", "0", "0"); r.Int != 0 || r.IsError() {
		t.Fatalf("WAIT 0 0 = %s", r.String())
	}
	start := time.Now()
	if r := c.Do("WAIT", "1", "100"); r.Int != 0 || r.IsError() {
		t.Fatalf("WAIT 1 100 = %s", r.String())
	}
	if time.Since(start) < 90*time.Millisecond {
		t.Fatal("WAIT returned before its timeout")
	}
	if r := c.Do("WAIT", "x", "1"); !r.IsError() {
		t.Fatalf("WAIT x = %s", r.String())
	}
	if v := infoField(c, "replication", "master_repl_offset"); v != "0" {
		t.Fatalf("master_repl_offset = %q before any replica", v)
	}
	mustOK(t, c.Do("MULTI"), "multi")
	if r := c.Do("PSYNC", "?", "-1"); r.Str != "ERR Command not allowed inside a transaction" {
		t.Fatalf("PSYNC in MULTI = %s", r.String())
	}
	if r := c.Do("EXEC"); !strings.HasPrefix(r.Str, "EXECABORT") {
		t.Fatalf("EXEC = %s", r.String())
	}
	if r := c.Do("PSYNC", "?", "x"); !r.IsError() {
		t.Fatalf("PSYNC bad offset = %s", r.String())
	}
	if r := c.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING = %s", r.String())
	}
}

// TestReplStreamForm reads the command stream as a replica would and
// checks the deterministic forms: absolute expiries, results instead of
// computations, popped members, added IDs, non-blocking pops, scripts by
// their effects, cross-shard transactions as one MULTI/EXEC, SELECT on a
// database change, nothing for writes that changed nothing. Every key is
// on the {t} shard (or in a transaction with it): the stream keeps each
// shard's order, not the wall-clock order of writes on different shards.
func TestReplStreamForm(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only")
	}
	master := StartServer(t, "--shards", "4")
	mc := master.Raw(t)
	mustOK(t, mc.Do("SADD", "{t}set", "only"), "sadd")
	rep := DialRaw(t, master.Addr)
	mustOK(t, rep.Do("REPLCONF", "listening-port", "1"), "replconf")
	rep.Send("PSYNC", "?", "-1")
	line, err := rep.reader.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Fatalf("PSYNC: %q %v", line, err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || len(f[1]) != 40 {
		t.Fatalf("FULLRESYNC line %q", line)
	}
	start, _ := strconv.ParseInt(f[2], 10, 64)
	line, _ = rep.reader.ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if err != nil || !strings.HasPrefix(line, "$") {
		t.Fatalf("bulk header %q", line)
	}
	rdbBytes := make([]byte, n)
	if _, err := io.ReadFull(rep.reader, rdbBytes); err != nil || string(rdbBytes[:5]) != "REDIS" {
		t.Fatalf("RDB payload: %v %q", err, rdbBytes[:min(9, n)])
	}

	do := func(args ...string) Reply {
		t.Helper()
		r := mc.Do(args...)
		if r.IsError() {
			t.Fatalf("%v: %s", args, r.Str)
		}
		return r
	}
	do("SET", "{t}nx", "1", "NX")
	do("SET", "{t}nx", "2", "NX") // no write: not journaled
	do("DEL", "{t}missing")       // no write
	do("SET", "{t}ex", "v", "EX", "100")
	exAt := do("PEXPIRETIME", "{t}ex").Int
	do("INCRBYFLOAT", "{t}fl", "1.5")
	popped := do("SPOP", "{t}set").Str
	id := do("XADD", "{t}st", "*", "f", "v").Str
	do("MULTI")
	do("SET", "{t}k", "1")
	do("SET", "{b}k", "2")
	do("INCR", "{t}k")
	if r := mc.Do("EXEC"); len(r.Elems) != 3 {
		t.Fatalf("EXEC = %s", r.String())
	}
	do("EVAL", "redis.call('SET', KEYS[1], 'x'); redis.call('PEXPIRE', KEYS[1], 500000); return 1", "1", "{t}sk")
	skAt := do("PEXPIRETIME", "{t}sk").Int
	do("RPUSH", "{t}bl", "a")
	do("BLPOP", "{t}bl", "0")
	do("SELECT", "2")
	do("SET", "{t}indb2", "1")
	do("SELECT", "0")
	do("MSET", "{t}m", "1", "{b}m", "2")
	do("XGROUP", "CREATE", "{t}gs", "g", "$", "MKSTREAM")
	blocked := DialRaw(t, master.Addr)
	blocked.Send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{t}gs", ">")
	time.Sleep(100 * time.Millisecond)
	gid := do("XADD", "{t}gs", "*", "f", "v").Str
	if r := blocked.MustRead(); r.IsError() || len(r.Elems) != 1 {
		t.Fatalf("blocked XREADGROUP = %s", r.String())
	}
	do("SETEX", "{t}se", "100", "v")
	seAt := do("PEXPIRETIME", "{t}se").Int
	do("PSETEX", "{t}pe", "100000", "v")
	peAt := do("PEXPIRETIME", "{t}pe").Int
	do("GETEX", "{t}pe", "EX", "200")
	geAt := do("PEXPIRETIME", "{t}pe").Int
	do("GETEX", "{t}pe", "PERSIST")
	do("EXPIRE", "{t}se", "-1") // a past time deletes
	do("HINCRBYFLOAT", "{t}h", "f", "2.5")
	dump := do("DUMP", "{t}nx").Str
	do("RESTORE", "{t}r", "100000", dump)
	rAt := do("PEXPIRETIME", "{t}r").Int
	do("SADD", "{t}s2", "a", "b", "c")
	pops := do("SPOP", "{t}s2", "3")
	var popped3 []string
	for _, e := range pops.Elems {
		popped3 = append(popped3, e.Str)
	}

	want := [][]string{
		{"SELECT", "0"},
		{"SET", "{t}nx", "1"}, // it succeeded: NX is moot
		{"SET", "{t}ex", "v", "PXAT", strconv.FormatInt(exAt, 10)},
		{"SET", "{t}fl", "1.5", "KEEPTTL"},
		{"SREM", "{t}set", popped},
		{"XADD", "{t}st", id, "f", "v"},
		{"MULTI"}, {"SET", "{t}k", "1"}, {"SET", "{b}k", "2"}, {"INCR", "{t}k"}, {"EXEC"},
		{"MULTI"}, {"SET", "{t}sk", "x"}, {"PEXPIREAT", "{t}sk", strconv.FormatInt(skAt, 10)}, {"EXEC"},
		{"RPUSH", "{t}bl", "a"},
		{"lpop", "{t}bl"},
		{"SELECT", "2"}, {"SET", "{t}indb2", "1"},
		{"SELECT", "0"}, {"MSET", "{t}m", "1", "{b}m", "2"}, // one command: atomic as is
		{"XGROUP", "CREATE", "{t}gs", "g", "$", "MKSTREAM"},
		{"XADD", "{t}gs", gid, "f", "v"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{t}gs", ">"},
		{"SET", "{t}se", "v", "PXAT", strconv.FormatInt(seAt, 10)},
		{"SET", "{t}pe", "v", "PXAT", strconv.FormatInt(peAt, 10)},
		{"PEXPIREAT", "{t}pe", strconv.FormatInt(geAt, 10)},
		{"PERSIST", "{t}pe"},
		{"DEL", "{t}se"},
		{"HSET", "{t}h", "f", "2.5"},
		{"RESTORE", "{t}r", strconv.FormatInt(rAt, 10), dump, "ABSTTL"},
		{"SADD", "{t}s2", "a", "b", "c"},
		append([]string{"SREM", "{t}s2"}, popped3...),
	}
	var got [][]string
	total := int64(0)
	for len(got) < len(want) {
		r, err := rep.Read()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		var cmd []string
		for _, e := range r.Elems {
			cmd = append(cmd, e.Str)
		}
		total += int64(len(EncodeCommand(cmd...)))
		if len(cmd) == 1 && cmd[0] == "PING" {
			continue
		}
		got = append(got, cmd)
	}
	// EXEC's commands on different shards run in parallel: within the
	// block only each shard's order is fixed.
	block := func(cmds [][]string) []string {
		var out []string
		for _, c := range cmds {
			out = append(out, strings.Join(c, " "))
		}
		return out
	}
	gb := block(got[7:10])
	if idx := func(s string) int { return slicesIndex(gb, s) }; idx("SET {t}k 1") > idx("INCR {t}k") {
		t.Fatalf("shard order broken inside MULTI: %q", gb)
	}
	sort.Strings(gb)
	wb := block(want[7:10])
	sort.Strings(wb)
	for i := range gb {
		got[7+i], want[7+i] = []string{gb[i]}, []string{wb[i]}
	}
	for i := range want {
		if strings.Join(got[i], " ") != strings.Join(want[i], " ") {
			t.Fatalf("stream command %d: got %q want %q\nall: %q", i, got[i], want[i], got)
		}
	}
	if off, _ := strconv.ParseInt(infoField(mc, "replication", "master_repl_offset"), 10, 64); off != start+total {
		t.Fatalf("master_repl_offset %d, want %d + %d stream bytes", off, start, total)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestReplBacklogTTL: without replicas for --repl_backlog_ttl the backlog is
// freed (journaling stops) and the replication id changes, so no stale
// replica can continue.
func TestReplBacklogTTL(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only")
	}
	s := StartServer(t, "--repl_backlog_ttl", "1s")
	c := s.Raw(t)
	id := infoField(c, "replication", "master_replid")
	rep := DialRaw(t, s.Addr)
	rep.Send("PSYNC", "?", "-1")
	if line, err := rep.reader.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+FULLRESYNC "+id) {
		t.Fatalf("PSYNC: %q %v", line, err)
	}
	waitFor(t, 5*time.Second, "backlog active", func() bool { return infoField(c, "replication", "repl_backlog_active") == "1" })
	mustOK(t, c.Do("SET", "k", "v"), "set")
	rep.Close()
	waitFor(t, 10*time.Second, "backlog freed", func() bool { return infoField(c, "replication", "repl_backlog_active") == "0" })
	if now := infoField(c, "replication", "master_replid"); now == id || infoField(c, "replication", "master_replid2") != id {
		t.Fatalf("replid %q replid2 %q, was %q", now, infoField(c, "replication", "master_replid2"), id)
	}
	if v := infoField(c, "replication", "connected_slaves"); v != "0" {
		t.Fatalf("connected_slaves %q", v)
	}
}

// TestReplCrossShardTransactions: many clients run overlapping cross-shard
// transactions (MULTI/EXEC, MSET, scripts, RENAME) while a replica syncs;
// the stream must neither stall (parts of concurrent transactions are
// merged without waiting on each other) nor reorder them.
func TestReplCrossShardTransactions(t *testing.T) {
	t.Parallel()
	needRedisReplica(t)
	seed := newSeed(t)
	master := StartServer(t, "--shards", "4")
	mc := master.Raw(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops [8]int
	for w := 0; w < 8; w++ {
		wg.Add(1)
		c := DialRaw(t, master.Addr)
		r := rand.New(rand.NewPCG(seed, uint64(w)))
		go func(w int) {
			defer wg.Done()
			k := func() string { return "c:" + strconv.Itoa(r.IntN(24)) }
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := 1
				switch r.IntN(5) {
				case 0:
					c.Send("MULTI")
					c.Send("INCR", k())
					c.Send("INCRBY", k(), "3")
					c.Send("APPEND", k()+":s", "x")
					c.Send("EXEC")
					n = 5
				case 1:
					c.Send("MSET", k(), strconv.Itoa(w), k(), strconv.Itoa(w), k(), strconv.Itoa(w))
				case 2:
					c.Send("EVAL", "redis.call('INCR', KEYS[1]); redis.call('INCR', KEYS[2]); return redis.call('INCR', KEYS[3])", "3", k(), k(), k())
				case 3:
					c.Send("RENAME", k(), k())
				case 4:
					c.Send("DEL", k(), k())
				}
				for i := 0; i < n; i++ {
					if _, err := c.Read(); err != nil {
						return
					}
				}
				ops[w]++
			}
		}(w)
	}
	time.Sleep(200 * time.Millisecond)
	replica := startRedisReplica(t, master, t.TempDir(), 0)
	rc := replica.Raw(t)
	waitLinkUp(t, rc)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	total := 0
	for _, n := range ops {
		total += n
	}
	t.Logf("%d transactions", total)
	compareDigests(t, mc, rc)
}

// TestReplRedisCliReplica: redis-cli --replica (SYNC, the old protocol)
// gets the RDB and then logs the command stream.
func TestReplRedisCliReplica(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	s := StartServer(t)
	c := s.Raw(t)
	mustOK(t, c.Do("SET", "before", "1"), "set")
	cmd := exec.Command(cli, "-p", strconv.Itoa(s.Port), "--replica")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, 10*time.Second, "SYNC done", func() bool { return strings.Contains(out.String(), "SYNC done") })
	mustOK(t, c.Do("SET", "after", "2"), "set")
	c.Do("PUBLISH", "news", "hello")
	waitFor(t, 10*time.Second, "the SET and PUBLISH in the stream", func() bool {
		return strings.Contains(out.String(), `"SET","after","2"`) && strings.Contains(out.String(), `"PUBLISH","news","hello"`)
	})
}

// TestReplReplicaKilledDuringFullSync: a replica killed while the RDB is
// on its way leaves no trace on the master (its snapshot is consumed to
// the end, the shards keep serving), and a new replica syncs fully.
func TestReplReplicaKilledDuringFullSync(t *testing.T) {
	needTime(t, 90*time.Second)
	t.Parallel()
	needRedisReplica(t)
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	mustOK(t, mc.Do("DEBUG", "POPULATE", "1500", "key", "20000"), "populate")
	replica := startRedisReplica(t, master, t.TempDir(), 0)
	waitFor(t, 20*time.Second, "the replica connected", func() bool {
		return infoField(mc, "replication", "connected_slaves") == "1"
	})
	// Stop it reading: the RDB stalls in the socket, then kill it.
	_ = syscall.Kill(replica.PID, syscall.SIGSTOP)
	time.Sleep(200 * time.Millisecond)
	t.Logf("killed in state: %s", infoField(mc, "replication", "slave0"))
	replica.terminated = true
	replica.kill()
	start := time.Now()
	mustOK(t, mc.Do("SET", "during", "1"), "set")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("SET took %v while the dead replica's sync unwound", d)
	}
	waitFor(t, 20*time.Second, "the dead replica dropped", func() bool {
		return infoField(mc, "replication", "connected_slaves") == "0"
	})
	replica = startRedisReplica(t, master, t.TempDir(), 0)
	rc := replica.Raw(t)
	waitLinkUp(t, rc)
	mustOK(t, mc.Do("SET", "after", "1"), "set")
	compareDigests(t, mc, rc)
	if v := infoField(mc, "stats", "sync_full"); v != "2" {
		t.Fatalf("sync_full = %q", v)
	}
}
