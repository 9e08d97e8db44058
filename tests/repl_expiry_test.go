package tests

import (
	"fmt"
	"strconv"
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
	if t.Failed() {
		return
	}
	// Rendered: the replicas agree key by key; show the one compared.
	for i, k := range keys {
		t.Logf("%s = %s", k, want[i])
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
