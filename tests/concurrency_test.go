package tests

// Concurrency tests: no client ever sees half of a multi-key command
// (docs/DESIGN.md §8.2). Keys carry no {hash tags}, so with several
// shards they land on different ones and every command here is a
// multi-shard transaction. CI runs these against a dfly built with
// DFLY_BUILD_FLAGS=-race as well as a normal build.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func concurrencyDuration(t *testing.T) time.Duration {
	if testing.Short() {
		return time.Second
	}
	return 3 * time.Second
}

// newSeed returns a seed for a randomized test and logs it.
func newSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s, ok := lookupEnvUint("DFLY_TEST_SEED"); ok {
		seed = s
	}
	t.Logf("seed %d (rerun with DFLY_TEST_SEED=%d)", seed, seed)
	return seed
}

// TestConcurrencyMSetMGetAtomic: 16 writers MSET the same random token into
// 8 keys while 16 readers MGET them; every MGET must see 8 equal values.
func TestConcurrencyMSetMGetAtomic(t *testing.T) {
	t.Parallel()
	srv := StartServer(t, "--shards", "4")
	seed := newSeed(t)
	const writers, readers, nkeys = 16, 16, 8
	client := srv.ClientWith(t, &redis.Options{Protocol: 2, PoolSize: writers + readers + 2, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), concurrencyDuration(t))
	defer cancel()

	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = "atomic:k" + strconv.Itoa(i+1)
	}
	var wg sync.WaitGroup
	var writes, reads atomic.Int64
	errs := make(chan error, writers+readers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			args := make([]any, 0, 2*nkeys)
			for ctx.Err() == nil {
				token := strconv.FormatUint(rng.Uint64(), 36)
				args = args[:0]
				for _, k := range keys {
					args = append(args, k, token)
				}
				if err := client.MSet(ctx, args...).Err(); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("writer %d: MSET: %w", w, err)
					}
					return
				}
				writes.Add(1)
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				vals, err := client.MGet(ctx, keys...).Result()
				if err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("reader %d: MGET: %w", r, err)
					}
					return
				}
				reads.Add(1)
				for i := 1; i < nkeys; i++ {
					if vals[i] != vals[0] {
						errs <- fmt.Errorf("reader %d: MGET saw a partial MSET: %v", r, vals)
						cancel()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d MSETs, %d MGETs", writes.Load(), reads.Load())
	if writes.Load() == 0 || reads.Load() == 0 {
		t.Fatalf("no progress: %d MSETs, %d MGETs", writes.Load(), reads.Load())
	}
}

// TestConcurrencyRenameAtomic: a key is renamed back and forth between two
// names while readers check, with one multi-key command, that exactly one
// of the two names exists at every moment.
func TestConcurrencyRenameAtomic(t *testing.T) {
	t.Parallel()
	srv := StartServer(t, "--shards", "4")
	const pairs, readersPerPair = 4, 4
	client := srv.ClientWith(t, &redis.Options{Protocol: 2, PoolSize: pairs*(readersPerPair+1) + 2, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), concurrencyDuration(t))
	defer cancel()

	var wg sync.WaitGroup
	var renames, checks atomic.Int64
	errs := make(chan error, pairs*(readersPerPair+1))
	for p := range pairs {
		a, b := fmt.Sprintf("pingpong:%d:a", p), fmt.Sprintf("pingpong:%d:b", p)
		if err := client.Set(ctx, a, "value", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", a, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := a, b
			for ctx.Err() == nil {
				if err := client.Rename(ctx, from, to).Err(); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("RENAME %s %s: %w", from, to, err)
					}
					return
				}
				renames.Add(1)
				from, to = to, from
			}
		}()
		for range readersPerPair {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					n, err := client.Exists(ctx, a, b).Result()
					if err != nil {
						if ctx.Err() == nil {
							errs <- fmt.Errorf("EXISTS %s %s: %w", a, b, err)
						}
						return
					}
					checks.Add(1)
					if n != 1 {
						errs <- fmt.Errorf("EXISTS %s %s = %d during RENAME, want 1", a, b, n)
						cancel()
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d RENAMEs, %d EXISTS checks", renames.Load(), checks.Load())
	if renames.Load() == 0 || checks.Load() == 0 {
		t.Fatalf("no progress: %d RENAMEs, %d checks", renames.Load(), checks.Load())
	}
}

func lookupEnvUint(name string) (uint64, bool) {
	v, ok := lookupEnv(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}
