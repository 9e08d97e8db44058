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
