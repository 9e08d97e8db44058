package tests

// The randomized lock checker of issue 42: clients acquire locks, write a
// fenced log under them, release or die holding them, while the master is
// killed and its dfly replica promoted (REPLICAOF NO ONE) several times.
// DFLY_LOCK_SEED replays a run; the seed is printed.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type lockGrant struct {
	name  string
	gen   int64
	epoch int // promotions before the grant was answered
}

func TestLockRandomized(t *testing.T) {
	needTime(t, 60*time.Second)
	skipOnRedis(t)
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("DFLY_LOCK_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (DFLY_LOCK_SEED=%d replays it)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, 1))
	const clients, promotions = 8, 3
	names := []string{"{l1}", "{l2}", "{l3}"}

	master := StartServer(t, "--shards", "2")
	replica := StartServer(t, "--shards", "2")
	replicaOf(t, replica, master.Addr)
	waitReplicaLinkUp(t, replica, 30*time.Second)
	var addr atomic.Value
	addr.Store(master.Addr)
	var epoch atomic.Int32

	var mu sync.Mutex
	var grants []lockGrant
	var staleAccepted []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		crnd := rand.New(rand.NewPCG(seed, uint64(c)+2))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				owner := fmt.Sprintf("c%d-%d", c, n)
				cl := redis.NewClient(&redis.Options{Addr: addr.Load().(string), MaxRetries: -1, PoolSize: 1, DialTimeout: time.Second})
				name := names[crnd.IntN(len(names))]
				e := int(epoch.Load())
				r, err := cl.Do(ctx, "LOCK.ACQUIRE", 1, name, owner, 150+crnd.IntN(200), "DELAY", crnd.IntN(50), "WAIT", 300).Slice()
				if err != nil || len(r) != 1 {
					cl.Close()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				gen := r[0].([]any)[2].(int64)
				mu.Lock()
				grants = append(grants, lockGrant{name, gen, e})
				mu.Unlock()
				seq := []any{"FENCE", name, "exclusive", gen}
				for range 1 + crnd.IntN(3) {
					cl.Do(ctx, append(seq, "RPUSH", name+":log", owner+" "+strconv.FormatInt(gen, 10))...)
				}
				switch crnd.IntN(3) {
				case 0: // dies holding it: the connection closes, the lease runs out
				case 1:
					cl.Do(ctx, "LOCK.RELEASE", name, owner)
					if err := cl.Do(ctx, append(seq, "RPUSH", name+":log", "stale "+owner)...).Err(); err == nil {
						mu.Lock()
						staleAccepted = append(staleAccepted, owner)
						mu.Unlock()
					} else if strings.HasPrefix(err.Error(), "ERR") {
						t.Errorf("stale FENCE after release: %v", err)
					}
				default: // outlives its lease, then tries a write
					time.Sleep(400 * time.Millisecond)
					if err := cl.Do(ctx, append(seq, "RPUSH", name+":log", "late "+owner)...).Err(); err == nil {
						mu.Lock()
						staleAccepted = append(staleAccepted, owner)
						mu.Unlock()
					}
				}
				cl.Close()
			}
		}()
	}

	for p := range promotions {
		time.Sleep(time.Duration(500+rnd.IntN(700)) * time.Millisecond)
		// Kill the master, promote its replica, give the new master a replica.
		master.Kill()
		rc := replica.Raw(t)
		mustOK(t, rc.Do("REPLICAOF", "NO", "ONE"), "REPLICAOF NO ONE")
		epoch.Store(int32(p + 1))
		addr.Store(replica.Addr)
		master = replica
		replica = StartServer(t, "--shards", "2")
		replicaOf(t, replica, master.Addr)
		waitReplicaLinkUp(t, replica, 30*time.Second)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	if len(staleAccepted) > 0 {
		t.Errorf("fenced writes with stale sequencers were accepted: %v", staleAccepted)
	}
	// Generations: unique per lock, and every grant of a later epoch above
	// every grant of an earlier one.
	seen := map[string]bool{}
	maxOf := map[string]map[int]int64{}
	minOf := map[string]map[int]int64{}
	for _, g := range grants {
		k := g.name + "/" + strconv.FormatInt(g.gen, 10)
		if seen[k] {
			t.Errorf("generation %d of %s granted twice", g.gen, g.name)
		}
		seen[k] = true
		if maxOf[g.name] == nil {
			maxOf[g.name], minOf[g.name] = map[int]int64{}, map[int]int64{}
		}
		if g.gen > maxOf[g.name][g.epoch] {
			maxOf[g.name][g.epoch] = g.gen
		}
		if m, ok := minOf[g.name][g.epoch]; !ok || g.gen < m {
			minOf[g.name][g.epoch] = g.gen
		}
	}
	for name, mx := range maxOf {
		for e := 0; e < promotions; e++ {
			// Grants answered after promotion e+1 come from the promoted
			// server (a request sent before may still have reached the old).
			if lo, ok := minOf[name][e+2]; ok && lo <= mx[e] {
				t.Errorf("%s: a grant %d of epoch %d is not above %d of epoch %d", name, lo, e+2, mx[e], e)
			}
		}
	}
	// The fenced log: on every lock, writes come in generation order (two
	// exclusive holders overlapping would interleave), and no stale write.
	c := master.Raw(t)
	for _, name := range names {
		var last int64
		for _, e := range c.Do("LRANGE", name+":log", "0", "-1").Elems {
			f := strings.Fields(e.Str)
			if len(f) != 2 || f[0] == "stale" || f[0] == "late" {
				t.Errorf("%s: stale fenced write in the log: %q", name, e.Str)
				continue
			}
			g, _ := strconv.ParseInt(f[1], 10, 64)
			if g < last {
				t.Errorf("%s: fenced write of generation %d after one of %d", name, g, last)
			}
			last = g
		}
		if w := lockInfo(t, c, name)["waiters"].Elems; len(w) != 0 {
			t.Errorf("%s: waiters left: %v", name, w)
		}
	}
	if w := info(t, c, "locks")["lock_waiters"]; w != "0" {
		t.Errorf("INFO lock_waiters %s at the end", w)
	}
	t.Logf("%d grants over %d promotions", len(grants), promotions)
}
