package tests

// min-replicas-to-write / min-replicas-max-lag (issue 43), as Redis: a
// master whose replicas stopped acknowledging (a network cut, here an
// in-test TCP proxy that stops forwarding) refuses writes within the lag
// bound, so a split brain loses at most that much. DFLY_TEST_TARGET=redis
// runs it against redis-server.

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMinReplicasToWrite(t *testing.T) {
	m := StartServer(t, "--shards", "2")
	mc := m.Raw(t)
	if got := mc.Do("CONFIG", "SET", "min-replicas-to-write", "1", "min-replicas-max-lag", "1"); got.Str != "OK" {
		t.Fatal(got)
	}
	// No replica at all: writes are refused, reads run.
	if got := mc.Do("SET", "k", "v"); got.Str != "NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("SET without replicas: %v", got)
	}
	if got := mc.Do("GET", "k"); got.IsError() {
		t.Fatalf("GET without replicas: %v", got)
	}

	r := StartServer(t, "--shards", "2")
	p := startProxy(t, m.Addr)
	replicaOf(t, r, p.ln.Addr().String())
	waitReplicaLinkUp(t, r, 30*time.Second)
	waitUntil(t, 10*time.Second, "writes accepted with a replica", func() bool {
		return mc.Do("SET", "k", "v").Str == "OK"
	})
	if got := mc.Do("CONFIG", "SET", "min-replicas-to-write", "2"); got.Str != "OK" {
		t.Fatal(got)
	}
	waitUntil(t, 5*time.Second, "writes refused with 1 of 2 replicas", func() bool {
		return mc.Do("SET", "k", "v").IsError()
	})
	if got := mc.Do("CONFIG", "SET", "min-replicas-to-write", "1"); got.Str != "OK" {
		t.Fatal(got)
	}
	waitUntil(t, 5*time.Second, "writes accepted again", func() bool {
		return mc.Do("SET", "k", "v").Str == "OK"
	})

	// The cut: the replica's acknowledgements stop reaching the master.
	p.stall()
	cut := time.Now()
	var refusedAt time.Duration
	defer func() {
		if t.Failed() {
			t.Logf("after the cut: %v", info(t, m.Raw(t), "replication"))
		}
	}()
	waitUntil(t, 10*time.Second, "the cut-off master refuses writes", func() bool {
		got := mc.Do("SET", "k", strconv.Itoa(int(time.Since(cut).Milliseconds())))
		if got.IsError() {
			if got.Str != "NOREPLICAS Not enough good replicas to write." {
				t.Fatalf("SET after the cut: %v", got)
			}
			refusedAt = time.Since(cut)
			return true
		}
		return false
	})
	t.Logf("writes refused %v after the cut (min-replicas-max-lag 1)", refusedAt.Round(time.Millisecond))
	if refusedAt > 3*time.Second {
		t.Errorf("writes refused only %v after the cut, lag bound 1 s", refusedAt)
	}
	mc.Do("MULTI")
	if got := mc.Do("SET", "a", "1"); got.Str != "NOREPLICAS Not enough good replicas to write." {
		t.Errorf("SET queued after the cut: %v", got)
	}
	if got := mc.Do("EXEC"); !got.IsError() || !strings.HasPrefix(got.Str, "EXECABORT") {
		t.Errorf("EXEC of a write after the cut: %v", got)
	}
	if got := mc.Do("GET", "k"); got.IsError() {
		t.Errorf("GET after the cut: %v", got)
	}
	// Redis counts a replica only by its acknowledgements: the lag shows.
	ri := info(t, mc, "replication")
	if !strings.Contains(ri["slave0"], "lag=") || strings.Contains(ri["slave0"], "lag=0") {
		t.Errorf("slave0 after the cut: %q", ri["slave0"])
	}
}
