// Command bank runs the contended-transaction workload of issue 40: -accounts
// keys holding -start each; -writers clients move 1 between two random
// accounts (MULTI/DECRBY/INCRBY/EXEC, or one EVAL with -mode eval) while
// -readers clients sum every account in one MULTI of MGETs of -batch keys.
// Every sum must equal accounts × start: a reader that sees a transfer
// half done is counted in "torn" (and makes the program exit 1). It
// prints one line:
//
//	transfers/s reads/s torn
//
// bank.sh runs it against redis-server and dfly at 1 and 2 shards.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	addr     = flag.String("addr", "127.0.0.1:6379", "server address")
	accounts = flag.Int("accounts", 2000, "accounts")
	start    = flag.Int("start", 1000, "each account's starting balance")
	writers  = flag.Int("writers", 8, "clients transferring")
	readers  = flag.Int("readers", 2, "clients summing every account")
	batch    = flag.Int("batch", 100, "keys per MGET of a reader's MULTI")
	mode     = flag.String("mode", "multi", "how a transfer runs: multi or eval")
	dur      = flag.Duration("dur", 10*time.Second, "length of the run")
)

const transfer = `redis.call('DECRBY', KEYS[1], ARGV[1]); return redis.call('INCRBY', KEYS[2], ARGV[1])`

func main() {
	flag.Parse()
	if *mode != "multi" && *mode != "eval" {
		fail(fmt.Errorf("-mode %q: want multi or eval", *mode))
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *writers + *readers + 1})
	defer rdb.Close()
	keys := make([]string, *accounts)
	pairs := make([]any, 0, 2**accounts)
	for i := range keys {
		keys[i] = "acct:" + strconv.Itoa(i)
		pairs = append(pairs, keys[i], *start)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		fail(err)
	}
	if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
		fail(err)
	}
	want := int64(*accounts) * int64(*start)
	script := redis.NewScript(transfer)

	var transfers, reads, torn atomic.Int64
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	errs := make(chan error, *writers+*readers)
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for time.Now().Before(deadline) {
				from, to := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
				var err error
				if *mode == "eval" {
					err = script.Run(ctx, rdb, []string{from, to}, 1).Err()
				} else {
					_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.DecrBy(ctx, from, 1)
						p.IncrBy(ctx, to, 1)
						return nil
					})
				}
				if err != nil {
					errs <- err
					return
				}
				transfers.Add(1)
			}
		}(w)
	}
	for r := 0; r < *readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				var gets []*redis.SliceCmd
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					gets = gets[:0]
					for i := 0; i < len(keys); i += *batch {
						gets = append(gets, p.MGet(ctx, keys[i:min(i+*batch, len(keys))]...))
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				var sum int64
				for _, g := range gets {
					for _, v := range g.Val() {
						n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
						sum += n
					}
				}
				if sum != want {
					torn.Add(1)
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		fail(err)
	}
	secs := dur.Seconds()
	fmt.Printf("%.0f %.1f %d\n", float64(transfers.Load())/secs, float64(reads.Load())/secs, torn.Load())
	if torn.Load() > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bank:", err)
	os.Exit(1)
}
