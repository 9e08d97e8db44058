package tests

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestStringEncodingDifferential runs random string writes (SET and its
// kin, APPEND, SETRANGE, INCR*, INCRBYFLOAT, SETBIT, BITFIELD, COPY,
// RENAME, PFADD, PFMERGE) on the suite's target and on a real
// redis-server, and compares every reply and the OBJECT ENCODING of each
// key after each command: int, embstr and raw exactly where Redis 7.0 has
// them. Seed: DFLY_TEST_SEED.
func TestStringEncodingDifferential(t *testing.T) {
	seed := newSeed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	d, ref := StartServer(t).Raw(t), startRedis(t).Raw(t)
	do, sent := sameReplies(t, seed, d, ref)
	value := func() string {
		switch r.IntN(9) {
		case 0:
			return strconv.Itoa(r.IntN(20000) - 100) // shared integers and beyond
		case 1:
			return pick(r, "007", "+1", "-0", " 1", "1 ", "9223372036854775807", "9223372036854775808",
				"-9223372036854775808", "12345678901234567890", "1.5", "1e3", "0x10", "")
		case 2:
			return strconv.FormatInt(r.Int64(), 10)
		case 3:
			return strings.Repeat("y", 40+r.IntN(8)) // around embstr's 44 bytes
		case 4:
			return strconv.FormatFloat(r.Float64()*100, 'f', r.IntN(4), 64)
		default:
			return strings.Repeat(string(rune('a'+r.IntN(3))), r.IntN(12))
		}
	}
	keys := []string{"a", "b", "c"}
	for round := 0; round < 40; round++ {
		do("FLUSHALL")
		for op := 0; op < 100; op++ {
			k, k2 := pick(r, keys...), pick(r, keys...)
			var cmd []string
			switch r.IntN(22) {
			case 0, 1:
				cmd = []string{"SET", k, value()}
			case 2:
				cmd = []string{"SET", k, value(), "GET"}
			case 3:
				cmd = []string{"APPEND", k, value()}
			case 4:
				cmd = []string{"SETRANGE", k, strconv.Itoa(r.IntN(50)), pick(r, value(), "")}
			case 5:
				cmd = []string{"INCR", k}
			case 6:
				cmd = []string{pick(r, "INCRBY", "DECRBY"), k, strconv.Itoa(r.IntN(30000) - 15000)}
			case 7:
				cmd = []string{"INCRBYFLOAT", k, pick(r, "1", "0.5", "-2.25", "1e2", "3.0e0")}
			case 8:
				cmd = []string{"SETBIT", k, strconv.Itoa(r.IntN(300)), strconv.Itoa(r.IntN(2))}
			case 9:
				cmd = []string{"GETSET", k, value()}
			case 10:
				cmd = []string{"SETNX", k, value()}
			case 11:
				cmd = []string{"MSET", k, value(), k2, value()}
			case 12:
				cmd = []string{pick(r, "SETEX", "PSETEX"), k, "100000", value()}
			case 13:
				cmd = []string{"COPY", k, k2, "REPLACE"}
			case 14:
				cmd = []string{"RENAME", k, k2}
			case 15:
				cmd = []string{"PFADD", k, value(), value()}
			case 16:
				cmd = []string{"PFMERGE", k, k2}
			case 17:
				cmd = []string{"BITFIELD", k, "SET", "u8", strconv.Itoa(8 * r.IntN(10)), strconv.Itoa(r.IntN(256))}
			case 18:
				cmd = []string{"GETEX", k, "PERSIST"}
			case 19:
				cmd = []string{"SET", k, value(), "KEEPTTL", pick(r, "NX", "XX")}
			case 20:
				cmd = []string{"MSETNX", k, value()}
			default:
				cmd = []string{"GETDEL", k}
			}
			do(cmd...)
			for _, key := range keys {
				do("OBJECT", "ENCODING", key)
			}
		}
	}
	t.Logf("%d commands, seed %d", sent(), seed)
}
