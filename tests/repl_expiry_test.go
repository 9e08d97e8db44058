package tests

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReplExpiredReadByCrossShardNoop is issue 36's reproduction: a key
// whose TTL passed is deleted lazily by a cross-shard command that then
// writes nothing (RENAME of a missing key, LMOVE from an empty list,
// ZUNIONSTORE of nothing). The expiry's DEL must reach the replicas all the
// same; without it a replica keeps the stale key, hidden by its past TTL,
// and later writes land in it (d is [m2 m1] on the replica, [m2] on the
// master). Observers: a redis-server replica and a dfly replica of another
// shard count.
func TestReplExpiredReadByCrossShardNoop(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly master with 2 shards")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	witnesses := map[string]*RawConn{"redis-server": startRedis(t).Raw(t)}
	witnesses["dfly --shards 3"] = StartServer(t, "--shards", "3").Raw(t)
	host, port := splitAddr(t, master.Addr)
	for name, rc := range witnesses {
		if r := rc.Do("REPLICAOF", host, port); r.IsError() {
			t.Fatalf("%s: REPLICAOF: %s", name, r.Str)
		}
		waitLinkUp(t, rc)
	}

	// Many keys with a long TTL: the active expiry sweep, sampling keys
	// with a TTL, is unlikely to reach the short-lived ones first.
	for i := 0; i < 20000; i++ {
		mc.Send("SET", "filler:"+strconv.Itoa(i), "v", "EX", "3600")
	}
	for i := 0; i < 20000; i++ {
		mustOK(t, mc.MustRead(), "SET filler")
	}

	// src keys on one shard, dst keys on the other (hash tags pick them).
	src, dst := tagsOnTwoShards(2)
	a, b, c := "{"+src+"}a", "{"+src+"}b", "{"+src+"}c"
	d, e, e2, z := "{"+dst+"}d", "{"+dst+"}e", "{"+dst+"}e2", "{"+dst+"}z"
	create := func(m string) {
		mc.Do("SADD", a, m)
		mc.Do("RPUSH", b, m)
		mc.Do("ZADD", c, "1", m)
	}
	create("m1")
	for _, k := range []string{a, b, c} {
		if r := mc.Do("PEXPIRE", k, "300"); r.Int != 1 {
			t.Fatalf("PEXPIRE %s: %v", k, r)
		}
	}
	time.Sleep(500 * time.Millisecond)
	// Cross-shard commands that read the expired keys and write nothing.
	if r := mc.Do("RENAME", a, d); r.Str != "ERR no such key" {
		t.Fatalf("RENAME of an expired key: %v", r)
	}
	if r := mc.Do("LMOVE", b, e, "LEFT", "LEFT"); r.Kind != KindNil {
		t.Fatalf("LMOVE from an expired list: %v", r)
	}
	if r := mc.Do("ZUNIONSTORE", e2, "1", c); r.Int != 0 {
		t.Fatalf("ZUNIONSTORE of an expired zset: %v", r)
	}
	// Recreated and copied across shards: the replicas must not find the
	// old members.
	create("m2")
	mc.Do("SUNIONSTORE", d, a)
	mc.Do("LMOVE", b, e, "LEFT", "LEFT")
	mc.Do("ZUNIONSTORE", z, "1", c)

	keys := []string{a, b, c, d, e, e2, z}
	want := describeKeys(mc, keys)
	for name, rc := range witnesses {
		var got []string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got = describeKeys(rc, keys); fmt.Sprint(got) == fmt.Sprint(want) {
				break
			}
		}
		for i, k := range keys {
			if got[i] != want[i] {
				t.Errorf("%s: %s is %s on the replica, %s on the master", name, k, got[i], want[i])
			}
		}
		if m, r := mc.Do("DBSIZE").Int, rc.Do("DBSIZE").Int; m != r {
			t.Errorf("%s: DBSIZE master %d, replica %d", name, m, r)
		}
	}
}

// tagsOnTwoShards is two hash tags whose keys live on different shards of
// n (dfly hashes a key's tag when it has one).
func tagsOnTwoShards(n int) (string, string) {
	first := "t0"
	for i := 1; ; i++ {
		tag := "t" + strconv.Itoa(i)
		if shardOf(tag, n) != shardOf(first, n) {
			return first, tag
		}
	}
}

// TestReplExpiryDuringPITBaseline: keys alive at a point-in-time full
// sync's cut whose TTL passes while the baseline is still going out. The
// snapshot must write a key's baseline before the journal's DEL of its
// expiry (docs/DESIGN.md §8.4); with the DEL first, a dfly replica loaded
// the key after deleting it and kept it for good, hidden by its past TTL
// (its DBSIZE larger than the master's, later writes landing in it).
func TestReplExpiryDuringPITBaseline(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	// A baseline in small steps, long enough for the TTLs below, spread
	// over a second, to pass during it.
	master := StartServer(t, "--shards", "3", "--snapshot_step", "1us")
	mc := master.Raw(t)
	mustOK(t, mc.Do("DEBUG", "POPULATE", "200000", "fill", "64"), "populate")
	const n = 100
	rep := StartServer(t, "--shards", "2")
	rc := rep.Raw(t)
	for i := 0; i < n; i++ {
		mustOK(t, mc.Do("SET", "k"+strconv.Itoa(i), "v", "PX", strconv.Itoa(50+10*i)), "set")
	}
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	time.Sleep(1100 * time.Millisecond)
	for i := 0; i < n; i++ {
		mc.Do("EXISTS", "k"+strconv.Itoa(i)) // expires those the sweep has not
	}
	waitReplicaSize(t, mc, rc)
}

// waitReplicaSize waits for the replica's DBSIZE to equal the master's:
// a larger one holds keys its master deleted.
func waitReplicaSize(t *testing.T, mc, rc *RawConn) {
	t.Helper()
	var m, r int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m, r = mc.Do("DBSIZE").Int, rc.Do("DBSIZE").Int; m == r {
			return
		}
	}
	t.Fatalf("DBSIZE: master %d, replica %d (a replica holding keys its master deleted)", m, r)
}

// TestReplExpiryWhileLinkDown: keys that expire on the master while its
// dfly replica's link is down. The journals keep recording for the
// replica's partial sync, and their expiries must be in that record: the
// DELs were journaled only while a flow was attached, so the replica
// continued without them and kept the keys.
func TestReplExpiryWhileLinkDown(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	var closed atomic.Bool // the link refuses reconnections while set
	px := startFilterProxy(t, master.Addr, func([]byte) []byte {
		if closed.Load() {
			return []byte("-ERR link down\r\n")
		}
		return nil
	})
	rep := StartServer(t, "--shards", "3")
	rc := rep.Raw(t)
	host, port := splitAddr(t, px.ln.Addr().String())
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	const n = 50
	for i := 0; i < n; i++ {
		mustOK(t, mc.Do("SET", "k"+strconv.Itoa(i), "v", "PX", "300"), "set")
	}
	waitReplicaSize(t, mc, rc)
	partial := func() string { return infoField(mc, "replication", "dfly_flow_syncs_partial") }
	before := partial()
	closed.Store(true)
	px.cut()
	waitFor(t, 10*time.Second, "the master to see its flows go", func() bool {
		return !strings.Contains(mc.Do("INFO", "replication").Str, "dfly_flow0:")
	})
	time.Sleep(400 * time.Millisecond)
	for i := 0; i < n; i++ {
		mc.Do("EXISTS", "k"+strconv.Itoa(i)) // expires those the sweep has not
	}
	closed.Store(false)
	waitFor(t, 30*time.Second, "a partial sync", func() bool { return partial() != before })
	waitLinkUp(t, rc)
	waitReplicaSize(t, mc, rc)
}
