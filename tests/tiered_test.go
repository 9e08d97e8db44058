package tests

// Tiered storage end to end (package offload, server/tiered.go): with --tiered_prefix and no
// maxmemory every string of at least --tiered_min_value_size bytes is
// offloaded, so every command below meets offloaded values.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func needDfly(t *testing.T) {
	t.Helper()
	if IsRedis() {
		t.Skip("dfly-only: tiered storage")
	}
}

// tieredInfo is INFO tiered as a map.
func tieredInfo(t *testing.T, c *RawConn) map[string]int64 {
	t.Helper()
	return infoSection(t, c, "tiered")
}

// infoSection is INFO section's numeric fields as a map.
func infoSection(t *testing.T, c *RawConn, section string) map[string]int64 {
	t.Helper()
	r := c.Do("INFO", section)
	if r.IsError() {
		t.Fatalf("INFO %s: %s", section, r.Str)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(r.Str, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			out[k] = n
		}
	}
	return out
}

// waitOffloaded waits until at least n values are offloaded and no write
// is in flight.
func waitOffloaded(t *testing.T, c *RawConn, n int64) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		in := tieredInfo(t, c)
		if in["tiered_entries"] >= n && in["tiered_pending_writes"] == 0 {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("offloading stalled: %v", in)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startTiered(t *testing.T, dir string, extra ...string) *Server {
	t.Helper()
	flags := append([]string{"--dir", dir, "--tiered_prefix", filepath.Join(dir, "tier"),
		"--tiered_min_value_size", "64"}, extra...)
	return StartServer(t, flags...)
}

// tieredModel is the expected dataset of string keys; ttl holds the keys
// that have a (long) TTL.
type tieredModel map[string]string

func (m tieredModel) check(t *testing.T, c *RawConn, ttl map[string]bool, seed int64, what string) {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.Send("PTTL", k)
	}
	for _, k := range keys {
		if got := c.MustRead().Int; (got > 0) != ttl[k] {
			t.Fatalf("seed %d, %s: PTTL %s = %d, want a TTL: %v", seed, what, k, got, ttl[k])
		}
	}
	if n := c.Do("DBSIZE").Int; n != int64(len(m)) {
		t.Fatalf("seed %d, %s: DBSIZE %d, model has %d keys", seed, what, n, len(m))
	}
	// Pipelined GETs: one batch meets many offloaded values.
	for _, k := range keys {
		c.Send("GET", k)
	}
	for _, k := range keys {
		r := c.MustRead()
		if r.Kind != KindBulk || r.Str != m[k] {
			t.Fatalf("seed %d, %s: GET %s = %s (%d bytes), want %d bytes", seed, what, k, truncate(r.Str, 40), len(r.Str), len(m[k]))
		}
	}
	// MGET across shards takes the coordinator (the blocking fallback).
	args := append([]string{"MGET"}, keys...)
	r := c.Do(args...)
	for i, k := range keys {
		if r.Elems[i].Str != m[k] {
			t.Fatalf("seed %d, %s: MGET %s = %d bytes, want %d", seed, what, k, len(r.Elems[i].Str), len(m[k]))
		}
	}
}

func randValue(r *rand.Rand) string {
	n := r.Intn(200)
	switch r.Intn(4) {
	case 0:
		n = 64 + r.Intn(3000)
	case 1:
		n = 4000 + r.Intn(12000) // page runs
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.Intn(26))
	}
	return string(b)
}

// TestTieredModel runs random string commands against a model while values
// are offloaded, then checks every value after offloading, after a SAVE and
// restart on the same --dir, and after DEBUG RELOAD.
func TestTieredModel(t *testing.T) {
	needDfly(t)
	seed := time.Now().UnixNano()
	if s := lookupSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (DFLY_TIERED_SEED to repeat)", seed)
	r := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	srv := startTiered(t, dir)
	c := srv.Raw(t)
	m := tieredModel{}
	ttl := map[string]bool{}
	key := func() string { return "k" + strconv.Itoa(r.Intn(120)) }
	rounds := 6
	if raceBuild() {
		rounds = 3 // 14 s under -race with 6; the plain pass runs all
	}
	for round := 0; round < rounds; round++ {
		for i := 0; i < 300; i++ {
			if i%60 == 59 {
				time.Sleep(15 * time.Millisecond) // let offloading catch up mid-round
			}
			k := key()
			_, exists := m[k]
			switch op := r.Intn(13); op {
			case 0, 1:
				v := randValue(r)
				if r.Intn(4) == 0 {
					mustOK(t, c.Do("SET", k, v, "EX", "100000"), "set ex")
					ttl[k] = true
				} else {
					mustOK(t, c.Do("SET", k, v), "set")
					delete(ttl, k)
				}
				m[k] = v
			case 2:
				v := randValue(r)
				got := c.Do("SET", k, v, "GET")
				if old, ok := m[k]; ok != (got.Kind == KindBulk) || got.Str != old {
					t.Fatalf("seed %d: SET GET %s returned %d bytes, want %d", seed, k, len(got.Str), len(old))
				}
				m[k] = v
				delete(ttl, k)
			case 3:
				a := randValue(r)
				a = a[:min(len(a), r.Intn(100))]
				n := c.Do("APPEND", k, a).Int
				m[k] += a
				if n != int64(len(m[k])) {
					t.Fatalf("seed %d: APPEND %s = %d, want %d", seed, k, n, len(m[k]))
				}
			case 4:
				off := r.Intn(len(m[k]) + 10)
				p := randValue(r)
				p = p[:min(len(p), r.Intn(50))]
				if len(p) == 0 {
					p = "x"
				}
				c.Do("SETRANGE", k, strconv.Itoa(off), p)
				v := []byte(m[k])
				for len(v) < off+len(p) {
					v = append(v, 0)
				}
				copy(v[off:], p)
				m[k] = string(v)
			case 5:
				n := c.Do("DEL", k).Int
				if (n == 1) != exists {
					t.Fatalf("seed %d: DEL %s = %d", seed, k, n)
				}
				delete(m, k)
				delete(ttl, k)
			case 6:
				// Expiry of an offloaded value (EXPIRE does not load it).
				if exists {
					c.Do("PEXPIRE", k, "5")
					delete(m, k)
					delete(ttl, k)
					time.Sleep(10 * time.Millisecond)
					if got := c.Do("EXISTS", k).Int; got != 0 {
						t.Fatalf("seed %d: %s exists after its TTL", seed, k)
					}
				}
			case 7:
				if got := c.Do("STRLEN", k).Int; got != int64(len(m[k])) {
					t.Fatalf("seed %d: STRLEN %s = %d, want %d", seed, k, got, len(m[k]))
				}
			case 8:
				if exists {
					s, e := r.Intn(len(m[k])+1), r.Intn(len(m[k])+1)
					got := c.Do("GETRANGE", k, strconv.Itoa(s), strconv.Itoa(e))
					want := ""
					if s <= e && s < len(m[k]) {
						want = m[k][s:min(e+1, len(m[k]))]
					}
					if got.Str != want {
						t.Fatalf("seed %d: GETRANGE %s %d %d wrong", seed, k, s, e)
					}
				}
			case 9:
				got := c.Do("GETDEL", k)
				if got.Str != m[k] {
					t.Fatalf("seed %d: GETDEL %s wrong", seed, k)
				}
				delete(m, k)
				delete(ttl, k)
			case 10:
				// COPY and RENAME move or duplicate offloaded values.
				dst := key()
				if exists && dst != k {
					if r.Intn(2) == 0 {
						c.Do("COPY", k, dst, "REPLACE")
						m[dst] = m[k]
						ttl[dst] = ttl[k]
					} else {
						c.Do("RENAME", k, dst)
						m[dst] = m[k]
						ttl[dst] = ttl[k]
						delete(m, k)
						delete(ttl, k)
					}
				}
			case 12:
				// Now and then a value written in parts (over 1 MiB).
				if r.Intn(8) == 0 {
					v := bigString(1<<20+r.Intn(2<<20), r.Int63())
					mustOK(t, c.Do("SET", k, v), "set big")
					m[k] = v
					delete(ttl, k)
				}
			case 11:
				// A pipeline mixing reads and writes of the same keys.
				k2 := key()
				v := randValue(r)
				c.Send("GET", k)
				c.Send("APPEND", k2, "tail")
				c.Send("GET", k2)
				c.Send("SET", k, v)
				c.Send("GET", k)
				g1, _, g2, _, g3 := c.MustRead(), c.MustRead(), c.MustRead(), c.MustRead(), c.MustRead()
				want1 := m[k]
				m[k2] += "tail"
				want2 := m[k2]
				if k == k2 {
					want2 = want1 + "tail"
				}
				m[k] = v
				delete(ttl, k)
				if g1.Str != want1 || g2.Str != want2 || g3.Str != v {
					t.Fatalf("seed %d: pipeline on %s %s read wrong values", seed, k, k2)
				}
			}
		}
		in := waitOffloaded(t, c, 1)
		m.check(t, c, ttl, seed, fmt.Sprintf("round %d (%d offloaded)", round, in["tiered_entries"]))
	}
	in := tieredInfo(t, c)
	if in["tiered_reads"] == 0 || in["tiered_read_serves"] == 0 || in["tiered_loads"] == 0 {
		t.Fatalf("seed %d: offloaded values were never read back: %v", seed, in)
	}
	t.Logf("tiered: %v", in)
	// DEBUG RELOAD saves (reading offloaded values) and loads.
	waitOffloaded(t, c, 1)
	mustOK(t, c.Do("DEBUG", "RELOAD"), "debug reload")
	m.check(t, c, ttl, seed, "after DEBUG RELOAD")
	// SAVE, restart on the same --dir.
	waitOffloaded(t, c, 1)
	mustOK(t, c.Do("SAVE"), "save")
	srv.Terminate(10 * time.Second)
	srv2 := startTiered(t, dir)
	c2 := srv2.Raw(t)
	m.check(t, c2, ttl, seed, "after restart")
	waitOffloaded(t, c2, 1)
	m.check(t, c2, ttl, seed, "after restart and offloading")
}

func lookupSeed() int64 {
	if v, ok := lookupEnv("DFLY_TIERED_SEED"); ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

// TestTieredConcurrentAppendsAndReads: clients append unique tokens to a
// few offloaded keys while others read them; no append is lost and every
// read sees a prefix of the final value.
func TestTieredConcurrentAppendsAndReads(t *testing.T) {
	needDfly(t)
	srv := startTiered(t, t.TempDir())
	c := srv.Raw(t)
	base := strings.Repeat("B", 2000)
	keys := []string{"ca", "cb", "cc"}
	for _, k := range keys {
		mustOK(t, c.Do("SET", k, base), "set")
	}
	const writers, appends = 4, 150
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 16)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wc := DialRaw(t, srv.Addr)
			for i := 0; i < appends; i++ {
				wc.Do("APPEND", keys[i%len(keys)], fmt.Sprintf("<%d.%d>", w, i))
				if i%10 == 0 {
					time.Sleep(3 * time.Millisecond) // let the values be offloaded again
				}
			}
		}(w)
	}
	var readers sync.WaitGroup
	for rd := 0; rd < 3; rd++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rc := DialRaw(t, srv.Addr)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, k := range keys {
					rc.Send("GET", k)
				}
				for range keys {
					v := rc.MustRead().Str
					if !strings.HasPrefix(v, base) {
						select {
						case errs <- fmt.Sprintf("read %d bytes not starting with the base value", len(v)):
						default:
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	waitOffloaded(t, c, int64(len(keys)))
	for i, k := range keys {
		v := c.Do("GET", k).Str
		for w := 0; w < writers; w++ {
			for j := i; j < appends; j += len(keys) {
				if n := strings.Count(v, fmt.Sprintf("<%d.%d>", w, j)); n != 1 {
					t.Fatalf("%s holds token <%d.%d> %d times", k, w, j, n)
				}
			}
		}
	}
	in := tieredInfo(t, c)
	if in["tiered_reads"] == 0 {
		t.Fatalf("no offloaded value was read: %v", in)
	}
	t.Logf("tiered: %v", in)
}

// TestTieredSharedReads: many clients reading one offloaded value at once
// get it right (their reads share I/O where they overlap).
func TestTieredSharedReads(t *testing.T) {
	needDfly(t)
	srv := startTiered(t, t.TempDir())
	c := srv.Raw(t)
	val := strings.Repeat("0123456789", 900)
	mustOK(t, c.Do("SET", "hot", val), "set")
	waitOffloaded(t, c, 1)
	var wg sync.WaitGroup
	bad := make(chan int, 64)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := DialRaw(t, srv.Addr)
			for j := 0; j < 20; j++ {
				rc.Send("GET", "hot")
			}
			for j := 0; j < 20; j++ {
				if v := rc.MustRead().Str; v != val {
					bad <- len(v)
				}
			}
		}()
	}
	wg.Wait()
	close(bad)
	for n := range bad {
		t.Fatalf("read %d bytes, want %d", n, len(val))
	}
	in := tieredInfo(t, c)
	if in["tiered_entries"] != 1 || in["tiered_loads"] != 0 {
		t.Fatalf("GETs loaded the value back into memory: %v", in)
	}
	t.Logf("reads %d, shared %d", in["tiered_reads"], in["tiered_shared_reads"])
}

// TestTieredFileFull: when the backing file cannot grow, values stay in
// memory, the failure is counted, and nothing is lost.
func TestTieredFileFull(t *testing.T) {
	needDfly(t)
	srv := startTiered(t, t.TempDir(), "--tiered_max_file_size", "16kb", "--shards", "1")
	c := srv.Raw(t)
	want := map[string]string{}
	for i := 0; i < 40; i++ {
		k := "f" + strconv.Itoa(i)
		want[k] = strings.Repeat(strconv.Itoa(i%10), 1000+i)
		mustOK(t, c.Do("SET", k, want[k]), "set")
	}
	deadline := time.Now().Add(5 * time.Second)
	var in map[string]int64
	for {
		in = tieredInfo(t, c)
		if in["tiered_write_errors"] > 0 && in["tiered_pending_writes"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write error reported: %v", in)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if in["tiered_file_size"] > 16<<10 || in["tiered_entries"] == 0 || in["tiered_entries"] >= 40 {
		t.Fatalf("want some values offloaded within 16 KiB, the rest in memory: %v", in)
	}
	for k, v := range want {
		if got := c.Do("GET", k).Str; got != v {
			t.Fatalf("%s lost: %d bytes, want %d", k, len(got), len(v))
		}
	}
	if !strings.Contains(srv.Output(), "tiered storage") {
		t.Fatalf("the failure was not logged:\n%s", srv.Output())
	}
}

// TestTieredSnapshotEquality: BGSAVE with tiering on writes the same data
// as with tiering off: both files load to equal datasets and equal DUMPs.
func TestTieredSnapshotEquality(t *testing.T) {
	needDfly(t)
	dirOn, dirOff := t.TempDir(), t.TempDir()
	on := startTiered(t, dirOn)
	off := StartServer(t, "--dir", dirOff)
	con, coff := on.Raw(t), off.Raw(t)
	r := rand.New(rand.NewSource(1))
	for _, c := range []*RawConn{con, coff} {
		fillAllTypes(t, c, 0)
		fillAllTypes(t, c, 3)
	}
	for i := 0; i < 300; i++ {
		k, v := "s"+strconv.Itoa(i), randValue(r)
		ttl := strconv.Itoa(100000 + i)
		for _, c := range []*RawConn{con, coff} {
			if i%7 == 0 {
				mustOK(t, c.Do("SET", k, v, "EX", ttl), "set")
			} else {
				mustOK(t, c.Do("SET", k, v), "set")
			}
		}
	}
	in := waitOffloaded(t, con, 200)
	t.Logf("offloaded %d values", in["tiered_entries"])
	bgsave := func(c *RawConn, dir string) {
		t.Helper()
		mustOK(t, c.Do("BGSAVE"), "bgsave")
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(c.Do("INFO", "persistence").Str, "rdb_bgsave_in_progress:0") {
			if time.Now().After(deadline) {
				t.Fatal("BGSAVE did not finish")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	bgsave(con, dirOn)
	bgsave(coff, dirOff)
	if in := tieredInfo(t, con); in["tiered_entries"] < 200 || in["tiered_serializer_reads"] < 200 {
		t.Fatalf("BGSAVE did not read the offloaded values, or loaded them back: %v", in)
	}
	// Load both files into plain servers and compare.
	lon, loff := StartServer(t, "--dir", dirOn), StartServer(t, "--dir", dirOff)
	a, b := lon.Raw(t), loff.Raw(t)
	da, db := dataset(t, a, []int{0, 3}), dataset(t, b, []int{0, 3})
	compareDatasets(t, db, da, "tiered BGSAVE vs in-memory BGSAVE")
	if len(da) != len(db) {
		t.Fatalf("%d keys vs %d", len(da), len(db))
	}
	for i := 0; i < 300; i++ {
		k := "s" + strconv.Itoa(i)
		if x, y := a.Do("DUMP", k).Str, b.Do("DUMP", k).Str; x != y {
			t.Fatalf("DUMP %s differs", k)
		}
	}
	// DUMP of an offloaded value equals the in-memory one on the live servers.
	for i := 0; i < 300; i += 17 {
		k := "s" + strconv.Itoa(i)
		if x, y := con.Do("DUMP", k).Str, coff.Do("DUMP", k).Str; x != y {
			t.Fatalf("live DUMP %s differs", k)
		}
	}
}

// TestTieredMetaCommandsDoNotRead: commands that need no string bytes run
// on offloaded values without reading them, and deleting frees the space.
func TestTieredMetaCommandsDoNotRead(t *testing.T) {
	needDfly(t)
	dir := t.TempDir()
	srv := startTiered(t, dir)
	c := srv.Raw(t)
	var keys []string
	for i := 0; i < 20; i++ {
		k := "m" + strconv.Itoa(i)
		keys = append(keys, k)
		mustOK(t, c.Do("SET", k, strings.Repeat("v", 500+i)), "set")
	}
	waitOffloaded(t, c, 20)
	if n := c.Do(append([]string{"EXISTS"}, keys...)...).Int; n != 20 {
		t.Fatalf("EXISTS = %d", n)
	}
	for _, k := range keys[:5] {
		c.Do("EXPIRE", k, "1000")
		c.Do("TTL", k)
		c.Do("TYPE", k)
		if n := c.Do("STRLEN", k).Int; n < 500 {
			t.Fatalf("STRLEN %s = %d", k, n)
		}
		// MEMORY USAGE counts what the key holds in RAM: not the
		// offloaded bytes, which it must not read back either.
		if n := c.Do("MEMORY", "USAGE", k).Int; n <= 0 || n >= 500 {
			t.Fatalf("MEMORY USAGE %s of an offloaded value = %d", k, n)
		}
	}
	mustOK(t, c.Do("SET", "m19", "small"), "set") // overwrite frees
	in := tieredInfo(t, c)
	if in["tiered_reads"] != 0 || in["tiered_entries"] != 19 {
		t.Fatalf("meta commands read offloaded values or kept the overwritten one: %v", in)
	}
	if n := c.Do(append([]string{"DEL"}, keys...)...).Int; n != 20 {
		t.Fatalf("DEL = %d", n)
	}
	in = tieredInfo(t, c)
	if in["tiered_reads"] != 0 || in["tiered_entries"] != 0 || in["tiered_allocated_bytes"] != 0 {
		t.Fatalf("DEL read values or left space allocated: %v", in)
	}
	// The backing files shrink to nothing (truncated on the I/O pool).
	waitUntil(t, 10*time.Second, "backing files truncated", func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "tier-*"))
		var size int64
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				size += fi.Size()
			}
		}
		return len(files) > 0 && size == 0
	})
}

// TestTieredDflyFormat: SAVE in the dfly format (a file per shard) writes
// offloaded values, and they load back after a restart.
func TestTieredDflyFormat(t *testing.T) {
	needDfly(t)
	dir := t.TempDir()
	srv, c, want := saveOffloaded(t, dir, "--dbformat", "dfly")
	// BGSAVE (the snapshot reads offloaded values asynchronously).
	want["s0"] = "changed after SAVE"
	mustOK(t, c.Do("SET", "s0", want["s0"]), "set")
	waitOffloaded(t, c, 30)
	mustOK(t, c.Do("BGSAVE"), "bgsave")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(c.Do("INFO", "persistence").Str, "rdb_bgsave_in_progress:0"); {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.Terminate(10 * time.Second)
	checkValues(t, startTiered(t, dir, "--dbformat", "dfly").Raw(t), want)
}

// saveOffloaded starts a tiered server in dir, sets 200 keys to random
// values (randValue, fixed seed), waits for offloading and SAVEs, which
// must read offloaded values without blocking a shard goroutine.
func saveOffloaded(t *testing.T, dir string, flags ...string) (*Server, *RawConn, map[string]string) {
	t.Helper()
	srv := startTiered(t, dir, flags...)
	c := srv.Raw(t)
	r := rand.New(rand.NewSource(2))
	want := map[string]string{}
	for i := 0; i < 200; i++ {
		k := "s" + strconv.Itoa(i)
		want[k] = randValue(r)
		mustOK(t, c.Do("SET", k, want[k]), "set")
	}
	waitOffloaded(t, c, 50)
	mustOK(t, c.Do("SAVE"), "save")
	in := tieredInfo(t, c)
	if in["tiered_serializer_reads"] == 0 || in["tiered_serializer_sync_reads"] != 0 || in["tiered_sync_loads"] != 0 {
		t.Fatalf("SAVE read no offloaded value, or read one blocking the shard: %v", in)
	}
	return srv, c, want
}

// checkValues checks every key of want after a restart.
func checkValues(t *testing.T, c *RawConn, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := c.Do("GET", k); got.Str != v {
			t.Fatalf("%s: %d bytes after restart, want %d", k, len(got.Str), len(v))
		}
	}
}

// tierVal is key k's value in round, past the size threshold.
func tierVal(k string, round int) string { return strings.Repeat(k+strconv.Itoa(round)+".", 40) }

// tierSortFixture makes list PREFIXlist of 0..5, weights PREFIXw_E
// descending by element and values PREFIXv_E (of round), all offloaded but
// the list; it returns the offloaded keys.
func tierSortFixture(t *testing.T, c *RawConn, prefix string, round int) []string {
	t.Helper()
	c.Do("DEL", prefix+"list", prefix+"dst")
	var ks []string
	for i := 0; i < 6; i++ {
		e := strconv.Itoa(i)
		c.Do("RPUSH", prefix+"list", e)
		// Padded past the size threshold.
		mustOK(t, c.Do("SET", prefix+"w_"+e, strings.Repeat("0", 80)+strconv.Itoa(100-i)), "set")
		mustOK(t, c.Do("SET", prefix+"v_"+e, tierVal(prefix+"v_"+e, round)), "set")
		ks = append(ks, prefix+"w_"+e, prefix+"v_"+e)
	}
	waitOffloaded(t, c, int64(len(ks)))
	return ks
}

// checkTierSort checks r, the reply of SORT PREFIXlist BY PREFIXw_* GET #
// GET PREFIXv_* over tierSortFixture's keys.
func checkTierSort(t *testing.T, r Reply, prefix string, round int) {
	t.Helper()
	if len(r.Elems) != 12 {
		t.Fatalf("SORT = %v", r)
	}
	for i := 0; i < 6; i++ {
		e := strconv.Itoa(5 - i)
		if r.Elems[2*i].Str != e || r.Elems[2*i+1].Str != tierVal(prefix+"v_"+e, round) {
			t.Fatalf("SORT row %d = %q %q", i, r.Elems[2*i].Str, r.Elems[2*i+1].Str)
		}
	}
}

// TestTieredNoSyncLoads: every path that reads offloaded values reads
// them asynchronously — multi-shard commands, EXEC (multi-shard, with
// WATCH, and commands that read no bytes), scripts (on a coordinator and
// confined to a shard), SORT BY/GET patterns — so DB.Find's blocking load
// (tiered_sync_loads) never runs, and the replies are right. With no
// maxmemory every value is offloaded again as soon as it is in memory, so
// each round meets offloaded values, and the offloader races the gap
// between a coordinator's preload and its transaction.
func TestTieredNoSyncLoads(t *testing.T) {
	needDfly(t)
	srv := startTiered(t, t.TempDir(), "--shards", "4")
	c := srv.Raw(t)
	// setAll sets keys to their values of round and waits until all of
	// them (and nothing else) are offloaded.
	setAll := func(t *testing.T, keys []string, round int) {
		t.Helper()
		for _, k := range keys {
			mustOK(t, c.Do("SET", k, tierVal(k, round)), "set")
		}
		waitOffloaded(t, c, int64(len(keys)))
	}
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	var master *Server // of the last path
	var mc *RawConn
	const rounds = 15
	paths := []tierPath{
		{"mget", func(t *testing.T, round int) {
			setAll(t, keys, round)
			r := c.Do(append([]string{"MGET"}, keys...)...)
			for i, k := range keys {
				if r.Elems[i].Str != tierVal(k, round) {
					t.Fatalf("MGET %s = %q", k, r.Elems[i].Str)
				}
			}
		}},
		{"exec", func(t *testing.T, round int) {
			setAll(t, keys, round)
			mustOK(t, c.Do("WATCH", "k7"), "watch")
			mustOK(t, c.Do("MULTI"), "multi")
			c.Do("GET", "k0")
			c.Do("APPEND", "k1", "!")
			c.Do("GETRANGE", "k2", "0", "3")
			c.Do("MGET", "k3", "k4")
			c.Do("STRLEN", "k5")
			c.Do("EXISTS", "k6")
			c.Do("SET", "k7", "new")
			r := c.Do("EXEC")
			if len(r.Elems) != 7 || r.Elems[0].Str != tierVal("k0", round) || r.Elems[1].Int != int64(len(tierVal("k1", round))+1) ||
				r.Elems[2].Str != tierVal("k2", round)[:4] || r.Elems[3].Elems[0].Str != tierVal("k3", round) ||
				r.Elems[3].Elems[1].Str != tierVal("k4", round) || r.Elems[4].Int != int64(len(tierVal("k5", round))) ||
				r.Elems[5].Int != 1 {
				t.Fatalf("EXEC = %v", r)
			}
			if got := c.Do("GET", "k1").Str; got != tierVal("k1", round)+"!" {
				t.Fatalf("APPEND in EXEC left %q", got)
			}
		}},
		{"exec on one shard", func(t *testing.T, round int) {
			ks := []string{"{e}a", "{e}b", "{e}c"}
			setAll(t, ks, round)
			mustOK(t, c.Do("WATCH", ks[2]), "watch")
			mustOK(t, c.Do("MULTI"), "multi")
			c.Do("GET", ks[0])
			c.Do("APPEND", ks[1], "!")
			c.Do("STRLEN", ks[2])
			r := c.Do("EXEC")
			if len(r.Elems) != 3 || r.Elems[0].Str != tierVal(ks[0], round) ||
				r.Elems[1].Int != int64(len(tierVal(ks[1], round))+1) || r.Elems[2].Int != int64(len(tierVal(ks[2], round))) {
				t.Fatalf("EXEC = %v", r)
			}
		}},
		{"eval", func(t *testing.T, round int) {
			setAll(t, keys, round)
			r := c.Do("EVAL", "local t = {} for i, k in ipairs(KEYS) do t[i] = redis.call('GET', k) end "+
				"redis.call('APPEND', KEYS[1], '!') return t", "4", "k0", "k3", "k5", "k6")
			for i, k := range []string{"k0", "k3", "k5", "k6"} {
				if r.Elems[i].Str != tierVal(k, round) {
					t.Fatalf("EVAL %s = %v", k, r)
				}
			}
		}},
		{"eval on one shard", func(t *testing.T, round int) {
			ks := []string{"{h}a", "{h}b"}
			setAll(t, ks, round)
			r := c.Do("EVAL", "return {redis.call('GET', KEYS[1]), redis.call('GETRANGE', KEYS[2], 0, 2)}", "2", ks[0], ks[1])
			if r.Elems[0].Str != tierVal(ks[0], round) || r.Elems[1].Str != tierVal(ks[1], round)[:3] {
				t.Fatalf("EVAL = %v", r)
			}
		}},
		{"sort", func(t *testing.T, round int) {
			// Weights and values offloaded on any shard; the list is not.
			ks := tierSortFixture(t, c, "", round)
			checkTierSort(t, c.Do("SORT", "list", "BY", "w_*", "GET", "#", "GET", "v_*"), "", round)
			waitOffloaded(t, c, int64(len(ks)))
			if n := c.Do("SORT", "list", "BY", "w_*", "GET", "v_*", "STORE", "dst").Int; n != 6 {
				t.Fatalf("SORT STORE = %d", n)
			}
			if got := c.Do("LINDEX", "dst", "0").Str; got != tierVal("v_5", round) {
				t.Fatalf("SORT STORE first = %q", got)
			}
		}},
		{"sort in a script on one shard", func(t *testing.T, round int) {
			// A script naming SORT runs on a coordinator with tiering
			// (evalCoordinate), where SORT waits for the reads.
			tierSortFixture(t, c, "{s}", round)
			r := c.Do("EVAL", "local r = redis.call('SORT', KEYS[1], 'BY', '{s}w_*', 'GET', '#', 'GET', '{s}v_*') "+
				"redis.call('SET', KEYS[2], #r) return r", "2", "{s}list", "{s}dst")
			checkTierSort(t, r, "{s}", round)
			if got := c.Do("GET", "{s}dst").Str; got != "12" {
				t.Fatalf("the script's write after SORT: %q", got)
			}
		}},
		{"debug reload", func(t *testing.T, round int) {
			// Every offloaded value is read for the save, in rounds between
			// which the caller waits (serializeAsync), none blocking.
			setAll(t, keys, round)
			before := tieredInfo(t, c)["tiered_serializer_sync_reads"]
			mustOK(t, c.Do("DEBUG", "RELOAD"), "debug reload")
			for _, k := range keys {
				if got := c.Do("GET", k).Str; got != tierVal(k, round) {
					t.Fatalf("after DEBUG RELOAD %s = %q", k, got)
				}
			}
			if in := tieredInfo(t, c); in["tiered_serializer_sync_reads"] != before {
				t.Fatalf("DEBUG RELOAD read blocking: %v", in)
			}
		}},
		{"replica multi-shard", func(t *testing.T, round int) {
			// This server replicates a master's transactions and
			// multi-shard commands that read offloaded values.
			if round == 0 {
				master = StartServer(t, "--shards", "3")
				mc = master.Raw(t)
				replicaOf(t, srv, master.Addr)
				waitReplicaLinkUp(t, srv, 30*time.Second)
			}
			for _, k := range keys {
				mustOK(t, mc.Do("SET", k, tierVal(k, round)), "set")
			}
			waitUntil(t, 10*time.Second, "replica offloaded the values", func() bool {
				in := tieredInfo(t, c)
				return in["tiered_entries"] >= int64(len(keys)) && in["tiered_pending_writes"] == 0
			})
			mustOK(t, mc.Do("MULTI"), "multi")
			mc.Do("APPEND", "k0", "!")
			mc.Do("SETRANGE", "k1", "1", "xy")
			mc.Do("APPEND", "k2", "?")
			mc.Do("MSET", "k3", "plain", "k4", "plain")
			if r := mc.Do("EXEC"); len(r.Elems) != 4 {
				t.Fatalf("EXEC = %v", r)
			}
			mc.Do("BITOP", "OR", "k5", "k6", "k7") // a multi-shard command reading bytes
			waitUntil(t, 10*time.Second, "replica converged", func() bool {
				for _, k := range keys {
					if c.Do("GET", k).Str != mc.Do("GET", k).Str {
						return false
					}
				}
				return true
			})
		}},
	}
	runTierPaths(t, c, rounds, paths)
}

// tierPath is a way to read offloaded values, run round after round.
type tierPath struct {
	name string
	run  func(t *testing.T, round int)
}

// runTierPaths runs each path rounds times in a subtest, from an empty
// dataset, and checks that it read offloaded values but never loaded one
// blocking (tiered_sync_loads).
func runTierPaths(t *testing.T, c *RawConn, rounds int, paths []tierPath) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			c.Do("FLUSHALL")
			before := tieredInfo(t, c)
			for round := 0; round < rounds; round++ {
				p.run(t, round)
			}
			after := tieredInfo(t, c)
			if n := after["tiered_sync_loads"] - before["tiered_sync_loads"]; n != 0 {
				t.Fatalf("%d blocking loads: %v", n, after)
			}
			if after["tiered_reads"] == before["tiered_reads"] {
				t.Fatalf("no offloaded value was read: %v", after)
			}
		})
	}
}

// TestTieredSortPatternsInScripts: SORT BY/GET patterns reaching offloaded
// values from where a shard's goroutine would have to wait for the reads —
// a script confined to one shard that has written already, a script inside
// EXEC on one shard or on several — never load them blocking
// (tiered_sync_loads), and answer as with tiering off: with tiering on a
// script whose text names SORT runs on a coordinator (evalCoordinate).
func TestTieredSortPatternsInScripts(t *testing.T) {
	needDfly(t)
	srv := startTiered(t, t.TempDir(), "--shards", "4")
	c := srv.Raw(t)
	const sortArgs = "KEYS[1], 'BY', '{s}w_*', 'GET', '#', 'GET', '{s}v_*'"
	// writeThenSort writes KEYS[2] before and after its SORT.
	writeThenSort := "redis.call('SET', KEYS[2], 'w') local r = redis.call('SORT', " + sortArgs + ") " +
		"redis.call('APPEND', KEYS[2], #r) return r"
	writeThenSortSHA := c.Do("SCRIPT", "LOAD", writeThenSort).Str
	justSort := "return redis.call('sort_ro', " + sortArgs + ")"
	checkDst := func(t *testing.T, want string) {
		t.Helper()
		if got := c.Do("GET", "{s}dst").Str; got != want {
			t.Fatalf("{s}dst = %q, want %q", got, want)
		}
	}
	// exec runs cmds in MULTI/EXEC and returns EXEC's replies.
	exec := func(t *testing.T, cmds ...[]string) []Reply {
		t.Helper()
		mustOK(t, c.Do("MULTI"), "multi")
		for _, cmd := range cmds {
			if r := c.Do(cmd...); r.Str != "QUEUED" {
				t.Fatalf("%v: %v", cmd, r)
			}
		}
		r := c.Do("EXEC")
		if len(r.Elems) != len(cmds) {
			t.Fatalf("EXEC = %v", r)
		}
		return r.Elems
	}
	paths := []tierPath{
		{"eval that wrote", func(t *testing.T, round int) {
			checkTierSort(t, c.Do("EVAL", writeThenSort, "2", "{s}list", "{s}dst"), "{s}", round)
			checkDst(t, "w12")
		}},
		{"evalsha that wrote", func(t *testing.T, round int) {
			checkTierSort(t, c.Do("EVALSHA", writeThenSortSHA, "2", "{s}list", "{s}dst"), "{s}", round)
			checkDst(t, "w12")
		}},
		{"exec on one shard", func(t *testing.T, round int) {
			r := exec(t, []string{"SET", "{s}dst", "x"}, []string{"EVAL", justSort, "1", "{s}list"},
				[]string{"EVALSHA", writeThenSortSHA, "2", "{s}list", "{s}dst"}, []string{"GET", "{s}dst"})
			checkTierSort(t, r[1], "{s}", round)
			checkTierSort(t, r[2], "{s}", round)
			if r[3].Str != "w12" {
				t.Fatalf("GET in EXEC = %v", r[3])
			}
		}},
		{"exec on several shards", func(t *testing.T, round int) {
			r := exec(t, []string{"MGET", "a", "b", "c", "d", "e", "f", "g", "h"},
				[]string{"EVAL", justSort, "1", "{s}list"}, []string{"EVAL", writeThenSort, "2", "{s}list", "{s}dst"})
			if len(r[0].Elems) != 8 {
				t.Fatalf("MGET in EXEC = %v", r[0])
			}
			checkTierSort(t, r[1], "{s}", round)
			checkTierSort(t, r[2], "{s}", round)
			checkDst(t, "w12")
		}},
	}
	for i := range paths {
		run := paths[i].run
		paths[i].run = func(t *testing.T, round int) {
			tierSortFixture(t, c, "{s}", round)
			run(t, round)
		}
	}
	runTierPaths(t, c, 3, paths)
}

// TestTieredSortNamedAtRuntime: a script whose text does not name SORT but
// calls it (SORT_RO, the name from ARGV) runs on a coordinator from its
// first run (its command names are not literals), before or after a write,
// with no blocking load of the offloaded pattern values.
func TestTieredSortNamedAtRuntime(t *testing.T) {
	needDfly(t)
	srv := startTiered(t, t.TempDir(), "--shards", "4")
	c := srv.Raw(t)
	const call = "redis.call(ARGV[1], KEYS[1], 'BY', '{s}w_*', 'GET', '#', 'GET', '{s}v_*')"
	scripts := []struct {
		name, eval, body string
	}{
		// EVAL_RO: the GET reads the value in place (read-only batch),
		// which is offloaded again before the coordinator runs.
		{"before a write", "EVAL_RO", "local v = redis.call('GET', KEYS[2]) return {v, " + call + "}"},
		{"after a write", "EVAL", "local v = redis.call('GET', KEYS[2]) redis.call('SET', KEYS[3], 'w') return {v, " + call + "}"},
	}
	for _, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			for round := 0; round < 3; round++ {
				c.Do("FLUSHALL")
				mustOK(t, c.Do("SET", "{s}g", tierVal("{s}g", round)), "set")
				tierSortFixture(t, c, "{s}", round)
				waitOffloaded(t, c, 13)
				before := tieredInfo(t, c)["tiered_sync_loads"]
				r := c.Do(sc.eval, sc.body, "3", "{s}list", "{s}g", "{s}dst", "SORT_RO")
				if len(r.Elems) != 2 || r.Elems[0].Str != tierVal("{s}g", round) {
					t.Fatalf("EVAL = %v", r)
				}
				checkTierSort(t, r.Elems[1], "{s}", round)
				n := tieredInfo(t, c)["tiered_sync_loads"] - before
				if n != 0 {
					t.Fatalf("round %d: %d blocking loads", round, n)
				}
			}
		})
	}
}

// TestTieredSaveReadsAsynchronously: SAVE in the RDB format reads
// offloaded values through the snapshot's asynchronous path (no blocking
// read on a shard goroutine), and the file loads back equal.
func TestTieredSaveReadsAsynchronously(t *testing.T) {
	needDfly(t)
	dir := t.TempDir()
	srv, _, want := saveOffloaded(t, dir, "--shards", "2")
	srv.Terminate(10 * time.Second)
	checkValues(t, startTiered(t, dir).Raw(t), want)
}

// TestTieredReplicaApply: a tiered replica applies its master's commands
// that read offloaded values (APPEND, SETRANGE) after loading them
// asynchronously, and those that read none (SET, DEL) without loading: no
// blocking load, and the replica converges.
func TestTieredReplicaApply(t *testing.T) {
	needDfly(t)
	master := StartServer(t, "--shards", "2")
	rep := startTiered(t, t.TempDir(), "--shards", "3")
	mc, rc := master.Raw(t), rep.Raw(t)
	replicaOf(t, rep, master.Addr)
	waitReplicaLinkUp(t, rep, 30*time.Second)
	var keys []string
	for i := 0; i < 12; i++ {
		keys = append(keys, "r"+strconv.Itoa(i))
	}
	for round := 0; round < 5; round++ {
		for _, k := range keys {
			mustOK(t, mc.Do("SET", k, strings.Repeat(k+strconv.Itoa(round), 30)), "set")
		}
		waitUntil(t, 10*time.Second, "replica offloaded the values", func() bool {
			in := tieredInfo(t, rc)
			return in["tiered_entries"] == int64(len(keys)) && in["tiered_pending_writes"] == 0
		})
		for i, k := range keys {
			switch i % 3 {
			case 0:
				mc.Do("APPEND", k, "!")
			case 1:
				mc.Do("SETRANGE", k, "2", "xyz")
			default:
				mustOK(t, mc.Do("SET", k, strings.Repeat("n", 100)), "set")
			}
		}
		waitUntil(t, 10*time.Second, "replica converged", func() bool {
			for _, k := range keys {
				if rc.Do("GET", k).Str != mc.Do("GET", k).Str {
					return false
				}
			}
			return true
		})
	}
	in := tieredInfo(t, rc)
	if in["tiered_sync_loads"] != 0 || in["tiered_loads"] == 0 {
		t.Fatalf("the replica loaded offloaded values blocking, or never loaded one: %v", in)
	}
}

// bigString is n pseudo-random letters.
func bigString(n int, seed int64) string {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	return string(b)
}

// TestTieredBigValues: strings of 8 to 32 MiB are offloaded (a part per
// step) and read back by GET, GETRANGE, STRLEN and APPEND, deleted while
// their write or a read is pending, and BGSAVE of the tiered dataset loads
// to the same data as that of the same commands run in memory. Every
// reply is compared with the in-memory server's.
func TestTieredBigValues(t *testing.T) {
	needDfly(t)
	// 21 s under the race build; there TestTieredModel runs the offload and
	// read-back paths with the I/O goroutines, and package tiered's tests.
	raceSubset(t, false)
	dirOn, dirOff := t.TempDir(), t.TempDir()
	on := startTiered(t, dirOn, "--shards", "2")
	off := StartServer(t, "--dir", dirOff, "--shards", "2")
	con, coff := on.Raw(t), off.Raw(t)
	for _, c := range []*RawConn{con, coff} {
		c.Timeout = 60 * time.Second
	}
	do := func(args ...string) Reply {
		t.Helper()
		a, b := con.Do(args...), coff.Do(args...)
		if a.String() != b.String() {
			t.Fatalf("%s: tiered %.80s, in memory %.80s", strings.Join(args[:min(2, len(args))], " "), a.String(), b.String())
		}
		return a
	}
	mb := 1 << 20 // unit of the big values: each is still many chunks
	sizes := map[string]int{"b8": 8 * mb, "b16": 16*mb + 7, "b32": 32 * mb}
	bytesOf := func() (n int64) {
		for _, s := range sizes {
			n += int64(s)
		}
		return n
	}
	for k, n := range sizes {
		mustOK(t, do("SET", k, bigString(n, int64(n))), "set")
	}
	for i := 0; i < 50; i++ {
		mustOK(t, do("SET", "s"+strconv.Itoa(i), strings.Repeat(strconv.Itoa(i), 100)), "set")
	}
	in := waitOffloaded(t, con, 53)
	if in["tiered_entries_bytes"] < bytesOf() || in["tiered_sync_loads"] != 0 {
		t.Fatalf("big values not offloaded: %v", in)
	}
	// Read-only commands run on the bytes read, leaving the values offloaded.
	for k, n := range sizes {
		if r := do("GET", k); len(r.Str) != n {
			t.Fatalf("GET %s: %d bytes", k, len(r.Str))
		}
		do("GETRANGE", k, "1000000", "1000099")
		do("GETRANGE", k, "-10", "-1")
	}
	before := tieredInfo(t, con)
	for k := range sizes {
		do("STRLEN", k) // needs no bytes
	}
	if after := tieredInfo(t, con); after["tiered_reads"] != before["tiered_reads"] || after["tiered_loads"] != 0 ||
		after["tiered_entries"] != 53 {
		t.Fatalf("STRLEN read values, or GET loaded them back: %v", after)
	}
	// Writes load the value (a private read taken over, no copy) and it is
	// offloaded again.
	do("APPEND", "b8", "tail")
	do("SETRANGE", "b16", "3", "xyz")
	sizes["b8"] += 4
	do("GET", "b8")
	waitOffloaded(t, con, 53)
	do("GETRANGE", "b16", "0", "9")
	// DEL while a read is pending: a GET from another connection is in
	// flight when DEL runs; it gets the value or nothing, and the space is
	// freed after the read.
	waitOffloaded(t, con, 53)
	other := DialRaw(t, on.Addr)
	other.Timeout = 60 * time.Second
	other.Send("GET", "b32")
	do("DEL", "b32")
	if r := other.MustRead(); r.Kind == KindBulk && len(r.Str) != sizes["b32"] {
		t.Fatalf("GET racing DEL: %d bytes", len(r.Str))
	}
	delete(sizes, "b32")
	// DEL while the write is pending: a new value deleted at once.
	mustOK(t, do("SET", "w", bigString(24*mb, 5)), "set")
	do("DEL", "w")
	mustOK(t, do("SET", "b32", bigString(20*mb, 6)), "set")
	sizes["b32"] = 20 * mb
	in = waitOffloaded(t, con, 53)
	if in["tiered_allocated_bytes"] != in["tiered_entries_bytes"] || in["tiered_entries_bytes"] < bytesOf() {
		t.Fatalf("space of deleted values not freed: %v", in)
	}
	for k, n := range sizes {
		if r := do("GET", k); len(r.Str) != n {
			t.Fatalf("GET %s: %d bytes, want %d", k, len(r.Str), n)
		}
	}
	// BGSAVE: the files load to the same dataset. The snapshot reads the
	// big values while their buckets wait (DelayedPending) and writes them
	// a chunk per step.
	chunks := infoSection(t, con, "persistence")["snapshot_big_value_chunks"]
	for _, c := range []*RawConn{con, coff} {
		mustOK(t, c.Do("BGSAVE"), "bgsave")
		waitUntil(t, 60*time.Second, "BGSAVE done", func() bool {
			return strings.Contains(c.Do("INFO", "persistence").Str, "rdb_bgsave_in_progress:0")
		})
	}
	in = tieredInfo(t, con)
	if in["tiered_serializer_sync_reads"] != 0 || in["tiered_sync_loads"] != 0 || in["tiered_entries"] != 53 {
		t.Fatalf("BGSAVE read blocking or loaded values back: %v", in)
	}
	chunk, _ := strconv.ParseInt(con.Do("CONFIG", "GET", "serialization_max_chunk_size").Elems[1].Str, 10, 64)
	persist := infoSection(t, con, "persistence")
	if n := persist["snapshot_big_value_chunks"] - chunks; n < bytesOf()/chunk {
		t.Fatalf("BGSAVE wrote the big values in %d chunks, want at least %d of %d bytes", n, bytesOf()/chunk, chunk)
	}
	t.Logf("BGSAVE: snapshot_max_stall_usec %d (wall %d)", persist["snapshot_max_stall_usec"], persist["snapshot_max_stall_wall_usec"])
	lon, loff := StartServer(t, "--dir", dirOn), StartServer(t, "--dir", dirOff)
	a, b := lon.Raw(t), loff.Raw(t)
	a.Timeout, b.Timeout = 60*time.Second, 60*time.Second
	want := dataset(t, b, []int{0})
	compareDatasets(t, want, dataset(t, a, []int{0}), "tiered BGSAVE vs in-memory BGSAVE")
	// A full sync from the tiered server sends the same data.
	rep := StartServer(t, "--shards", "3")
	replicaOf(t, rep, on.Addr)
	waitReplicaLinkUp(t, rep, 60*time.Second)
	rc := rep.Raw(t)
	rc.Timeout = 60 * time.Second
	compareDatasets(t, want, dataset(t, rc, []int{0}), "full sync of the tiered server vs in-memory BGSAVE")
	// DEBUG RELOAD reads the big values ahead, in rounds.
	mustOK(t, con.Do("DEBUG", "RELOAD"), "debug reload")
	compareDatasets(t, want, dataset(t, con, []int{0}), "tiered server after DEBUG RELOAD vs in-memory BGSAVE")
	in = tieredInfo(t, con)
	if in["tiered_serializer_sync_reads"] != 0 || in["tiered_sync_loads"] != 0 {
		t.Fatalf("the full sync or DEBUG RELOAD read blocking: %v", in)
	}
	t.Logf("tiered: %v", in)
}
