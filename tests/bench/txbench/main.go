// Command txbench measures transactional throughput against a Redis-protocol
// server: MULTI/EXEC of two SETs and an EVAL that INCRs two keys, with keys
// drawn at random from a large space so that the two keys usually live on
// different shards. compare-tx.sh runs it against dfly and redis-server.
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

const incr2 = "redis.call('incr', KEYS[1]); return redis.call('incr', KEYS[2])"

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	clients := flag.Int("c", 50, "concurrent clients")
	dur := flag.Duration("d", 3*time.Second, "duration of each test")
	keys := flag.Int("r", 100000, "key space")
	tests := flag.String("t", "multi,eval", "tests: multi, eval")
	raw := flag.Bool("raw", false, "a lean client (pre-encoded RESP on a plain socket) instead of go-redis, so that the client's CPU does not bound the figure")
	pipeline := flag.Int("P", 1, "transactions in flight per client (-raw only)")
	flag.StringVar(&place, "place", "random", "where a transaction's two keys are (-raw only): random, same (one hash tag: one shard), cross2 (different shards of a 2-shard dfly)")
	flag.Parse()
	ctx := context.Background()
	for _, test := range splitComma(*tests) {
		if test != "multi" && test != "eval" {
			fmt.Fprintf(os.Stderr, "txbench: unknown test %q\n", test)
			os.Exit(2)
		}
		if *raw {
			n, err := runRaw(*addr, test, *clients, *pipeline, *keys, *dur)
			if err != nil {
				fmt.Fprintf(os.Stderr, "txbench: %s: %v\n", test, err)
				os.Exit(1)
			}
			fmt.Printf("%s %.0f\n", test, float64(n)/dur.Seconds())
			continue
		}
		var ops atomic.Int64
		var failed atomic.Int64
		deadline := time.Now().Add(*dur)
		var wg sync.WaitGroup
		for i := 0; i < *clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 1, Protocol: 2, DisableIdentity: true})
				defer c.Close()
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				sha, _ := c.ScriptLoad(ctx, incr2).Result()
				for time.Now().Before(deadline) {
					k1 := test + ":" + strconv.Itoa(rng.IntN(*keys)) // each test its own keys
					k2 := test + ":" + strconv.Itoa(rng.IntN(*keys))
					var err error
					switch test {
					case "multi":
						_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, k1, "v", 0)
							p.Set(ctx, k2, "v", 0)
							return nil
						})
					case "eval":
						err = c.EvalSha(ctx, sha, []string{k1, k2}).Err()
					}
					if err != nil {
						if failed.Add(1) == 1 {
							fmt.Fprintf(os.Stderr, "txbench: %s: %v\n", test, err)
						}
						continue
					}
					ops.Add(1)
				}
			}(i)
		}
		wg.Wait()
		if failed.Load() > 0 && ops.Load() == 0 {
			fmt.Fprintf(os.Stderr, "txbench: %s: every request failed\n", test)
			os.Exit(1)
		}
		fmt.Printf("%s %.0f\n", test, float64(ops.Load())/dur.Seconds())
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
