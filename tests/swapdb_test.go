package tests

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SWAPDB as Redis 7 does it, for watchers and blocked clients (replies
// are in testdata/keys.txt); then what only dfly can get wrong: a swap
// while a fork-less snapshot walks the shards and while replicas sync.

func TestSwapDBWatchAndBlocking(t *testing.T) {
	srv := StartServer(t, "--shards", "3")
	a, b := srv.Raw(t), srv.Raw(t)
	// A watched key that exists in either database is touched by the swap;
	// one in neither is not.
	mustOK(t, b.Do("SELECT", "1"), "SELECT")
	mustOK(t, b.Do("SET", "there", "1"), "SET")
	mustOK(t, a.Do("WATCH", "there"), "WATCH")
	mustOK(t, b.Do("SWAPDB", "0", "1"), "SWAPDB")
	mustOK(t, a.Do("MULTI"), "MULTI")
	a.Do("SET", "x", "1")
	if r := a.Do("EXEC"); r.Kind != KindNil {
		t.Fatalf("EXEC after a swap brought a watched key in: %s", r)
	}
	mustOK(t, a.Do("WATCH", "nowhere"), "WATCH")
	mustOK(t, b.Do("SWAPDB", "0", "1"), "SWAPDB")
	mustOK(t, a.Do("MULTI"), "MULTI")
	a.Do("SET", "x", "2")
	if r := a.Do("EXEC"); r.Kind != KindArray || len(r.Elems) != 1 {
		t.Fatalf("EXEC watching a key absent from both databases: %s", r)
	}
	// A client blocked on a key gets it when a swap brings it.
	mustOK(t, a.Do("SELECT", "2"), "SELECT")
	a.Timeout = 10 * time.Second
	a.Send("BLPOP", "q", "5")
	time.Sleep(100 * time.Millisecond)
	mustOK(t, b.Do("SELECT", "3"), "SELECT")
	if r := b.Do("RPUSH", "q", "hello"); r.Int != 1 {
		t.Fatalf("RPUSH: %s", r)
	}
	mustOK(t, b.Do("SWAPDB", "2", "3"), "SWAPDB")
	if r := a.MustRead(); r.String() != `(array)`+"\n"+`  "q"`+"\n"+`  "hello"` {
		t.Fatalf("BLPOP served by the swap: %s", r)
	}
}

// stringsOf returns "db/key=value" for every key of dbs, all strings
// (DEBUG POPULATE's), read in batches.
func stringsOf(t *testing.T, c *RawConn, dbs ...int) []string {
	t.Helper()
	var out []string
	for _, db := range dbs {
		mustOK(t, c.Do("SELECT", strconv.Itoa(db)), "SELECT")
		var keys []string
		for _, k := range c.Do("KEYS", "*").Elems {
			keys = append(keys, k.Str)
		}
		for i := 0; i < len(keys); i += 1000 {
			batch := keys[i:min(len(keys), i+1000)]
			r := c.Do(append([]string{"MGET"}, batch...)...)
			for j, v := range r.Elems {
				out = append(out, strconv.Itoa(db)+"/"+batch[j]+"="+v.Str)
			}
		}
	}
	mustOK(t, c.Do("SELECT", "0"), "SELECT")
	sort.Strings(out)
	return out
}

// A swap right after BGSAVE's cut, while the shards walk, waits for the
// walk: the file must hold the databases as they were at the cut (the
// reference the server writes in the cut's step), each under its own
// index. (A swap that did not wait lost or misplaced keys here.)
func TestSwapDBDuringSnapshot(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly's snapshot; redis forks")
	}
	for _, format := range []string{"rdb", "dfly"} {
		t.Run(format, func(t *testing.T) {
			raceSubset(t, format == "dfly") // 19 s each under -race
			t.Parallel()
			dir, refDir := t.TempDir(), t.TempDir()
			srv := StartServer(t, "--dir", dir, "--shards", "3", "--dbformat", format,
				"--serialization_max_chunk_size", "4kb", "--debug_snapshot_reference", filepath.Join(refDir, "ref.rdb"))
			c := srv.Raw(t)
			mustOK(t, c.Do("DEBUG", "POPULATE", "200000", "zero", "100"), "POPULATE")
			mustOK(t, c.Do("SELECT", "1"), "SELECT")
			mustOK(t, c.Do("DEBUG", "POPULATE", "100000", "one", "100"), "POPULATE")
			mustOK(t, c.Do("SELECT", "0"), "SELECT")
			if r := c.Do("BGSAVE"); r.Str != "Background saving started" {
				t.Fatalf("BGSAVE: %s", r)
			}
			// SWAPDB waits for the shards' walks (shard.SwapDBs).
			swapStart := time.Now()
			mustOK(t, c.Do("SWAPDB", "0", "1"), "SWAPDB")
			swapTook := time.Since(swapStart)
			mustOK(t, c.Do("SET", "zero:1", "after"), "SET") // now in the old db 1
			mustOK(t, c.Do("SWAPDB", "1", "0"), "SWAPDB")
			mustOK(t, c.Do("DEL", "zero:2"), "DEL")
			waitFor(t, 30*time.Second, "BGSAVE", func() bool {
				return infoField(c, "persistence", "rdb_bgsave_in_progress") == "0"
			})
			t.Logf("the first SWAPDB took %v", swapTook)
			srv.Terminate(10 * time.Second)

			loaded := StartServer(t, "--dir", dir, "--dbformat", format)
			got := stringsOf(t, loaded.Raw(t), 0, 1)
			ref := StartServer(t, "--dir", refDir, "--dbfilename", "ref.rdb")
			want := stringsOf(t, ref.Raw(t), 0, 1)
			if len(want) != 300000 || !strings.HasPrefix(want[0], "0/zero:") || !strings.HasPrefix(want[len(want)-1], "1/one:") {
				t.Fatalf("the reference holds %d keys, from %q to %q", len(want), want[0], want[len(want)-1])
			}
			if len(got) != len(want) {
				t.Fatalf("the snapshot holds %d keys, the cut %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("the snapshot differs from the cut: %q, want %q", got[i], want[i])
				}
			}
		})
	}
}

// Swaps during a full sync and in stable sync reach dfly and redis-server
// replicas in order with the writes around them.
func TestSwapDBReplicated(t *testing.T) {
	for _, replicaKind := range []string{"dfly", "redis"} {
		t.Run(replicaKind, func(t *testing.T) {
			if replicaKind == "redis" {
				// The feed to redis-server replicas runs under -race in
				// TestReplRedisReplicaUnderLoad.
				raceSubset(t, false)
				needRedisReplica(t)
			} else if IsRedis() {
				t.Skip("dfly-only: dfly replicas")
			}
			t.Parallel()
			seed := newSeed(t)
			master := StartServer(t, "--shards", "3")
			mc := master.Raw(t)
			preload(t, mc, 3000)
			sd := &seeder{addr: master.Addr, seed: seed, keys: 100}
			stop := make(chan struct{})
			wg := sd.run(t, 2, stop)
			var rc *RawConn
			if replicaKind == "redis" {
				rc = startRedisReplica(t, master, t.TempDir(), 0).Raw(t)
			} else {
				rc = StartServer(t, "--shards", "2").Raw(t)
				mustOK(t, rc.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port)), "REPLICAOF")
			}
			time.Sleep(30 * time.Millisecond)
			mustOK(t, mc.Do("SWAPDB", "0", "3"), "SWAPDB during the full sync")
			waitLinkUp(t, rc)
			time.Sleep(200 * time.Millisecond)
			mustOK(t, mc.Do("SWAPDB", "3", "0"), "SWAPDB in stable sync")
			time.Sleep(200 * time.Millisecond)
			close(stop)
			wg.Wait()
			sd.check(t)
			if replicaKind == "redis" {
				waitCaughtUp(t, mc, rc)
				compareDigests(t, mc, rc)
			} else {
				waitDigestsEqual(t, mc, rc)
			}
		})
	}
}
