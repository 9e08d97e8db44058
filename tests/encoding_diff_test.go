package tests

// TestEncodingDifferential builds values of random sizes under random
// encoding thresholds (changed by CONFIG SET, now and then in the middle of
// building) on the suite's target and on a real redis-server, and compares
// every reply and the OBJECT ENCODING of the key after each command. Seed:
// DFLY_TEST_SEED.

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestEncodingDifferential(t *testing.T) {
	seed := newSeed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	d, ref := StartServer(t).Raw(t), startRedis(t).Raw(t)
	do, sent := sameReplies(t, seed, d, ref)
	thresholds := func() {
		n := func() string { return strconv.Itoa(r.IntN(12)) }
		// Old and new names alike: they are one parameter.
		do("CONFIG", "SET", pick(r, "hash-max-listpack-entries", "hash-max-ziplist-entries"), n(),
			pick(r, "hash-max-listpack-value", "hash-max-ziplist-value"), n(),
			pick(r, "zset-max-listpack-entries", "zset-max-ziplist-entries"), n(),
			pick(r, "zset-max-listpack-value", "zset-max-ziplist-value"), n(),
			"set-max-intset-entries", n(),
			pick(r, "list-max-listpack-size", "list-max-ziplist-size"), strconv.Itoa(r.IntN(10)-5))
	}
	member := func() string {
		if r.IntN(3) == 0 {
			return strconv.Itoa(r.IntN(40) - 10)
		}
		return strings.Repeat(string(rune('a'+r.IntN(6))), r.IntN(14))
	}
	score := func() string { return strconv.Itoa(r.IntN(10)) }
	for round := 0; round < 60; round++ {
		do("FLUSHALL")
		thresholds()
		for op := 0; op < 150; op++ {
			if r.IntN(60) == 0 {
				thresholds()
			}
			k := pick(r, "h", "s", "z", "l", "str", "h2", "s2", "z2", "dst")
			var cmd []string
			switch k {
			case "h", "h2":
				switch r.IntN(5) {
				case 0, 1:
					cmd = []string{"HSET", k, member(), member()}
					if r.IntN(3) == 0 {
						cmd = append(cmd, member(), member())
					}
				case 2:
					cmd = []string{"HDEL", k, member()}
				case 3:
					cmd = []string{"HSETNX", k, member(), member()}
				default:
					cmd = []string{"HINCRBY", k, member(), "1"}
				}
			case "s", "s2":
				switch r.IntN(6) {
				case 0, 1, 2:
					cmd = []string{"SADD", k, member()}
					if r.IntN(3) == 0 {
						cmd = append(cmd, member(), member())
					}
				case 3:
					cmd = []string{"SREM", k, member()}
				case 4:
					cmd = []string{pick(r, "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), "dst", "s", "s2"}
					k = "dst"
				default:
					cmd = []string{"SMOVE", "s", "s2", member()}
					k = "s2"
				}
			case "z", "z2":
				switch r.IntN(6) {
				case 0, 1, 2:
					cmd = []string{"ZADD", k, score(), member()}
					if r.IntN(3) == 0 {
						cmd = append(cmd, score(), member(), score(), member())
					}
				case 3:
					cmd = []string{"ZREM", k, member()}
				case 4:
					cmd = []string{"ZINCRBY", k, "1", member()}
				default:
					cmd = []string{pick(r, "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"), "dst", "2", "z", "z2"}
					k = "dst"
				}
			case "dst":
				cmd = []string{"ZRANGESTORE", "dst", pick(r, "z", "z2"), "0", strconv.Itoa(r.IntN(8) - 1)}
			case "l":
				cmd = []string{pick(r, "RPUSH", "LPUSH"), k, member(), member()}
			default:
				v := strconv.Itoa(r.IntN(1000))
				if r.IntN(2) == 0 {
					v = strings.Repeat("x", 38+r.IntN(10))
				}
				switch r.IntN(5) {
				case 0, 1:
					cmd = []string{"SET", k, v}
				case 2:
					cmd = []string{"APPEND", k, v}
				case 3:
					cmd = []string{"INCR", k}
				default:
					cmd = []string{"SETRANGE", k, strconv.Itoa(r.IntN(4)), "ab"}
				}
			}
			do(cmd...)
			do("OBJECT", "ENCODING", k)
		}
	}
	t.Logf("%d commands, seed %d", sent(), seed)
}

func pick(r *rand.Rand, s ...string) string { return s[r.IntN(len(s))] }

// sameReplies returns do, which sends one command to the target (d) and to
// redis-server (ref) and fails the test, naming the seed and the last 30
// commands, when their replies differ; and sent, the commands sent so far.
func sameReplies(t *testing.T, seed uint64, d, ref *RawConn) (do func(args ...string), sent func() int) {
	var history []string
	return func(args ...string) {
		t.Helper()
		got, want := d.Do(args...), ref.Do(args...)
		history = append(history, strings.Join(args, " "))
		if got.String() != want.String() {
			t.Fatalf("seed %d: %s\nredis-server: %s\ntarget:       %s\nafter:\n  %s", seed, strings.Join(args, " "),
				want, got, strings.Join(history[max(0, len(history)-30):], "\n  "))
		}
	}, func() int { return len(history) }
}
