package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TXN and KEYVERSION (package txn, issue 42) under concurrency. The
// stateless behaviour (syntax, conditions, errors) is in testdata/txn.txt.

// setKeys sets n keys named by format (with %d) to value.
func setKeys(t *testing.T, c *RawConn, format string, n int, value string) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(format, i)
		mustOK(t, c.Do("SET", keys[i], value), "SET")
	}
	return keys
}

// txnRead reads keys' values and versions in one TXN (one atomic step):
// vals[i] is "" for a missing key.
func txnRead(c *RawConn, keys ...string) (vals, versions []string) {
	args := []string{"TXN"}
	for _, k := range keys {
		args = append(args, "DO", "2", "GET", k, "DO", "2", "KEYVERSION", k)
	}
	r := c.Do(args...)
	if r.Kind != KindArray || len(r.Elems) != 2*len(keys) {
		c.t.Fatalf("TXN read: %s", r)
	}
	for i := range keys {
		vals = append(vals, r.Elems[2*i].Str)
		versions = append(versions, r.Elems[2*i+1].Str)
	}
	return vals, versions
}

// txnCommit runs a TXN and reports whether it committed (an array reply)
// or failed a condition (PRECONDITION); anything else fails the test.
func txnCommit(c *RawConn, args ...string) bool {
	r := c.Do(append([]string{"TXN"}, args...)...)
	switch {
	case r.Kind == KindArray:
		for _, e := range r.Elems {
			if e.IsError() {
				c.t.Fatalf("TXN %s: a mutation failed: %s", strings.Join(args, " "), e.Str)
			}
		}
		return true
	case r.IsError() && strings.HasPrefix(r.Str, "PRECONDITION "):
		return false
	}
	c.t.Fatalf("TXN %s: %s", strings.Join(args, " "), r)
	return false
}

// txnLostUpdates runs clients that each increment random hot keys n times
// by read-modify-write: read value and version, then TXN IF VERSION ...
// DO SET value+1, retried until it commits. It returns the commits per
// key and the conditions that failed.
func txnLostUpdates(t *testing.T, addr string, seed uint64, keys []string, clients, n int) (commits []int64, conflicts int64) {
	counts := make([]atomic.Int64, len(keys))
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			c := DialRaw(t, addr)
			defer c.Close()
			for i := 0; i < n; i++ {
				k := r.IntN(len(keys))
				for {
					vals, vers := txnRead(c, keys[k])
					v, _ := strconv.Atoi(vals[0])
					if txnCommit(c, "IF", "VERSION", keys[k], vers[0], "DO", "3", "SET", keys[k], strconv.Itoa(v+1)) {
						counts[k].Add(1)
						break
					}
					failed.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	for i := range counts {
		commits = append(commits, counts[i].Load())
	}
	return commits, failed.Load()
}

// TestTxnLostUpdate: many clients read-modify-write ten hot keys through
// TXN with a version condition; every key ends equal to the commits made
// on it. A version that stayed the same across a write (or came back)
// would let two clients commit on the same read: a lost update.
func TestTxnLostUpdate(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only: TXN and KEYVERSION")
	}
	seed := newSeed(t)
	srv := StartServer(t, "--shards", "3")
	c := srv.Raw(t)
	keys := setKeys(t, c, "hot:%d", 10, "0")
	commits, conflicts := txnLostUpdates(t, srv.Addr, seed, keys, 20, 100)
	var total int64
	for i, k := range keys {
		total += commits[i]
		if got := c.Do("GET", k).Str; got != strconv.FormatInt(commits[i], 10) {
			t.Errorf("%s = %s after %d commits: lost updates", k, got, commits[i])
		}
	}
	t.Logf("%d commits, %d conditions failed", total, conflicts)
	if total != 20*100 {
		t.Fatalf("%d commits, want %d", total, 20*100)
	}
	if conflicts == 0 {
		t.Fatal("no condition ever failed: the clients never raced, the test proves nothing")
	}
}

// bankTransfers moves random amounts between accounts with TXN, each
// transfer conditioned on both accounts' versions, until stop closes.
func bankTransfers(t *testing.T, addr string, seed uint64, accounts []string, workers int, stop <-chan struct{}) (*sync.WaitGroup, *atomic.Int64) {
	var done atomic.Int64
	wg := runLoad(t, addr, seed, workers, stop, func(c *RawConn, r *rand.Rand) {
		a, b := r.IntN(len(accounts)), r.IntN(len(accounts)-1)
		if b >= a {
			b++
		}
		vals, vers := txnRead(c, accounts[a], accounts[b])
		ba, _ := strconv.Atoi(vals[0])
		bb, _ := strconv.Atoi(vals[1])
		amt := 1 + r.IntN(50)
		if ba < amt {
			return
		}
		if txnCommit(c, "IF", "VERSION", accounts[a], vers[0], "IF", "VERSION", accounts[b], vers[1],
			"DO", "3", "SET", accounts[a], strconv.Itoa(ba-amt), "DO", "3", "SET", accounts[b], strconv.Itoa(bb+amt)) {
			done.Add(1)
		}
	})
	return wg, &done
}

// TestTxnBankInvariant: transfers between accounts on every shard keep
// the total; readers (MGET and TXN reads, both atomic over shards) never
// see money in flight or a negative balance.
func TestTxnBankInvariant(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only: TXN and KEYVERSION")
	}
	seed := newSeed(t)
	srv := StartServer(t, "--shards", "4")
	c := srv.Raw(t)
	accounts := setKeys(t, c, "acct:%d", 8, "1000")
	const total = 8 * 1000
	stop := make(chan struct{})
	wg, done := bankTransfers(t, srv.Addr, seed, accounts, 8, stop)
	check := func(vals []string, how string) {
		sum := 0
		for i, v := range vals {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				t.Fatalf("%s: %s = %q", how, accounts[i], v)
			}
			sum += n
		}
		if sum != total {
			t.Fatalf("%s: balances sum to %d, want %d: %v", how, sum, total, vals)
		}
	}
	mget := func() []string {
		r := c.Do(append([]string{"MGET"}, accounts...)...)
		vals := make([]string, len(r.Elems))
		for j, e := range r.Elems {
			vals[j] = e.Str
		}
		return vals
	}
	for i := 0; i < 300; i++ {
		check(mget(), "MGET")
		vals, _ := txnRead(c, accounts...)
		check(vals, "TXN read")
	}
	close(stop)
	wg.Wait()
	check(mget(), "at the end")
	t.Logf("%d transfers committed", done.Load())
	if done.Load() == 0 {
		t.Fatal("no transfer committed")
	}
}

// TestTxnNothingAppliedOnFailedCondition: a TXN whose last condition (on
// another key, likely another shard) fails applies none of its mutations,
// whichever shards they are on, and names the condition.
func TestTxnNothingAppliedOnFailedCondition(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only: TXN")
	}
	srv := StartServer(t, "--shards", "4")
	c := srv.Raw(t)
	setKeys(t, c, "k%d", 8, "old")
	_, vers := txnRead(c, "k0", "k1")
	mustOK(t, c.Do("SET", "k1", "changed"), "SET")
	args := []string{"TXN", "IF", "EXISTS", "k2", "IF", "VERSION", "k0", vers[0], "IF", "VALUE", "k3", "old", "IF", "VERSION", "k1", vers[1]}
	for i := 0; i < 8; i++ {
		args = append(args, "DO", "3", "SET", fmt.Sprintf("k%d", i), "new")
	}
	args = append(args, "DO", "2", "DEL", "k2", "DO", "3", "INCRBY", "n", "5")
	r := c.Do(args...)
	if !r.IsError() || r.Str != "PRECONDITION failed: IF VERSION k1 (condition 4); nothing applied" {
		t.Fatalf("TXN with a stale version: %s", r)
	}
	for i := 0; i < 8; i++ {
		want := "old"
		if i == 1 {
			want = "changed"
		}
		if got := c.Do("GET", fmt.Sprintf("k%d", i)).Str; got != want {
			t.Errorf("k%d = %q after a failed TXN, want %q", i, got, want)
		}
	}
	if r := c.Do("EXISTS", "n"); r.Int != 0 {
		t.Errorf("n exists after a failed TXN")
	}
	// With ONFAIL reads on every shard, the failure answers their replies.
	withReads := append([]string(nil), args...)
	for i := 0; i < 8; i++ {
		withReads = append(withReads, "ONFAIL", "2", "GET", fmt.Sprintf("k%d", i))
	}
	r = c.Do(withReads...)
	if r.Kind != KindArray || len(r.Elems) != 9 || !strings.HasPrefix(r.Elems[0].Str, "PRECONDITION failed: IF VERSION k1") ||
		r.Elems[1].Str != "old" || r.Elems[2].Str != "changed" || r.Elems[8].Str != "old" {
		t.Fatalf("TXN with ONFAIL reads: %v", r.Lines())
	}
	// The same request with the version read now commits everything.
	_, vers = txnRead(c, "k1")
	args[15] = vers[0] // IF VERSION k1 <version>
	if r := c.Do(args...); r.Kind != KindArray || len(r.Elems) != 10 {
		t.Fatalf("TXN with current versions: %s", r)
	}
	if got := c.Do("MGET", "k0", "k1", "k7", "k2", "n"); fmt.Sprint(got.Lines()) != fmt.Sprint([]string{"(array)", `  "new"`, `  "new"`, `  "new"`, "  (nil)", `  "5"`}) {
		t.Errorf("after the commit: %v", got.Lines())
	}
}

// TestTxnReplicaDigest: a dfly replica (another shard count) following a
// master that runs TXN transfers and read-modify-writes ends equal to it.
// TXN is journaled by its mutations: a replica that evaluated the
// conditions itself would find its own versions and apply nothing.
func TestTxnReplicaDigest(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-only: TXN")
	}
	seed := newSeed(t)
	master := StartServer(t, "--shards", "3")
	mc := master.Raw(t)
	rep := StartServer(t, "--shards", "2")
	rc := rep.Raw(t)
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	accounts := setKeys(t, mc, "acct:%d", 6, "500")
	stop := make(chan struct{})
	wg, done := bankTransfers(t, master.Addr, seed, accounts, 4, stop)
	keys := setKeys(t, mc, "hot:%d", 3, "0")
	txnLostUpdates(t, master.Addr, seed+1, keys, 4, 50)
	close(stop)
	wg.Wait()
	t.Logf("%d transfers", done.Load())
	waitDigestsEqualMatch(t, mc, rc, "*")
	if r := rc.Do("GET", "hot:0"); r.Str == "" {
		t.Fatal("the replica has no hot:0")
	}
}

// TestTxnVersionAcrossSwapDB: a version read before a SWAPDB never matches
// after it, even where both databases' buckets carry the same version (a
// BGSAVE raises every bucket it marks to the snapshot's version).
func TestTxnVersionAcrossSwapDB(t *testing.T) {
	if target != targetDfly {
		t.Skip("TXN and KEYVERSION are dfly's")
	}
	s := StartServer(t, "--shards", "1")
	c := s.Raw(t)
	mustOK(t, c.Do("SET", "k", "db0"), "SET")
	mustOK(t, c.Do("SELECT", "1"), "SELECT")
	mustOK(t, c.Do("SET", "k", "db1"), "SET")
	mustOK(t, c.Do("SELECT", "0"), "SELECT")
	if r := c.Do("BGSAVE"); r.IsError() {
		t.Fatalf("BGSAVE: %s", r)
	}
	waitUntil(t, 10*time.Second, "BGSAVE done", func() bool {
		return strings.Contains(c.Do("INFO", "persistence").Str, "rdb_bgsave_in_progress:0")
	})
	before := c.Do("KEYVERSION", "k").Str
	mustOK(t, c.Do("SWAPDB", "0", "1"), "SWAPDB")
	if r := c.Do("GET", "k"); r.Str != "db1" {
		t.Fatalf("GET after SWAPDB: %s", r)
	}
	if after := c.Do("KEYVERSION", "k").Str; after == before {
		t.Fatalf("KEYVERSION unchanged across SWAPDB: %s", after)
	}
	r := c.Do("TXN", "IF", "VERSION", "k", before, "DO", "3", "SET", "k", "stale")
	if !r.IsError() || !strings.HasPrefix(r.Str, "PRECONDITION") {
		t.Fatalf("TXN with a version read before SWAPDB: %s", r)
	}
	if r := c.Do("GET", "k"); r.Str != "db1" {
		t.Fatalf("GET after the refused TXN: %s", r)
	}
}
