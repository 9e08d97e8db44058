package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// INFO counts error replies by code (errorstats, total_error_replies) and
// per command: rejected before running (rejected_calls) or failed while
// running (failed_calls), as Redis 7 does.
func TestErrorStats(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	mustOK(t, c.Do("CONFIG", "RESETSTAT"), "RESETSTAT")
	mustOK(t, c.Do("SET", "s", "x"), "SET")
	c.Do("LPUSH", "s", "x") // WRONGTYPE, failed
	c.Do("GET")             // arity, rejected
	c.Do("NOSUCH")          // unknown command
	c.Do("INCR", "s")       // not an integer, failed
	info := c.Do("INFO", "errorstats").Str + c.Do("INFO", "stats").Str + c.Do("INFO", "commandstats").Str
	for _, want := range []string{
		"errorstat_ERR:count=3", "errorstat_WRONGTYPE:count=1", "total_error_replies:4",
		"cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0",
		"rejected_calls=0,failed_calls=1", // LPUSH and INCR
	} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO has no %q:\n%s", want, info)
		}
	}
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "cmdstat_lpush:") || strings.HasPrefix(line, "cmdstat_incr:") {
			if !strings.HasSuffix(line, "rejected_calls=0,failed_calls=1") {
				t.Errorf("%s: want one failed call", line)
			}
		}
	}
}

// INFO's traffic fields follow the commands clients send.
// Errors inside EXEC and scripts count as Redis 7.0 counts them: each
// command's error reply (in EXEC's array, or to the script that called
// it) in errorstats and as its failed call; a script's own error (raised,
// returned, or an element of its reply) in errorstats; a call's error the
// script passes on only as the script's failed call (it was counted
// with the call).
func TestErrorStatsInsideTransactionsAndScripts(t *testing.T) {
	// One shard: EXEC runs as one shard message; four: on a coordinator.
	for _, shards := range []string{"1", "4"} {
		t.Run("shards="+shards, func(t *testing.T) { errorStatsInside(t, shards) })
	}
}

func errorStatsInside(t *testing.T, shards string) {
	srv := StartServer(t, "--shards", shards)
	c := srv.Raw(t)
	mustOK(t, c.Do("CONFIG", "RESETSTAT"), "RESETSTAT")
	mustOK(t, c.Do("SET", "s", "abc"), "SET")
	mustOK(t, c.Do("MULTI"), "MULTI")
	c.Do("INCR", "s")     // ERR, inside EXEC
	c.Do("SET", "x", "1") // fine
	c.Do("LPUSH", "s", "a")
	c.Do("EVAL", "return redis.call('incr', KEYS[1])", "1", "s") // the call's error passed on
	c.Do("EVAL", "return 1", "0")
	if r := c.Do("EXEC"); len(r.Elems) != 5 || !r.Elems[0].IsError() || !r.Elems[3].IsError() {
		t.Fatalf("EXEC: %s", r.String())
	}
	for _, args := range [][]string{
		{"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "s"},          // passed on: failed, counted once
		{"EVAL", "return redis.call('incr', KEYS[1])", "1", "s"},           // raised: the same
		{"EVAL", "redis.pcall('lpush', KEYS[1], 'a'); return 1", "1", "s"}, // caught: not failed
		{"EVAL", "return redis.error_reply('MYERR custom')", "0"},          // its own: counted
		{"EVAL", "error('plain')", "0"},                                    // its own: counted
		{"EVAL", "local e = redis.pcall('incr', KEYS[1]); return redis.error_reply('OTHER x')", "1", "s"},
		{"EVAL", "return {redis.pcall('incr', KEYS[1])}", "1", "s"}, // passed on inside an array: failed
		{"EVAL", "return {1, redis.error_reply('INNER y')}", "0"},   // its own inside an array: counted
	} {
		c.Do(args...)
	}
	info := c.Do("INFO", "errorstats").Str + c.Do("INFO", "stats").Str + c.Do("INFO", "commandstats").Str
	// Redis 7.0.15's figures for the same commands.
	for _, want := range []string{
		"errorstat_ERR:count=7", "errorstat_WRONGTYPE:count=2", "errorstat_MYERR:count=1",
		"errorstat_OTHER:count=1", "errorstat_INNER:count=1", "total_error_replies:12",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO has no %q:\n%s", want, info)
		}
	}
	for _, want := range []string{"cmdstat_incr:calls=6,", "cmdstat_lpush:calls=2,", "cmdstat_eval:calls=10,", "cmdstat_exec:calls=1,"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO has no %q:\n%s", want, info)
		}
	}
	for name, failed := range map[string]string{"incr": "6", "lpush": "2", "eval": "8", "exec": "0"} {
		for _, line := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(line, "cmdstat_"+name+":") && !strings.HasSuffix(line, "rejected_calls=0,failed_calls="+failed) {
				t.Errorf("%s: want %s failed calls", line, failed)
			}
		}
	}
}

func TestInfoTraffic(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	const n = 5000
	for round := 0; round < 5; round++ {
		for i := 0; i < n; i++ {
			c.Send("PING")
		}
		for i := 0; i < n; i++ {
			c.MustRead()
		}
		time.Sleep(50 * time.Millisecond)
	}
	in, _ := strconv.Atoi(infoField(c, "stats", "total_net_input_bytes"))
	out, _ := strconv.Atoi(infoField(c, "stats", "total_net_output_bytes"))
	if in < 5*n*len("*1\r\n$4\r\nPING\r\n") || out < 5*n*len("+PONG\r\n") {
		t.Fatalf("after %d PINGs: total_net_input_bytes %d, total_net_output_bytes %d", 5*n, in, out)
	}
	if ops, _ := strconv.Atoi(infoField(c, "stats", "instantaneous_ops_per_sec")); ops <= 0 {
		t.Fatalf("instantaneous_ops_per_sec %d right after %d PINGs", ops, 5*n)
	}
	for _, f := range []string{"mem_fragmentation_ratio", "used_memory_rss_human", "number_of_libraries"} {
		if infoField(c, "memory", f) == "" {
			t.Errorf("INFO memory has no %s", f)
		}
	}
	if infoField(c, "stats", "pubsub_channels") != "0" {
		t.Errorf("pubsub_channels: %q", infoField(c, "stats", "pubsub_channels"))
	}
}
