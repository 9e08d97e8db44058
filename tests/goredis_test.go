package tests

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedis is a smoke test through the most used Go client, once per
// protocol version (protocol 3 sends HELLO 3 and CLIENT SETINFO on connect).
func TestGoRedis(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := context.Background()
			c := srv.Client(t, proto)
			p := fmt.Sprintf("p%d:", proto) // both runs share the server
			key := func(s string) string { return p + s }

			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING: %v", err)
			}
			if err := c.Set(ctx, key("foo"), "bar", 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			if v, err := c.Get(ctx, key("foo")).Result(); err != nil || v != "bar" {
				t.Fatalf("GET = %q, %v; want bar", v, err)
			}
			if _, err := c.Get(ctx, key("missing")).Result(); err != redis.Nil {
				t.Fatalf("GET missing: err = %v, want redis.Nil", err)
			}

			// A pipeline of 1000 commands: replies come back in order.
			pipe := c.Pipeline()
			sets := make([]*redis.StatusCmd, 500)
			incrs := make([]*redis.IntCmd, 500)
			for i := range 500 {
				sets[i] = pipe.Set(ctx, key("pipe:"+strconv.Itoa(i)), i, 0)
				incrs[i] = pipe.Incr(ctx, key("counter"))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			for i := range 500 {
				if sets[i].Val() != "OK" || incrs[i].Val() != int64(i+1) {
					t.Fatalf("pipeline reply %d: SET %q, INCR %d; want OK, %d", i, sets[i].Val(), incrs[i].Val(), i+1)
				}
			}

			// MSET/MGET over keys that hash to different shards.
			pairs := []any{}
			keys := []string{}
			for i := range 20 {
				keys = append(keys, key("m:"+strconv.Itoa(i)))
				pairs = append(pairs, keys[i], "v"+strconv.Itoa(i))
			}
			if err := c.MSet(ctx, pairs...).Err(); err != nil {
				t.Fatalf("MSET: %v", err)
			}
			vals, err := c.MGet(ctx, append(keys, key("missing"))...).Result()
			if err != nil {
				t.Fatalf("MGET: %v", err)
			}
			for i := range 20 {
				if vals[i] != "v"+strconv.Itoa(i) {
					t.Fatalf("MGET[%d] = %v, want v%d", i, vals[i], i)
				}
			}
			if vals[20] != nil {
				t.Fatalf("MGET of a missing key = %v, want nil", vals[20])
			}

			// TTLs.
			if err := c.Set(ctx, key("ttl"), "v", 100*time.Second).Err(); err != nil {
				t.Fatalf("SET EX: %v", err)
			}
			if d, err := c.TTL(ctx, key("ttl")).Result(); err != nil || d < 99*time.Second || d > 100*time.Second {
				t.Fatalf("TTL = %v, %v; want about 100s", d, err)
			}
			if d, err := c.PTTL(ctx, key("foo")).Result(); err != nil || d != -1 {
				t.Fatalf("PTTL of a persistent key = %v, %v; want -1", d, err)
			}
			if d, err := c.TTL(ctx, key("missing")).Result(); err != nil || d != -2 {
				t.Fatalf("TTL of a missing key = %v, %v; want -2", d, err)
			}

			// The SCAN iterator sees every key exactly as many as there are.
			var seen []string
			it := c.Scan(ctx, 0, key("pipe:*"), 50).Iterator()
			for it.Next(ctx) {
				seen = append(seen, it.Val())
			}
			if err := it.Err(); err != nil {
				t.Fatalf("SCAN: %v", err)
			}
			seen = dedupe(seen)
			if len(seen) != 500 {
				t.Fatalf("SCAN found %d distinct pipe:* keys, want 500", len(seen))
			}

			// Typed errors come back as errors.
			if err := c.RPush(ctx, key("list"), "x").Err(); err != nil {
				t.Fatalf("RPUSH: %v", err)
			}
			if err := c.Get(ctx, key("list")).Err(); err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
				t.Fatalf("GET of a list: err = %v, want WRONGTYPE", err)
			}
		})
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
