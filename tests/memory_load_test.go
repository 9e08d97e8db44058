package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvMemLoadDur sets the length of TestMemoryUnderLoad's load (a Go
// duration); the long run is DFLY_MEMLOAD_DUR=10m.
const EnvMemLoadDur = "DFLY_MEMLOAD_DUR"

// TestMemoryUnderLoad: a dataset of 1 GB (a million 1 KiB values) under a
// mixed write load (SETs that replace values with others of the same
// size, MULTI/EXEC transfers) keeps the server's resident memory within
// 1.2x the data (keys and values), sampled every 100 ms from the start of
// the load to its end. tests/bench/memload (the same client as
// memload.sh) loads it and samples VmRSS. What it catches: the Go heap's
// room for garbage growing with the dataset (reclaim.Headroom), a value
// kept twice, a leak under load. It asserts no speed. 20 s by default;
// DFLY_MEMLOAD_DUR=10m for the long run.
func TestMemoryUnderLoad(t *testing.T) {
	needTime(t, 60*time.Second)
	if target != targetDfly {
		t.Skip("the bound is dfly's; memload.sh compares with redis-server")
	}
	if raceBuild() {
		t.Skip("the race detector's shadow memory makes RSS meaningless: the plain pass runs it")
	}
	if testing.Short() {
		t.Skip("loads 1 GB")
	}
	dur := 20 * time.Second
	if v := os.Getenv(EnvMemLoadDur); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvMemLoadDur, v, err)
		}
		dur = d
	}
	load := filepath.Join(t.TempDir(), "memload")
	build := exec.Command("go", "build", "-o", load, "./bench/memload")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./bench/memload: %v\n%s", err, out)
	}
	srv := StartServer(t)
	cmd := exec.Command(load, "-addr", srv.Addr, "-pid", strconv.Itoa(srv.PID),
		"-small", "0", "-big", "1000000", "-big-size", "1024", "-dur", dur.String(), "-settle", "2s")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("memload: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) < 6 {
		t.Fatalf("memload printed %q", out)
	}
	num := func(i int) float64 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			t.Fatalf("memload field %d of %q: %v", i, out, err)
		}
		return v
	}
	keys, data, rest, peak, after, ops := num(0), num(1), num(2), num(3), num(4), num(5)
	t.Logf("%.0f keys, %.0f MB of data: RSS at rest %.2fx, peak under load %.2fx, after %.2fx (%.0f requests in %v)",
		keys, data/1e6, rest/data, peak/data, after/data, ops, dur)
	if ops == 0 {
		t.Fatal("the load completed no request")
	}
	if got := srv.Raw(t).Do("DBSIZE").Int; got != int64(keys) {
		t.Fatalf("DBSIZE %d after the load, want %d", got, int64(keys))
	}
	if peak > 1.2*data {
		t.Fatalf("RSS peaked at %.2fx the data under load (%.0f MB for %.0f MB), want at most 1.2x", peak/data, peak/1e6, data/1e6)
	}
}
