package tests

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Function libraries outlive the process and follow the data: saved and
// loaded with the dataset, carried by full syncs and journaled, dumped and
// restored, also across dfly and redis-server. Replies of the commands
// themselves are in testdata/functions.txt.

const (
	libCounter = "#!lua name=counter\nredis.register_function('bump', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)\n" +
		"redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
	libGreet = "#!lua name=greet\nredis.register_function('hello', function(keys, args) return 'hello ' .. args[1] end)"
)

// functionLibs is FUNCTION LIST WITHCODE as library name => code.
func functionLibs(t *testing.T, c *RawConn) map[string]string {
	t.Helper()
	r := c.Do("FUNCTION", "LIST", "WITHCODE")
	if r.IsError() {
		t.Fatalf("FUNCTION LIST: %s", r.Str)
	}
	libs := map[string]string{}
	for _, lib := range r.Elems {
		var name, code string
		for i := 0; i+1 < len(lib.Elems); i += 2 {
			switch lib.Elems[i].Str {
			case "library_name":
				name = lib.Elems[i+1].Str
			case "library_code":
				code = lib.Elems[i+1].Str
			}
		}
		libs[name] = code
	}
	return libs
}

func libNames(libs map[string]string) string {
	var names []string
	for n := range libs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func mustLoad(t *testing.T, c *RawConn, code string) {
	t.Helper()
	if r := c.Do("FUNCTION", "LOAD", code); r.IsError() {
		t.Fatalf("FUNCTION LOAD: %s", r.Str)
	}
}

// wantLibs waits until c lists exactly the libraries of want, code and all.
func wantLibs(t *testing.T, c *RawConn, want map[string]string, what string) {
	t.Helper()
	var got map[string]string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = functionLibs(t, c)
		same := len(got) == len(want)
		for n, code := range want {
			same = same && got[n] == code
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: libraries %s, want %s", what, libNames(got), libNames(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFunctionsSavedAndLoaded(t *testing.T) {
	needPersistTools(t)
	for _, format := range []string{"rdb", "dfly"} {
		for _, save := range []string{"SAVE", "BGSAVE"} {
			t.Run(format+"/"+save, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				d := StartServer(t, "--dir", dir, "--shards", "3", "--dbformat", format)
				c := d.Raw(t)
				mustLoad(t, c, libCounter)
				mustLoad(t, c, libGreet)
				if r := c.Do("FCALL", "bump", "1", "n", "5"); r.Int != 5 {
					t.Fatalf("FCALL bump: %s", r)
				}
				want := functionLibs(t, c)
				if r := c.Do(save); r.IsError() {
					t.Fatalf("%s: %s", save, r.Str)
				}
				waitFor(t, 20*time.Second, "the save", func() bool {
					return infoField(c, "persistence", "rdb_bgsave_in_progress") == "0" &&
						infoField(c, "persistence", "rdb_changes_since_last_save") == "0"
				})
				// A library loaded after the save is not in the file.
				mustLoad(t, c, "#!lua name=late\nredis.register_function('late', function() return 1 end)")
				d.Terminate(10 * time.Second)
				d2 := StartServer(t, "--dir", dir, "--shards", "2", "--dbformat", format)
				c2 := d2.Raw(t)
				wantLibs(t, c2, want, "after a restart")
				if r := c2.Do("FCALL", "bump", "1", "n", "2"); r.Int != 7 {
					t.Fatalf("FCALL bump after the restart: %s", r)
				}
				if r := c2.Do("FCALL_RO", "peek", "1", "n"); r.Str != "7" {
					t.Fatalf("FCALL_RO peek after the restart: %s", r)
				}
				// DEBUG RELOAD keeps them too.
				if r := c2.Do("DEBUG", "RELOAD"); r.IsError() {
					t.Fatalf("DEBUG RELOAD: %s", r.Str)
				}
				wantLibs(t, c2, want, "after DEBUG RELOAD")
			})
		}
	}
}

// A Redis RDB holding libraries loads into dfly with them.
func TestFunctionsFromRedisFile(t *testing.T) {
	needPersistTools(t, "redis-server")
	dir := t.TempDir()
	r := startRedisOn(t, dir, "dump.rdb")
	rc := r.Raw(t)
	mustLoad(t, rc, libCounter)
	mustLoad(t, rc, libGreet)
	want := functionLibs(t, rc)
	mustOK(t, rc.Do("SAVE"), "SAVE")
	// dir is a protected parameter, as in Redis: CONFIG SET below needs this.
	d := StartServer(t, "--dir", dir, "--shards", "2", "--enable-protected-configs", "yes")
	c := d.Raw(t)
	wantLibs(t, c, want, "dfly loading redis-server's file")
	if r := c.Do("FCALL", "hello", "0", "dfly"); r.Str != "hello dfly" {
		t.Fatalf("FCALL hello: %s", r)
	}
	// And a file dfly saves loads into redis-server with them.
	mustLoad(t, c, "#!lua name=fromdfly\nredis.register_function('fd', function() return 'dfly' end)")
	want = functionLibs(t, c)
	dir2 := t.TempDir()
	mustOK(t, c.Do("CONFIG", "SET", "dir", dir2), "CONFIG SET dir")
	mustOK(t, c.Do("SAVE"), "SAVE")
	r2 := startRedisOn(t, dir2, "dump.rdb")
	wantLibs(t, r2.Raw(t), want, "redis-server loading dfly's file")
}

func TestFunctionDumpRestore(t *testing.T) {
	d := StartServer(t, "--shards", "2")
	c := d.Raw(t)
	mustLoad(t, c, libCounter)
	mustLoad(t, c, libGreet)
	want := functionLibs(t, c)
	payload := c.Do("FUNCTION", "DUMP").Str
	if r := c.Do("FUNCTION", "RESTORE", payload); !strings.HasPrefix(r.Str, "ERR Library '") {
		t.Fatalf("RESTORE over the same libraries (APPEND): %s", r)
	}
	mustOK(t, c.Do("FUNCTION", "FLUSH"), "FUNCTION FLUSH")
	mustLoad(t, c, "#!lua name=other\nredis.register_function('o', function() return 1 end)")
	mustOK(t, c.Do("FUNCTION", "RESTORE", payload, "FLUSH"), "RESTORE FLUSH")
	wantLibs(t, c, want, "after RESTORE FLUSH")
	mustOK(t, c.Do("FUNCTION", "RESTORE", payload, "REPLACE"), "RESTORE REPLACE")
	wantLibs(t, c, want, "after RESTORE REPLACE")
	// A collision in the middle changes nothing (all or nothing).
	mustOK(t, c.Do("FUNCTION", "DELETE", "greet"), "FUNCTION DELETE")
	mustLoad(t, c, "#!lua name=taken\nredis.register_function('hello', function() return 'taken' end)")
	before := functionLibs(t, c)
	if r := c.Do("FUNCTION", "RESTORE", payload, "REPLACE"); r.Str != "ERR Function hello already exists" {
		t.Fatalf("RESTORE with a function of another library: %s", r)
	}
	wantLibs(t, c, before, "after a failed RESTORE")
	bad := payload[:len(payload)-1] + string(payload[len(payload)-1]^1)
	if r := c.Do("FUNCTION", "RESTORE", bad); r.Str != "ERR DUMP payload version or checksum are wrong" {
		t.Fatalf("RESTORE of a damaged payload: %s", r)
	}
	if IsRedis() {
		return
	}
	// Payloads cross between dfly and redis-server both ways.
	rs := startRedisOn(t, t.TempDir(), "dump.rdb")
	rc := rs.Raw(t)
	mustOK(t, rc.Do("FUNCTION", "RESTORE", payload), "redis-server: RESTORE of dfly's payload")
	wantLibs(t, rc, want, "redis-server after RESTORE")
	mustLoad(t, rc, "#!lua name=fromredis\nredis.register_function('fr', function() return 'redis' end)")
	mustOK(t, c.Do("FUNCTION", "RESTORE", rc.Do("FUNCTION", "DUMP").Str, "FLUSH"), "RESTORE of redis-server's payload")
	wantLibs(t, c, functionLibs(t, rc), "dfly after RESTORE of redis-server's payload")
	if r := c.Do("FCALL", "fr", "0"); r.Str != "redis" {
		t.Fatalf("FCALL fr: %s", r)
	}
}

// Libraries reach a dfly replica with the full sync (another shard count)
// and every change after it; the replica runs read-only functions and
// refuses changes and writing functions.
func TestFunctionsReplicated(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only: dfly replicas")
	}
	for _, mode := range []string{"pit", "nonpit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			flags := []string{"--shards", "3"}
			if mode == "nonpit" {
				flags = append(flags, "--point_in_time_snapshot=false")
			}
			m := StartServer(t, flags...)
			mc := m.Raw(t)
			mustLoad(t, mc, libCounter)
			mustLoad(t, mc, libGreet)
			for i := 0; i < 200; i++ {
				mc.Do("FCALL", "bump", "1", "n:"+strconv.Itoa(i), strconv.Itoa(i))
			}
			r := StartServer(t, "--shards", "2")
			rc := r.Raw(t)
			mustOK(t, rc.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(m.Port)), "REPLICAOF")
			waitLinkUp(t, rc)
			wantLibs(t, rc, functionLibs(t, mc), "after the full sync")
			// Changes in stable sync, each journaled once.
			mustLoad(t, mc, "#!lua name=late\nredis.register_function('late', function() return 'late' end)")
			mustOK(t, mc.Do("FUNCTION", "DELETE", "greet"), "FUNCTION DELETE")
			if r := mc.Do("FUNCTION", "LOAD", "REPLACE", strings.Replace(libCounter, "incrby", "decrby", 1)); r.IsError() {
				t.Fatalf("FUNCTION LOAD REPLACE: %s", r.Str)
			}
			mc.Do("FCALL", "bump", "1", "n:1", "1")
			waitDigestsEqual(t, mc, rc)
			wantLibs(t, rc, functionLibs(t, mc), "after changes in stable sync")
			if r := rc.Do("FCALL_RO", "peek", "1", "n:1"); r.Str != "0" {
				t.Fatalf("FCALL_RO on the replica: %s", r)
			}
			if r := rc.Do("FCALL", "bump", "1", "n:1", "1"); !strings.HasPrefix(r.Str, "READONLY ") {
				t.Fatalf("a writing FCALL on the replica: %s", r)
			}
			if r := rc.Do("FUNCTION", "LOAD", libGreet); !strings.HasPrefix(r.Str, "READONLY ") {
				t.Fatalf("FUNCTION LOAD on the replica: %s", r)
			}
			if out := r.Output(); strings.Contains(out, "failed on the replica") {
				t.Fatalf("the replica failed a command of the master:\n%s", out)
			}
			// FUNCTION FLUSH reaches it; RESTORE too.
			payload := mc.Do("FUNCTION", "DUMP").Str
			mustOK(t, mc.Do("FUNCTION", "FLUSH"), "FUNCTION FLUSH")
			wantLibs(t, rc, map[string]string{}, "after FUNCTION FLUSH")
			mustOK(t, mc.Do("FUNCTION", "RESTORE", payload), "FUNCTION RESTORE")
			wantLibs(t, rc, functionLibs(t, mc), "after FUNCTION RESTORE")
			// A replica promoted keeps them and can change them.
			mustOK(t, rc.Do("REPLICAOF", "NO", "ONE"), "REPLICAOF NO ONE")
			mustLoad(t, rc, libGreet)
			if r := rc.Do("FCALL", "hello", "0", "x"); r.Str != "hello x" {
				t.Fatalf("FCALL on the promoted replica: %s", r)
			}
		})
	}
}

// Libraries cross with redis-server in both directions of replication.
func TestFunctionsReplicatedWithRedis(t *testing.T) {
	t.Run("redis master", func(t *testing.T) {
		if IsRedis() {
			t.Skip("dfly-only")
		}
		t.Parallel()
		m := startMaster(t, true, 0)
		mc := m.Raw(t)
		mustLoad(t, mc, libCounter)
		r := startReplica(t)
		rc := r.Raw(t)
		mustOK(t, rc.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(m.Port)), "REPLICAOF")
		waitLinkUp(t, rc)
		wantLibs(t, rc, functionLibs(t, mc), "after the full sync from redis-server")
		mustLoad(t, mc, libGreet)
		mc.Do("FCALL", "bump", "1", "k", "3")
		waitCaughtUp(t, mc, rc)
		wantLibs(t, rc, functionLibs(t, mc), "after FUNCTION LOAD on redis-server")
		compareDigests(t, mc, rc)
	})
	t.Run("redis replica", func(t *testing.T) {
		t.Parallel()
		m := StartServer(t, "--shards", "3")
		mc := m.Raw(t)
		mustLoad(t, mc, libCounter)
		r := startRedisReplica(t, m, t.TempDir(), 0)
		rc := r.Raw(t)
		waitLinkUp(t, rc)
		wantLibs(t, rc, functionLibs(t, mc), "redis-server after the full sync")
		mustLoad(t, mc, libGreet)
		for i := 0; i < 50; i++ {
			mc.Do("FCALL", "bump", "1", "k:"+strconv.Itoa(i), strconv.Itoa(i))
		}
		mustOK(t, mc.Do("FUNCTION", "DELETE", "counter"), "FUNCTION DELETE")
		waitCaughtUp(t, mc, rc)
		wantLibs(t, rc, functionLibs(t, mc), "redis-server after changes")
		compareDigests(t, mc, rc)
	})
}

// FUNCTION STATS names a busy function and FUNCTION KILL stops it; SCRIPT
// KILL does not. busy-reply-threshold is low and FUNCTION STATS polled, so
// that a slow start under load does not matter.
func TestFunctionKill(t *testing.T) {
	srv := StartServer(t, "--shards", "2")
	runner, admin := srv.Raw(t), srv.Raw(t)
	if r := admin.Do("CONFIG", "SET", "busy-reply-threshold", "100"); r.Str != "OK" {
		t.Fatalf("CONFIG SET busy-reply-threshold: %s", r)
	}
	mustLoad(t, admin, "#!lua name=inf\nredis.register_function{function_name='spin', callback=function(keys)\n  redis.call('get', keys[1])\n  while true do end\nend, flags={'no-writes'}}")
	runner.Timeout = 30 * time.Second
	runner.Send("FCALL_RO", "spin", "1", "k")
	var st Reply
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st = admin.Do("FUNCTION", "STATS")
		if len(st.Elems) == 4 && len(st.Elems[1].Elems) == 6 && st.Elems[1].Elems[5].Int >= 100 || time.Now().After(deadline) {
			break
		}
	}
	if len(st.Elems) != 4 || len(st.Elems[1].Elems) != 6 || st.Elems[1].Elems[1].Str != "spin" ||
		strings.Join([]string{st.Elems[1].Elems[3].Elems[0].Str, st.Elems[1].Elems[3].Elems[1].Str}, " ") != "FCALL_RO spin" ||
		st.Elems[1].Elems[5].Int < 100 {
		t.Fatalf("FUNCTION STATS while spin runs: %s", st)
	}
	if r := admin.Do("SCRIPT", "KILL"); r.Str != "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE." {
		t.Fatalf("SCRIPT KILL while a function runs: %s", r)
	}
	if r := admin.Do("FUNCTION", "KILL"); r.Str != "OK" {
		t.Fatalf("FUNCTION KILL: %s", r)
	}
	if r := runner.MustRead(); r.Str != "ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:4." {
		t.Fatalf("the killed function's reply: %s", r)
	}
	if r := admin.Do("FUNCTION", "KILL"); r.Str != "NOTBUSY No scripts in execution right now." {
		t.Fatalf("FUNCTION KILL after the kill: %s", r)
	}
}
