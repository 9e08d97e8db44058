package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestReplGeoStoreDistExact: distances a STOREDIST search stores reach a
// redis-server replica exactly as the master computed them. Recomputed by
// the replica (Redis propagates the search itself) they differed in the
// last digit for about a third of the points (glibc's libm against Go's
// math), so dfly journals the stored set instead. Both a search confined
// to one shard and one storing into another shard.
func TestReplGeoStoreDistExact(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("a redis-server replica of a dfly master")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	rc := startRedis(t).Raw(t)
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	seed := newSeed(t)
	rng := rand.New(rand.NewPCG(seed, 36))
	src, dst := tagsOnTwoShards(2)
	points := "{" + src + "}points"
	for i := 0; i < 300; i++ {
		lon := strconv.FormatFloat(14+2*rng.Float64(), 'f', 6, 64)
		lat := strconv.FormatFloat(36+2*rng.Float64(), 'f', 6, 64)
		if r := mc.Do("GEOADD", points, lon, lat, "m"+strconv.Itoa(i)); r.IsError() {
			t.Fatalf("GEOADD: %s", r.Str)
		}
	}
	dests := []string{"{" + src + "}near", "{" + dst + "}far"}
	for _, d := range dests {
		if r := mc.Do("GEOSEARCHSTORE", d, points, "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km", "ASC", "STOREDIST"); r.Int != 300 {
			t.Fatalf("GEOSEARCHSTORE %s: %v", d, r)
		}
	}
	want := fmt.Sprint(mc.Do("ZRANGE", dests[0], "0", "-1", "WITHSCORES").Lines())
	for _, d := range dests {
		var got string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got = fmt.Sprint(rc.Do("ZRANGE", d, "0", "-1", "WITHSCORES").Lines()); got == want {
				break
			}
		}
		if got != want {
			t.Errorf("%s on the replica:\n%s\nmaster:\n%s", d, got, want)
		}
	}
}
