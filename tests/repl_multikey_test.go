package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A full sync (non-PIT, then PIT) while clients run commands that read or
// move one key into another (RENAME, SMOVE, LMOVE, BLMOVE, SUNIONSTORE,
// ZUNIONSTORE, COPY, BITOP, PFMERGE, SORT BY/GET STORE, MOVE, MULTI/EXEC,
// a script), between keys of one shard (hash tags) and of different
// shards.
// Non-PIT mutations serialize nothing, so without snapshot.Capture a
// command whose source the walk has not reached and whose destination it
// has passed reaches the replica before the source, fails there, and the
// destination is never sent again. PIT has the same hazard for a key that is only read
// (the source of SUNIONSTORE, COPY, PFMERGE ...): its hooks capture what
// a command writes, not what it reads. Filler keys in the same database
// keep the walk busy (one bucket position per step) while the commands
// run.
func TestDflyFlowMultiKey(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	for _, pit := range []bool{false, true} {
		t.Run("pit="+strconv.FormatBool(pit), func(t *testing.T) {
			raceSubset(t, pit) // non-PIT: TestDflyFlowReplication/nonpit-2to3
			multiKeySync(t, pit)
		})
	}
}

func multiKeySync(t *testing.T, pit bool) {
	seed := newSeed(t)
	master := StartServer(t, "--shards", "3", "--point_in_time_snapshot="+strconv.FormatBool(pit), "--snapshot_step", "1us")
	mc := master.Raw(t)
	mk := &multiKeyLoad{addr: master.Addr, seed: seed}
	mk.preload(t, mc)
	if r := mc.Do("DEBUG", "POPULATE", "150000", "filler", "16"); r.IsError() {
		t.Fatalf("DEBUG POPULATE: %s", r.Str)
	}
	stop := make(chan struct{})
	wg := mk.run(t, 4, stop)
	time.Sleep(100 * time.Millisecond)
	rep := StartServer(t, "--shards", "2")
	rc := rep.Raw(t)
	host, port := splitAddr(t, master.Addr)
	start := time.Now()
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc) // the full sync ran under the load
	t.Logf("full sync took %v", time.Since(start))
	time.Sleep(300 * time.Millisecond) // and some stable sync
	close(stop)
	wg.Wait()
	mk.tally.check(t, "load")
	waitDigestsEqualMatch(t, mc, rc, "mk:*")
	if m, r := mc.Do("DBSIZE").Int, rc.Do("DBSIZE").Int; m != r {
		t.Fatalf("DBSIZE: master %d, replica %d", m, r)
	}
	captures, _ := strconv.Atoi(infoField(mc, "persistence", "snapshot_multikey_captures"))
	t.Logf("%d buckets captured for multi-key commands", captures)
	if captures == 0 {
		t.Fatal("no multi-key command met a bucket the walk had not reached: the test proves nothing")
	}
}

// multiKeyLoad drives the multi-key commands; keys are "mk:<family>:<n>",
// or "mk:{g<group>}<family>:<n>" for pairs confined to one shard.
type multiKeyLoad struct {
	addr  string
	seed  uint64
	tally loadTally
}

const (
	mkKeys   = 2000 // per family, untagged
	mkGroups = 20   // hash tags
	mkPerTag = 40   // per family and tag
)

func mkKey(fam string, tag, n int) string {
	if tag < 0 {
		return fmt.Sprintf("mk:%s:%d", fam, n)
	}
	return fmt.Sprintf("mk:{g%d}%s:%d", tag, fam, n)
}

// keys picks n keys of fam: of one shard (one hash tag) or anywhere.
func (l *multiKeyLoad) keys(r *rand.Rand, fam string, n int) []string {
	out := make([]string, n)
	tag := -1
	if r.IntN(2) == 0 {
		tag = r.IntN(mkGroups)
	}
	for i := range out {
		if tag < 0 {
			out[i] = mkKey(fam, tag, r.IntN(mkKeys))
		} else {
			out[i] = mkKey(fam, tag, r.IntN(mkPerTag))
		}
	}
	return out
}

func (l *multiKeyLoad) preload(t *testing.T, c *RawConn) {
	t.Helper()
	n := 0
	each := func(fn func(key func(fam string) string)) {
		for i := 0; i < mkKeys; i++ {
			fn(func(fam string) string { return mkKey(fam, -1, i) })
		}
		for g := 0; g < mkGroups; g++ {
			for i := 0; i < mkPerTag; i++ {
				fn(func(fam string) string { return mkKey(fam, g, i) })
			}
		}
	}
	each(func(key func(string) string) {
		c.Send("SET", key("s"), "v"+key("s"))
		c.Send("SADD", key("set"), "a", key("set"))
		c.Send("RPUSH", key("l"), "x", key("l"))
		c.Send("ZADD", key("z"), "1", key("z"))
		c.Send("PFADD", key("hll"), key("hll"))
		n += 5
	})
	for i := 0; i < 50; i++ {
		c.Send("RPUSH", "mk:sortsrc", strconv.Itoa(i))
		n++
	}
	c.Send("SELECT", "3")
	for i := 0; i < mkKeys; i++ {
		c.Send("SET", mkKey("m", -1, i), "m")
	}
	c.Send("SELECT", "0")
	n += mkKeys + 2
	for i := 0; i < n; i++ {
		if r := c.MustRead(); r.IsError() {
			t.Fatalf("preload: %s", r.Str)
		}
	}
}

func (l *multiKeyLoad) run(t *testing.T, workers int, stop <-chan struct{}) *sync.WaitGroup {
	return runLoad(t, l.addr, l.seed, workers, stop, l.step)
}

func (l *multiKeyLoad) step(c *RawConn, r *rand.Rand) {
	v := "v" + strconv.Itoa(r.IntN(1000))
	replies := 1
	switch r.IntN(16) {
	case 0:
		k := l.keys(r, "s", 2)
		c.Send("RENAME", k[0], k[1])
	case 1:
		k := l.keys(r, "s", 2)
		c.Send("COPY", k[0], k[1], "REPLACE")
	case 2:
		k := l.keys(r, "set", 2)
		c.Send("SMOVE", k[0], k[1], "a")
	case 3:
		k := l.keys(r, "set", 3)
		c.Send("SUNIONSTORE", k[0], k[1], k[2])
	case 4:
		k := l.keys(r, "l", 2)
		c.Send("LMOVE", k[0], k[1], "LEFT", "RIGHT")
	case 5:
		k := l.keys(r, "l", 2)
		c.Send("RPOPLPUSH", k[0], k[1])
	case 6:
		k := l.keys(r, "l", 2)
		c.Send("BLMOVE", k[0], k[1], "RIGHT", "LEFT", "0.01")
	case 7:
		k := l.keys(r, "z", 3)
		c.Send("ZUNIONSTORE", k[0], "2", k[1], k[2])
	case 8:
		k := l.keys(r, "s", 3)
		c.Send("BITOP", "OR", k[0], k[1], k[2])
	case 9:
		k := l.keys(r, "hll", 2)
		c.Send("PFMERGE", k[0], k[1])
	case 10:
		// A transaction moving values between keys.
		ks, kl := l.keys(r, "s", 2), l.keys(r, "l", 2)
		c.Send("MULTI")
		c.Send("RENAME", ks[0], ks[1])
		c.Send("RPOPLPUSH", kl[0], kl[1])
		c.Send("EXEC")
		replies = 4
	case 11:
		// A script reading one key and writing another.
		k := l.keys(r, "s", 2)
		c.Send("EVAL", "local v = redis.call('GET', KEYS[1]); if v then redis.call('SET', KEYS[2], v .. ARGV[1]) end; return 1",
			"2", k[0], k[1], "+")
	case 12:
		// SORT reading keys through BY and GET patterns (mk:s:0..49).
		c.Send("SORT", "mk:sortsrc", "BY", "mk:s:*", "ALPHA", "GET", "mk:s:*", "STORE", l.keys(r, "l", 1)[0])
	case 13:
		// MOVE between databases, mostly from 3 (walked after 0) into 0.
		from, to := "3", "0"
		if r.IntN(4) == 0 {
			from, to = to, from
		}
		c.Send("SELECT", from)
		c.Send("MOVE", mkKey("m", -1, r.IntN(mkKeys)), to)
		c.Send("SELECT", "0")
		replies = 3
	default:
		// Refill the sources, so the moves keep finding something.
		k := l.keys(r, "s", 1)[0]
		c.Send("SET", k, v)
		c.Send("SADD", mkKey("set", -1, r.IntN(mkKeys)), "a", v)
		c.Send("RPUSH", mkKey("l", -1, r.IntN(mkKeys)), v)
		replies = 3
	}
	l.tally.read(c, replies)
}

// TestReplTxCommandOfOneShard: a MULTI/EXEC whose commands span a dfly
// replica's shards runs there as one transaction, command by command; each
// command of one shard must run as the master ran it (its shard handler),
// not in its cross-shard form. The cross-shard LMOVE of k to itself, with
// k one element long, emptied k (deleting it with its TTL) and created it
// again without one: the replica's k lost its TTL (the checker's seed
// 1074, an RPOPLPUSH k k in a MULTI).
func TestReplTxCommandOfOneShard(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	rep := StartServer(t, "--shards", "3")
	rc := rep.Raw(t)
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	mc.Do("RPUSH", "k", "x y")
	mc.Do("PEXPIRE", "k", "800000")
	mset := []string{"MSET"} // keys on every shard of the replica
	for i := 0; i < 12; i++ {
		mset = append(mset, "m"+strconv.Itoa(i), "v")
	}
	mustOK(t, mc.Do("MULTI"), "multi")
	mc.Do("RPOPLPUSH", "k", "k")
	mc.Do("LMOVE", "k", "k", "RIGHT", "LEFT")
	mc.Do(mset...)
	if r := mc.Do("EXEC"); len(r.Elems) != 3 {
		t.Fatalf("EXEC: %s", r.String())
	}
	mc.Do("SET", "done", "1")
	waitFor(t, 10*time.Second, "the replica to apply the EXEC", func() bool { return rc.Do("EXISTS", "done").Int == 1 })
	for _, c := range []string{"PEXPIRETIME", "LRANGE"} {
		args := []string{c, "k"}
		if c == "LRANGE" {
			args = append(args, "0", "-1")
		}
		if m, r := mc.Do(args...).String(), rc.Do(args...).String(); m != r {
			t.Errorf("%s k: master %s, replica %s", c, m, r)
		}
	}
}
