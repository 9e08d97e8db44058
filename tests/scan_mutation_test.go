package tests

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"
)

// TestScanUnderMutation: a full SCAN, SSCAN, HSCAN or ZSCAN returns every
// element present from its start to its end at least once, while other
// elements are deleted and added between its steps (Redis's guarantee),
// for every encoding: listpack and skiplist sorted sets, intset,
// listpack-free hashtable sets, listpack and hashtable hashes, the
// keyspace. Random COUNTs, deletions and additions; the seed is printed
// (DFLY_SCAN_SEED repeats a run).
func TestScanUnderMutation(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, ok := lookupEnv("DFLY_SCAN_SEED"); ok {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (DFLY_SCAN_SEED)", seed)
	rng := rand.New(rand.NewSource(seed))
	srv := StartServer(t)
	c := srv.Raw(t)

	type kind struct {
		name     string
		size     int                               // members at the start
		add      func(key, m string) []string      // the command adding m
		del      func(key, m string) []string      // the command deleting m
		scan     func(key, cursor string) []string // one step
		pairs    bool                              // the reply holds member, value pairs
		member   func(i int) string
		encoding string
	}
	zadd := func(key, m string) []string { return []string{"ZADD", key, strconv.Itoa(rng.Intn(1000)), m} }
	zrem := func(key, m string) []string { return []string{"ZREM", key, m} }
	zscan := func(key, cur string) []string {
		return []string{"ZSCAN", key, cur, "COUNT", strconv.Itoa(1 + rng.Intn(20))}
	}
	sadd := func(key, m string) []string { return []string{"SADD", key, m} }
	srem := func(key, m string) []string { return []string{"SREM", key, m} }
	sscan := func(key, cur string) []string {
		return []string{"SSCAN", key, cur, "COUNT", strconv.Itoa(1 + rng.Intn(20))}
	}
	hset := func(key, m string) []string { return []string{"HSET", key, m, "v"} }
	hdel := func(key, m string) []string { return []string{"HDEL", key, m} }
	hscan := func(key, cur string) []string {
		return []string{"HSCAN", key, cur, "COUNT", strconv.Itoa(1 + rng.Intn(20))}
	}
	word := func(i int) string { return fmt.Sprintf("m%d", i) }
	kinds := []kind{
		{"zset listpack", 60, zadd, zrem, zscan, true, word, "listpack"},
		{"zset skiplist", 2000, zadd, zrem, zscan, true, word, "skiplist"},
		{"set intset", 200, sadd, srem, sscan, false, strconv.Itoa, "intset"},
		{"set hashtable", 2000, sadd, srem, sscan, false, word, "hashtable"},
		{"hash listpack", 60, hset, hdel, hscan, true, word, "listpack"},
		{"hash hashtable", 2000, hset, hdel, hscan, true, word, "hashtable"},
		{"keyspace", 2000,
			func(_, m string) []string { return []string{"SET", "key:" + m, "v"} },
			func(_, m string) []string { return []string{"DEL", "key:" + m} },
			func(_, cur string) []string { return []string{"SCAN", cur, "COUNT", strconv.Itoa(1 + rng.Intn(20))} },
			false, word, ""},
	}
	for _, k := range kinds {
		for round := range 3 {
			c.Do("FLUSHALL")
			key := "coll"
			stable := map[string]bool{}
			var volatile []string
			for i := range k.size {
				m := k.member(i)
				c.Do(k.add(key, m)...)
				if rng.Intn(2) == 0 {
					stable[m] = true
				} else {
					volatile = append(volatile, m)
				}
			}
			if k.encoding != "" {
				if r := c.Do("OBJECT", "ENCODING", key); r.Str != k.encoding {
					t.Fatalf("%s: OBJECT ENCODING %s", k.name, r)
				}
			}
			next := k.size
			seen := map[string]bool{}
			cursor := "0"
			for steps := 0; ; steps++ {
				r := c.Do(k.scan(key, cursor)...)
				if r.Kind != KindArray || len(r.Elems) != 2 {
					t.Fatalf("%s: %v: %s", k.name, k.scan(key, cursor), r)
				}
				cursor = r.Elems[0].Str
				step := 1
				if k.pairs {
					step = 2
				}
				for i := 0; i < len(r.Elems[1].Elems); i += step {
					m := r.Elems[1].Elems[i].Str
					if k.name == "keyspace" {
						m = m[len("key:"):]
					}
					seen[m] = true
				}
				if cursor == "0" {
					break
				}
				if steps > 100*k.size {
					t.Fatalf("%s: no end after %d steps", k.name, steps)
				}
				// Between steps: delete a few volatile members, add new ones
				// (growing and shrinking the tables).
				for range rng.Intn(6) {
					if len(volatile) == 0 {
						break
					}
					i := rng.Intn(len(volatile))
					c.Do(k.del(key, volatile[i])...)
					volatile[i] = volatile[len(volatile)-1]
					volatile = volatile[:len(volatile)-1]
				}
				for range rng.Intn(4) {
					m := k.member(next)
					next++
					c.Do(k.add(key, m)...)
					volatile = append(volatile, m)
				}
			}
			var missed []string
			for m := range stable {
				if !seen[m] {
					missed = append(missed, m)
				}
			}
			if len(missed) > 0 {
				t.Fatalf("%s, round %d (seed %d): a full scan missed %d of %d members present throughout, e.g. %q",
					k.name, round, seed, len(missed), len(stable), missed[:min(5, len(missed))])
			}
		}
	}
}
