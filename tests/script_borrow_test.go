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

	"github.com/cespare/xxhash/v2"
	"github.com/redis/go-redis/v9"
)

// TestScriptBorrowedRuns: scripts whose keys span the shards of several
// event loops run on the lowest of them with the higher loops' shards lent
// to it (server/borrow.go; a higher loop's connection forwards them there:
// forward.go). Against them, at once: scripts on other connections of
// every loop (kept shards recalled and lent again), pipelined MULTI/EXEC
// transfers (hop groups and coordinators), WATCH-based transfers (a
// borrowed run's write must fail their EXEC), a client blocked in BLPOP on
// a list the scripts push to (served from a lent shard), BGSAVE (a snapshot
// makes shards not lendable: the scripts go to coordinators meanwhile), and
// readers summing every account in MULTI/EXEC and in a read-only script.
// Every reader must see the same total, every push be popped once, and the
// accounts add up at the end. The seed is printed.
func TestScriptBorrowedRuns(t *testing.T) {
	for _, shards := range []string{"2", "3", "loops=4"} {
		t.Run(shardName(shards), func(t *testing.T) { borrowedRuns(t, shards) })
	}
}

func borrowedRuns(t *testing.T, shards string) {
	const accounts, start = 48, 1000
	srv, keys, seed := startBank(t, shards, accounts, start)
	ctx := context.Background()
	// Each script transfer also pushes a token to its worker's queue (one
	// queue each: a queue shared by every script would be a key they all
	// lock in turn); a client blocked on all the queues counts the pops.
	queues := make([]string, 6)
	for w := range queues {
		queues[w] = "q:" + strconv.Itoa(w)
	}
	transfer := redis.NewScript(`
local from = tonumber(redis.call('get', KEYS[1]))
local amt = tonumber(ARGV[1])
if KEYS[1] == KEYS[2] or from < amt then return 0 end
redis.call('set', KEYS[1], from - amt)
redis.call('incrby', KEYS[2], amt)
redis.call('lpush', KEYS[3], ARGV[2])
return 1`)
	// Alone first: these run borrowed (the path exists whatever the load
	// below lets through: under contention most scripts find their keys
	// locked and go to coordinators).
	var pushes atomic.Int64
	warm := srv.Client(t, 2)
	for i := range 20 {
		n, err := transfer.Run(ctx, warm, []string{keys[i%accounts], keys[(i+1)%accounts], queues[0]}, 1, "t").Int()
		if err != nil {
			t.Fatalf("transfer: %v", err)
		}
		pushes.Add(int64(n))
	}
	stop := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	var scripted, multis, watched, watchFails, sums atomic.Int64
	errs := make(chan error, 64)
	fail := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf("seed %d: "+format, append([]any{seed}, args...)...):
		default:
		}
	}
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			c := srv.Client(t, 2+w%2)
			for i := 0; time.Now().Before(stop); i++ {
				from, to := keys[rng.IntN(accounts)], keys[rng.IntN(accounts)]
				amt := rng.IntN(100)
				switch w % 3 {
				case 0, 1: // a script, pushing a token
					n, err := transfer.Run(ctx, c, []string{from, to, queues[w]}, amt, "t").Int()
					if err != nil {
						fail("transfer: %v", err)
						return
					}
					scripted.Add(1)
					pushes.Add(int64(n))
				case 2:
					if i%2 == 0 { // MULTI/EXEC: unconditional, the total is what counts
						if err := transferInMulti(ctx, c, from, to, amt); err != nil {
							fail("MULTI transfer: %v", err)
							return
						}
						multis.Add(1)
						continue
					}
					// WATCH: read, then write both only if neither changed.
					err := c.Watch(ctx, func(tx *redis.Tx) error {
						f, err := tx.Get(ctx, from).Int()
						if err != nil {
							return err
						}
						g, err := tx.Get(ctx, to).Int()
						if err != nil {
							return err
						}
						if from == to {
							return nil
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, from, f-amt, 0)
							p.Set(ctx, to, g+amt, 0)
							return nil
						})
						return err
					}, from, to)
					switch {
					case errors.Is(err, redis.TxFailedErr):
						watchFails.Add(1)
					case err != nil:
						fail("WATCH transfer: %v", err)
						return
					default:
						watched.Add(1)
					}
				}
			}
		}(w)
	}
	var popped atomic.Int64
	var left int64
	popDone := make(chan struct{})
	go func() {
		defer close(popDone)
		c := srv.Client(t, 2)
		for {
			v, err := c.BLPop(ctx, time.Second, queues...).Result()
			if errors.Is(err, redis.Nil) {
				if time.Now().After(stop.Add(time.Second)) {
					return
				}
				continue
			}
			if err != nil {
				fail("BLPOP: %v", err)
				return
			}
			if !strings.HasPrefix(v[0], "q:") || v[1] != "t" {
				fail("BLPOP popped %q", v)
				return
			}
			popped.Add(1)
		}
	}()
	// A reader locks every account: reading without a pause would keep
	// most scripts off the borrowed path (they go to coordinators while
	// the shards are locked).
	sumReaders(t, srv, &wg, 2, keys, accounts*start, stop, 3*time.Millisecond, &sums, func(err error) { fail("%v", err) })
	wg.Add(1)
	go func() { // snapshots now and then
		defer wg.Done()
		c := srv.Client(t, 2)
		for time.Now().Before(stop) {
			if err := c.BgSave(ctx).Err(); err != nil && !strings.Contains(err.Error(), "in progress") {
				fail("BGSAVE: %v", err)
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	wg.Wait()
	<-popDone
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := srv.Client(t, 2)
	total := 0
	for _, k := range keys {
		n, err := c.Get(ctx, k).Int()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		total += n
	}
	if total != accounts*start {
		t.Fatalf("seed %d: accounts add up to %d after the load, want %d", seed, total, accounts*start)
	}
	for _, q := range queues {
		n, _ := c.LLen(ctx, q).Result()
		left += n
	}
	if popped.Load()+left != pushes.Load() {
		t.Fatalf("seed %d: %d tokens pushed, %d popped, %d left", seed, pushes.Load(), popped.Load(), left)
	}
	if scripted.Load() == 0 || multis.Load() == 0 || watched.Load() == 0 || sums.Load() == 0 || popped.Load() == 0 {
		t.Fatalf("seed %d: no progress: %d scripts, %d MULTI, %d WATCH, %d sums, %d pops",
			seed, scripted.Load(), multis.Load(), watched.Load(), sums.Load(), popped.Load())
	}
	t.Logf("%d scripts, %d MULTI, %d WATCH (%d failed), %d sums, %d pops", scripted.Load(), multis.Load(),
		watched.Load(), watchFails.Load(), sums.Load(), popped.Load())
	if !IsRedis() {
		raw := srv.Raw(t)
		runs := infoField(raw, "stats", "script_borrowed_runs")
		if n, _ := strconv.Atoi(runs); n == 0 {
			t.Fatalf("no borrowed run (script_borrowed_runs %q): the test tested nothing new", runs)
		}
		t.Logf("script_borrowed_runs %s, script_borrow_fallbacks %s, asks %s, answer wait %s us, return wait %s us", runs,
			infoField(raw, "stats", "script_borrow_fallbacks"), infoField(raw, "stats", "script_borrow_asks"),
			infoField(raw, "stats", "script_borrow_answer_wait_us"), infoField(raw, "stats", "script_borrow_return_wait_us"))
	}
}

// TestScriptBorrowNoStall: while a script runs long on one event loop, a
// cross-shard script that needs its shard waits for it — on a coordinator
// or on the busy loop, never on its own loop, whose other connections go
// on being served at once. Twice:
//   - a long cross-shard script that has written (a borrowed run, on the
//     lower loop: server/forward.go), and a cross-shard script from the
//     higher loop, forwarded to the lower one, where it runs after it;
//   - a long script on a shard of the higher loop, and a cross-shard
//     script from the lower loop, which asks for that shard, hears
//     nothing for borrowWait (1 ms) and goes to a coordinator.
func TestScriptBorrowNoStall(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly only: Redis answers BUSY to every other client meanwhile")
	}
	srv := StartServer(t, "--shards", "2")
	conns := make([]*RawConn, 7)
	for i := range conns {
		time.Sleep(50 * time.Millisecond) // each placed knowing the others
		conns[i] = srv.Raw(t)
		conns[i].Timeout = 30 * time.Second
		conns[i].Do("PING")
	}
	long := `redis.call('set', KEYS[1], 'written')
local t0 = redis.call('time')
while true do
  local t = redis.call('time')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 1500000 then break end
end
return redis.call('incr', KEYS[2])`
	// phase runs the long script over keys on runner, finds the
	// connections of others that answer meanwhile (those of the loop not
	// running it), and sends a cross-shard script from one of them. It
	// returns the others that answered and those that waited.
	phase := func(runner *RawConn, others []*RawConn, keys []string, want int64) (free, busy []*RawConn) {
		runner.Send(append([]string{"EVAL", long, "2"}, keys...)...)
		time.Sleep(200 * time.Millisecond)
		pongs := make(chan *RawConn, len(others))
		for _, c := range others {
			go func() { c.Do("PING"); pongs <- c }()
		}
		deadline := time.After(300 * time.Millisecond)
	collect:
		for range others {
			select {
			case p := <-pongs:
				free = append(free, p)
			case <-deadline: // the rest wait for the script
				break collect
			}
		}
		if len(free) < 2 {
			t.Fatalf("%d of %d connections answered while the script ran, want 2 or more", len(free), len(others))
		}
		free[0].Send("EVAL", "return redis.call('incrby', KEYS[1], 10) + redis.call('incrby', KEYS[2], 5)", "2", "a:{w}", "b:{n}")
		time.Sleep(50 * time.Millisecond)
		at := time.Now()
		if r := free[1].Do("PING"); r.Str != "PONG" {
			t.Fatalf("PING: %s", r)
		}
		if d := time.Since(at); d > 500*time.Millisecond {
			t.Fatalf("PING on the loop of a waiting cross-shard script took %v", d)
		}
		if r := runner.MustRead(); r.Kind != KindInt || r.Int != 1 {
			t.Fatalf("the long script's reply: %s", r)
		}
		if r := free[0].MustRead(); r.Kind != KindInt || r.Int != 15*want {
			t.Fatalf("the waiting script's reply: %s, want %d", r, 15*want)
		}
		for range len(others) - len(free) {
			busy = append(busy, <-pongs) // answered after the script
		}
		return free, busy
	}
	// Keys w and n live on different shards (one per loop); p and q on
	// shard 1.
	if shardOf("w", 2) == shardOf("n", 2) || shardOf("p", 2) != 1 || shardOf("q", 2) != 1 {
		t.Fatal("the keys' shards changed: pick others")
	}
	free, busy := phase(conns[0], conns[1:], []string{"w", "n"}, 1)
	// free: the higher loop's connections, busy: the lower loop's. The
	// lower loop keeps the shard it borrowed until its owner recalls it
	// (a script on it would be forwarded there): a command on it first.
	free[0].Do("SET", "p", "0")
	phase(free[0], busy, []string{"p", "q"}, 2)
	raw := srv.Raw(t)
	wait, _ := strconv.Atoi(infoField(raw, "stats", "script_borrow_answer_wait_us"))
	fallbacks, _ := strconv.Atoi(infoField(raw, "stats", "script_borrow_fallbacks"))
	if wait < 900 || fallbacks < 1 {
		t.Fatalf("script_borrow_answer_wait_us %d, script_borrow_fallbacks %d: want >= 900 and >= 1", wait, fallbacks)
	}
}

// shardOf is the shard of key (without a hash tag) among n, as dfly maps
// keys (server.ShardOf).
func shardOf(key string, n int) int { return int(xxhash.Sum64String(key) % uint64(n)) }

// TestScriptBorrowedPipelines: pipelines that mix cross-shard scripts with
// single-shard commands. First pipelines of scripts over a large key space
// from connections on every loop (forwarded to the lowest, which borrows
// and keeps the others' shards: the increments must all land), then the
// bank below. A loop that holds another loop's shard for one script keeps
// it for the rest of the batch: the following scripts over it, and the
// commands for it gathered before a script, run on that loop
// (server/borrow.go, holding; forward.go). Each
// worker's pipeline increments its counter and reads it back, in a script
// together with an account on any shard and with a GET, between transfer
// scripts: every read must see the increment just before it (the
// connection's order), and readers summing the accounts in MULTI/EXEC and
// in a script (locking every account: commands that wait for a held
// shard, which the holder must give back) must always see the same total.
// The seed is printed.
func TestScriptBorrowedPipelines(t *testing.T) {
	// With 3 shards one loop owns two: a run over one of them may come
	// while the other is lent out.
	for _, shards := range []string{"2", "3", "loops=4"} {
		t.Run(shardName(shards), func(t *testing.T) { borrowedPipelines(t, shards) })
	}
}

func borrowedPipelines(t *testing.T, shards string) {
	const accounts, start = 32, 1000
	srv, keys, seed := startBank(t, shards, accounts, start)
	ctx := context.Background()
	readBoth := redis.NewScript(`return {redis.call('get', KEYS[1]), redis.call('get', KEYS[2])}`)
	// round sends one pipeline of 4 x (INCR ctr, script reading ctr and an
	// account, transfer script, GET ctr) and checks the counter's reads.
	round := func(c *redis.Client, rng *rand.Rand, ctr string, n *int) error {
		p := c.Pipeline()
		type check struct {
			want       int
			incr, get  *redis.IntCmd
			getS       *redis.StringCmd
			read, xfer *redis.Cmd
		}
		checks := make([]check, 4)
		for j := range checks {
			*n++
			ch := &checks[j]
			ch.want = *n
			ch.incr = p.Incr(ctx, ctr)
			ch.read = readBoth.Eval(ctx, p, []string{ctr, keys[rng.IntN(accounts)]})
			ch.xfer = transferScript.Eval(ctx, p, []string{keys[rng.IntN(accounts)], keys[rng.IntN(accounts)]}, rng.IntN(100))
			ch.getS = p.Get(ctx, ctr)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		for _, ch := range checks {
			if v := ch.incr.Val(); v != int64(ch.want) {
				return fmt.Errorf("INCR %s = %d, want %d", ctr, v, ch.want)
			}
			vals, err := ch.read.Slice()
			if err != nil || len(vals) != 2 || vals[0] != strconv.Itoa(ch.want) {
				return fmt.Errorf("the script after INCR %s read %v (%v), want %d first", ctr, vals, err, ch.want)
			}
			if err := ch.xfer.Err(); err != nil {
				return fmt.Errorf("transfer: %w", err)
			}
			if v := ch.getS.Val(); v != strconv.Itoa(ch.want) {
				return fmt.Errorf("GET %s after a transfer = %q, want %d", ctr, v, ch.want)
			}
		}
		return nil
	}
	// Alone first: the held path must be taken (under load, locked keys
	// send some scripts to coordinators). Whether a round's scripts can
	// run on a held shard depends on its keys (with some seeds and 3
	// shards few can), and a hold lasts holdFor (200 us) of wall time,
	// which a -race server's script on a loaded machine can outlast: each
	// round draws new keys, and rounds go on (up to 40) until one ran held.
	alone := srv.Client(t, 2)
	n0 := 0
	raw := srv.Raw(t)
	for i := 0; ; i++ {
		if err := round(alone, rand.New(rand.NewPCG(seed, 100+uint64(i))), "ctr:alone", &n0); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if i < 4 {
			continue
		}
		if IsRedis() {
			break
		}
		held := infoField(raw, "stats", "script_borrowed_held_runs")
		if n, _ := strconv.Atoi(held); n > 0 {
			break
		}
		if i == 39 {
			t.Fatalf("no script ran on a held shard in %d rounds (script_borrowed_held_runs %q; script_borrowed_runs %q, script_borrow_fallbacks %q)",
				i+1, held, infoField(raw, "stats", "script_borrowed_runs"), infoField(raw, "stats", "script_borrow_fallbacks"))
		}
	}
	var wg sync.WaitGroup
	var rounds, sums atomic.Int64
	errs := make(chan error, 16)
	fail := func(err error) {
		select {
		case errs <- fmt.Errorf("seed %d: %w", seed, err):
		default:
		}
	}
	// Spread: pipelines of scripts over random keys of a large space, from
	// connections on both loops, so that the loops borrow from each other
	// at once and seldom find a key locked (what a -race server needs to
	// see the hand-overs race, if they do).
	incr2 := redis.NewScript(`redis.call('incr', KEYS[1]) return redis.call('incr', KEYS[2])`)
	const space = 2048
	var evals atomic.Int64
	spreadEnd := time.Now().Add(500 * time.Millisecond)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+w)))
			c := srv.Client(t, 2+w%2)
			for time.Now().Before(spreadEnd) {
				p := c.Pipeline()
				for range 16 {
					incr2.Eval(ctx, p, []string{"n:" + strconv.Itoa(rng.IntN(space)), "n:" + strconv.Itoa(rng.IntN(space))})
				}
				if _, err := p.Exec(ctx); err != nil {
					fail(fmt.Errorf("spread pipeline: %w", err))
					return
				}
				evals.Add(16)
			}
		}(w)
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(<-errs)
	}
	names := make([]string, space)
	for i := range names {
		names[i] = "n:" + strconv.Itoa(i)
	}
	vals, err := srv.Client(t, 2).MGet(ctx, names...).Result()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, v := range vals {
		if v != nil {
			n, _ := strconv.Atoi(v.(string))
			sum += n
		}
	}
	if sum != 2*int(evals.Load()) {
		t.Fatalf("seed %d: %d scripts incremented twice each, the keys add up to %d", seed, evals.Load(), sum)
	}
	stop := time.Now().Add(1500 * time.Millisecond)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			c := srv.Client(t, 2+w%2)
			ctr, n := "ctr:"+strconv.Itoa(w), 0
			for time.Now().Before(stop) {
				if err := round(c, rng, ctr, &n); err != nil {
					fail(err)
					return
				}
				rounds.Add(1)
			}
		}(w)
	}
	sumReaders(t, srv, &wg, 2, keys, accounts*start, stop, 2*time.Millisecond, &sums, fail)
	waitBank(t, &wg, errs, &rounds, &sums)
	if total, err := sumInMulti(ctx, srv.Client(t, 2), keys); err != nil || total != accounts*start {
		t.Fatalf("seed %d: accounts add up to %d (%v) after the load, want %d", seed, total, err, accounts*start)
	}
	if !IsRedis() {
		raw := srv.Raw(t)
		t.Logf("script_borrowed_runs %s, held %s, fallbacks %s", infoField(raw, "stats", "script_borrowed_runs"),
			infoField(raw, "stats", "script_borrowed_held_runs"), infoField(raw, "stats", "script_borrow_fallbacks"))
	}
}
