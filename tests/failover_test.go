package tests

// FAILOVER (Redis 6.2+): errors as Redis 7.0's, a coordinated hand-over
// that keeps every write, the write pause while the master waits for its
// replica, ABORT, TIMEOUT and FORCE. DFLY_TEST_TARGET=redis runs them all
// against redis-server.

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFailoverErrors(t *testing.T) {
	m := StartServer(t)
	c := m.Raw(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FAILOVER"}, "ERR FAILOVER requires connected replicas."},
		{[]string{"FAILOVER", "ABORT"}, "ERR No failover in progress."},
		{[]string{"FAILOVER", "TIMEOUT", "0"}, "ERR FAILOVER timeout must be greater than 0"},
		{[]string{"FAILOVER", "TIMEOUT", "-1"}, "ERR FAILOVER timeout must be greater than 0"},
		{[]string{"FAILOVER", "TIMEOUT", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"FAILOVER", "TO", "127.0.0.1", "x"}, "ERR value is not an integer or out of range"},
		{[]string{"FAILOVER", "bogus"}, "ERR syntax error"},
		{[]string{"FAILOVER", "TO", "127.0.0.1"}, "ERR syntax error"},
		{[]string{"FAILOVER", "TIMEOUT", "5", "TIMEOUT", "6"}, "ERR syntax error"},
		{[]string{"FAILOVER", "ABORT", "ABORT"}, "ERR syntax error"},
		{[]string{"FAILOVER", "FORCE", "FORCE"}, "ERR syntax error"},
		{[]string{"FAILOVER", "FORCE"}, "ERR FAILOVER requires connected replicas."},
		{[]string{"FAILOVER", "TO", "127.0.0.1", "1", "FORCE"}, "ERR FAILOVER requires connected replicas."},
	} {
		if got := c.Do(tc.args...); !got.IsError() || got.Str != tc.want {
			t.Errorf("%v: got %v, want -%s", tc.args, got, tc.want)
		}
	}

	r := StartServer(t)
	replicaOf(t, r, m.Addr)
	waitReplicaLinkUp(t, r, 30*time.Second)
	waitOnline(t, c)
	rp := strconv.Itoa(r.Port)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FAILOVER", "TO", "127.0.0.1", strconv.Itoa(freePort(t))}, "ERR FAILOVER target HOST and PORT is not a replica."},
		{[]string{"FAILOVER", "TO", "localhost", rp}, "ERR FAILOVER target HOST and PORT is not a replica."},
		{[]string{"FAILOVER", "TIMEOUT", "10", "FORCE"}, "ERR FAILOVER with force option requires both a timeout and target HOST and IP."},
		{[]string{"FAILOVER", "TO", "127.0.0.1", rp, "FORCE"}, "ERR FAILOVER with force option requires both a timeout and target HOST and IP."},
	} {
		if got := c.Do(tc.args...); !got.IsError() || got.Str != tc.want {
			t.Errorf("%v: got %v, want -%s", tc.args, got, tc.want)
		}
	}
	if got := r.Raw(t).Do("FAILOVER"); got.Str != "ERR FAILOVER is not valid when server is a replica." {
		t.Errorf("FAILOVER on a replica: %v", got)
	}
	if got := info(t, c, "replication")["master_failover_state"]; got != "no-failover" {
		t.Errorf("master_failover_state %q after refused FAILOVERs", got)
	}
}

// waitOnline waits until the master lists a replica as online.
func waitOnline(t *testing.T, c *RawConn) {
	t.Helper()
	waitUntil(t, 30*time.Second, "an online replica", func() bool {
		return strings.Contains(info(t, c, "replication")["slave0"], "state=online")
	})
}

// role is the first element of ROLE's reply.
func role(t *testing.T, c *RawConn) string {
	t.Helper()
	r := c.Do("ROLE")
	if len(r.Elems) == 0 {
		t.Fatalf("ROLE: %v", r)
	}
	return r.Elems[0].Str
}

// waitFailedOver waits until old follows nu, with its link up, and the
// failover is over on old.
func waitFailedOver(t *testing.T, old, nu *Server) {
	t.Helper()
	oc, nc := old.Raw(t), nu.Raw(t)
	waitUntil(t, 30*time.Second, "the roles to swap", func() bool {
		m := info(t, oc, "replication")
		return role(t, nc) == "master" && m["role"] == "slave" && m["master_port"] == strconv.Itoa(nu.Port) &&
			m["master_link_status"] == "up" && m["master_sync_in_progress"] == "0"
	})
}

// TestFailover: FAILOVER hands the master role to the replica with every
// write, the old master follows the new one (and drops its other
// replicas, which follow the new master too), each with a partial sync,
// and FAILOVER TO hands it back.
func TestFailover(t *testing.T) {
	a := StartServer(t, "--shards", "2")
	b := StartServer(t, "--shards", "3")
	ac, bc := a.Raw(t), b.Raw(t)
	replicaOf(t, b, a.Addr)
	waitReplicaLinkUp(t, b, 30*time.Second)
	waitOnline(t, ac)
	const n = 300
	for i := range n {
		if r := ac.Do("SET", "k"+strconv.Itoa(i), strconv.Itoa(i)); r.IsError() {
			t.Fatalf("SET: %v", r)
		}
	}
	ac.Do("RPUSH", "list", "x", "y", "z")
	// A second replica of a: Redis chains it after the failover (it
	// follows a, now b's replica); dfly serves no replicas from a replica,
	// so a drops it, refuses it naming b, and it follows b itself.
	c := StartServer(t, "--shards", "1")
	cc := c.Raw(t)
	replicaOf(t, c, a.Addr)
	waitReplicaLinkUp(t, c, 30*time.Second)

	syncs := func(c *RawConn) (full, partial string) {
		m := info(t, c, "replication")
		return m["dfly_flow_syncs_full"], m["dfly_flow_syncs_partial"]
	}
	fullBefore, _ := syncs(ac)
	if r := ac.Do("FAILOVER", "TO", "127.0.0.1", strconv.Itoa(b.Port)); r.IsError() || r.Str != "OK" {
		t.Fatalf("FAILOVER: %v", r)
	}
	waitFailedOver(t, a, b)
	if got := info(t, ac, "replication")["master_failover_state"]; got != "no-failover" {
		t.Errorf("master_failover_state %q after the failover", got)
	}
	for _, c := range []*RawConn{ac, bc} {
		if got := c.Do("DBSIZE"); got.Int != n+1 {
			t.Errorf("DBSIZE %d, want %d", got.Int, n+1)
		}
		if got := c.Do("GET", "k"+strconv.Itoa(n-1)); got.Str != strconv.Itoa(n-1) {
			t.Errorf("last write: %v", got)
		}
	}
	if r := ac.Do("SET", "x", "1"); !r.IsError() || !strings.HasPrefix(r.Str, "READONLY") {
		t.Errorf("write to the old master: %v, want READONLY", r)
	}
	bc.Do("SET", "after", "1")
	waitUntil(t, 10*time.Second, "the new master's write on the old one", func() bool {
		return ac.Do("GET", "after").Str == "1"
	})
	waitUntil(t, 30*time.Second, "the other replica to get the write", func() bool {
		return cc.Do("GET", "after").Str == "1"
	})
	followed := func(m *Server) {
		t.Helper()
		want := strconv.Itoa(a.Port) // Redis: chained, still following a
		if target == targetDfly {
			want = strconv.Itoa(m.Port)
		}
		ci := info(t, cc, "replication")
		if ci["master_port"] != want || ci["master_link_status"] != "up" {
			t.Errorf("the other replica follows port %s (link %s), want %s", ci["master_port"], ci["master_link_status"], want)
		}
		if got, mn := cc.Do("DBSIZE"), m.Raw(t).Do("DBSIZE"); got.Int != mn.Int {
			t.Errorf("the other replica holds %d keys, the master %d", got.Int, mn.Int)
		}
	}
	followed(b)
	// b's data was a's, and c's too, when b took over: both continue on
	// b with a partial sync (DFLY HANDOVER), as Redis's psync2 lets them.
	if full, partial := syncs(bc); target == targetDfly && (full != "0" || partial != "2") {
		t.Errorf("the new master served %s full and %s partial syncs, want 0 and 2", full, partial)
	}

	// And back, naming the target.
	if r := bc.Do("FAILOVER", "TO", "127.0.0.1", strconv.Itoa(a.Port), "TIMEOUT", "10000"); r.IsError() {
		t.Fatalf("FAILOVER TO: %v", r)
	}
	waitFailedOver(t, b, a)
	if got := ac.Do("GET", "after"); got.Str != "1" {
		t.Errorf("after failing back: %v", got)
	}
	if r := ac.Do("SET", "back", "1"); r.IsError() {
		t.Errorf("write to the master again: %v", r)
	}
	waitUntil(t, 30*time.Second, "the other replica to get the write after failing back", func() bool {
		return cc.Do("GET", "back").Str == "1"
	})
	followed(a)
	if full, partial := syncs(ac); target == targetDfly && (full != fullBefore || partial != "2") {
		t.Errorf("failing back: %s full syncs (%s before) and %s partial ones, want no new full and 2 partial", full, fullBefore, partial)
	}
}

// TestFailoverWaitsForReplica: with the replica's link stalled, FAILOVER
// waits (waiting-for-sync) with writes paused, not refused; ABORT and a
// TIMEOUT give the master back its writes; FORCE hands over anyway.
func TestFailoverWaitsForReplica(t *testing.T) {
	a := StartServer(t, "--shards", "2")
	b := StartServer(t, "--shards", "2")
	ac := a.Raw(t)
	px := startProxy(t, a.Addr)
	replicaOf(t, b, px.ln.Addr().String())
	waitReplicaLinkUp(t, b, 30*time.Second)
	waitOnline(t, ac)
	px.stall()
	ac.Do("SET", "unsent", "1") // the replica cannot acknowledge it now

	state := func() string { return info(t, ac, "replication")["master_failover_state"] }
	if r := ac.Do("FAILOVER"); r.Str != "OK" {
		t.Fatalf("FAILOVER: %v", r)
	}
	if got := state(); got != "waiting-for-sync" {
		t.Fatalf("master_failover_state %q, want waiting-for-sync", got)
	}
	if r := ac.Do("FAILOVER"); r.Str != "ERR FAILOVER already in progress." {
		t.Errorf("second FAILOVER: %v", r)
	}
	w := a.Raw(t)
	w.Send("SET", "paused", "1")
	w.Timeout = 300 * time.Millisecond
	if r, err := w.Read(); err == nil {
		t.Fatalf("a write during the failover answered %v; want it held", r)
	}
	if got := ac.Do("GET", "unsent"); got.Str != "1" {
		t.Errorf("reads go on: %v", got)
	}
	if r := ac.Do("FAILOVER", "ABORT"); r.Str != "OK" {
		t.Fatalf("FAILOVER ABORT: %v", r)
	}
	w.Timeout = 10 * time.Second
	if r := w.MustRead(); r.Str != "OK" {
		t.Errorf("held write after ABORT: %v", r)
	}
	waitUntil(t, 5*time.Second, "no-failover", func() bool { return state() == "no-failover" })
	if got := role(t, ac); got != "master" {
		t.Fatalf("role %q after ABORT", got)
	}

	start := time.Now()
	if r := ac.Do("FAILOVER", "TIMEOUT", "300"); r.Str != "OK" {
		t.Fatalf("FAILOVER TIMEOUT: %v", r)
	}
	waitUntil(t, 10*time.Second, "the timeout to end the failover", func() bool { return state() == "no-failover" })
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Errorf("failover ended after %v, before its timeout", el)
	}
	if got := role(t, ac); got != "master" {
		t.Fatalf("role %q after the timeout", got)
	}
	if r := ac.Do("SET", "writable", "1"); r.Str != "OK" {
		t.Errorf("write after the timeout: %v", r)
	}

	// FORCE: the target is promoted though it never caught up.
	if r := ac.Do("FAILOVER", "TO", "127.0.0.1", strconv.Itoa(b.Port), "TIMEOUT", "200", "FORCE"); r.Str != "OK" {
		t.Fatalf("FAILOVER FORCE: %v", r)
	}
	waitFailedOver(t, a, b)
}

// TestFailoverWithRedis: FAILOVER between redis-server and the server under
// test, both ways. A redis-server master hands over with PSYNC ...
// FAILOVER on its link; this server, master, promotes a redis-server
// replica and follows it. Either way the old master continues with a
// partial sync from where it was, and every write is on both.
func TestFailoverWithRedis(t *testing.T) {
	for _, redisMaster := range []bool{true, false} {
		name := "dfly master, redis replica"
		if redisMaster {
			name = "redis master, dfly replica"
		}
		t.Run(name, func(t *testing.T) {
			redis := startMaster(t, true, 0) // a redis-server (skips without one)
			dut := StartServer(t, "--shards", "2")
			master, rep := dut, redis
			if redisMaster {
				master, rep = redis, dut
			}
			mc, rc := master.Raw(t), rep.Raw(t)
			replicaOf(t, rep, master.Addr)
			waitReplicaLinkUp(t, rep, 30*time.Second)
			waitOnline(t, mc)
			for i := range 200 {
				mc.Do("SET", "k"+strconv.Itoa(i), strconv.Itoa(i))
			}
			mc.Do("HSET", "h", "f", "v")
			if r := mc.Do("FAILOVER", "TIMEOUT", "20000"); r.Str != "OK" {
				t.Fatalf("FAILOVER: %v", r)
			}
			waitFailedOver(t, master, rep)
			if got := info(t, rc, "stats")["sync_partial_ok"]; got != "1" {
				t.Errorf("new master's sync_partial_ok %q, want 1 (the old master continues)", got)
			}
			rc.Do("SET", "after", "1")
			waitUntil(t, 10*time.Second, "the new master's write on the old one", func() bool {
				return mc.Do("GET", "after").Str == "1"
			})
			for _, c := range []*RawConn{mc, rc} {
				if got := c.Do("DBSIZE"); got.Int != 202 {
					t.Errorf("DBSIZE %d, want 202", got.Int)
				}
				if got := c.Do("HGET", "h", "f"); got.Str != "v" {
					t.Errorf("HGET: %v", got)
				}
			}
		})
	}
}

// TestReplicaOfAReplica: a replica pointed at a replica gets the master's
// data. Redis chains it; dfly's replica refuses it naming its master, and
// it follows that master itself (INFO then names the master).
func TestReplicaOfAReplica(t *testing.T) {
	t.Parallel()
	a := StartServer(t, "--shards", "2")
	b := StartServer(t, "--shards", "1")
	c := StartServer(t, "--shards", "3")
	ac, cc := a.Raw(t), c.Raw(t)
	for i := range 100 {
		ac.Do("SET", "k"+strconv.Itoa(i), "v")
	}
	replicaOf(t, b, a.Addr)
	waitReplicaLinkUp(t, b, 30*time.Second)
	replicaOf(t, c, b.Addr)
	ac.Do("SET", "late", "1")
	waitUntil(t, 30*time.Second, "the replica's replica to get the master's writes", func() bool {
		return cc.Do("GET", "late").Str == "1" && cc.Do("DBSIZE").Int == 101
	})
	want := strconv.Itoa(b.Port)
	if target == targetDfly {
		want = strconv.Itoa(a.Port)
	}
	if ci := info(t, cc, "replication"); ci["master_port"] != want || ci["master_link_status"] != "up" {
		t.Errorf("master_port %s link %s, want %s up", ci["master_port"], ci["master_link_status"], want)
	}
}

// TestFlowHandover: a promoted dfly replica lets exactly the servers whose
// data is where its own history began continue with a partial sync: a
// fellow replica as far along does; one that lagged, one that went further
// (it still followed the old master), and the old master (which went on
// taking writes: no FAILOVER paused it) take a full one, and all end with
// the new master's data.
func TestFlowHandover(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	a := StartServer(t, "--shards", "2")
	ac := a.Raw(t)
	for i := range 200 {
		mustOK(t, ac.Do("SET", "k"+strconv.Itoa(i), "v"), "set")
	}
	b := StartServer(t, "--shards", "3")
	c := StartServer(t, "--shards", "2")
	d := StartServer(t, "--shards", "1")
	e := StartServer(t, "--shards", "2")
	px := startProxy(t, a.Addr)
	replicaOf(t, b, a.Addr)
	replicaOf(t, c, px.ln.Addr().String())
	replicaOf(t, d, a.Addr)
	replicaOf(t, e, a.Addr)
	for _, r := range []*Server{b, c, d, e} {
		waitReplicaLinkUp(t, r, 30*time.Second)
	}
	bc, cc, dc, ec := b.Raw(t), c.Raw(t), d.Raw(t), e.Raw(t)
	px.stall() // c hears nothing more
	mustOK(t, ac.Do("SET", "late", "1"), "set")
	waitUntil(t, 10*time.Second, "b and d to get the last write", func() bool {
		return bc.Do("GET", "late").Str == "1" && dc.Do("GET", "late").Str == "1"
	})
	mustOK(t, bc.Do("REPLICAOF", "NO", "ONE"), "replicaof no one")
	mustOK(t, bc.Do("SET", "onb", "1"), "set on the new master")
	replicaOf(t, d, b.Addr)
	waitReplicaLinkUp(t, d, 30*time.Second)
	mustOK(t, ac.Do("SET", "stray", "1"), "set on the old master")
	waitUntil(t, 10*time.Second, "e to get the old master's last write", func() bool { return ec.Do("GET", "stray").Str == "1" })
	for _, r := range []*Server{c, e, a} {
		replicaOf(t, r, b.Addr)
		waitReplicaLinkUp(t, r, 30*time.Second)
	}
	mustOK(t, bc.Do("SET", "last", "1"), "set")
	want := bc.Do("DBSIZE").Int
	for name, rc := range map[string]*RawConn{"a": ac, "c": cc, "d": dc, "e": ec} {
		waitUntil(t, 10*time.Second, name+" to get the new master's writes", func() bool { return rc.Do("GET", "last").Str == "1" })
		if n := rc.Do("DBSIZE").Int; n != want || rc.Do("EXISTS", "stray").Int != 0 || rc.Do("GET", "onb").Str != "1" {
			t.Errorf("%s holds %d keys (stray %v, onb %v), the new master %d", name, n, rc.Do("EXISTS", "stray"), rc.Do("GET", "onb"), want)
		}
	}
	m := info(t, bc, "replication")
	if m["dfly_flow_syncs_partial"] != "1" || m["dfly_flow_syncs_full"] != "3" {
		t.Errorf("the new master served %s partial and %s full syncs, want 1 (d) and 3 (c lagged, e and a went on)",
			m["dfly_flow_syncs_partial"], m["dfly_flow_syncs_full"])
	}
	// The protocol's refusals.
	for _, cmd := range [][]string{{"DFLY", "HANDOVER", "x", "1"}, {"DFLY", "HANDOVER", "x", "y"}} {
		if r := bc.Do(cmd...); !r.IsError() {
			t.Errorf("%v: %v, want an error", cmd, r)
		}
	}
}

// TestFailoverUnderLoad: a seeder writes every type (big values, keys that
// expire within a second) to the master while its replicas follow; FAILOVER
// holds its writes, hands over, and answers them READONLY; the seeder then
// writes to the new master. The old master continues with a partial sync
// (DFLY HANDOVER), the other replica with whatever sync its place allows,
// and all three end with equal digests.
func TestFailoverUnderLoad(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	raceSubset(t, false) // 27 s under the race build; TestFailover* cover the paths there
	a := StartServer(t, "--shards", "3")
	b := StartServer(t, "--shards", "2")
	c := StartServer(t, "--shards", "1")
	ac, bc, cc := a.Raw(t), b.Raw(t), c.Raw(t)
	preload(t, ac, 2000)
	replicaOf(t, b, a.Addr)
	replicaOf(t, c, a.Addr)
	waitReplicaLinkUp(t, b, 30*time.Second)
	waitReplicaLinkUp(t, c, 30*time.Second)
	seed := newSeed(t)
	sa := &seeder{addr: a.Addr, seed: seed, keys: 200, bigEvery: 100, shortTTL: true}
	stop := make(chan struct{})
	wg := sa.run(t, 3, stop)
	time.Sleep(time.Second)
	if r := ac.Do("FAILOVER", "TO", "127.0.0.1", strconv.Itoa(b.Port), "TIMEOUT", "20000"); r.IsError() {
		t.Fatalf("FAILOVER: %v", r)
	}
	waitFailedOver(t, a, b)
	close(stop)
	wg.Wait()
	sa.check(t)

	sb := &seeder{addr: b.Addr, seed: seed + 1, keys: 200, bigEvery: 100, shortTTL: true}
	stop = make(chan struct{})
	wg = sb.run(t, 3, stop)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	sb.check(t)
	if p := info(t, bc, "replication")["dfly_flow_syncs_partial"]; p == "0" || p == "" {
		t.Errorf("the old master did not continue with a partial sync (%q partial syncs)", p)
	}
	time.Sleep(1500 * time.Millisecond) // the short TTLs run out, their DELs flow
	waitDigestsEqual(t, bc, ac)
	waitDigestsEqual(t, bc, cc)
}

// sendSlowWrites sends on w a script that writes w1 = first, computes for
// about a second, then writes w2..w8 = last and returns "done". Eight
// keys: with two shards nearly surely on both, so the script runs on a
// coordinator, a step per call.
func sendSlowWrites(w *RawConn) {
	const script = `redis.call('set', KEYS[1], 'first')
local n = 0
for i = 1, tonumber(ARGV[1]) do n = n + i end
for i = 2, #KEYS do redis.call('set', KEYS[i], 'last') end
return 'done'`
	loops := "30000000" // about a second
	if raceBuild() {
		loops = "2000000" // the interpreter is ~5x slower there
	}
	w.Timeout = 60 * time.Second
	w.Send("EVAL", script, "8", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", loops)
}

// TestFailoverWaitsForWritesInFlight: a cross-shard script that started
// before FAILOVER (its first write done, its last still to come) is not
// cut in two by the hand-over: it runs to its end and all its writes are
// on the new master. (The pause only holds commands not yet started;
// FAILOVER waits for those in flight before it compares offsets. Without
// that, the script's later writes were refused READONLY.)
func TestFailoverWaitsForWritesInFlight(t *testing.T) {
	a := StartServer(t, "--shards", "2")
	b := StartServer(t, "--shards", "2")
	ac := a.Raw(t)
	replicaOf(t, b, a.Addr)
	waitReplicaLinkUp(t, b, 30*time.Second)
	waitOnline(t, ac)
	w := a.Raw(t)
	sendSlowWrites(w)
	time.Sleep(200 * time.Millisecond) // its first write made (GET would wait for its locks)
	if r := ac.Do("FAILOVER", "TO", "127.0.0.1", strconv.Itoa(b.Port)); r.IsError() {
		t.Fatalf("FAILOVER: %v", r)
	}
	r, err := w.Read()
	if err != nil {
		t.Fatalf("the script: %v", err)
	}
	waitFailedOver(t, a, b)
	bc := b.Raw(t)
	// Redis runs the script to its end before the failover can start;
	// dfly must not cut it in two either (its later writes refused
	// READONLY once the server turned replica, or lost on the way).
	if r.Str != "done" || r.IsError() {
		t.Fatalf("the script: %v, want it to run to its end", r)
	}
	for i := 1; i <= 8; i++ {
		want := "last"
		if i == 1 {
			want = "first"
		}
		if got := bc.Do("GET", "w"+strconv.Itoa(i)); got.Str != want {
			t.Errorf("the script succeeded, but the new master has w%d = %v", i, got)
		}
	}
}
