package tests

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const errLoading = "LOADING Redis is loading the dataset in memory"

// infoFields parses an INFO reply's "name:value" lines.
func infoFields(r Reply) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(r.Str, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// dialWhenOpen connects to addr as soon as it accepts connections.
func dialWhenOpen(t *testing.T, addr string) *RawConn {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			t.Cleanup(func() { conn.Close() })
			return &RawConn{t: t, conn: conn, reader: bufio.NewReader(conn), Timeout: time.Minute}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v", addr, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// bigDataset is how many keys the tests whose saves and loads must take a
// while populate: n, a quarter of it under -race.
func bigDataset(n int) int {
	if raceBuild() {
		return n / 4
	}
	return n
}

// startPopulated starts the server under test with flags and fills it
// with DEBUG POPULATE keys key 100 (key:0 ... of 100 bytes).
func startPopulated(t *testing.T, keys int, flags ...string) (*Server, *RawConn) {
	t.Helper()
	srv := StartServer(t, flags...)
	c := srv.Raw(t)
	c.Timeout = 2 * time.Minute
	mustOK(t, c.Do("DEBUG", "POPULATE", strconv.Itoa(keys), "key", "100"), "DEBUG POPULATE")
	return srv, c
}

// TestLoadingReplies: a server started on a large dump listens first and
// loads after, as Redis: from the first accepted connection, commands not
// flagged loading (DBSIZE, GET, SET) get LOADING until the whole dataset
// is in, then the whole dataset, never part of it; INFO (flagged loading)
// answers meanwhile with loading:1 and the progress fields.
func TestLoadingReplies(t *testing.T) {
	t.Run("rdb", func(t *testing.T) { testLoadingReplies(t) })
	t.Run("dfly format", func(t *testing.T) {
		if IsRedis() {
			t.Skip("dfly's own format")
		}
		testLoadingReplies(t, "--dbformat", "dfly")
	})
}

func testLoadingReplies(t *testing.T, flags ...string) {
	keys := bigDataset(1_000_000)
	dir := t.TempDir()
	flags = append([]string{"--dir", dir}, flags...)
	srv, c := startPopulated(t, keys, flags...)
	mustOK(t, c.Do("SET", "marker", "m"), "SET")
	mustOK(t, c.Do("SAVE"), "SAVE")
	if err := srv.Terminate(time.Minute); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}

	srv = StartServerNoWait(t, flags...)
	c = dialWhenOpen(t, srv.Addr)
	want := int64(keys + 1)
	var refused, infoLoading int
	setDone := false // a SET answered OK
	replicaOfRefused := 0
	for {
		r := c.Do("DBSIZE")
		if r.Kind != KindError {
			if r.Kind != KindInt || r.Int != want {
				t.Fatalf("DBSIZE answered %s while %d keys load: a partly loaded dataset", r, want)
			}
			break
		}
		if r.Str != errLoading {
			t.Fatalf("DBSIZE while loading: %q, want %q", r.Str, errLoading)
		}
		refused++
		switch r := c.Do("SET", "marker", "changed"); {
		case r.Kind == KindError && r.Str != errLoading:
			t.Fatalf("SET while loading: %s", r)
		case r.Kind != KindError:
			setDone = true // the load ended in between
		}
		if r := c.Do("REPLICAOF", "NO", "ONE"); r.Str == errLoading { // no loading flag, as Redis's
			replicaOfRefused++
		} else if r.Str != "OK" {
			t.Fatalf("REPLICAOF NO ONE while loading: %s", r)
		}
		info := infoFields(c.Do("INFO", "persistence"))
		if info["loading"] != "1" {
			continue // it has just finished
		}
		infoLoading++
		for _, f := range []string{"loading_start_time", "loading_total_bytes", "loading_rdb_used_mem", "loading_loaded_bytes", "loading_loaded_perc", "loading_eta_seconds"} {
			if _, ok := info[f]; !ok {
				t.Fatalf("INFO persistence while loading has no %s:\n%v", f, info)
			}
		}
		if info["async_loading"] != "0" {
			t.Fatalf("INFO persistence while loading: async_loading:%s", info["async_loading"])
		}
		if n, _ := strconv.ParseInt(info["loading_total_bytes"], 10, 64); n <= 0 && infoLoading > 10 {
			t.Fatalf("INFO persistence while loading: loading_total_bytes:%s", info["loading_total_bytes"])
		}
	}
	t.Logf("%d commands refused with LOADING, %d INFO replies with loading:1", refused, infoLoading)
	if refused == 0 || infoLoading == 0 || replicaOfRefused == 0 {
		t.Fatalf("the first connection saw no loading (refused %d, INFO loading:1 %d, REPLICAOF refused %d)", refused, infoLoading, replicaOfRefused)
	}
	if r := c.Do("GET", "marker"); r.Str != "m" && !setDone {
		t.Fatalf("GET marker after loading: %s: a SET refused with LOADING was applied", r)
	}
	if info := infoFields(c.Do("INFO", "persistence")); info["loading"] != "0" {
		t.Fatalf("INFO persistence after loading: loading:%s", info["loading"])
	}
}

// TestReplicaFullSyncLoading: while a replica takes a full sync of a large
// dataset, its clients see, as Redis's, its own data from before (served
// stale while the payload arrives), LOADING while the master's dataset
// replaces it, then the whole of it: never a part. The master and the
// replica are both the server under test.
func TestReplicaFullSyncLoading(t *testing.T) {
	keys := bigDataset(600_000)
	master, _ := startPopulated(t, keys)
	replica := StartServer(t)
	rc := replica.Raw(t)
	mustOK(t, rc.Do("SET", "own", "1"), "SET")
	mustOK(t, replica.Raw(t).Do("REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port)), "REPLICAOF")
	var own, refused int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := rc.Do("DBSIZE")
		switch {
		case r.Kind == KindError && r.Str == errLoading:
			refused++
		case r.Kind == KindInt && r.Int == 1 && refused == 0:
			own++
		case r.Kind == KindInt && r.Int == int64(keys):
			t.Logf("DBSIZE answered %d times with the replica's own data, %d times LOADING", own, refused)
			if refused == 0 {
				t.Fatalf("no LOADING while the replica loaded %d keys", keys)
			}
			return
		default:
			t.Fatalf("DBSIZE during the full sync: %s (after %d LOADING): a part of the dataset", r, refused)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the full sync did not end in 2 minutes")
		}
	}
}

// TestShutdownWhileLoading: SHUTDOWN (flagged loading) and SIGTERM while
// the dataset loads stop the server without saving, even with save
// points, as Redis: the half-loaded dataset never replaces the dump.
func TestShutdownWhileLoading(t *testing.T) {
	keys := bigDataset(1_000_000)
	dir := t.TempDir()
	srv, c := startPopulated(t, keys, "--dir", dir)
	mustOK(t, c.Do("SAVE"), "SAVE")
	if err := srv.Terminate(time.Minute); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	path := filepath.Join(dir, "dump.rdb")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"SHUTDOWN", "SIGTERM"} {
		srv = StartServerNoWait(t, "--dir", dir, "--save", "3600 1")
		c = dialWhenOpen(t, srv.Addr)
		if r := c.Do("DBSIZE"); r.Str != errLoading {
			t.Fatalf("%s: DBSIZE answered %s at once: the load was over before the test could stop it", how, r)
		}
		srv.terminated = true
		if how == "SHUTDOWN" {
			c.Send("SHUTDOWN")
		} else {
			srv.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-srv.exited:
		case <-time.After(time.Minute):
			t.Fatalf("%s while loading: still running after a minute", how)
		}
		after, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(before, after) {
			t.Fatalf("%s while loading replaced the dump (%d bytes, was %d; %v)", how, len(after), len(before), err)
		}
	}
	srv = StartServer(t, "--dir", dir)
	if n := srv.Raw(t).Do("DBSIZE"); n.Int != int64(keys) {
		t.Fatalf("after the shutdowns while loading: DBSIZE %s, want %d", n, keys)
	}
}

// TestReplicaOfAfterLoading: a server started with --replicaof over a
// large dump of its own loads it first and only then follows its master,
// as Redis: once synced it holds the master's dataset alone, none of the
// dump's keys applied after the full sync replaced them.
func TestReplicaOfAfterLoading(t *testing.T) {
	dir := t.TempDir()
	srv, c := startPopulated(t, bigDataset(1_000_000), "--dir", dir)
	mustOK(t, c.Do("SAVE"), "SAVE")
	if err := srv.Terminate(time.Minute); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	master := StartServer(t)
	mustOK(t, master.Raw(t).Do("SET", "m", "1"), "SET")
	replica := StartServer(t, "--dir", dir, "--replicaof", "127.0.0.1 "+strconv.Itoa(master.Port))
	waitReplicaLinkUp(t, replica, time.Minute)
	if n := replica.Raw(t).Do("DBSIZE"); n.Int != 1 {
		t.Fatalf("after the full sync: DBSIZE %s, want the master's 1 key", n)
	}
}
