package tests

// Fenced locks (issue 42, README "Locks"): LOCK.ACQUIRE/RELEASE/RENEW/
// CHECK/INFO and FENCE end to end. dfly only: redis-server has no LOCK.

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func skipOnRedis(t *testing.T) {
	t.Helper()
	if target == targetRedis {
		t.Skip("LOCK.* and FENCE are dfly's")
	}
}

// lockGen is the generation of a one-name acquire's reply (nil: 0).
func lockGen(t *testing.T, r Reply) int64 {
	t.Helper()
	if r.IsError() {
		t.Fatalf("acquire: %v", r)
	}
	if len(r.Elems) == 0 {
		return 0
	}
	if len(r.Elems) != 1 || len(r.Elems[0].Elems) != 3 {
		t.Fatalf("acquire reply %v", r)
	}
	return r.Elems[0].Elems[2].Int
}

// lockInfo is LOCK.INFO as a map of its top-level fields.
func lockInfo(t *testing.T, c *RawConn, name string) map[string]Reply {
	t.Helper()
	r := c.Do("LOCK.INFO", name)
	m := map[string]Reply{}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		m[r.Elems[i].Str] = r.Elems[i+1]
	}
	return m
}

func TestLockBasics(t *testing.T) {
	skipOnRedis(t)
	c := StartServer(t).Raw(t)
	g1 := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "orders", "alice", "10000"))
	if g1 == 0 {
		t.Fatal("first acquire refused")
	}
	if g := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "orders", "bob", "10000")); g != 0 {
		t.Fatalf("second owner got the lock: %d", g)
	}
	// Re-acquire by the holder renews: same generation.
	if g := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "orders", "alice", "10000")); g != g1 {
		t.Fatalf("re-acquire gave generation %d, want %d", g, g1)
	}
	if r := c.Do("LOCK.ACQUIRE", "1", "orders", "alice", "10000", "SHARED"); !strings.HasPrefix(r.Str, "WRONGMODE") {
		t.Fatalf("holder asking shared: %v", r)
	}
	if r := c.Do("LOCK.RENEW", "orders", "alice", "20000"); len(r.Elems) != 3 || r.Elems[2].Int != g1 {
		t.Fatalf("LOCK.RENEW: %v", r)
	}
	seq := []string{"orders", "exclusive", strconv.FormatInt(g1, 10)}
	if r := c.Do(append([]string{"LOCK.CHECK"}, seq...)...); r.Int != 1 {
		t.Fatalf("LOCK.CHECK current: %v", r)
	}
	// The lock is a key of type lock.
	for _, tc := range [][2][]string{
		{{"TYPE", "orders"}, {"lock"}},
		{{"SCAN", "0", "TYPE", "lock"}, {`"0" (array) "orders"`}},
		{{"OBJECT", "ENCODING", "orders"}, {"lock"}},
	} {
		if got := strings.Join(strings.Fields(strings.Join(c.Do(tc[0]...).Lines(), " ")), " "); !strings.Contains(got, strings.Join(tc[1], " ")) {
			t.Errorf("%v: %q", tc[0], got)
		}
	}
	if r := c.Do("MEMORY", "USAGE", "orders"); r.Int <= 0 {
		t.Errorf("MEMORY USAGE: %v", r)
	}
	if r := c.Do("GET", "orders"); !r.IsError() {
		t.Errorf("GET of a lock: %v", r)
	}
	// FENCE: runs while current, refuses and changes nothing when stale.
	fence := append([]string{"FENCE"}, seq...)
	if r := c.Do(append(fence, "SET", "{orders}count", "1")...); r.Str != "OK" {
		t.Fatalf("fenced SET: %v", r)
	}
	if r := c.Do("LOCK.RELEASE", "orders", "bob"); r.Int != 0 {
		t.Fatalf("release by a non-holder: %v", r)
	}
	if r := c.Do("LOCK.RELEASE", "orders", "alice"); r.Int != 1 {
		t.Fatalf("release: %v", r)
	}
	if r := c.Do(append([]string{"LOCK.CHECK"}, seq...)...); r.Int != 0 {
		t.Fatalf("LOCK.CHECK after release: %v", r)
	}
	if r := c.Do(append(fence, "SET", "{orders}count", "2")...); !strings.HasPrefix(r.Str, "STALE") {
		t.Fatalf("stale fenced SET: %v", r)
	}
	if r := c.Do("GET", "{orders}count"); r.Str != "1" {
		t.Fatalf("a stale FENCE wrote: %v", r)
	}
	if r := c.Do("LOCK.RENEW", "orders", "alice", "1000"); !strings.HasPrefix(r.Str, "LOCKLOST") {
		t.Fatalf("renew after release: %v", r)
	}
	if m := info(t, c, "locks"); m["lock_grants"] != "1" || m["lock_renewals"] != "2" || m["lock_releases"] != "1" || m["lock_fenced_rejections"] != "1" {
		t.Errorf("INFO locks: %v", m)
	}
	// An explicit release has no lock-delay; the generation goes up.
	g2 := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "orders", "bob", "10000", "DELAY", "5000"))
	if g2 <= g1 {
		t.Fatalf("generation %d after %d", g2, g1)
	}
	// DEL is a forced break.
	if r := c.Do("DEL", "orders"); r.Int != 1 {
		t.Fatalf("DEL: %v", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"LOCK.ACQUIRE", "0", "a", "o", "1"}, "ERR numnames should be greater than 0"},
		{[]string{"LOCK.ACQUIRE", "3", "a", "o", "1"}, "ERR syntax error"},
		{[]string{"LOCK.ACQUIRE", "1", "a", "o", "0"}, "ERR lease is not a positive integer of milliseconds"},
		{[]string{"LOCK.ACQUIRE", "1", "a", "o", "x"}, "ERR lease is not a positive integer of milliseconds"},
		{[]string{"LOCK.ACQUIRE", "1", "a", "o", "1", "DELAY"}, "ERR syntax error"},
		{[]string{"LOCK.ACQUIRE", "1", "a", "o", "1", "WAIT", "-1"}, "ERR WAIT is not a non-negative integer of milliseconds"},
		{[]string{"LOCK.ACQUIRE", "1", "a", "o", "1", "bogus"}, "ERR syntax error"},
		{[]string{"LOCK.CHECK", "a", "both", "1"}, "ERR invalid sequencer: expected name, EXCLUSIVE or SHARED, and a generation"},
		{[]string{"FENCE", "a", "exclusive", "1", "nosuch"}, "ERR FENCE: unknown command 'nosuch'"},
		{[]string{"FENCE", "a", "exclusive", "1", "BLPOP", "{a}l", "0"}, "ERR FENCE: 'blpop' cannot be fenced (only key commands that run on one shard)"},
		{[]string{"FENCE", "a", "exclusive", "1", "GET"}, "ERR wrong number of arguments for 'get' command"},
	} {
		if r := c.Do(tc.args...); r.Str != tc.want {
			t.Errorf("%v: %v, want -%s", tc.args, r, tc.want)
		}
	}
	c.Do("SET", "str", "x")
	if r := c.Do("LOCK.ACQUIRE", "1", "str", "o", "1000"); r.Str != "WRONGTYPE Operation against a key holding the wrong kind of value" {
		t.Errorf("acquire over a string: %v", r)
	}
}

func TestLockExpiryAndDelay(t *testing.T) {
	skipOnRedis(t)
	c := StartServer(t).Raw(t)
	g1 := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "l", "a", "300", "DELAY", "700"))
	time.Sleep(400 * time.Millisecond) // the lease ran out: delay until ~1000 ms
	if r := c.Do("LOCK.RENEW", "l", "a", "1000"); !strings.HasPrefix(r.Str, "LOCKLOST") {
		t.Fatalf("renew after the lease ran out: %v", r)
	}
	if r := c.Do("LOCK.CHECK", "l", "exclusive", strconv.FormatInt(g1, 10)); r.Int != 0 {
		t.Fatalf("expired sequencer current: %v", r)
	}
	if g := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "l", "b", "1000")); g != 0 {
		t.Fatal("granted during the lock-delay")
	}
	if m := lockInfo(t, c, "l"); m["delay-left-ms"].Int <= 0 {
		t.Fatalf("LOCK.INFO during the delay: %v", m)
	}
	// Waiting for it returns once the delay is over.
	start := time.Now()
	g2 := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "l", "b", "1000", "WAIT", "5000"))
	if g2 <= g1 {
		t.Fatalf("waited acquire: generation %d after %d", g2, g1)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("granted after %v", el)
	}
	if m := info(t, c, "locks"); m["lock_expiries"] != "1" || m["lock_delayed_acquisitions"] == "0" || m["lock_grants"] != "2" {
		t.Errorf("INFO locks: %v", m)
	}
}

func TestLockMultiName(t *testing.T) {
	skipOnRedis(t)
	c := StartServer(t, "--shards", "4").Raw(t)
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "n3", "x", "10000"))
	if r := c.Do("LOCK.ACQUIRE", "4", "n4", "n1", "n3", "n2", "y", "10000"); r.Kind != KindNil {
		t.Fatalf("multi-name over a held name: %v", r)
	}
	for _, n := range []string{"n1", "n2", "n4"} {
		if r := c.Do("TYPE", n); r.Str != "none" {
			t.Fatalf("a refused multi-name acquire took %s (%v)", n, r)
		}
	}
	c.Do("LOCK.RELEASE", "n3", "x")
	r := c.Do("LOCK.ACQUIRE", "5", "n4", "n1", "n3", "n2", "n1", "y", "10000")
	var names []string
	for _, s := range r.Elems {
		names = append(names, s.Elems[0].Str)
	}
	if strings.Join(names, ",") != "n1,n2,n3,n4" {
		t.Fatalf("multi-name acquire: %v", r)
	}
}

// Waiters are served in FIFO order; a shared request behind a queued
// exclusive one waits; a waiter that disconnects leaves the queue.
func TestLockWaitQueue(t *testing.T) {
	skipOnRedis(t)
	s := StartServer(t)
	c := s.Raw(t)
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "q", "r1", "30000", "SHARED"))
	w := s.Raw(t)
	w.Send("LOCK.ACQUIRE", "1", "q", "w", "30000", "WAIT", "20000")
	waitUntil(t, 5*time.Second, "the writer queued", func() bool { return len(lockInfo(t, c, "q")["waiters"].Elems) == 1 })
	// A shared request behind the queued writer waits (no WAIT: refused).
	if g := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "q", "r2", "30000", "SHARED")); g != 0 {
		t.Fatal("shared request overtook a queued exclusive one")
	}
	r2 := s.Raw(t)
	r2.Send("LOCK.ACQUIRE", "1", "q", "r2", "30000", "SHARED", "WAIT", "20000")
	gone := s.Raw(t)
	gone.Send("LOCK.ACQUIRE", "1", "q", "gone", "30000", "WAIT", "0")
	waitUntil(t, 5*time.Second, "three waiters", func() bool { return len(lockInfo(t, c, "q")["waiters"].Elems) == 3 })
	gone.Close()
	waitUntil(t, 5*time.Second, "the disconnected waiter left", func() bool { return len(lockInfo(t, c, "q")["waiters"].Elems) == 2 })
	c.Do("LOCK.RELEASE", "q", "r1")
	gw := lockGen(t, w.MustRead())
	if m := lockInfo(t, c, "q"); m["mode"].Str != "exclusive" || len(m["waiters"].Elems) != 1 {
		t.Fatalf("after the writer's grant: %v", m)
	}
	c.Do("LOCK.RELEASE", "q", "w")
	if g := lockGen(t, r2.MustRead()); g <= gw {
		t.Fatalf("shared waiter got generation %d after %d", g, gw)
	}
	if m := info(t, c, "locks"); m["lock_waiters"] != "0" {
		t.Errorf("waiters left: %v", m)
	}
}

// lockState is what must survive a restart or a sync: mode, generation
// and each holder's owner and generation.
func lockState(t *testing.T, c *RawConn, name string) string {
	t.Helper()
	m := lockInfo(t, c, name)
	s := m["mode"].Str + " " + strconv.FormatInt(m["generation"].Int, 10)
	for _, h := range m["holders"].Elems {
		s += " " + h.Elems[0].Str + "@" + strconv.FormatInt(h.Elems[1].Int, 10)
	}
	return s
}

func seedLocks(t *testing.T, c *RawConn) map[string]string {
	t.Helper()
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "a", "o1", "60000"))
	c.Do("LOCK.RELEASE", "a", "o1")
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "a", "o2", "60000", "DELAY", "3000"))
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "b", "o1", "60000", "SHARED"))
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "b", "o3", "60000", "SHARED"))
	lockGen(t, c.Do("LOCK.ACQUIRE", "1", "free", "o1", "60000"))
	c.Do("LOCK.RELEASE", "free", "o1")
	want := map[string]string{}
	for _, n := range []string{"a", "b", "free"} {
		want[n] = lockState(t, c, n)
	}
	return want
}

func checkLocks(t *testing.T, c *RawConn, want map[string]string, what string) {
	t.Helper()
	for n, w := range want {
		if got := lockState(t, c, n); got != w {
			t.Errorf("%s: lock %s is %q, want %q", what, n, got, w)
		}
		if r := c.Do("TYPE", n); r.Str != "lock" {
			t.Errorf("%s: TYPE %s = %v", what, n, r)
		}
	}
	// Generations go on from where they were.
	last, _ := strconv.ParseInt(strings.Fields(want["free"])[1], 10, 64)
	if g := lockGen(t, c.Do("LOCK.ACQUIRE", "1", "free", "o9", "1000")); g != last+1 {
		t.Errorf("%s: generation %d after %d", what, g, last)
	}
}

// Locks and generations survive BGSAVE and a restart in both formats; the
// RDB file passes redis-check-rdb and loads into redis-server as hashes.
func TestLockPersist(t *testing.T) {
	skipOnRedis(t)
	needPersistTools(t, "redis-server", "redis-check-rdb")
	for _, format := range []string{"rdb", "dfly"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			s := StartServer(t, "--dir", dir, "--dbformat", format, "--shards", "3")
			c := s.Raw(t)
			want := seedLocks(t, c)
			mustOK(t, c.Do("BGSAVE"), "BGSAVE")
			waitUntil(t, 30*time.Second, "BGSAVE", func() bool { return info(t, c, "persistence")["rdb_bgsave_in_progress"] == "0" })
			s.Terminate(10 * time.Second)
			s2 := StartServer(t, "--dir", dir, "--dbformat", format, "--shards", "2")
			checkLocks(t, s2.Raw(t), want, format+" restart")
			if format != "rdb" {
				return
			}
			file := filepath.Join(dir, "dump.rdb")
			if out, err := exec.Command("redis-check-rdb", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "RDB looks OK") {
				t.Fatalf("redis-check-rdb: %v\n%s", err, out)
			}
			port := freePort(t)
			r, err := launchWith(t, "redis-server", []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "no"}, port, true)
			if err != nil {
				t.Fatalf("redis-server loading dfly's file: %v", err)
			}
			rc := r.Raw(t)
			if got := rc.Do("TYPE", "b"); got.Str != "hash" {
				t.Fatalf("redis-server: TYPE b = %v", got)
			}
			if got := rc.Do("HGET", "b", "__dfly_lock__"); got.Str != "1" {
				t.Fatalf("redis-server: HGET b __dfly_lock__ = %v", got)
			}
		})
	}
}

// A dfly replica gets the locks in its full sync and every change after
// it, never expires them itself, and when promoted grants in a new epoch.
func TestLockReplica(t *testing.T) {
	skipOnRedis(t)
	m := StartServer(t, "--shards", "2")
	mc := m.Raw(t)
	want := seedLocks(t, mc)
	r := StartServer(t, "--shards", "3")
	rc := r.Raw(t)
	replicaOf(t, r, m.Addr)
	waitReplicaLinkUp(t, r, 30*time.Second)
	checkLocksOnly := func(what string) {
		t.Helper()
		for n, w := range want {
			waitUntil(t, 10*time.Second, what+": lock "+n, func() bool { return lockState(t, rc, n) == w })
		}
	}
	checkLocksOnly("full sync")
	// Changes after the sync.
	mc.Do("LOCK.RELEASE", "b", "o1")
	g := lockGen(t, mc.Do("LOCK.ACQUIRE", "1", "c", "o5", "400"))
	want["b"] = lockState(t, mc, "b")
	want["c"] = lockState(t, mc, "c")
	checkLocksOnly("stable sync")
	time.Sleep(500 * time.Millisecond) // c's lease ran out: judged, not expired, on the replica
	seq := []string{"LOCK.CHECK", "c", "exclusive", strconv.FormatInt(g, 10)}
	if got := rc.Do(seq...); got.Int != 0 {
		t.Errorf("replica: LOCK.CHECK of a run-out lease: %v", got)
	}
	if got := rc.Do("EXISTS", "c"); got.Int != 1 {
		t.Errorf("replica expired the lock itself: %v", got)
	}
	// Promotion: a new epoch outranks every grant of the old master.
	mustOK(t, rc.Do("REPLICAOF", "NO", "ONE"), "REPLICAOF NO ONE")
	g2 := lockGen(t, rc.Do("LOCK.ACQUIRE", "1", "c", "o6", "10000"))
	if gm := lockGen(t, mc.Do("LOCK.ACQUIRE", "1", "c", "o7", "10000")); g2 <= gm || g2>>40 != 1 {
		t.Errorf("promoted replica's generation %d (epoch %d) does not outrank the old master's %d", g2, g2>>40, gm)
	}
}
