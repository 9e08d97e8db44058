package tests

import (
	"context"
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

// Scripting behaviour where dfly differs from Redis by design, and the
// concurrency properties of scripts. The Redis-compatible cases are in
// testdata/scripting.txt.

// TestScriptUndeclaredKeys: as in Dragonfly, a script may only touch the
// keys it declared in KEYS (they are what it locks).
func TestScriptUndeclaredKeys(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly only: Redis lets scripts touch undeclared keys")
	}
	srv := StartServer(t, "--shards", "4")
	c := srv.Raw(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"EVAL", "return redis.call('get', 'other')", "1", "k"},
			`(error) /^ERR script tried accessing undeclared key script: [0-9a-f]{40}, on @user_script:1\.$/`},
		{[]string{"EVAL", "return redis.call('set', 'other', 1)", "0"},
			`(error) /^ERR script tried accessing undeclared key script: [0-9a-f]{40}, on @user_script:1\.$/`},
		{[]string{"EVAL", "return redis.pcall('mget', KEYS[1], 'other')", "1", "k"},
			`(error) ERR script tried accessing undeclared key`},
		{[]string{"EVAL", "return redis.call('get', KEYS[1])", "1", "k"}, `(nil)`},
		// Keyless writes that need every shard are refused to a script that
		// holds key locks, allowed to one without keys.
		{[]string{"EVAL", "return redis.pcall('flushall')", "1", "k"},
			`(error) ERR this command can not run from a script that declared keys`},
		{[]string{"EVAL", "return redis.call('flushall')", "0"}, `OK`},
		{[]string{"EVAL", "return redis.call('dbsize')", "1", "k"}, `(integer) 0`},
		// SELECT in a script moves the script only; keys of another
		// database are not declared.
		{[]string{"EVAL", "redis.call('select', 1); return redis.pcall('get', KEYS[1])", "1", "k"},
			`(error) ERR script tried accessing undeclared key`},
	} {
		got := c.Do(tc.args...)
		if !matchLine(tc.want, got) {
			t.Errorf("%q: got %s, want %s", tc.args, got, tc.want)
		}
	}
	if r := c.Do("PING"); r.Str != "PONG" {
		t.Fatalf("connection's database changed by a script's SELECT? %s", r)
	}
}

// matchLine compares a one-line reply with a table-style expectation.
func matchLine(want string, got Reply) bool {
	e, err := parseExpect([]string{want}, []int{1})
	if err != nil {
		panic(err)
	}
	return matchReply(e, got, false)
}

// TestScriptBankInvariant: transfers between accounts spread over all
// shards by an EVAL that reads both balances and moves the amount when the
// source can pay, while readers sum every account in MULTI/EXEC (and with
// an EVAL_RO) and must always see the same total.
func TestScriptBankInvariant(t *testing.T) {
	const accounts, start = 16, 1000
	srv, keys, seed := startBank(t, "4", accounts, start)
	ctx := context.Background()
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	var transfers, sums atomic.Int64
	errs := make(chan error, 32)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			c := srv.Client(t, 2+w%2)
			for time.Now().Before(stop) {
				from, to := keys[rng.IntN(accounts)], keys[rng.IntN(accounts)]
				if err := transferScript.Run(ctx, c, []string{from, to}, rng.IntN(200)).Err(); err != nil {
					errs <- fmt.Errorf("seed %d: transfer: %w", seed, err)
					return
				}
				transfers.Add(1)
			}
		}(w)
	}
	sumReaders(t, srv, &wg, 4, keys, accounts*start, stop, 0, &sums, func(err error) {
		errs <- fmt.Errorf("seed %d: %w", seed, err)
	})
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

// TestScriptKill: a busy script that has not written is killed by SCRIPT
// KILL; one that has written is UNKILLABLE and runs to its end. Meanwhile
// clients whose keys the script does not hold are served.
func TestScriptKill(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly only: Redis serves no other client while a script runs")
	}
	t.Run("spinning reader", func(t *testing.T) {
		t.Parallel()
		srv := StartServer(t, "--shards", "2")
		runner, admin, other := srv.Raw(t), srv.Raw(t), srv.Raw(t)
		runner.Timeout = 30 * time.Second
		runner.Send("EVAL", "redis.call('get', KEYS[1])\nlocal i = 0\nwhile true do i = i + 1 end", "1", "spin")
		time.Sleep(200 * time.Millisecond)
		if r := admin.Do("SCRIPT", "KILL"); r.Str != "NOTBUSY No scripts in execution right now." {
			t.Fatalf("SCRIPT KILL before the busy threshold: %s", r)
		}
		// Not blocked by the script: other keys, other shards.
		for i := 0; i < 20; i++ {
			k := "free:" + strconv.Itoa(i)
			if r := other.Do("SET", k, "v"); r.Str != "OK" {
				t.Fatalf("SET %s while a script runs: %s", k, r)
			}
		}
		// A client touching the script's key waits on its lock.
		waiter := srv.Raw(t)
		waiter.Timeout = 30 * time.Second
		waiter.Send("SET", "spin", "after")
		time.Sleep(5 * time.Second)
		if r := admin.Do("SCRIPT", "KILL"); r.Str != "OK" {
			t.Fatalf("SCRIPT KILL: %s", r)
		}
		r := runner.MustRead()
		if !matchLine(`(error) /^ERR Script killed by user with SCRIPT KILL\.\.\. script: [0-9a-f]{40}, on @user_script:3\.$/`, r) {
			t.Fatalf("killed script's reply: %s", r)
		}
		if r := waiter.MustRead(); r.Str != "OK" {
			t.Fatalf("waiting SET: %s", r)
		}
		if r := admin.Do("SCRIPT", "KILL"); r.Str != "NOTBUSY No scripts in execution right now." {
			t.Fatalf("SCRIPT KILL after the kill: %s", r)
		}
		if r := runner.Do("EVAL", "return redis.call('get', KEYS[1])", "1", "spin"); r.Str != "after" {
			t.Fatalf("connection after the kill: %s", r)
		}
	})
	t.Run("writer is unkillable", func(t *testing.T) {
		t.Parallel()
		srv := StartServer(t, "--shards", "2")
		runner := srv.Raw(t)
		runner.Do("PING")
		// A script that has written runs to its end where it started: its
		// keys here are on two shards, so it may run on the runner's event
		// loop (a borrowed run, server/borrow.go), which then serves none
		// of its other connections until the script ends, as for any
		// script run inline. Of several admin connections (spread over the
		// loops, least connections first) those of the other loop answer
		// while it runs.
		admins := make([]*RawConn, 4)
		for i := range admins {
			// Apart in time, so that each is placed knowing the others.
			time.Sleep(50 * time.Millisecond)
			admins[i] = srv.Raw(t)
			admins[i].Timeout = 30 * time.Second
			admins[i].Do("PING")
		}
		runner.Timeout = 60 * time.Second
		// Writes, then spins for a bounded time: it must finish by itself.
		runner.Send("EVAL", `redis.call('set', KEYS[1], 'written')
local t0 = tonumber(redis.call('time')[1])
while tonumber(redis.call('time')[1]) - t0 < 7 do end
return redis.call('incr', KEYS[2])`, "2", "w", "n")
		time.Sleep(5500 * time.Millisecond)
		replies := make(chan Reply, len(admins))
		for _, a := range admins {
			go func() { replies <- a.Do("SCRIPT", "KILL") }()
		}
		// The first answer comes while the script runs.
		r := <-replies
		if !strings.HasPrefix(r.Str, "UNKILLABLE Sorry the script already executed write commands against the dataset.") {
			t.Fatalf("SCRIPT KILL on a writer: %s", r)
		}
		for range len(admins) - 1 {
			<-replies
		}
		if r := runner.MustRead(); r.Kind != KindInt || r.Int != 1 {
			t.Fatalf("the writer's reply: %s", r)
		}
		if r := admins[0].Do("GET", "w"); r.Str != "written" {
			t.Fatalf("GET w: %s", r)
		}
	})
}

// TestScriptKeylessCallsNoDeadlock: scripts with keys that call commands
// reaching every shard (DBSIZE, KEYS, SCAN, RANDOMKEY, INFO, SORT BY), from
// clients on every event loop at once. Run on the shard of their keys,
// two such scripts on two loops each waited for the other's loop: the
// server hung. They must all answer, with the right figures.
func TestScriptKeylessCallsNoDeadlock(t *testing.T) {
	srv := StartServer(t, "--shards", "4")
	ctx := context.Background()
	setup := srv.Client(t, 2)
	const keys = 64
	for i := 0; i < keys; i++ {
		if err := setup.Set(ctx, "dl:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	scripts := []struct {
		body  string
		check func(v any) bool
		args  []any
	}{
		{"redis.call('incr', KEYS[1]); return redis.call('dbsize')", func(v any) bool { return v == int64(keys) }, nil},
		// Through an alias (as BullMQ's scripts call), or a name known
		// only at run time.
		{"local rcall = redis.call; rcall('incr', KEYS[1]); return rcall('dbsize')", func(v any) bool { return v == int64(keys) }, nil},
		{"redis.call('incr', KEYS[1]); return redis.call(ARGV[1])", func(v any) bool { return v == int64(keys) }, []any{"dbsize"}},
		{"redis.call('incr', KEYS[1]); return #redis.call('keys', 'dl:*')", func(v any) bool { return v == int64(keys) }, nil},
		{"redis.call('incr', KEYS[1]); return redis.call('randomkey')", func(v any) bool { s, ok := v.(string); return ok && strings.HasPrefix(s, "dl:") }, nil},
		{"redis.call('incr', KEYS[1]); return redis.call('scan', 0, 'count', 10)[1]", func(v any) bool { _, ok := v.(string); return ok }, nil},
		{"redis.call('incr', KEYS[1]); return redis.call('info', 'keyspace')", func(v any) bool { s, _ := v.(string); return strings.Contains(s, "db0:keys=64,") }, nil},
		{"return redis.call('sort', KEYS[1], 'by', 'dl:*', 'limit', 0, 1)", func(v any) bool { _, ok := v.([]any); return ok }, nil},
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := srv.ClientWith(t, &redis.Options{Protocol: 2, ReadTimeout: 20 * time.Second})
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; i < 200; i++ {
				s := scripts[rng.IntN(len(scripts))]
				k := "dl:" + strconv.Itoa(rng.IntN(keys))
				if strings.Contains(s.body, "sort") {
					k = "dl:list"
				}
				v, err := c.Eval(ctx, s.body, []string{k}, s.args...).Result()
				if err == redis.Nil && strings.Contains(s.body, "sort") {
					continue
				}
				if err != nil || !s.check(v) {
					errs <- fmt.Errorf("client %d, seed %d: %q on %s: %v, %v", w, seed, s.body, k, v, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := setup.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the scripts: %v", err)
	}
}

const (
	busyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	busyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

// wantStr fails the test unless the reply of args on c is the string
// want.
func wantStr(t *testing.T, c *RawConn, want string, args ...string) {
	t.Helper()
	if r := c.Do(args...); r.Str != want {
		t.Fatalf("%v: %s, want %q", args, r, want)
	}
}

// waitBusy sends PING on c until the server answers BUSY (a script has run
// past busy-reply-threshold) and returns that reply's text.
func waitBusy(t *testing.T, c *RawConn) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r := c.Do("PING"); r.Kind == KindError {
			return r.Str
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no BUSY reply while a script runs past busy-reply-threshold")
	return ""
}

// TestScriptBusy: past busy-reply-threshold (set low by CONFIG SET) a
// running script makes the server answer BUSY to every other client's
// command but a few, as Redis 7.0; SCRIPT KILL stops a script that has not
// written, FUNCTION KILL a function, and a writer is UNKILLABLE. The
// scripts call DBSIZE, which in dfly runs them on a coordinator: none
// holds an event loop, so every client is answered.
func TestScriptBusy(t *testing.T) {
	start := func(t *testing.T) (*Server, *RawConn, *RawConn) {
		srv := StartServer(t, "--proactor_threads", "2", "--shards", "2")
		runner, admin := srv.Raw(t), srv.Raw(t)
		runner.Timeout = 30 * time.Second
		wantStr(t, admin, "OK", "CONFIG", "SET", "busy-reply-threshold", "100")
		if r := admin.Do("CONFIG", "GET", "lua-time-limit"); len(r.Elems) != 2 || r.Elems[1].Str != "100" {
			t.Fatalf("CONFIG GET lua-time-limit: %s", r)
		}
		return srv, runner, admin
	}
	t.Run("reader killed", func(t *testing.T) {
		t.Parallel()
		_, runner, admin := start(t)
		wantStr(t, admin, "NOTBUSY No scripts in execution right now.", "SCRIPT", "KILL")
		runner.Send("EVAL", "redis.call('dbsize')\nredis.call('get', KEYS[1])\nwhile true do end", "1", "spin")
		if got := waitBusy(t, admin); got != busyScript {
			t.Fatalf("PING while the script is busy: %s", got)
		}
		for _, cmd := range [][]string{{"GET", "spin"}, {"SET", "other", "1"}, {"EVAL", "return 1", "0"}, {"FUNCTION", "STATS"}, {"FUNCTION", "KILL"}, {"SHUTDOWN"}, {"SHUTDOWN", "SAVE"}} {
			if r := admin.Do(cmd...); r.Str != busyScript {
				t.Fatalf("%v while the script is busy: %s", cmd, r)
			}
		}
		for _, cmd := range [][]string{{"MULTI"}, {"DISCARD"}, {"WATCH", "x"}, {"UNWATCH"}} {
			if r := admin.Do(cmd...); r.Kind == KindError {
				t.Fatalf("%v while the script is busy: %s", cmd, r)
			}
		}
		wantStr(t, admin, "OK", "SCRIPT", "KILL")
		if r := runner.MustRead(); !matchLine(`(error) /^ERR Script killed by user with SCRIPT KILL\.\.\. script: [0-9a-f]{40}, on @user_script:3\.$/`, r) {
			t.Fatalf("the killed script's reply: %s", r)
		}
		wantStr(t, admin, "PONG", "PING")
		wantStr(t, admin, "NOTBUSY No scripts in execution right now.", "SCRIPT", "KILL")
	})
	t.Run("writer unkillable", func(t *testing.T) {
		t.Parallel()
		_, runner, admin := start(t)
		// Writes, then spins for a second of its own: it ends by itself.
		runner.Send("EVAL", `redis.call('dbsize')
redis.call('set', KEYS[1], 'written')
local t0 = redis.call('time')
while true do
  local t = redis.call('time')
  if (t[1] - t0[1]) * 1000000 + t[2] - t0[2] > 1000000 then break end
end
return 1`, "1", "w")
		if got := waitBusy(t, admin); got != busyScript {
			t.Fatalf("PING while the writer is busy: %s", got)
		}
		if r := admin.Do("SCRIPT", "KILL"); !strings.HasPrefix(r.Str, "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.") {
			t.Fatalf("SCRIPT KILL on a writer: %s", r)
		}
		if r := runner.MustRead(); r.Kind != KindInt || r.Int != 1 {
			t.Fatalf("the writer's reply: %s", r)
		}
		wantStr(t, admin, "written", "GET", "w")
	})
	t.Run("function killed", func(t *testing.T) {
		t.Parallel()
		_, runner, admin := start(t)
		mustLoad(t, admin, "#!lua name=busy\nredis.register_function{function_name='spin', callback=function(keys)\n  redis.call('dbsize')\n  while true do end\nend, flags={'no-writes'}}")
		runner.Send("FCALL_RO", "spin", "1", "k")
		if got := waitBusy(t, admin); got != busyFunction {
			t.Fatalf("PING while the function is busy: %s", got)
		}
		if r := admin.Do("SCRIPT", "KILL"); r.Str != busyFunction {
			t.Fatalf("SCRIPT KILL while a function is busy: %s", r)
		}
		wantStr(t, admin, "OK", "FUNCTION", "KILL")
		if r := runner.MustRead(); r.Str != "ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:4." {
			t.Fatalf("the killed function's reply: %s", r)
		}
		wantStr(t, admin, "PONG", "PING")
	})
}

// TestScriptClockStopped: a script sees the time it started, as Redis
// 7.0's: a key expiring while it runs is still there for it (GET, EXISTS),
// with a TTL of 0 (TTL reads the wall clock), and gone once it ends. The
// first script calls DBSIZE, so in dfly it runs on a coordinator, its
// calls each a message of their own to the key's shard, which meanwhile
// runs its active expiry; the second writes first and runs inline.
func TestScriptClockStopped(t *testing.T) {
	srv := StartServer(t, "--proactor_threads", "2", "--shards", "2")
	c := srv.Raw(t)
	c.Timeout = 30 * time.Second
	wait := `local t0 = redis.call('time')
while true do
  local t = redis.call('time')
  if (t[1] - t0[1]) * 1000000 + t[2] - t0[2] > 300000 then break end
end
`
	if r := c.Do("SET", "k", "v", "PX", "100"); r.Str != "OK" {
		t.Fatalf("SET: %s", r)
	}
	r := c.Do("EVAL", "redis.call('dbsize')\n"+wait+"return {redis.call('get', KEYS[1]), redis.call('exists', KEYS[1]), redis.call('pttl', KEYS[1])}", "1", "k")
	if len(r.Elems) != 3 || r.Elems[0].Str != "v" || r.Elems[1].Int != 1 || r.Elems[2].Int != 0 {
		t.Fatalf("a key expiring during the script, read after: %s (want v, 1, 0)", r)
	}
	// Set by the script, with a clock that does not move.
	r = c.Do("EVAL", "redis.call('set', KEYS[1], 'w', 'px', 50)\n"+wait+"return redis.call('get', KEYS[1])", "1", "k2")
	if r.Str != "w" {
		t.Fatalf("a key the script set to expire, read after: %s", r)
	}
	for _, k := range []string{"k", "k2"} {
		if r := c.Do("GET", k); r.Kind != KindNil {
			t.Fatalf("GET %s after the script: %s", k, r)
		}
	}
}
