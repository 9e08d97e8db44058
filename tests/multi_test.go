package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestWatchInvalidation: a change by another client, a deletion, an
// expiry and a FLUSHALL (of another database's key too) all make EXEC
// fail with a null reply.
func TestWatchInvalidation(t *testing.T) {
	srv := StartServer(t)
	a, b := srv.Raw(t), srv.Raw(t)
	run := func(setup func(), change func()) string {
		t.Helper()
		setup()
		expectReply(t, a.Do("WATCH", "w"), "OK")
		change()
		expectReply(t, a.Do("MULTI"), "OK")
		expectReply(t, a.Do("SET", "w", "mine"), "QUEUED")
		return a.Do("EXEC").String()
	}
	cases := []struct {
		name          string
		setup, change func()
	}{
		{"write", func() { b.Do("SET", "w", "0") }, func() { b.Do("SET", "w", "1") }},
		{"delete", func() { b.Do("SET", "w", "0") }, func() { b.Do("DEL", "w") }},
		{"create", func() { b.Do("DEL", "w") }, func() { b.Do("SET", "w", "new") }},
		{"expiry", func() { b.Do("SET", "w", "0", "PX", "50") }, func() { time.Sleep(120 * time.Millisecond) }},
		{"flushall", func() { b.Do("SET", "w", "0") }, func() { b.Do("FLUSHALL") }},
	}
	for _, tc := range cases {
		if got := run(tc.setup, tc.change); got != "(nil)" {
			t.Errorf("%s: EXEC replied %s, want (nil)", tc.name, got)
		}
	}
	// Untouched: EXEC runs.
	b.Do("SET", "w", "0")
	if got := run(func() {}, func() { b.Do("SET", "other", "1") }); got != "(array)\n  OK" {
		t.Errorf("untouched: EXEC replied %s", got)
	}
	// A watch in db 0 is invalidated by FLUSHALL issued from db 1.
	expectReply(t, b.Do("SELECT", "1"), "OK")
	if got := run(func() {}, func() { b.Do("FLUSHALL") }); got != "(nil)" {
		t.Errorf("flushall from another db: EXEC replied %s, want (nil)", got)
	}
}

// TestWatchOptimisticIncrement: clients increment a counter with
// WATCH/GET/MULTI/SET/EXEC retries; the final value equals the number of
// successful EXECs.
func TestWatchOptimisticIncrement(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	ctx := context.Background()
	var ok atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := srv.Client(t, 2)
			for time.Now().Before(deadline) {
				err := c.Watch(ctx, func(tx *redis.Tx) error {
					n, err := tx.Get(ctx, "counter").Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "counter", n+1, 0)
						return nil
					})
					return err
				}, "counter")
				if err == nil {
					ok.Add(1)
				} else if !errors.Is(err, redis.TxFailedErr) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n, err := srv.Client(t, 2).Get(ctx, "counter").Int64()
	if err != nil || n != ok.Load() {
		t.Fatalf("counter %d (%v), successful EXECs %d", n, err, ok.Load())
	}
	t.Logf("%d successful increments", n)
}

// TestMultiBankInvariant: transfers between accounts spread over all
// shards with MULTI/EXEC, while readers sum every account in MULTI/EXEC
// and must always see the same total. Run the binary with -race in CI.
//
// With 2 shards (one per event loop) every EXEC spans at most the
// connection's loop and one other, so transfers and sums alike run without
// a coordinator (multi_hop.go) unless they find a key taken; with 4, sums
// span two remote shards and take the coordinator, transfers mostly not.
// With 300 accounts, summed by MGETs of 50 keys, a sum reads more than 64
// keys of each shard and holds the shards shared (package tx), its MGETs
// split by shard (command.KeySplit), while transfers lock their keys.
func TestMultiBankInvariant(t *testing.T) {
	for _, shards := range []string{"2", "4"} {
		t.Run("shards="+shards, func(t *testing.T) { multiBank(t, shards, 16) })
		t.Run("shards="+shards+"/accounts=300", func(t *testing.T) { multiBank(t, shards, 300) })
	}
}

// startBank starts a server with the given shards and accounts holding
// start each; seed is the test's random seed (DFLY_TEST_SEED to repeat).
// shardFlags are the server flags for a test's shard setting: "N" is
// --shards N (over the default event loops, one a CPU), "loops=N" is
// --proactor_threads N (N event loops, a shard each: more loops than CPUs
// here, for the interleavings of several lenders).
func shardFlags(shards string) []string {
	if n, ok := strings.CutPrefix(shards, "loops="); ok {
		return []string{"--proactor_threads", n}
	}
	return []string{"--shards", shards}
}

// shardName names a subtest by its shard setting (shardFlags).
func shardName(shards string) string {
	if strings.HasPrefix(shards, "loops=") {
		return shards
	}
	return "shards=" + shards
}

func startBank(t *testing.T, shards string, accounts, start int) (*Server, []string, uint64) {
	seed := uint64(time.Now().UnixNano())
	if s, ok := lookupEnvUint("DFLY_TEST_SEED"); ok {
		seed = s
	}
	t.Logf("seed %d (DFLY_TEST_SEED to repeat)", seed)
	srv := StartServer(t, shardFlags(shards)...)
	ctx := context.Background()
	keys := make([]string, accounts)
	setup := srv.Client(t, 2)
	for i := range keys {
		keys[i] = "acct:" + strconv.Itoa(i)
		setup.Set(ctx, keys[i], start, 0)
	}
	return srv, keys, seed
}

func multiBank(t *testing.T, shards string, accounts int) {
	const start = 1000
	srv, keys, seed := startBank(t, shards, accounts, start)
	ctx := context.Background()
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	var transfers, sums atomic.Int64
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			c := srv.Client(t, 2+w%2)
			for time.Now().Before(stop) {
				from, to := keys[rng.IntN(accounts)], keys[rng.IntN(accounts)]
				amt := rng.IntN(50)
				if err := transferInMulti(ctx, c, from, to, amt); err != nil {
					errs <- err
					return
				}
				transfers.Add(1)
			}
		}(w)
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := srv.Client(t, 2)
			for time.Now().Before(stop) {
				sum, err := sumInMulti(ctx, c, keys)
				if accounts > 64 {
					sum, err = sumByMGets(ctx, c, keys, 50)
				}
				if err != nil {
					errs <- err
					return
				}
				if sum != accounts*start {
					errs <- fmt.Errorf("seed %d: a reader saw total %d, want %d", seed, sum, accounts*start)
					return
				}
				sums.Add(1)
			}
		}()
	}
	waitBank(t, &wg, errs, &transfers, &sums)
}

// transferInMulti moves amt from one account to another in MULTI/EXEC,
// unconditionally (the bank tests check the total).
func transferInMulti(ctx context.Context, c *redis.Client, from, to string, amt int) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.DecrBy(ctx, from, int64(amt))
		p.IncrBy(ctx, to, int64(amt))
		return nil
	})
	return err
}

// sumInMulti adds up the accounts, read in one MULTI/EXEC.
func sumInMulti(ctx context.Context, c *redis.Client, keys []string) (int, error) {
	var cmds []*redis.StringCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cmds = cmds[:0]
		for _, k := range keys {
			cmds = append(cmds, p.Get(ctx, k))
		}
		return nil
	})
	sum := 0
	for _, cmd := range cmds {
		n, _ := cmd.Int()
		sum += n
	}
	return sum, err
}

// sumByMGets reads every account in one MULTI of MGETs of batch keys.
func sumByMGets(ctx context.Context, c *redis.Client, keys []string, batch int) (int, error) {
	var cmds []*redis.SliceCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cmds = cmds[:0]
		for i := 0; i < len(keys); i += batch {
			cmds = append(cmds, p.MGet(ctx, keys[i:min(i+batch, len(keys))]...))
		}
		return nil
	})
	sum := 0
	for _, cmd := range cmds {
		for _, v := range cmd.Val() {
			s, _ := v.(string)
			n, _ := strconv.Atoi(s)
			sum += n
		}
	}
	return sum, err
}

// sumScript adds up the accounts it is given as keys, in one script.
// transferScript moves ARGV[1] from account KEYS[1] to KEYS[2] when the
// first holds that much (1), else does nothing (0).
var transferScript = redis.NewScript(`
local from = tonumber(redis.call('get', KEYS[1]))
local to = tonumber(redis.call('get', KEYS[2]))
local amt = tonumber(ARGV[1])
if KEYS[1] == KEYS[2] or from < amt then return 0 end
redis.call('set', KEYS[1], from - amt)
redis.call('incrby', KEYS[2], amt)
return 1`)

var sumScript = redis.NewScript(`
local s = 0
for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('get', k)) end
return s`)

// sumReaders starts n readers that sum the accounts until stop, in
// MULTI/EXEC (even ones) and in a read-only script (odd ones), pausing
// between sums, and fail with the first error or a sum other than want.
func sumReaders(t *testing.T, srv *Server, wg *sync.WaitGroup, n int, keys []string, want int, stop time.Time,
	pause time.Duration, sums *atomic.Int64, fail func(error)) {
	ctx := context.Background()
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			c := srv.Client(t, 2)
			for time.Now().Before(stop) {
				var total int
				var err error
				if r%2 == 0 {
					total, err = sumInMulti(ctx, c, keys)
				} else {
					total, err = sumScript.RunRO(ctx, c, keys).Int()
				}
				if err != nil {
					fail(fmt.Errorf("sum: %w", err))
					return
				}
				if total != want {
					fail(fmt.Errorf("a reader saw total %d, want %d", total, want))
					return
				}
				sums.Add(1)
				time.Sleep(pause)
			}
		}(r)
	}
}

// waitBank waits for a bank test's clients and fails on their first error
// or when they made no progress.
func waitBank(t *testing.T, wg *sync.WaitGroup, errs chan error, transfers, sums *atomic.Int64) {
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if transfers.Load() == 0 || sums.Load() == 0 {
		t.Fatalf("no progress: %d transfers, %d sums", transfers.Load(), sums.Load())
	}
	t.Logf("%d transfers, %d consistent sums", transfers.Load(), sums.Load())
}

// TestMultiQueuedArgumentsKept: the arguments of many queued commands,
// short and long, reach EXEC intact (they are copied into buffers that
// grow while the transaction is queued), on one shard and across shards.
func TestMultiQueuedArgumentsKept(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	c := srv.Raw(t)
	want := map[string]string{}
	if r := c.Do("MULTI"); r.Str != "OK" {
		t.Fatalf("MULTI: %s", r)
	}
	for i := 0; i < 40; i++ {
		k := "q:" + strconv.Itoa(i)
		v := strings.Repeat(strconv.Itoa(i%10), 1+i*13)
		want[k] = v
		if r := c.Do("SET", k, v); r.Str != "QUEUED" {
			t.Fatalf("SET %s: %s", k, r)
		}
	}
	r := c.Do("EXEC")
	if r.Kind != KindArray || len(r.Elems) != 40 {
		t.Fatalf("EXEC: %s", r)
	}
	for k, v := range want {
		if got := c.Do("GET", k); got.Str != v {
			t.Fatalf("GET %s: %d bytes, want %d", k, len(got.Str), len(v))
		}
	}
}

// TestMultiPipelinedHopGroups: clients pipeline transfers (MULTI/EXEC over
// two accounts), plain reads and a per-client counter, many at a time, so
// that a run of them travels as one hop group (multi_hop.go), while others
// hold the same few accounts: groups are refused part-way and their rest
// dispatched again. Every transfer answers, a client's counter replies
// count up one by one (its commands ran once each, in order), and readers
// summing all accounts in MULTI/EXEC (pipelined too) always see the same
// total.
func TestMultiPipelinedHopGroups(t *testing.T) {
	for _, shards := range []string{"2", "4"} {
		t.Run("shards="+shards, func(t *testing.T) { multiPipelined(t, shards) })
	}
}

func multiPipelined(t *testing.T, shards string) {
	const accounts, start = 16, 1000
	srv, keys, seed := startBank(t, shards, accounts, start)
	ctx := context.Background()
	setup := srv.Client(t, 2)
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	var transfers, sums atomic.Int64
	errs := make(chan error, 16)
	fail := func(format string, args ...any) {
		errs <- fmt.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			c := srv.Client(t, 2)
			seq := "seq:" + strconv.Itoa(w)
			next := int64(1)
			for time.Now().Before(stop) {
				p := c.Pipeline()
				var execs, incrs []*redis.Cmd
				for i := 0; i < 24; i++ {
					switch rng.IntN(3) {
					case 0:
						from, to := keys[rng.IntN(accounts)], keys[rng.IntN(accounts)]
						amt := rng.IntN(50)
						p.Do(ctx, "MULTI")
						p.Do(ctx, "DECRBY", from, amt)
						p.Do(ctx, "INCRBY", to, amt)
						execs = append(execs, p.Do(ctx, "EXEC"))
					case 1:
						incrs = append(incrs, p.Do(ctx, "INCR", seq))
					default:
						p.Do(ctx, "GET", keys[rng.IntN(accounts)])
					}
				}
				if _, err := p.Exec(ctx); err != nil {
					fail("pipeline: %v", err)
					return
				}
				for _, e := range execs {
					if v, err := e.Slice(); err != nil || len(v) != 2 {
						fail("EXEC replied %v (%v)", v, err)
						return
					}
					transfers.Add(1)
				}
				for _, in := range incrs {
					if n, err := in.Int64(); err != nil || n != next {
						fail("INCR %s replied %d (%v), want %d", seq, n, err, next)
						return
					}
					next++
				}
			}
		}(w)
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := srv.Client(t, 2)
			for time.Now().Before(stop) {
				p := c.Pipeline()
				var execs []*redis.Cmd
				for i := 0; i < 4; i++ {
					p.Do(ctx, "MULTI")
					for _, k := range keys {
						p.Do(ctx, "GET", k)
					}
					execs = append(execs, p.Do(ctx, "EXEC"))
				}
				if _, err := p.Exec(ctx); err != nil {
					fail("sum pipeline: %v", err)
					return
				}
				for _, e := range execs {
					v, err := e.Slice()
					if err != nil || len(v) != accounts {
						fail("sum EXEC replied %v (%v)", v, err)
						return
					}
					sum := 0
					for _, x := range v {
						n, _ := strconv.Atoi(x.(string))
						sum += n
					}
					if sum != accounts*start {
						fail("a reader saw total %d, want %d", sum, accounts*start)
						return
					}
					sums.Add(1)
				}
			}
		}()
	}
	waitBank(t, &wg, errs, &transfers, &sums)
	total := 0
	for _, k := range keys {
		n, _ := setup.Get(ctx, k).Int()
		total += n
	}
	if total != accounts*start {
		t.Fatalf("seed %d: final total %d, want %d", seed, total, accounts*start)
	}
}

// TestWatchQuietWrites: as in Redis 7.0, a consumer group's state changes
// (XGROUP, XREADGROUP, XACK, XCLAIM, XSETID) and a BITFIELD that leaves the
// bytes as they were do not fail a WATCH of the key; a new entry, a
// stream created by XGROUP CREATE MKSTREAM and a BITFIELD that changed bits
// do.
func TestWatchQuietWrites(t *testing.T) {
	srv := StartServer(t)
	w, o := srv.Raw(t), srv.Raw(t)
	o.Do("XADD", "s", "1-0", "f", "v")
	o.Do("SET", "b", "\x00")
	execAfter := func(key string, cmd ...string) string {
		t.Helper()
		expectReply(t, w.Do("WATCH", key), "OK")
		if r := o.Do(cmd...); r.IsError() {
			t.Fatalf("%v: %s", cmd, r)
		}
		w.Do("MULTI")
		w.Do("PING")
		return w.Do("EXEC").String()
	}
	ran, failed := "(array)\n  PONG", "(nil)"
	for _, c := range []struct {
		key  string
		cmd  []string
		want string
	}{
		{"s", []string{"XGROUP", "CREATE", "s", "g", "0"}, ran},
		{"s", []string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, ran},
		{"s", []string{"XCLAIM", "s", "g", "c2", "0", "1-0"}, ran},
		{"s", []string{"XACK", "s", "g", "1-0"}, ran},
		{"s", []string{"XSETID", "s", "5-0"}, ran},
		{"s", []string{"XADD", "s", "6-0", "f", "v"}, failed},
		{"n", []string{"XGROUP", "CREATE", "n", "g", "0", "MKSTREAM"}, failed},
		{"b", []string{"BITFIELD", "b", "INCRBY", "u1", "0", "2"}, ran}, // wraps to the same bit
		{"b", []string{"BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9"}, ran},
		{"b", []string{"BITFIELD", "b", "SET", "u8", "0", "7"}, failed},
	} {
		if got := execAfter(c.key, c.cmd...); got != c.want {
			t.Fatalf("WATCH %s, another client: %v; EXEC gave %s, want %s", c.key, c.cmd, got, c.want)
		}
	}
}
