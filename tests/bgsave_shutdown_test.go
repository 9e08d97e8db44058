package tests

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tempFiles lists dir's temporary snapshot files (Redis's temp-<pid>.rdb,
// dfly's *.tmp: its shard files' and summary's).
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "temp-") || strings.HasSuffix(n, ".tmp") {
			out = append(out, n)
		}
	}
	return out
}

// TestBgsaveShutdown: a shutdown during BGSAVE (SHUTDOWN NOSAVE, SHUTDOWN
// and SIGTERM without save points, SHUTDOWN with them) leaves no temporary
// file behind and never a partial dump: the next start loads either the
// last good dump whole or, where the shutdown saves, the current
// dataset. kill -9 mid-BGSAVE leaves the last good dump intact; a
// temporary file it may leave is not loaded.
func TestBgsaveShutdown(t *testing.T) {
	keys := bigDataset(600_000)
	want := int64(keys + 1)
	for _, tc := range []struct {
		name    string
		flags   []string
		stop    func(srv *Server, c *RawConn)
		current bool // the shutdown saves the current dataset
	}{
		{"SHUTDOWN NOSAVE", nil, func(srv *Server, c *RawConn) { c.Send("SHUTDOWN", "NOSAVE") }, false},
		{"SHUTDOWN", nil, func(srv *Server, c *RawConn) { c.Send("SHUTDOWN") }, false},
		{"SIGTERM", nil, func(srv *Server, c *RawConn) { srv.cmd.Process.Signal(os.Interrupt) }, false},
		{"SHUTDOWN with save points", []string{"--save", "3600 1000000000"}, func(srv *Server, c *RawConn) { c.Send("SHUTDOWN") }, true},
		{"kill -9", nil, func(srv *Server, c *RawConn) { srv.cmd.Process.Kill() }, false},
		{"SHUTDOWN NOSAVE, dfly format", []string{"--dbformat", "dfly"}, func(srv *Server, c *RawConn) { c.Send("SHUTDOWN", "NOSAVE") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if IsRedis() && strings.Contains(tc.name, "dfly") {
				t.Skip("dfly's own format")
			}
			dir := t.TempDir()
			flags := append([]string{"--dir", dir}, tc.flags...)
			srv, c := startPopulated(t, keys, flags...)
			mustOK(t, c.Do("SET", "gen", "1"), "SET")
			mustOK(t, c.Do("SAVE"), "SAVE")
			mustOK(t, c.Do("SET", "gen", "2"), "SET")
			if r := c.Do("BGSAVE"); r.Str != "Background saving started" {
				t.Fatalf("BGSAVE: %s", r)
			}
			if info := infoFields(c.Do("INFO", "persistence")); info["rdb_bgsave_in_progress"] != "1" {
				t.Skipf("the BGSAVE of %d keys ended before the shutdown: nothing to check", keys)
			}
			srv.terminated = true
			tc.stop(srv, c)
			select {
			case <-srv.exited:
			case <-time.After(time.Minute):
				t.Fatalf("%s during BGSAVE: still running after a minute", tc.name)
			}
			if tc.name != "kill -9" {
				if left := tempFiles(t, dir); len(left) > 0 {
					t.Fatalf("%s during BGSAVE left %v in %s", tc.name, left, dir)
				}
			}
			srv = StartServer(t, flags...)
			c = srv.Raw(t)
			if n := c.Do("DBSIZE"); n.Int != want {
				t.Fatalf("after %s during BGSAVE: DBSIZE %s, want %d (a partial dump?)", tc.name, n, want)
			}
			gen := c.Do("GET", "gen").Str
			if tc.current && gen != "2" || !tc.current && gen != "1" && gen != "2" {
				t.Fatalf("after %s during BGSAVE: gen %q", tc.name, gen)
			}
			if tc.name == "kill -9" && len(tempFiles(t, dir)) > 1 {
				t.Fatalf("kill -9 left %v", tempFiles(t, dir))
			}
		})
	}
}

// TestBgsaveState: BGSAVE's replies and INFO persistence's save fields as
// Redis 7.0's: a second BGSAVE (SCHEDULE or not) or SAVE while one runs is
// refused; rdb_bgsave_in_progress,
// rdb_last_bgsave_status, rdb_changes_since_last_save, rdb_last_save_time
// and LASTSAVE follow.
func TestBgsaveState(t *testing.T) {
	keys := bigDataset(600_000)
	_, c := startPopulated(t, keys)
	info := func() map[string]string { return infoFields(c.Do("INFO", "persistence")) }
	mustOK(t, c.Do("SAVE"), "SAVE")
	i := info()
	if i["rdb_changes_since_last_save"] != "0" || i["rdb_bgsave_in_progress"] != "0" || i["rdb_last_bgsave_status"] != "ok" {
		t.Fatalf("after SAVE: %v", i)
	}
	if last := c.Do("LASTSAVE"); strconv.FormatInt(last.Int, 10) != i["rdb_last_save_time"] {
		t.Fatalf("LASTSAVE %s, rdb_last_save_time %s", last, i["rdb_last_save_time"])
	}
	saved := i["rdb_last_save_time"]
	c.Do("SET", "a", "1")
	c.Do("SET", "b", "1")
	if i := info(); i["rdb_changes_since_last_save"] != "2" {
		t.Fatalf("after two SETs: rdb_changes_since_last_save:%s", i["rdb_changes_since_last_save"])
	}
	time.Sleep(1100 * time.Millisecond) // a later second for rdb_last_save_time
	if r := c.Do("BGSAVE"); r.Str != "Background saving started" {
		t.Fatalf("BGSAVE: %s", r)
	}
	if info()["rdb_bgsave_in_progress"] != "1" {
		t.Skipf("the BGSAVE of %d keys ended at once: nothing to check", keys)
	}
	// SCHEDULE waits only for another kind of child (AOF), not a BGSAVE.
	for _, cmd := range [][]string{{"BGSAVE"}, {"SAVE"}, {"BGSAVE", "SCHEDULE"}} {
		if r := c.Do(cmd...); r.Str != "ERR Background save already in progress" {
			t.Fatalf("%v while BGSAVE runs: %s", cmd, r)
		}
	}
	if r := c.Do("BGSAVE", "BOGUS"); r.Str != "ERR syntax error" {
		t.Fatalf("BGSAVE BOGUS: %s", r)
	}
	deadline := time.Now().Add(time.Minute)
	for i = info(); i["rdb_bgsave_in_progress"] != "0"; i = info() {
		if time.Now().After(deadline) {
			t.Fatalf("BGSAVE still running after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.Do("INFO", "persistence"); i["rdb_last_bgsave_status"] != "ok" || i["rdb_changes_since_last_save"] != "0" || i["rdb_last_save_time"] == saved {
		t.Fatalf("after BGSAVE: %v", i)
	}
	if last := c.Do("LASTSAVE"); strconv.FormatInt(last.Int, 10) != i["rdb_last_save_time"] {
		t.Fatalf("LASTSAVE %s, rdb_last_save_time %s", last, i["rdb_last_save_time"])
	}
}
