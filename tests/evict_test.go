package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Eviction under maxmemory (issue 41), against redis-server too: each
// policy fills the server past maxmemory with a known access pattern and
// the right keys go, while used memory stays near maxmemory.

const evictValueSize = 1000

// evictPipeline sends cmds in pipelined batches and fails on an error reply.
func evictPipeline(t *testing.T, c *RawConn, cmds [][]string) {
	t.Helper()
	for i := 0; i < len(cmds); i += 500 {
		batch := cmds[i:min(i+500, len(cmds))]
		var b strings.Builder
		for _, cmd := range batch {
			b.WriteString(EncodeCommand(cmd...))
		}
		c.Write(b.String())
		for range batch {
			if r := c.MustRead(); r.IsError() {
				t.Fatalf("%v: %s", batch[0], r.Str)
			}
		}
	}
}

// evictKeys are n SETs of prefix:i with a 1000-byte value, then opts.
func evictKeys(prefix string, n int, opts ...string) [][]string {
	val := strings.Repeat("v", evictValueSize)
	cmds := make([][]string, n)
	for i := range cmds {
		cmds[i] = append([]string{"SET", fmt.Sprintf("%s:%d", prefix, i), val}, opts...)
	}
	return cmds
}

// evictSurvivors counts prefix:0..n-1 still there.
func evictSurvivors(t *testing.T, c *RawConn, prefix string, n int) int {
	t.Helper()
	alive := 0
	for i := 0; i < n; i += 500 {
		args := []string{"EXISTS"}
		for j := i; j < min(i+500, n); j++ {
			args = append(args, fmt.Sprintf("%s:%d", prefix, j))
		}
		alive += int(c.Do(args...).Int)
	}
	return alive
}

func evictInt(t *testing.T, c *RawConn, section, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(info(t, c, section)[field], 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %s: %v", section, field, err)
	}
	return n
}

// evictSetup starts a server whose maxmemory leaves room for about 20 MB
// of data over what it uses empty, with policy.
func evictSetup(t *testing.T, policy string) (*RawConn, int64) {
	t.Helper()
	_, c, limit := evictServer(t, policy, 20)
	return c, limit
}

// evictServer is evictSetup's server too, with room MB for data.
func evictServer(t *testing.T, policy string, room int64) (*Server, *RawConn, int64) {
	t.Helper()
	srv := StartServer(t)
	c := srv.Raw(t)
	c.Timeout = 30 * time.Second
	limit := evictInt(t, c, "memory", "used_memory") + room<<20
	for _, kv := range [][]string{{"maxmemory", strconv.FormatInt(limit, 10)}, {"maxmemory-policy", policy}} {
		if r := c.Do("CONFIG", "SET", kv[0], kv[1]); r.Str != "OK" {
			t.Fatalf("CONFIG SET %v: %+v", kv, r)
		}
	}
	return srv, c, limit
}

// evictCheckMemory: used memory is within a few percent of maxmemory (it
// may be lower after a burst of evictions, never much higher) and keys
// were evicted.
func evictCheckMemory(t *testing.T, c *RawConn, limit int64) {
	t.Helper()
	var used int64
	for wait := 0; wait < 50; wait++ {
		time.Sleep(100 * time.Millisecond) // the last evictions run after the writes
		used = evictUsed(t, c)
		if used <= limit+limit/20 {
			break
		}
	}
	if used > limit+limit/20 {
		t.Errorf("used_memory %d over maxmemory %d by more than 5%%", used, limit)
	}
	if used < limit/2 {
		t.Errorf("used_memory %d: evicted far too much (maxmemory %d)", used, limit)
	}
	if n := evictInt(t, c, "stats", "evicted_keys"); n == 0 {
		t.Errorf("evicted_keys 0")
	}
}

// evictUsed is the used memory eviction keeps under maxmemory: INFO's
// used_memory for Redis. dfly's (server/oom.go) is the heap's live
// objects after a collection, less the free space of its packed string
// chunks (a defragmentation pass gives it back, evicting more keys would
// not): INFO's used_memory also counts garbage not collected yet.
func evictUsed(t *testing.T, c *RawConn) int64 {
	t.Helper()
	if IsRedis() {
		return evictInt(t, c, "memory", "used_memory")
	}
	c.Do("MEMORY", "PURGE")
	m := info(t, c, "memory")
	heap, _ := strconv.ParseInt(m["used_memory"], 10, 64)
	chunks, _ := strconv.ParseInt(m["packed_strings_bytes"], 10, 64)
	live, _ := strconv.ParseInt(m["packed_strings_live_bytes"], 10, 64)
	return heap - (chunks - live)
}

// TestEvictLRU: keys read after an older set was written survive; the
// older set goes first.
func TestEvictLRU(t *testing.T) {
	c, limit := evictSetup(t, "allkeys-lru")
	evictPipeline(t, c, evictKeys("cold", 6000))
	evictPipeline(t, c, evictKeys("hot", 6000))
	time.Sleep(2100 * time.Millisecond) // the LRU clock counts seconds, in both
	reads := make([][]string, 6000)
	for i := range reads {
		reads[i] = []string{"GET", fmt.Sprintf("hot:%d", i)}
	}
	evictPipeline(t, c, reads)
	evictPipeline(t, c, evictKeys("new", 10000))
	evictCheckMemory(t, c, limit)
	hot, cold := evictSurvivors(t, c, "hot", 6000), evictSurvivors(t, c, "cold", 6000)
	t.Logf("hot %d/6000, cold %d/6000, new %d/10000", hot, cold, evictSurvivors(t, c, "new", 10000))
	if hot < 6000*85/100 || cold > 6000*6/10 {
		t.Errorf("LRU: %d of 6000 recently read keys and %d of 6000 older ones survive", hot, cold)
	}
}

// TestEvictLFU: keys read often survive keys read never, written before
// or after them.
func TestEvictLFU(t *testing.T) {
	c, limit := evictSetup(t, "allkeys-lfu")
	if hot := evictFrequent(t, c, limit, 5); hot < 6000*8/10 {
		t.Errorf("LFU: %d of 6000 frequently read keys survive", hot)
	}
}

// evictFrequent writes 6000 cold keys, 6000 hot ones read rounds times,
// then 14000 new ones, and returns how many hot keys survive.
func evictFrequent(t *testing.T, c *RawConn, limit int64, rounds int) int {
	t.Helper()
	evictPipeline(t, c, evictKeys("cold", 6000))
	evictPipeline(t, c, evictKeys("hot", 6000))
	var reads [][]string
	for range rounds {
		for i := 0; i < 6000; i++ {
			reads = append(reads, []string{"GET", fmt.Sprintf("hot:%d", i)})
		}
	}
	evictPipeline(t, c, reads)
	evictPipeline(t, c, evictKeys("new", 14000))
	evictCheckMemory(t, c, limit)
	hot, cold := evictSurvivors(t, c, "hot", 6000), evictSurvivors(t, c, "cold", 6000)
	t.Logf("hot %d/6000, cold %d/6000, new %d/14000", hot, cold, evictSurvivors(t, c, "new", 14000))
	return hot
}

// TestEvictTinyLFU: dfly's allkeys-tinylfu keeps keys read often over
// keys written and never read, before or after them (the new ones are
// turned away at once: admission), and shows in CONFIG GET.
func TestEvictTinyLFU(t *testing.T) {
	if IsRedis() {
		t.Skip("allkeys-tinylfu is dfly's")
	}
	c, limit := evictSetup(t, "allkeys-tinylfu")
	if r := c.Do("CONFIG", "GET", "maxmemory-policy"); len(r.Elems) != 2 || r.Elems[1].Str != "allkeys-tinylfu" {
		t.Fatalf("CONFIG GET maxmemory-policy: %s", r.String())
	}
	if hot := evictFrequent(t, c, limit, 3); hot < 6000*9/10 {
		t.Errorf("tinylfu: %d of 6000 frequently read keys survive", hot)
	}
	if bytes := evictInt(t, c, "memory", "evict_sketch_bytes"); bytes == 0 || bytes > 1<<20 {
		t.Errorf("evict_sketch_bytes %d", bytes)
	}
}

// TestEvictVolatile: volatile-* evict only keys with a TTL; volatile-ttl
// the soonest first; with nothing evictable, writes get the OOM error.
func TestEvictVolatile(t *testing.T) {
	for _, policy := range []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			c, limit := evictSetup(t, policy)
			evictPipeline(t, c, evictKeys("soon", 8000, "EX", "10000"))
			evictPipeline(t, c, evictKeys("kept", 6000))
			evictPipeline(t, c, evictKeys("late", 12000, "EX", "100000"))
			evictCheckMemory(t, c, limit)
			kept, soon := evictSurvivors(t, c, "kept", 6000), evictSurvivors(t, c, "soon", 8000)
			t.Logf("kept %d/6000, soon %d/8000, late %d/12000", kept, soon, evictSurvivors(t, c, "late", 12000))
			if kept != 6000 {
				t.Errorf("%s evicted %d keys without a TTL", policy, 6000-kept)
			}
			if policy == "volatile-ttl" && soon > 8000/4 {
				t.Errorf("volatile-ttl: %d of 8000 keys expiring soonest survive", soon)
			}
		})
	}
	t.Run("nothing-evictable", func(t *testing.T) {
		c, _ := evictSetup(t, "volatile-lru")
		val := strings.Repeat("v", evictValueSize)
		for i := 0; i < 40000; i++ {
			r := c.Do("SET", fmt.Sprintf("k:%d", i), val)
			if r.IsError() {
				if want := "OOM command not allowed when used memory > 'maxmemory'."; r.Str != want {
					t.Fatalf("got %q, want %q", r.Str, want)
				}
				return
			}
		}
		t.Fatal("40 MB written over a 20 MB maxmemory without a key to evict")
	})
}

// TestEvictRandom: allkeys-random keeps memory near maxmemory.
func TestEvictRandom(t *testing.T) {
	c, limit := evictSetup(t, "allkeys-random")
	evictPipeline(t, c, evictKeys("k", 40000))
	evictCheckMemory(t, c, limit)
}

// TestEvictDuringBGSAVE: keys evicted while a BGSAVE walks the shards do
// not change what it writes: the file loads equal to the dataset at its
// cut (--debug_snapshot_reference, dfly only), evictions going the
// expiry's way (the snapshot serializes a bucket it has not covered
// before the key leaves it).
func TestEvictDuringBGSAVE(t *testing.T) {
	if IsRedis() {
		t.Skip("the cut's reference file is dfly's (--debug_snapshot_reference)")
	}
	dir, refDir := t.TempDir(), t.TempDir()
	srv := StartServer(t, "--dir", dir, "--serialization_max_chunk_size", "4kb",
		"--debug_snapshot_reference", filepath.Join(refDir, "ref.rdb"))
	c := srv.Raw(t)
	c.Timeout = 30 * time.Second
	limit := evictInt(t, c, "memory", "used_memory") + 40<<20
	mustOK(t, c.Do("CONFIG", "SET", "maxmemory", strconv.FormatInt(limit, 10), "maxmemory-policy", "allkeys-random"), "CONFIG SET")
	evictPipeline(t, c, evictKeys("base", 35000))
	if r := c.Do("BGSAVE"); r.Str != "Background saving started" {
		t.Fatalf("BGSAVE: %+v", r)
	}
	evictPipeline(t, c, evictKeys("load", 20000))
	waitFor(t, 30*time.Second, "BGSAVE", func() bool {
		return infoField(c, "persistence", "rdb_bgsave_in_progress") == "0"
	})
	if n := evictInt(t, c, "stats", "evicted_keys"); n == 0 {
		t.Fatal("nothing evicted")
	}
	srv.Terminate(10 * time.Second)
	got := stringsOf(t, StartServer(t, "--dir", dir).Raw(t), 0)
	want := stringsOf(t, StartServer(t, "--dir", refDir, "--dbfilename", "ref.rdb").Raw(t), 0)
	if len(want) < 30000 || len(got) != len(want) {
		t.Fatalf("the snapshot holds %d keys, the cut %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the snapshot differs from the cut: %q, want %q", got[i], want[i])
		}
	}
}

// TestEvictDuringFullSync: a replica's full sync while the master evicts
// under a write load. What the sync holds for the replica (its baseline's
// chunks, the writes queued behind them) is not the dataset's memory, as
// Redis's mem_not_counted_for_evict: the master keeps about maxmemory
// worth of keys throughout (it evicted its whole dataset), and the
// replica ends equal to it.
func TestEvictDuringFullSync(t *testing.T) {
	needTime(t, 45*time.Second)
	master, mc, _ := evictServer(t, "allkeys-lru", 60)
	evictPipeline(t, mc, evictKeys("base", 90000))
	time.Sleep(300 * time.Millisecond) // the last evictions
	before := mc.Do("DBSIZE").Int
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- evictLoad(master.Addr, stop) }()
	rep := StartServer(t)
	rc := rep.Raw(t)
	rc.Timeout = 30 * time.Second
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "REPLICAOF")
	least := before
	waitFor(t, 60*time.Second, "the full sync", func() bool {
		least = min(least, mc.Do("DBSIZE").Int)
		return infoField(rc, "replication", "master_link_status") == "up"
	})
	time.Sleep(300 * time.Millisecond) // stable sync, still evicting
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	least = min(least, mc.Do("DBSIZE").Int)
	t.Logf("keys: %d before the sync, %d at least during it; evicted_keys %d", before,
		least, evictInt(t, mc, "stats", "evicted_keys"))
	if least < before/2 {
		t.Errorf("the master held %d keys during the full sync, %d before: the sync's memory was taken for the dataset's", least, before)
	}
	if _, ok := info(t, mc, "memory")["mem_not_counted_for_evict"]; !ok {
		t.Error("INFO memory has no mem_not_counted_for_evict")
	}
	waitDigestsEqual(t, mc, rc)
}

// evictLoad writes new 1000-byte keys to addr, 100 pipelined at a time,
// until stop.
func evictLoad(addr string, stop <-chan struct{}) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	val := strings.Repeat("w", evictValueSize)
	for n := 0; ; {
		select {
		case <-stop:
			return nil
		default:
		}
		var b strings.Builder
		for i := 0; i < 100; i++ {
			b.WriteString(EncodeCommand("SET", fmt.Sprintf("load:%d", n), val))
			n++
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(conn, b.String()); err != nil {
			return err
		}
		for i := 0; i < 100; i++ {
			if rep, err := readReply(r); err != nil {
				return err
			} else if rep.IsError() {
				return fmt.Errorf("SET: %s", rep.Str)
			}
		}
	}
}

// TestEvictHeapLimit: CONFIG SET maxmemory moves the Go heap's cap
// (GOMEMLIMIT) as --maxmemory sets it at start, and 0 lifts it (INFO
// memory gc_memory_limit, dfly's).
func TestEvictHeapLimit(t *testing.T) {
	if IsRedis() {
		t.Skip("the Go heap's limit is dfly's")
	}
	c := StartServer(t, "--maxmemory", "800mb").Raw(t)
	limit := func() string { return infoField(c, "memory", "gc_memory_limit") }
	if got := limit(); got != strconv.Itoa(1000<<20) {
		t.Fatalf("--maxmemory 800mb: gc_memory_limit %s, want %d", got, 1000<<20)
	}
	for _, tc := range []struct{ maxmemory, want string }{
		{"2000mb", strconv.Itoa(2500 << 20)},
		{"0", "9223372036854775807"},
		{"40000000", strconv.Itoa(40000000 + 64<<20)}, // 64 MiB of room at least
	} {
		mustOK(t, c.Do("CONFIG", "SET", "maxmemory", tc.maxmemory), "CONFIG SET maxmemory")
		if got := limit(); got != tc.want {
			t.Errorf("maxmemory %s: gc_memory_limit %s, want %s", tc.maxmemory, got, tc.want)
		}
	}
}

// TestClientEviction: over maxmemory-clients the client using the most
// memory is closed (a big command half sent, its query buffer), the one
// that said CLIENT NO-EVICT on stays, and INFO counts evicted_clients.
func TestClientEviction(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	mustOK(t, c.Do("CLIENT", "NO-EVICT", "on"), "CLIENT NO-EVICT on")
	kept, evicted := srv.Raw(t), srv.Raw(t)
	mustOK(t, kept.Do("CLIENT", "NO-EVICT", "on"), "CLIENT NO-EVICT on")
	mustOK(t, evicted.Do("CLIENT", "NO-EVICT", "off"), "CLIENT NO-EVICT off")
	mustOK(t, c.Do("CONFIG", "SET", "maxmemory-clients", "3mb"), "CONFIG SET maxmemory-clients")
	const size = 8 << 20
	head := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", size)
	part := strings.Repeat("x", 4<<20)
	kept.Write(head + part)
	go io.WriteString(evicted.conn, head+part) // closed before it is all written, perhaps
	evicted.ExpectClosed(10 * time.Second)
	kept.Write(strings.Repeat("x", size-len(part)) + "\r\n")
	mustOK(t, kept.MustRead(), "the exempt client's SET")
	if n := evictInt(t, c, "stats", "evicted_clients"); n != 1 {
		t.Errorf("evicted_clients %d, want 1", n)
	}
	if r := c.Do("STRLEN", "big"); r.Int != size {
		t.Errorf("STRLEN big: %+v", r)
	}
}
