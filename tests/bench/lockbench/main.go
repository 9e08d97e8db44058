// Command lockbench measures lock grants per second (issue 42): -clients
// clients each loop acquire + release on a random one of -names lock
// names, with -mode dfly (LOCK.ACQUIRE 1 name owner lease, LOCK.RELEASE
// name owner) or -mode setnx (SET name owner NX PX lease, then the
// compare-and-delete script every Redis lock library runs). A refused
// acquire (the name is held by another client) counts as a miss and the
// client tries another name. It prints one line:
//
//	grants/s misses/s
//
// locks.sh runs it against redis-server (setnx) and dfly (both modes).
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
	addr    = flag.String("addr", "127.0.0.1:6379", "server address")
	clients = flag.Int("clients", 50, "clients")
	names   = flag.Int("names", 1000, "lock names")
	mode    = flag.String("mode", "dfly", "dfly (LOCK.*) or setnx (SET NX PX + compare-and-delete)")
	dur     = flag.Duration("dur", 10*time.Second, "length of the run")
)

const unlock = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`

func main() {
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *clients + 1})
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
	script := redis.NewScript(unlock)
	var grants, misses atomic.Int64
	stop := time.Now().Add(*dur)
	var wg sync.WaitGroup
	var failed atomic.Value
	for c := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := "client-" + strconv.Itoa(c)
			for time.Now().Before(stop) {
				name := "lock:" + strconv.Itoa(rand.IntN(*names))
				var got bool
				var err error
				if *mode == "dfly" {
					var r any
					r, err = rdb.Do(ctx, "LOCK.ACQUIRE", 1, name, owner, 10000).Result()
					got = err == nil && r != nil
					if err == redis.Nil {
						err = nil
					}
					if got {
						err = rdb.Do(ctx, "LOCK.RELEASE", name, owner).Err()
					}
				} else {
					got, err = rdb.SetNX(ctx, name, owner, 10*time.Second).Result()
					if got && err == nil {
						err = script.Run(ctx, rdb, []string{name}, owner).Err()
					}
				}
				if err != nil {
					failed.Store(err)
					return
				}
				if got {
					grants.Add(1)
				} else {
					misses.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
	secs := dur.Seconds()
	fmt.Printf("%.0f %.0f\n", float64(grants.Load())/secs, float64(misses.Load())/secs)
}
