package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestBgsavePointInTime: BGSAVE's file holds the dataset exactly as it was
// when BGSAVE answered, every key once, while clients overwrite, delete
// and add keys on every shard from that moment on; the file loads into a
// fresh server with another shard count. How much of the writing overlaps
// the shards' walks depends on timing here; snapshot/slice_test.go drives
// the interleaving step by step.
func TestBgsavePointInTime(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly's snapshot; redis forks")
	}
	seed := uint64(time.Now().UnixNano())
	if s, ok := lookupEnvUint("DFLY_TEST_SEED"); ok {
		seed = s
	}
	t.Logf("seed %d (DFLY_TEST_SEED to repeat)", seed)
	const n = 300000
	dir := t.TempDir()
	srv := StartServer(t, "--dir", dir, "--shards", "4")
	ctx := context.Background()
	c := srv.Client(t, 2)
	if err := c.Do(ctx, "DEBUG", "POPULATE", n).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ { // a few collections too
		c.HSet(ctx, fmt.Sprintf("h:%d", i), "f", "before")
		c.RPush(ctx, fmt.Sprintf("l:%d", i), "a", "b")
	}
	// Writers connect first and start the moment BGSAVE has answered, in
	// pipelines, so many changes race the shards' walks.
	var stop atomic.Bool
	var during atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		wc := srv.Client(t, 2)
		if err := wc.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			<-start
			for i := 0; !stop.Load(); i++ {
				p := wc.Pipeline()
				for j := 0; j < 50; j++ {
					k := fmt.Sprintf("key:%d", rng.IntN(n))
					switch rng.IntN(6) {
					case 0:
						p.Del(ctx, k)
					case 1:
						p.Set(ctx, fmt.Sprintf("new:%d:%d:%d", w, i, j), "x", 0)
					case 2:
						p.HSet(ctx, fmt.Sprintf("h:%d", rng.IntN(200)), "f", "after")
					case 3:
						p.LPop(ctx, fmt.Sprintf("l:%d", rng.IntN(200)))
					default:
						p.Set(ctx, k, "changed", 0)
					}
				}
				if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
					t.Error(err)
					return
				}
				during.Add(50)
			}
		}(w)
	}
	if r, err := c.Do(ctx, "BGSAVE").Text(); err != nil || r != "Background saving started" {
		t.Fatalf("BGSAVE: %q %v", r, err)
	}
	close(start)
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, _ := c.Info(ctx, "persistence").Result()
		if strings.Contains(info, "rdb_bgsave_in_progress:0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
	writesDuring := during.Load()
	stop.Store(true)
	wg.Wait()
	info, _ := c.Info(ctx, "persistence").Result()
	if !strings.Contains(info, "rdb_last_bgsave_status:ok") {
		t.Fatalf("BGSAVE failed:\n%s", info)
	}
	t.Logf("%d writes landed while the snapshot ran", writesDuring)

	// The file, loaded into a fresh server, is the dataset at the cut.
	check := StartServer(t, "--dir", dir, "--shards", "3")
	cc := check.Client(t, 2)
	if size, err := cc.DBSize(ctx).Result(); err != nil || size != n+400 {
		t.Fatalf("loaded DBSIZE = %d (%v), want %d", size, err, n+400)
	}
	keys := make([]string, 0, 1000)
	for i := 0; i < n; i += len(keys) {
		keys = keys[:0]
		for j := i; j < n && len(keys) < 1000; j++ {
			keys = append(keys, fmt.Sprintf("key:%d", j))
		}
		vals, err := cc.MGet(ctx, keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range vals {
			if want := fmt.Sprintf("value:%d", i+j); v != want {
				t.Fatalf("seed %d: %s = %v in the snapshot, want %q (its value at the cut)", seed, keys[j], v, want)
			}
		}
	}
	for i := 0; i < 200; i++ {
		if v, _ := cc.HGet(ctx, fmt.Sprintf("h:%d", i), "f").Result(); v != "before" {
			t.Fatalf("seed %d: h:%d f = %q, want before", seed, i, v)
		}
		if l, _ := cc.LLen(ctx, fmt.Sprintf("l:%d", i)).Result(); l != 2 {
			t.Fatalf("seed %d: l:%d has %d elements, want 2", seed, i, l)
		}
	}
}
