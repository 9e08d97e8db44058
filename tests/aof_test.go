package tests

// The append-only file end to end (issue 46): kill -9 under a write load
// of every type and restart (appendfsync always: every acknowledged write
// is there; everysec: nothing acknowledged more than ~2 s before the kill
// is missing; never half a cross-shard transaction), torn and zero-padded
// tails, a corrupt middle and a missing file, BGREWRITEAOF under load,
// CONFIG SET appendonly, and a Redis 7.0 appendonlydir loaded into dfly.

import (
	"bufio"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// aofRounds is DFLY_AOF_ROUNDS (default 3; the 20 by hand).
func aofRounds() int {
	if n, err := strconv.Atoi(os.Getenv("DFLY_AOF_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

func aofSeed(t *testing.T) int64 {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("DFLY_AOF_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (DFLY_AOF_SEED)", seed)
	return seed
}

// aofKinds are the writes of the load: each writes version n of a key
// (counters count their increments); t and m write a pair of keys that
// hash apart, in a MULTI/EXEC block and with MSET.
var aofKinds = []string{"s", "h", "l", "z", "x", "c", "t", "m", "e"}

// ack is a version of a key acknowledged at a time.
type ack struct {
	v  int64
	at time.Time
}

// aofKey is what the writers know of one key.
type aofKey struct {
	acks   []ack // acknowledged versions, oldest first
	issued int64 // the version of the write in flight or last sent
}

type aofModel struct {
	mu   sync.Mutex
	keys map[string]*aofKey
	next atomic.Int64
}

func (m *aofModel) key(name string) *aofKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[name]
	if k == nil {
		k = &aofKey{acks: []ack{{}}}
		m.keys[name] = k
	}
	return k
}

// aofWrite is one write: its commands and the version it writes.
func aofWrite(kind, key string, n, count int64) ([][]string, int64) {
	v := strconv.FormatInt(n, 10)
	switch kind {
	case "s":
		return [][]string{{"SET", key, v}}, n
	case "e":
		return [][]string{{"SET", key, v, "EX", "100000"}}, n
	case "h":
		return [][]string{{"HSET", key, "f" + v[len(v)-1:], v, "last", v}}, n
	case "l":
		return [][]string{{"RPUSH", key, v}}, n
	case "z":
		return [][]string{{"ZADD", key, v, "m" + v}}, n
	case "x":
		return [][]string{{"XADD", key, "*", "v", v}}, n
	case "c":
		return [][]string{{"INCR", key}}, count + 1
	case "t":
		return [][]string{{"MULTI"}, {"SET", key + ":a", v}, {"INCRBY", key + ":n", "1"}, {"SET", key + ":b", v}, {"EXEC"}}, n
	default: // m
		return [][]string{{"MSET", key + ":a", v, key + ":b", v}}, n
	}
}

// aofRead is the version of key found after a restart (-1: a transaction
// pair that differs).
func aofRead(t *testing.T, c *RawConn, kind, key string) int64 {
	t.Helper()
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	switch kind {
	case "s", "c", "e":
		return num(c.Do("GET", key).Str)
	case "h":
		return num(c.Do("HGET", key, "last").Str)
	case "l":
		return num(c.Do("LINDEX", key, "-1").Str)
	case "z":
		r := c.Do("ZREVRANGE", key, "0", "0", "WITHSCORES")
		if len(r.Elems) < 2 {
			return 0
		}
		return num(r.Elems[1].Str)
	case "x":
		r := c.Do("XREVRANGE", key, "+", "-", "COUNT", "1")
		if len(r.Elems) == 0 {
			return 0
		}
		return num(r.Elems[0].Elems[1].Elems[1].Str)
	}
	a, b := c.Do("GET", key+":a").Str, c.Do("GET", key+":b").Str
	if a != b {
		t.Errorf("%s: a transaction half applied: a=%q b=%q", key, a, b)
		return -1
	}
	return num(a)
}

// aofLoad runs writers against addr until stop; each owns its keys and has
// one write in flight. It returns when they have stopped.
func aofLoad(t *testing.T, addr string, m *aofModel, seed int64, writers int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(w)))
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for {
				select {
				case <-stop:
					return
				default:
				}
				kind := aofKinds[rng.Intn(len(aofKinds))]
				db := rng.Intn(2)
				name := fmt.Sprintf("%d/w%d:%s:%d", db, w, kind, rng.Intn(6))
				k := m.key(name)
				cmds, v := aofWrite(kind, name[2:], m.next.Add(1), k.acks[len(k.acks)-1].v)
				var out strings.Builder
				out.WriteString(EncodeCommand("SELECT", strconv.Itoa(db)))
				for _, c := range cmds {
					out.WriteString(EncodeCommand(c...))
				}
				k.issued = v
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Write([]byte(out.String())); err != nil {
					return
				}
				for i := 0; i <= len(cmds); i++ {
					r, err := readReply(br)
					if err != nil {
						return
					}
					if r.IsError() {
						t.Errorf("%v: %s", cmds, r.Str)
						return
					}
				}
				k.acks = append(k.acks, ack{v: v, at: time.Now()})
			}
		}(w)
	}
	wg.Wait()
}

// aofCheck reads every key of the model after a restart and checks it
// against what was acknowledged: a version at least the last one
// acknowledged by since, at most the one issued. It leaves the model at
// what it found.
func aofCheck(t *testing.T, c *RawConn, m *aofModel, since time.Time) {
	t.Helper()
	names := make([]string, 0, len(m.keys))
	for name := range m.keys {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := m.keys[name]
		db, key, _ := strings.Cut(name, "/")
		mustOK(t, c.Do("SELECT", db), "select")
		kind := strings.Split(key, ":")[1]
		got := aofRead(t, c, kind, key)
		var want int64
		for _, a := range k.acks {
			if !a.at.After(since) {
				want = a.v
			}
		}
		if got < want || got > max(k.issued, k.acks[len(k.acks)-1].v) {
			t.Errorf("%s: version %d after the restart; acknowledged %d (by the deadline), issued %d", name, got, want, k.issued)
		}
		if kind == "t" {
			if n := c.Do("GET", key+":n").Str; n != "" && aofRead(t, c, "t", key) == 0 {
				t.Errorf("%s: a transaction half applied: counter %s without its pair", name, n)
			}
		}
		k.acks, k.issued = []ack{{v: got}}, got
	}
	mustOK(t, c.Do("SELECT", "0"), "select")
}

// testAOFKill: kill -9 under load, restart, check; rounds times on one
// directory (so generations of files pile up between rewrites).
func testAOFKill(t *testing.T, fsync string, lossWindow time.Duration) {
	needTime(t, 60*time.Second)
	seed := aofSeed(t)
	rng := rand.New(rand.NewSource(seed))
	s := StartServer(t, "--appendonly", "yes", "--appendfsync", fsync, "--shards", "4")
	m := &aofModel{keys: map[string]*aofKey{}}
	for round := 0; round < aofRounds(); round++ {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { aofLoad(t, s.Addr, m, seed+int64(round)*100, 4, stop); close(done) }()
		time.Sleep(time.Duration(200+rng.Intn(600)) * time.Millisecond)
		if round == 1 {
			mustOK(t, s.Raw(t).Do("BGREWRITEAOF"), "bgrewriteaof")
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		}
		killed := time.Now()
		killServer(s)
		close(stop)
		<-done
		s = restartServer(t, s)
		aofCheck(t, s.Raw(t), m, killed.Add(-lossWindow))
		if t.Failed() {
			t.Fatalf("round %d (seed %d)", round, seed)
		}
	}
}

func TestAOFKillAlways(t *testing.T) { testAOFKill(t, "always", 0) }

func TestAOFKillEverysec(t *testing.T) { testAOFKill(t, "everysec", 2*time.Second) }

// aofFiles writes n keys (a third in cross-shard MULTI blocks) with
// appendfsync always into a dfly on dir, stops it with SIGTERM and
// returns its arguments and the shard files of the last generation.
func aofFiles(t *testing.T, dir string, n int) ([]string, []string) {
	t.Helper()
	needPersistTools(t)
	s := StartServer(t, "--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--shards", "4")
	c := s.Raw(t)
	for i := 0; i < n; i++ {
		k := strconv.Itoa(i)
		if i%3 == 0 {
			c.Send("MULTI")
			c.Send("SET", "a"+k, k)
			c.Send("SET", "b"+k, k)
			c.Send("EXEC")
			for j := 0; j < 3; j++ {
				c.MustRead()
			}
			mustOK(t, c.MustRead(), "exec")
			continue
		}
		mustOK(t, c.Do("SET", "k"+k, k), "set")
	}
	args := s.cmd.Args[1:]
	if err := s.Terminate(10 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.s*.incr.aof"))
	if len(shards) != 4 {
		t.Fatalf("shard files: %v", shards)
	}
	return args, shards
}

// aofStart starts dfly with args on a free port; it returns the server
// once it serves its data, or nil and its output when it exits first.
func aofStart(t *testing.T, args []string) (*Server, string) {
	t.Helper()
	args = append([]string(nil), args...)
	for i := range args {
		if args[i] == "--port" {
			args[i+1] = strconv.Itoa(freePort(t))
		}
	}
	port, _ := strconv.Atoi(args[1])
	s, err := launchWith(t, dflyPath, args, port, false)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			s.terminated = true
			return nil, s.Output()
		default:
		}
		if conn, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			conn.SetDeadline(time.Now().Add(time.Second))
			conn.Write([]byte(EncodeCommand("DBSIZE")))
			r, err := readReply(bufio.NewReader(conn))
			conn.Close()
			if err == nil && !r.IsError() {
				return s, s.Output()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("dfly neither served nor exited:\n%s", s.Output())
	return nil, ""
}

// aofPairs checks that every MULTI pair is whole and returns the keys.
func aofPairs(t *testing.T, c *RawConn) int {
	t.Helper()
	r := c.Do("KEYS", "*")
	have := map[string]bool{}
	for _, e := range r.Elems {
		have[e.Str] = true
	}
	for k := range have {
		if k[0] == 'a' && !have["b"+k[1:]] || k[0] == 'b' && !have["a"+k[1:]] {
			t.Errorf("%s: half a transaction after the restart", k)
		}
	}
	return len(have)
}

// TestAOFTornTail: shard files cut at random offsets (a power cut in the
// middle of a write) load up to the cut with Redis's log lines and are
// truncated there, so the next start loads them silently; a zero-padded
// tail is cut the same way; with aof-load-truncated no the start fails.
func TestAOFTornTail(t *testing.T) {
	seed := aofSeed(t)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	const n = 300
	args, shards := aofFiles(t, dir, n)
	// Every cut below loses at most the keys of the cut files' tails.
	for round := 0; round < 3; round++ {
		f := shards[rng.Intn(len(shards))]
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() < 100 {
			continue
		}
		cut := st.Size() - 1 - rng.Int63n(st.Size()/3)
		if err := os.Truncate(f, cut); err != nil {
			t.Fatal(err)
		}
		s, out := aofStart(t, args)
		if s == nil {
			t.Fatalf("round %d: a torn tail at %d of %s stopped the start:\n%s", round, cut, f, out)
		}
		if !strings.Contains(out, "!!! Warning: short read while loading the AOF file "+filepath.Base(f)) {
			t.Errorf("round %d: no short-read warning for %s cut at %d:\n%s", round, filepath.Base(f), cut, out)
		}
		c := s.Raw(t)
		got := aofPairs(t, c)
		if got < n/2 || got > n+n/3 {
			t.Errorf("round %d: %d keys after the cut", round, got)
		}
		t.Logf("round %d: %s cut at %d of %d: %d keys", round, filepath.Base(f), cut, st.Size(), got)
		args = s.cmd.Args[1:]
		s.Terminate(10 * time.Second)
	}
	// The cut files were truncated: they load without a warning now.
	s, out := aofStart(t, args)
	if s == nil || strings.Contains(out, "short read") {
		t.Fatalf("after truncation:\n%s", out)
	}
	s.Terminate(10 * time.Second)

	// A zero-padded tail (the size grew, the data never came).
	man, _ := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	last := strings.Fields(strings.TrimSpace(string(man)))
	name := filepath.Join(dir, "appendonlydir", last[len(last)-7])
	fh, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("*3\r\n$3\r\nSET\r\n$4\r\nzero\r\n$1\r\n1\r\n"))
	fh.Write(make([]byte, 4096))
	fh.Close()
	s, out = aofStart(t, args)
	if s == nil || !strings.Contains(out, "Truncating the AOF "+filepath.Base(name)) {
		t.Fatalf("a zero-padded tail:\n%s", out)
	}
	if r := s.Raw(t).Do("GET", "zero"); r.Str != "1" {
		t.Errorf("the entry before the zeros: %v", r)
	}
	args = s.cmd.Args[1:]
	s.Terminate(10 * time.Second)

	// aof-load-truncated no: the start fails, in Redis's words.
	for _, sf := range shards {
		if st, _ := os.Stat(sf); st.Size() > 10 {
			os.Truncate(sf, st.Size()-3)
			break
		}
	}
	s, out = aofStart(t, append(args, "--aof-load-truncated", "no"))
	if s != nil || !strings.Contains(out, "Unexpected end of file reading the append only file") {
		t.Fatalf("aof-load-truncated no with a torn tail:\n%s", out)
	}
}

// TestAOFCorruptMiddle: bytes overwritten in the middle of a file stop the
// start naming the file and the offset; a file the manifest names but
// that is missing stops it too. Neither panics.
func TestAOFCorruptMiddle(t *testing.T) {
	dir := t.TempDir()
	args, shards := aofFiles(t, dir, 200)
	f := shards[0]
	data, err := os.ReadFile(f)
	if err != nil || len(data) < 200 {
		t.Fatalf("%s: %d bytes, %v", f, len(data), err)
	}
	bad := append([]byte(nil), data...)
	copy(bad[len(bad)/2:], "garbage!garbage!")
	os.WriteFile(f, bad, 0o644)
	s, out := aofStart(t, args)
	if s != nil || !strings.Contains(out, "Bad file format reading the append only file "+filepath.Base(f)+" at offset") {
		t.Fatalf("a corrupt middle:\n%s", out)
	}
	if strings.Contains(out, "panic") {
		t.Fatalf("panicked:\n%s", out)
	}
	os.WriteFile(f, data, 0o644)
	os.Remove(shards[2])
	s, out = aofStart(t, args)
	if s != nil || !strings.Contains(out, "The AOF file "+filepath.Base(shards[2])+" doesn't exist") {
		t.Fatalf("a missing file:\n%s", out)
	}
}

// TestAOFLoadsRedisDir: an appendonlydir made by redis-server 7.0 (an RDB
// preamble base, then a RESP incremental file with MULTI/EXEC blocks,
// SELECTs, expiries and deletions) loads into dfly with the same data;
// redis-server refuses a dfly-made one rather than misread it.
func TestAOFLoadsRedisDir(t *testing.T) {
	needPersistTools(t, "redis-server")
	dir := t.TempDir()
	path, _ := exec.LookPath("redis-server")
	port := freePort(t)
	r, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--save", "", "--appendonly", "yes",
		"--aof-use-rdb-preamble", "yes", "--bind", "127.0.0.1", "--dir", dir}, port)
	if err != nil {
		t.Fatal(err)
	}
	rc := r.Raw(t)
	fillAllTypes(t, rc, 0)
	fillAllTypes(t, rc, 1)
	mustOK(t, rc.Do("BGREWRITEAOF"), "BGREWRITEAOF")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if i := info(t, rc, "persistence"); i["aof_rewrite_in_progress"] == "0" && i["aof_rewrite_scheduled"] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server's rewrite did not end")
		}
	}
	fillAllTypes(t, rc, 5) // after the base: in the incremental file
	rc.Send("MULTI")
	rc.Send("SELECT", "1")
	rc.Send("DEL", "d1:str")
	rc.Send("INCRBY", "d1:int", "5")
	rc.Send("EXPIRE", "d1:hash", "10000")
	rc.Send("EXEC")
	for i := 0; i < 5; i++ {
		rc.MustRead()
	}
	mustOK(t, rc.MustRead(), "EXEC")
	mustOK(t, rc.Do("SELECT", "0"), "select")
	want := dataset(t, rc, persistDBs)
	if err := r.Terminate(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	d := StartServer(t, "--dir", dir, "--shards", "3", "--appendonly", "yes")
	dc := d.Raw(t)
	compareDatasets(t, want, dataset(t, dc, persistDBs), "dfly loading redis-server's appendonlydir")
	// And again from the files as dfly left them (its own generation after Redis's).
	mustOK(t, dc.Do("SET", "more", "1"), "set")
	d.Terminate(10 * time.Second)
	want["0/more"] = "string ttl=false\n\"1\""
	d = StartServer(t, "--dir", dir, "--shards", "2", "--appendonly", "yes")
	compareDatasets(t, want, dataset(t, d.Raw(t), persistDBs), "dfly reloading the mixed directory")
	d.Terminate(10 * time.Second)

	port = freePort(t)
	if _, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--save", "", "--appendonly", "yes",
		"--bind", "127.0.0.1", "--dir", dir}, port); err == nil || !strings.Contains(err.Error(), "Unknown AOF file type") {
		t.Errorf("redis-server on dfly's appendonlydir: %v", err)
	}
}

// aofWaitRewrite waits until no rewrite runs or is scheduled.
func aofWaitRewrite(t *testing.T, c *RawConn) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		i := info(t, c, "persistence")
		if i["aof_rewrite_in_progress"] == "0" && i["aof_rewrite_scheduled"] == "0" {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatal("the AOF rewrite did not end")
		}
	}
}

// aofDirMatches checks that dir holds the manifest and exactly the files
// it names (Redis deletes its history files in the background: waited for).
func aofDirMatches(t *testing.T, dir string) {
	t.Helper()
	var extra []string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		man, err := os.ReadFile(filepath.Join(dir, "appendonly.aof.manifest"))
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]bool{"appendonly.aof.manifest": true}
		for _, line := range strings.Split(strings.TrimSpace(string(man)), "\n") {
			named[strings.Fields(line)[1]] = true
		}
		ents, _ := os.ReadDir(dir)
		extra = extra[:0]
		for _, e := range ents {
			if !named[e.Name()] {
				extra = append(extra, e.Name())
			} else {
				delete(named, e.Name())
			}
		}
		for n := range named {
			extra = append(extra, "missing "+n)
		}
		if len(extra) == 0 {
			return
		}
	}
	t.Errorf("%s holds other files than its manifest names: %v", dir, extra)
}

// TestAOFRewriteUnderLoad: BGREWRITEAOF twice while writers run; then the
// directory holds only what the manifest names, and a restart has the same
// data.
func TestAOFRewriteUnderLoad(t *testing.T) {
	seed := aofSeed(t)
	dir := t.TempDir()
	s := StartServer(t, "--dir", dir, "--appendonly", "yes", "--appendfsync", "everysec", "--shards", "4")
	c := s.Raw(t)
	m := &aofModel{keys: map[string]*aofKey{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { aofLoad(t, s.Addr, m, seed, 4, stop); close(done) }()
	for i := 0; i < 2; i++ {
		time.Sleep(200 * time.Millisecond)
		mustOK(t, c.Do("BGREWRITEAOF"), "BGREWRITEAOF")
		aofWaitRewrite(t, c)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	<-done
	i := aofWaitRewrite(t, c)
	if i["aof_last_bgrewrite_status"] != "ok" || i["aof_rewrites"] == "0" {
		t.Errorf("INFO after the rewrites: %v", i)
	}
	want := dataset(t, c, []int{0, 1})
	aofDirMatches(t, filepath.Join(dir, "appendonlydir"))
	if err := s.Terminate(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	s = restartServer(t, s)
	compareDatasets(t, want, dataset(t, s.Raw(t), []int{0, 1}), "after the rewrites and a restart")
}

// TestAOFConfigSet: CONFIG SET appendonly yes at run time writes a base of
// the data so far (a rewrite); later writes go to the incremental files; a
// kill -9 and a start with appendonly yes find everything. INFO's aof_*
// fields are Redis 7.0's, off and on.
func TestAOFConfigSet(t *testing.T) {
	dir := t.TempDir()
	s := StartServer(t, "--dir", dir, "--shards", "3")
	c := s.Raw(t)
	aofFields := func() []string {
		var names []string
		for _, line := range strings.Split(c.Do("INFO", "persistence").Str, "\r\n") {
			if k, _, ok := strings.Cut(line, ":"); ok && (strings.HasPrefix(k, "aof_") || strings.HasPrefix(k, "module_fork")) {
				names = append(names, k)
			}
		}
		return names
	}
	off := "aof_enabled aof_rewrite_in_progress aof_rewrite_scheduled aof_last_rewrite_time_sec aof_current_rewrite_time_sec aof_last_bgrewrite_status aof_rewrites aof_rewrites_consecutive_failures aof_last_write_status aof_last_cow_size module_fork_in_progress module_fork_last_cow_size"
	on := off + " aof_current_size aof_base_size aof_pending_rewrite aof_buffer_length aof_pending_bio_fsync aof_delayed_fsync"
	if got := strings.Join(aofFields(), " "); got != off {
		t.Errorf("INFO persistence, appendonly no:\n got %s\nwant %s", got, off)
	}
	for i := 0; i < 100; i++ {
		mustOK(t, c.Do("SET", "before"+strconv.Itoa(i), strconv.Itoa(i)), "set")
	}
	mustOK(t, c.Do("CONFIG", "SET", "appendonly", "yes", "appendfsync", "always"), "CONFIG SET appendonly yes")
	for deadline := time.Now().Add(20 * time.Second); info(t, c, "persistence")["aof_enabled"] != "1"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("aof_enabled stays 0")
		}
	}
	aofWaitRewrite(t, c)
	if got := strings.Join(aofFields(), " "); got != on {
		t.Errorf("INFO persistence, appendonly yes:\n got %s\nwant %s", got, on)
	}
	for i := 0; i < 100; i++ {
		mustOK(t, c.Do("RPUSH", "after", strconv.Itoa(i)), "rpush")
	}
	want := dataset(t, c, []int{0})
	killServer(s)
	port := freePort(t)
	args := append(append([]string(nil), s.cmd.Args[1:]...), "--appendonly", "yes")
	for i := range args {
		if args[i] == "--port" {
			args[i+1] = strconv.Itoa(port)
		}
	}
	s2, err := launch(t, s.cmd.Path, args, port)
	if err != nil {
		t.Fatal(err)
	}
	compareDatasets(t, want, dataset(t, s2.Raw(t), []int{0}), "after CONFIG SET appendonly yes and a kill")
}
