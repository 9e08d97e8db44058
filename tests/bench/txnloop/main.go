// Command txnloop measures committed read-modify-writes per second on a
// few hot keys (issue 42): -clients clients each increment a random one of
// -keys keys, retrying until the increment commits, either with Redis's
// optimistic loop (-mode watch: WATCH k and GET k pipelined, then MULTI,
// SET k v+1, EXEC pipelined, again on a null EXEC: two round trips an
// attempt) or with dfly's TXN (-mode txn: KEYVERSION k and GET k
// pipelined once, then TXN IF VERSION k <version> DO 3 SET k v+1 DO 2
// KEYVERSION k ONFAIL 2 GET k ONFAIL 2 KEYVERSION k: a commit answers the
// new version and a failure the current value and version, so every try
// after the first is one round trip — what WATCH cannot do, since a value
// known from one's own commit may be stale by the next WATCH). After
// the run every key must equal the commits made on it (a lost update
// makes the program exit 1). It prints one line:
//
//	commits/s retries/s
//
// txn.sh runs it against redis-server (watch) and dfly (watch and txn).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	addr    = flag.String("addr", "127.0.0.1:6379", "server address")
	keys    = flag.Int("keys", 10, "hot keys")
	clients = flag.Int("clients", 50, "clients")
	mode    = flag.String("mode", "txn", "how an increment commits: watch or txn")
	dur     = flag.Duration("dur", 10*time.Second, "length of the run")
)

func main() {
	flag.Parse()
	ctx := context.Background()
	setup := redis.NewClient(&redis.Options{Addr: *addr})
	names := make([]string, *keys)
	for i := range names {
		names[i] = "txnloop:" + strconv.Itoa(i)
		if err := setup.Set(ctx, names[i], 0, 0).Err(); err != nil {
			fail(err)
		}
	}
	commits := make([]atomic.Int64, *keys)
	var retries atomic.Int64
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 1})
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(w), 42))
			// What the client last learnt of each key (a version is a key's
			// alone: another key's may be equal, so never mix them).
			st := make([]txnState, *keys)
			for time.Now().Before(deadline) {
				k := r.IntN(*keys)
				for {
					ok, err := increment(ctx, c, names[k], &st[k])
					if err != nil {
						fail(err)
					}
					if ok {
						commits[k].Add(1)
						break
					}
					retries.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	var total int64
	for i, name := range names {
		n := commits[i].Load()
		total += n
		v, err := setup.Get(ctx, name).Int64()
		if err != nil || v != n {
			fmt.Fprintf(os.Stderr, "txnloop: %s = %d after %d commits (%v): lost updates\n", name, v, n, err)
			os.Exit(1)
		}
	}
	secs := dur.Seconds()
	fmt.Printf("%.0f %.0f\n", float64(total)/secs, float64(retries.Load())/secs)
}

// increment tries one read-modify-write of key; false: a conflict.
func increment(ctx context.Context, c *redis.Client, key string, st *txnState) (bool, error) {
	if *mode == "watch" {
		return watchIncrement(ctx, c, key)
	}
	if st.version == nil {
		var ver *redis.Cmd
		var get *redis.StringCmd
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			ver = p.Do(ctx, "KEYVERSION", key) // the version first: a write between makes it stale, never the value
			get = p.Get(ctx, key)
			return nil
		}); err != nil {
			return false, err
		}
		v, err := get.Int64()
		if err != nil {
			return false, err
		}
		st.value, st.version = v, ver.Val()
	}
	// The last DO reads the new version: a commit answers what the next
	// try needs, as a failure's ONFAIL reads do, so no try reads first.
	res, err := c.Do(ctx, "TXN", "IF", "VERSION", key, st.version, "DO", "3", "SET", key, st.value+1,
		"DO", "2", "KEYVERSION", key, "ONFAIL", "2", "GET", key, "ONFAIL", "2", "KEYVERSION", key).Slice()
	if err != nil {
		return false, err
	}
	if e, failed := res[0].(error); failed {
		if !strings.HasPrefix(e.Error(), "PRECONDITION") {
			return false, e
		}
		// The reads that answered the failure: the next try needs no read.
		v, err := strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
		if err != nil {
			return false, err
		}
		st.value, st.version = v, res[2]
		return false, nil
	}
	st.value, st.version = st.value+1, res[1]
	return true, nil
}

// txnState is what a client read of its key: the value and version a
// failed TXN's ONFAIL reads gave, for the next try.
type txnState struct {
	value   int64
	version any
}

// watchIncrement is Redis's optimistic loop in two round trips: WATCH and
// GET pipelined, then MULTI, SET, EXEC pipelined (EXEC ends the WATCH).
func watchIncrement(ctx context.Context, c *redis.Client, key string) (bool, error) {
	conn := c.Conn()
	defer conn.Close()
	var get *redis.StringCmd
	if _, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "WATCH", key)
		get = p.Get(ctx, key)
		return nil
	}); err != nil {
		return false, err
	}
	v, err := get.Int64()
	if err != nil {
		return false, err
	}
	_, err = conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, v+1, 0)
		return nil
	})
	if errors.Is(err, redis.TxFailedErr) {
		return false, nil
	}
	return err == nil, err
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "txnloop:", err)
	os.Exit(1)
}
