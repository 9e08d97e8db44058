package tests

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisTypes drives every data-type family through go-redis's typed
// API, in RESP2 and RESP3, so the replies parse into the shapes the client
// expects (maps, sets, doubles, stream entries, pub/sub messages).
func TestGoRedisTypes(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := context.Background()
			c := srv.Client(t, proto)
			p := fmt.Sprintf("t%d:", proto)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			eq := func(what string, got, want any) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s = %#v, want %#v", what, got, want)
				}
			}
			// Lists.
			must(c.RPush(ctx, p+"l", "a", "b", "c").Err())
			l, err := c.LRange(ctx, p+"l", 0, -1).Result()
			must(err)
			eq("LRANGE", l, []string{"a", "b", "c"})
			v, err := c.LPop(ctx, p+"l").Result()
			must(err)
			eq("LPOP", v, "a")
			// Hashes.
			must(c.HSet(ctx, p+"h", "f1", "v1", "f2", "v2").Err())
			h, err := c.HGetAll(ctx, p+"h").Result()
			must(err)
			eq("HGETALL", h, map[string]string{"f1": "v1", "f2": "v2"})
			n, err := c.HIncrBy(ctx, p+"h", "n", 5).Result()
			must(err)
			eq("HINCRBY", n, int64(5))
			// Sets.
			must(c.SAdd(ctx, p+"s", "x", "y", "z").Err())
			m, err := c.SMembers(ctx, p+"s").Result()
			must(err)
			sort.Strings(m)
			eq("SMEMBERS", m, []string{"x", "y", "z"})
			ok, err := c.SIsMember(ctx, p+"s", "y").Result()
			must(err)
			eq("SISMEMBER", ok, true)
			// Sorted sets, with scores as doubles.
			must(c.ZAdd(ctx, p+"z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 0.25, Member: "b"}).Err())
			zs, err := c.ZRangeWithScores(ctx, p+"z", 0, -1).Result()
			must(err)
			eq("ZRANGE WITHSCORES", zs, []redis.Z{{Score: 0.25, Member: "b"}, {Score: 1.5, Member: "a"}})
			sc, err := c.ZScore(ctx, p+"z", "a").Result()
			must(err)
			eq("ZSCORE", sc, 1.5)
			// Streams.
			id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: p + "x", ID: "1-1", Values: []string{"k", "v"}}).Result()
			must(err)
			eq("XADD", id, "1-1")
			xs, err := c.XRange(ctx, p+"x", "-", "+").Result()
			must(err)
			eq("XRANGE", xs, []redis.XMessage{{ID: "1-1", Values: map[string]any{"k": "v"}}})
			must(c.XGroupCreate(ctx, p+"x", "g", "0").Err())
			rs, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{p + "x", ">"}}).Result()
			must(err)
			eq("XREADGROUP", rs, []redis.XStream{{Stream: p + "x", Messages: []redis.XMessage{{ID: "1-1", Values: map[string]any{"k": "v"}}}}})
			// HyperLogLog.
			must(c.PFAdd(ctx, p+"hll", "a", "b", "c").Err())
			cnt, err := c.PFCount(ctx, p+"hll").Result()
			must(err)
			eq("PFCOUNT", cnt, int64(3))
			// Blocking pop served by a push from another client.
			other := srv.Client(t, proto)
			go func() {
				time.Sleep(50 * time.Millisecond)
				other.RPush(ctx, p+"q", "job")
			}()
			bl, err := c.BLPop(ctx, 2*time.Second, p+"q").Result()
			must(err)
			eq("BLPOP", bl, []string{p + "q", "job"})
			// Transactions and scripts.
			cmds, err := c.TxPipelined(ctx, func(pp redis.Pipeliner) error {
				pp.Incr(ctx, p+"cnt")
				pp.Incr(ctx, p+"cnt")
				return nil
			})
			must(err)
			eq("EXEC", cmds[1].(*redis.IntCmd).Val(), int64(2))
			r, err := c.Eval(ctx, "return redis.call('incrby', KEYS[1], ARGV[1])", []string{p + "cnt"}, 10).Result()
			must(err)
			eq("EVAL", r, int64(12))
			// Pub/Sub.
			sub := c.Subscribe(ctx, p+"ch")
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			must(other.Publish(ctx, p+"ch", "hello").Err())
			msg, err := sub.ReceiveMessage(ctx)
			must(err)
			eq("message", msg.Payload, "hello")
		})
	}
}
