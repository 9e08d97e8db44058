package tests

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// After a burst — a few hundred MB loaded, part of it through one
// client's pipelined SETs of 1 MB values, the client gone — and FLUSHALL,
// an idle server
// gives the memory back by itself: its RSS falls to within twice what it
// was idle at start, with no MEMORY PURGE. A behaviour check with a
// generous bound (30 s; dfly's release comes 2-3 s after the burst, see
// package reclaim), not a timing.
func TestMemoryReturnedAfterFlush(t *testing.T) {
	if raceBuild() {
		t.Skip("the race detector's shadow memory is not the heap's: RSS says nothing here")
	}
	srv := StartServer(t)
	c := srv.Raw(t)
	expectReply(t, c.Do("PING"), "PONG")
	idle := srv.RSS(t)

	mustOK(t, c.Do("DEBUG", "POPULATE", "300000", "key", "1000"), "DEBUG POPULATE")
	val := bytes.Repeat([]byte("v"), 1<<20)
	var pipe bytes.Buffer
	const big = 100
	for i := 0; i < big; i++ {
		k := fmt.Sprintf("big:%d", i)
		fmt.Fprintf(&pipe, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(val), val)
	}
	c.Write(pipe.String())
	for i := 0; i < big; i++ {
		if r := c.MustRead(); r.Str != "OK" {
			t.Fatalf("pipelined SET %d: %s", i, r)
		}
	}
	peak := srv.RSS(t)
	if peak < idle+300<<20 {
		t.Fatalf("RSS %d MB after loading ~400 MB (idle %d MB): the load did not happen", peak>>20, idle>>20)
	}
	c.Close() // the loading client leaves (an idle client's buffers are not this test's matter)
	mustOK(t, srv.Raw(t).Do("FLUSHALL"), "FLUSHALL")
	flushed := time.Now()

	rss := peak
	for time.Since(flushed) < 30*time.Second {
		if rss = srv.RSS(t); rss <= 2*idle {
			t.Logf("RSS idle %.1f MB, after the load %.1f MB, %.1f MB %v after FLUSHALL",
				float64(idle)/(1<<20), float64(peak)/(1<<20), float64(rss)/(1<<20), time.Since(flushed).Round(100*time.Millisecond))
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("RSS %.1f MB 30 s after FLUSHALL: more than twice the %.1f MB at start (%.1f MB after the load)",
		float64(rss)/(1<<20), float64(idle)/(1<<20), float64(peak)/(1<<20))
}
