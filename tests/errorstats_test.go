package tests

import (
	"strings"
	"testing"
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
