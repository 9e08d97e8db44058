package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestScriptForwardedPipelines: pipelines of cross-shard scripts from
// connections on every event loop; a higher loop's connection sends its
// run of scripts to the lowest loop owning one of their shards, which runs
// them there (server/forward.go). Between the scripts, in the same
// pipeline: SELECT (a connection command answered while the run is
// gathered: the scripts after it use the other database), a script with a
// wrong argument count and an unknown EVALSHA (errors, in place), a script
// confined to one shard, a GET (which must see the scripts before it: the
// connection's order), a script failing at run time, and a MULTI/EXEC of a
// script (which ends the run). Every reply is checked in order; the
// workers run at once, on 2 and 3 shards and 4 loops. The seed is printed.
func TestScriptForwardedPipelines(t *testing.T) {
	for _, shards := range []string{"2", "3", "loops=4"} {
		t.Run(shardName(shards), func(t *testing.T) { forwardedPipelines(t, shards) })
	}
}

func forwardedPipelines(t *testing.T, shards string) {
	seed := newSeed(t)
	srv := StartServer(t, shardFlags(shards)...)
	const workers, rounds = 6, 25
	incr2 := "return {redis.call('incr', KEYS[1]), redis.call('incr', KEYS[2])}"
	incrSecond := "redis.call('incr', KEYS[2]); return redis.call('incr', KEYS[1])"
	get := "return redis.call('get', KEYS[1])"
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		conn := srv.Raw(t)
		conn.Timeout = 20 * time.Second
		if r := conn.Do("SET", fmt.Sprintf("s:%d", w), "abc"); r.Str != "OK" {
			t.Fatalf("SET: %s", r)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			ctr, db1, str := fmt.Sprintf("c:%d", w), fmt.Sprintf("d1:%d", w), fmt.Sprintf("s:%d", w)
			other := func() string { return fmt.Sprintf("x:%d", rng.IntN(1000)) }
			for round := 1; round <= rounds; round++ {
				n := strconv.Itoa(round)
				cmds := [][]string{
					{"EVAL", incr2, "2", ctr, other()},
					{"SELECT", "1"},
					{"EVAL", incrSecond, "2", db1, other()},
					{"SELECT", "0"},
					{"EVAL"},
					{"EVALSHA", strings.Repeat("ab", 20), "2", ctr, other()},
					{"EVAL", get, "1", ctr},
					{"GET", ctr},
					{"EVAL", incrSecond, "2", str, other()},
					{"MULTI"},
					{"EVAL", get, "2", ctr, other()},
					{"EXEC"},
					{"EVAL", get, "2", ctr, other()},
				}
				var b strings.Builder
				for _, c := range cmds {
					b.WriteString(EncodeCommand(c...))
				}
				conn.Write(b.String())
				want := []func(r Reply) bool{
					func(r Reply) bool { return r.Kind == KindArray && len(r.Elems) == 2 && r.Elems[0].Int == int64(round) },
					func(r Reply) bool { return r.Str == "OK" },
					func(r Reply) bool { return r.Kind == KindInt && r.Int == int64(round) },
					func(r Reply) bool { return r.Str == "OK" },
					func(r Reply) bool {
						return r.Kind == KindError && r.Str == "ERR wrong number of arguments for 'eval' command"
					},
					func(r Reply) bool { return r.Kind == KindError && strings.HasPrefix(r.Str, "NOSCRIPT") },
					func(r Reply) bool { return r.Str == n },
					func(r Reply) bool { return r.Str == n },
					func(r Reply) bool { return r.Kind == KindError && strings.Contains(r.Str, "not an integer") },
					func(r Reply) bool { return r.Str == "OK" },
					func(r Reply) bool { return r.Str == "QUEUED" },
					func(r Reply) bool { return r.Kind == KindArray && len(r.Elems) == 1 && r.Elems[0].Str == n },
					func(r Reply) bool { return r.Str == n },
				}
				for i, ok := range want {
					r, err := conn.Read()
					if err != nil {
						errs <- fmt.Errorf("seed %d worker %d round %d reply %d (%s): %v", seed, w, round, i, cmds[i][0], err)
						return
					}
					if !ok(r) {
						errs <- fmt.Errorf("seed %d worker %d round %d reply %d (%s): %s", seed, w, round, i, cmds[i][0], r)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	raw := srv.Raw(t)
	raw.Do("SELECT", "1")
	for w := range workers {
		if r := raw.Do("GET", fmt.Sprintf("d1:%d", w)); r.Str != strconv.Itoa(rounds) {
			t.Fatalf("d1:%d in database 1: %s, want %d", w, r, rounds)
		}
	}
	if IsRedis() {
		return
	}
	runs, _ := strconv.Atoi(infoField(raw, "stats", "script_borrowed_runs"))
	fwd, _ := strconv.Atoi(infoField(raw, "stats", "script_forwarded_runs"))
	if runs == 0 || fwd == 0 {
		t.Fatalf("script_borrowed_runs %d, script_forwarded_runs %d: want both > 0", runs, fwd)
	}
}

// TestScriptKeptShards: after a borrowed run, the loop that ran it keeps
// the shards it borrowed until their owner wants them back (server/
// borrow.go, kept), so one connection's cross-shard scripts sent one at a
// time ask for them once, not once a script. Then everything else that
// needs a kept shard still gets it at once: commands on it from
// connections of every loop, a command over both shards (a coordinator),
// MULTI/EXEC, BGSAVE, and a cross-shard script again.
func TestScriptKeptShards(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly only: borrowed runs")
	}
	srv := StartServer(t, "--shards", "2")
	conns := make([]*RawConn, 4)
	for i := range conns {
		conns[i] = srv.Raw(t)
		conns[i].Timeout = 5 * time.Second
		conns[i].Do("PING")
	}
	// w and n live on different shards (one per loop).
	if shardOf("w", 2) == shardOf("n", 2) {
		t.Fatal("the keys' shards changed: pick others")
	}
	raw := srv.Raw(t)
	stat := func(name string) int {
		v, _ := strconv.Atoi(infoField(raw, "stats", name))
		return v
	}
	const scripts = 40
	for _, c := range conns[:2] { // one connection of each loop
		asks, runs := stat("script_borrow_asks"), stat("script_borrowed_runs")
		for i := range scripts {
			r := c.Do("EVAL", "redis.call('incr', KEYS[1]); return redis.call('incr', KEYS[2])", "2", "w", "n")
			if r.Kind != KindInt {
				t.Fatalf("script %d: %s", i, r)
			}
		}
		asks, runs = stat("script_borrow_asks")-asks, stat("script_borrowed_runs")-runs
		if runs != scripts || asks > scripts/4 {
			t.Fatalf("%d scripts, one at a time: %d borrowed runs, %d asks: want %d runs and at most %d asks",
				scripts, runs, asks, scripts, scripts/4)
		}
	}
	for i, c := range conns {
		for _, k := range []string{"w", "n"} {
			if r := c.Do("INCR", k); r.Kind != KindInt || r.Int != int64(2*scripts+i+1) {
				t.Fatalf("conn %d INCR %s: %s, want %d", i, k, r, 2*scripts+i+1)
			}
		}
	}
	if r := conns[1].Do("MSET", "w", "1", "n", "2"); r.Str != "OK" {
		t.Fatalf("MSET: %s", r)
	}
	conns[2].Send("MULTI")
	conns[2].Send("INCR", "w")
	conns[2].Send("INCR", "n")
	conns[2].Send("EXEC")
	for _, want := range []string{"OK", "QUEUED", "QUEUED"} {
		if r := conns[2].MustRead(); r.Str != want {
			t.Fatalf("MULTI: %s, want %s", r, want)
		}
	}
	if r := conns[2].MustRead(); r.Kind != KindArray || len(r.Elems) != 2 || r.Elems[0].Int != 2 || r.Elems[1].Int != 3 {
		t.Fatalf("EXEC: %s", r)
	}
	conns[3].Do("EVAL", "return redis.call('incr', KEYS[1]) + redis.call('incr', KEYS[2])", "2", "w", "n")
	if r := conns[0].Do("BGSAVE"); r.Kind == KindError {
		t.Fatalf("BGSAVE: %s", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for infoField(raw, "persistence", "rdb_bgsave_in_progress") != "0" {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := infoField(raw, "persistence", "rdb_last_bgsave_status"); s != "ok" {
		t.Fatalf("rdb_last_bgsave_status %s", s)
	}
	if r := conns[1].Do("EVAL", "return redis.call('incr', KEYS[1]) + redis.call('incr', KEYS[2])", "2", "w", "n"); r.Int != 9 {
		t.Fatalf("the last script: %s, want 9", r)
	}
}

// TestScriptForwardedKill: a cross-shard script that spins without
// writing, from a connection of each loop (one runs it on its own loop,
// the other forwards it to the lower one), leaves its loop after the
// inline budget for a coordinator, where SCRIPT KILL stops it; the
// connection then goes on in order.
func TestScriptForwardedKill(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	admin := srv.Raw(t)
	admin.Timeout = 10 * time.Second
	runners := []*RawConn{srv.Raw(t), srv.Raw(t)}
	for _, r := range runners {
		r.Timeout = 30 * time.Second
		r.Do("PING")
	}
	for i, runner := range runners {
		runner.Send("EVAL", "redis.call('get', KEYS[1]); redis.call('get', KEYS[2])\nwhile true do end", "2", "w", "n")
		runner.Send("EVAL", "return redis.call('incr', KEYS[1]) + redis.call('incr', KEYS[2])", "2", "w", "n")
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := admin.Do("SCRIPT", "KILL")
			if r.Str == "OK" {
				break
			}
			if !strings.HasPrefix(r.Str, "NOTBUSY") || time.Now().After(deadline) {
				t.Fatalf("runner %d: SCRIPT KILL: %s", i, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if r := runner.MustRead(); r.Kind != KindError || !strings.Contains(r.Str, "Script killed by user") {
			t.Fatalf("runner %d: the killed script's reply: %s", i, r)
		}
		if r := runner.MustRead(); r.Kind != KindInt || r.Int != int64(2*(i+1)) {
			t.Fatalf("runner %d: the script after it: %s, want %d", i, r, 2*(i+1))
		}
	}
}
