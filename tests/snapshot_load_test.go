package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestBgsavePITUnderLoad: while BGSAVE runs, clients move money between
// accounts on every shard with MULTI/EXEC (the sum never changes) and
// change keys of every type, big values included (a few MiB strings, a
// 60k-member set, a 40k-field hash, a 60k-element list, a stream), so the
// shards write big values in pieces while writers of those keys wait.
// The server also writes a reference copy of the dataset in the cut's own
// step (--debug_snapshot_reference). Loaded into fresh servers, the
// snapshot must equal the reference key for key, and its accounts must
// hold the invariant sum. Both formats: the plain RDB stream and dfly's
// tagged per-shard files.
func TestBgsavePITUnderLoad(t *testing.T) {
	needTime(t, 120*time.Second)
	if IsRedis() {
		t.Skip("dfly's snapshot; redis forks")
	}
	// The -race pass runs dfly plain and rdb tiered (raceSubset).
	for _, format := range []string{"rdb", "dfly"} {
		t.Run(format, func(t *testing.T) {
			raceSubset(t, format == "dfly")
			runPITUnderLoad(t, format)
		})
	}
	// Tiered storage (every string of 64 bytes or more offloaded): the
	// snapshot reads them asynchronously while their buckets wait.
	for _, format := range []string{"rdb", "dfly"} {
		t.Run(format+"-tiered", func(t *testing.T) {
			raceSubset(t, format == "rdb")
			runPITUnderLoad(t, format, "--tiered_prefix", filepath.Join(t.TempDir(), "tier"))
		})
	}
}

func runPITUnderLoad(t *testing.T, format string, flags ...string) {
	seed := uint64(time.Now().UnixNano())
	if s, ok := lookupEnvUint("DFLY_TEST_SEED"); ok {
		seed = s
	}
	t.Logf("seed %d (DFLY_TEST_SEED to repeat)", seed)
	dir := t.TempDir()
	ref := filepath.Join(t.TempDir(), "ref.rdb")
	srv := StartServer(t, append([]string{"--dir", dir, "--shards", "4", "--dbformat", format,
		"--serialization_max_chunk_size", "16kb", "--debug_snapshot_reference", ref}, flags...)...)
	ctx := context.Background()
	c := srv.Client(t, 2)
	const accounts, balance = 200, 1000
	// Under the race build the collections are a third as big: still many
	// chunks of 16kb each (the same paths), in a third of the time.
	scale := func(n int) int {
		if raceBuild() {
			return n / 3
		}
		return n
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := 0; i < accounts; i++ {
		c.Set(ctx, "acct:"+strconv.Itoa(i), balance, 0)
	}
	if err := c.Do(ctx, "DEBUG", "POPULATE", scale(20000), "small").Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		c.Set(ctx, fmt.Sprintf("bigstr:%d", i), strings.Repeat(string(rune('a'+i)), 1<<20+rng.IntN(2<<20)), 0)
	}
	fill := func(n int, add func(p redis.Pipeliner, i int)) {
		for i := 0; i < n; i += 1000 {
			p := c.Pipeline()
			for j := i; j < min(n, i+1000); j++ {
				add(p, j)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(scale(60000), func(p redis.Pipeliner, i int) { p.SAdd(ctx, "bigset", "member:"+strconv.Itoa(i)) })
	fill(scale(40000), func(p redis.Pipeliner, i int) { p.HSet(ctx, "bighash", "f"+strconv.Itoa(i), "value:"+strconv.Itoa(i)) })
	fill(scale(60000), func(p redis.Pipeliner, i int) { p.RPush(ctx, "biglist", "element:"+strconv.Itoa(i)) })
	fill(scale(20000), func(p redis.Pipeliner, i int) {
		p.ZAdd(ctx, "bigzset", redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)})
	})
	fill(scale(5000), func(p redis.Pipeliner, i int) {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "bigstream", Values: []any{"n", i}})
	})
	fill(300, func(p redis.Pipeliner, i int) {
		k := "coll:" + strconv.Itoa(i)
		p.HSet(ctx, "h"+k, "a", i)
		p.SAdd(ctx, "s"+k, i, i+1)
		p.ZAdd(ctx, "z"+k, redis.Z{Score: float64(i), Member: "x"})
		p.RPush(ctx, "l"+k, i, i+1)
	})

	var stop atomic.Bool
	var wg sync.WaitGroup
	var ops atomic.Int64
	start := make(chan struct{})
	errs := make(chan error, 16)
	worker := func(w int, body func(rng *rand.Rand, c *redis.Client) error) {
		wc := srv.Client(t, 2)
		if err := wc.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			<-start
			for !stop.Load() {
				if err := body(rng, wc); err != nil && err != redis.Nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
				ops.Add(1)
			}
		}()
	}
	for w := 0; w < 3; w++ { // transfers across shards
		worker(w, func(rng *rand.Rand, c *redis.Client) error {
			from, to := "acct:"+strconv.Itoa(rng.IntN(accounts)), "acct:"+strconv.Itoa(rng.IntN(accounts))
			amt := int64(rng.IntN(100))
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.DecrBy(ctx, from, amt)
				p.IncrBy(ctx, to, amt)
				return nil
			})
			return err
		})
	}
	for w := 3; w < 6; w++ { // every type, big values first among them
		worker(w, func(rng *rand.Rand, c *redis.Client) error {
			p := c.Pipeline()
			for j := 0; j < 20; j++ {
				i := rng.IntN(scale(60000))
				switch rng.IntN(14) {
				case 0:
					p.Append(ctx, "bigstr:"+strconv.Itoa(rng.IntN(6)), "tail")
				case 1:
					p.SetRange(ctx, "bigstr:"+strconv.Itoa(rng.IntN(6)), int64(rng.IntN(1<<20)), "XYZ")
				case 2:
					p.SAdd(ctx, "bigset", "new:"+strconv.Itoa(i))
				case 3:
					p.SRem(ctx, "bigset", "member:"+strconv.Itoa(i))
				case 4:
					p.HSet(ctx, "bighash", "f"+strconv.Itoa(i%scale(40000)), "changed")
				case 5:
					p.LPush(ctx, "biglist", "head")
					p.RPop(ctx, "biglist")
				case 6:
					p.LSet(ctx, "biglist", int64(i%scale(50000)), "set")
				case 7:
					p.ZIncrBy(ctx, "bigzset", 1, "m"+strconv.Itoa(i%scale(20000)))
				case 8:
					p.XAdd(ctx, &redis.XAddArgs{Stream: "bigstream", Values: []any{"late", i}})
				case 9:
					p.Del(ctx, "key:"+strconv.Itoa(i%scale(20000)))
				case 10:
					p.Set(ctx, "key:"+strconv.Itoa(i%scale(20000)), "changed", 0)
				case 11:
					p.Expire(ctx, "key:"+strconv.Itoa(i%scale(20000)), time.Hour)
				case 12:
					k := "coll:" + strconv.Itoa(rng.IntN(300))
					p.HSet(ctx, "h"+k, "b", "later")
					p.SAdd(ctx, "s"+k, "later")
					p.LPop(ctx, "l"+k)
				default:
					p.Set(ctx, fmt.Sprintf("new:%d", i), "late", 0)
				}
			}
			_, err := p.Exec(ctx)
			return err
		})
	}
	tiered := func(name string) int64 {
		info, _ := c.Info(ctx, "tiered").Result()
		for _, ln := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(ln, name+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	if len(flags) > 0 { // tiered: the big strings are offloaded at the cut
		for deadline := time.Now().Add(10 * time.Second); tiered("tiered_entries") < 3 || tiered("tiered_pending_writes") > 0; {
			if time.Now().After(deadline) {
				t.Fatalf("values not offloaded: %d", tiered("tiered_entries"))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Under a loaded machine the cut (with its reference file) can outlast
	// go-redis's read timeout, and its retry finds the save running.
	if r, err := c.Do(ctx, "BGSAVE").Text(); (err != nil || r != "Background saving started") &&
		(err == nil || !strings.Contains(err.Error(), "already in progress")) {
		t.Fatalf("BGSAVE: %q %v", r, err)
	}
	close(start)
	deadline := time.Now().Add(90 * time.Second)
	for {
		info, _ := c.Info(ctx, "persistence").Result()
		if strings.Contains(info, "rdb_bgsave_in_progress:0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
	during := ops.Load()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(flags) > 0 && tiered("tiered_serializer_reads") == 0 {
		t.Fatal("the snapshot read no offloaded value")
	}
	info, _ := c.Info(ctx, "persistence").Result()
	if !strings.Contains(info, "rdb_last_bgsave_status:ok") {
		t.Fatalf("BGSAVE failed:\n%s", info)
	}
	field := func(name string) int64 {
		for _, ln := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(ln, name+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatalf("INFO has no %s", name)
		return 0
	}
	if field("snapshot_big_value_chunks") == 0 {
		t.Fatal("no big value was written in pieces")
	}
	t.Logf("%d operations ran during the save; parked writers %d, big value pieces %d, longest stall %dus",
		during, field("snapshot_parked_mutations"), field("snapshot_big_value_chunks"), field("snapshot_max_stall_usec"))

	// The reference, loaded as a plain RDB file.
	refDir := t.TempDir()
	data, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(refDir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := dataset(t, StartServer(t, "--dir", refDir, "--shards", "2").Raw(t), []int{0})
	loaded := StartServer(t, "--dir", dir, "--shards", "3", "--dbformat", format)
	got := dataset(t, loaded.Raw(t), []int{0})
	compareDatasets(t, want, got, "the snapshot vs the dataset at the cut")
	lc := loaded.Client(t, 2)
	sum := 0
	for i := 0; i < accounts; i++ {
		n, err := lc.Get(ctx, "acct:"+strconv.Itoa(i)).Int()
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	if sum != accounts*balance {
		t.Fatalf("seed %d: accounts sum to %d in the snapshot, want %d", seed, sum, accounts*balance)
	}
}
