package tests

// RDB persistence end to end: files dfly SAVEs load in redis-server and
// pass redis-check-rdb, files redis-server SAVEs load into dfly at start,
// DEBUG RELOAD, refusing a corrupt file, and DUMP/RESTORE both ways.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

var persistDBs = []int{0, 1, 5}

// needPersistTools skips tests that compare dfly with real Redis tools.
func needPersistTools(t *testing.T, tools ...string) {
	t.Helper()
	if IsRedis() {
		t.Skip("dfly-only: compares dfly's files with redis-server")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// startRedisOn starts a real redis-server on dir/file, whatever the target.
func startRedisOn(t *testing.T, dir, file string) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		s, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
			"--bind", "127.0.0.1", "--enable-debug-command", "yes", "--dir", dir, "--dbfilename", file}, port)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

func mustOK(t *testing.T, r Reply, what string) {
	t.Helper()
	if r.IsError() {
		t.Fatalf("%s: %s", what, r.Str)
	}
}

// fillAllTypes writes every type, small and large encodings, into db.
func fillAllTypes(t *testing.T, c *RawConn, db int) {
	t.Helper()
	mustOK(t, c.Do("SELECT", strconv.Itoa(db)), "select")
	p := fmt.Sprintf("d%d:", db)
	do := func(args ...string) { t.Helper(); mustOK(t, c.Do(args...), strings.Join(args[:2], " ")) }
	do("SET", p+"str", "hello world")
	do("SET", "", "the empty key, db "+strconv.Itoa(db)) // a key like any other
	do("SET", p+"int", "12345")
	do("SET", p+"ttl", "expiring", "EX", "1000")
	do("SET", p+"long", strings.Repeat("abcdefgh", 100))
	args := []string{"RPUSH", p + "list"}
	for i := 0; i < 300; i++ {
		args = append(args, "e"+strconv.Itoa(i%37))
	}
	do(args...)
	do("RPUSH", p+"smalllist", "a", "b", "1", "-7")
	do("HSET", p+"hash", "f1", "v1", "f2", "2")
	args = []string{"HSET", p + "bighash"}
	for i := 0; i < 600; i++ {
		args = append(args, "field"+strconv.Itoa(i), "value"+strconv.Itoa(i))
	}
	do(args...)
	do("SADD", p+"intset", "1", "2", "3", "-100", "99999999999")
	do("SADD", p+"strset", "a", "b", "c")
	args = []string{"SADD", p + "bigset"}
	for i := 0; i < 700; i++ {
		args = append(args, "m"+strconv.Itoa(i))
	}
	do(args...)
	do("ZADD", p+"zset", "1", "a", "2.5", "b", "-3", "c")
	args = []string{"ZADD", p + "bigzset"}
	for i := 0; i < 300; i++ {
		args = append(args, strconv.FormatFloat(float64(i)/7, 'g', -1, 64), "member"+strconv.Itoa(i))
	}
	do(args...)
	do("EXPIRE", p+"zset", "5000")
	for i := 1; i <= 250; i++ {
		do("XADD", p+"stream", fmt.Sprintf("%d-%d", i, i%3), "f", "v"+strconv.Itoa(i), "g", "w")
	}
	do("XDEL", p+"stream", "5-2")
	do("XGROUP", "CREATE", p+"stream", "grp", "0")
	do("XGROUP", "CREATE", p+"stream", "grp2", "$")
	do("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "3", "STREAMS", p+"stream", ">")
	do("XREADGROUP", "GROUP", "grp", "bob", "COUNT", "2", "STREAMS", p+"stream", ">")
	do("XADD", p+"empty", "1-1", "a", "b")
	do("XDEL", p+"empty", "1-1")
	do("PFADD", p+"hll", "a", "b", "c", "d")
	mustOK(t, c.Do("SELECT", "0"), "select")
}

// dataset renders every key of the given dbs: type, contents in a stable
// order, and whether it has a TTL.
func dataset(t *testing.T, c *RawConn, dbs []int) map[string]string {
	t.Helper()
	out := map[string]string{}
	const batch = 256 // keys per pipelined batch (readKeys)
	reads := func(typ, key string) [][]string { return append(datasetReads(typ, key), []string{"PTTL", key}) }
	for _, db := range dbs {
		mustOK(t, c.Do("SELECT", strconv.Itoa(db)), "select")
		var keys []string
		for _, k := range c.Do("KEYS", "*").Elems {
			keys = append(keys, k.Str)
		}
		for len(keys) > 0 {
			part := keys[:min(batch, len(keys))]
			keys = keys[len(part):]
			types, replies := readKeys(c, part, reads)
			for i, k := range part {
				r := replies[i]
				ttl := r[len(r)-1].Int > 0
				out[fmt.Sprintf("%d/%s", db, k)] = fmt.Sprintf("%s ttl=%v\n%s", types[i], ttl, datasetContent(types[i], r[:len(r)-1]))
			}
		}
	}
	mustOK(t, c.Do("SELECT", "0"), "select")
	return out
}

// datasetReads are the commands that read a key of type typ for dataset.
func datasetReads(typ, key string) [][]string {
	switch typ {
	case "string":
		return [][]string{{"GET", key}}
	case "list":
		return [][]string{{"LRANGE", key, "0", "-1"}}
	case "hash":
		return [][]string{{"HGETALL", key}}
	case "set":
		return [][]string{{"SMEMBERS", key}}
	case "zset":
		return [][]string{{"ZRANGE", key, "0", "-1", "WITHSCORES"}}
	case "stream":
		return [][]string{{"XRANGE", key, "-", "+"}, {"XLEN", key},
			{"XPENDING", key, "grp"}, {"XPENDING", key, "grp2"}, {"XINFO", "STREAM", key}}
	}
	return nil
}

// datasetContent renders the replies of datasetReads(typ, key) in a form
// that does not depend on the order of hashes and sets.
func datasetContent(typ string, replies []Reply) string {
	switch typ {
	case "string", "list", "zset":
		return replies[0].String()
	case "hash":
		lines := replies[0].Elems
		var pairs []string
		for i := 0; i+1 < len(lines); i += 2 {
			pairs = append(pairs, lines[i].Str+"="+lines[i+1].Str)
		}
		sort.Strings(pairs)
		return strings.Join(pairs, ",")
	case "set":
		var ms []string
		for _, m := range replies[0].Elems {
			ms = append(ms, m.Str)
		}
		sort.Strings(ms)
		return strings.Join(ms, ",")
	case "stream":
		content := replies[0].String() + "\nlen " + replies[1].String()
		for i, g := range []string{"grp", "grp2"} {
			content += "\n" + g + " " + replies[2+i].String()
		}
		info := replies[4].Elems
		for i := 0; i+1 < len(info); i += 2 {
			switch info[i].Str {
			case "last-generated-id", "max-deleted-entry-id", "entries-added", "groups":
				content += "\n" + info[i].Str + " " + info[i+1].String()
			}
		}
		return content
	}
	return ""
}

func compareDatasets(t *testing.T, want, got map[string]string, what string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: empty reference dataset", what)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: key %s missing", what, k)
		} else if g != w {
			t.Errorf("%s: key %s differs:\nwant %.400s\ngot  %.400s", what, k, w, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected key %s", what, k)
		}
	}
}

func TestPersistSaveLoadsInRedis(t *testing.T) {
	needPersistTools(t, "redis-server", "redis-check-rdb")
	dir := t.TempDir()
	d := StartServer(t, "--dir", dir, "--shards", "3")
	c := d.Raw(t)
	for _, db := range persistDBs {
		fillAllTypes(t, c, db)
	}
	want := dataset(t, c, persistDBs)
	if r := c.Do("SAVE"); r.Str != "OK" {
		t.Fatalf("SAVE: %v", r)
	}
	if r := c.Do("LASTSAVE"); r.Int < time.Now().Unix()-60 {
		t.Errorf("LASTSAVE %v", r)
	}
	info := c.Do("INFO", "persistence").Str
	for _, f := range []string{"rdb_last_bgsave_status:ok", "rdb_bgsave_in_progress:0", "loading:0", "rdb_changes_since_last_save:0"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO persistence lacks %q:\n%s", f, info)
		}
	}
	file := filepath.Join(dir, "dump.rdb")
	if out, err := exec.Command("redis-check-rdb", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "RDB looks OK") {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	r := startRedisOn(t, dir, "dump.rdb")
	compareDatasets(t, want, dataset(t, r.Raw(t), persistDBs), "redis-server loading dfly's file")

	// dfly loads its own file at start.
	d.Terminate(10 * time.Second)
	d2 := StartServer(t, "--dir", dir, "--shards", "2")
	compareDatasets(t, want, dataset(t, d2.Raw(t), persistDBs), "dfly reloading its file")
	if !strings.Contains(d2.Output(), "DB loaded from disk") {
		t.Errorf("no load message in the log:\n%s", d2.Output())
	}
}

func TestPersistBgsave(t *testing.T) {
	needPersistTools(t)
	dir := t.TempDir()
	d := StartServer(t, "--dir", dir)
	c := d.Raw(t)
	fillAllTypes(t, c, 0)
	if r := c.Do("BGSAVE"); r.Str != "Background saving started" {
		t.Fatalf("BGSAVE: %v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(c.Do("INFO", "persistence").Str, "rdb_bgsave_in_progress:1") {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err != nil {
		t.Fatal(err)
	}
}

func TestPersistLoadsRedisFile(t *testing.T) {
	needPersistTools(t, "redis-server")
	dir := t.TempDir()
	r := startRedisOn(t, dir, "dump.rdb")
	rc := r.Raw(t)
	for _, db := range persistDBs {
		fillAllTypes(t, rc, db)
	}
	want := dataset(t, rc, persistDBs)
	// A key that expires while the file sits on disk is skipped on load.
	mustOK(t, rc.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0"), "DEBUG SET-ACTIVE-EXPIRE")
	mustOK(t, rc.Do("SET", "gone", "x", "PX", "50"), "SET PX")
	time.Sleep(100 * time.Millisecond)
	mustOK(t, rc.Do("SAVE"), "SAVE")
	d := StartServer(t, "--dir", dir, "--shards", "3")
	compareDatasets(t, want, dataset(t, d.Raw(t), persistDBs), "dfly loading redis-server's file")
}

func TestPersistDebugReload(t *testing.T) {
	needPersistTools(t)
	d := StartServer(t, "--shards", "2")
	c := d.Raw(t)
	for _, db := range persistDBs {
		fillAllTypes(t, c, db)
	}
	want := dataset(t, c, persistDBs)
	if r := c.Do("DEBUG", "RELOAD"); r.Str != "OK" {
		t.Fatalf("DEBUG RELOAD: %v", r)
	}
	compareDatasets(t, want, dataset(t, c, persistDBs), "after DEBUG RELOAD")
}

func TestPersistCorruptFileRefusesStart(t *testing.T) {
	needPersistTools(t)
	dir := t.TempDir()
	d := StartServer(t, "--dir", dir)
	c := d.Raw(t)
	fillAllTypes(t, c, 0)
	mustOK(t, c.Do("SAVE"), "SAVE")
	d.Terminate(10 * time.Second)
	file := filepath.Join(dir, "dump.rdb")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated": data[:len(data)/2],
		"flipped":   append(append(append([]byte(nil), data[:len(data)/3]...), data[len(data)/3]^0x5a), data[len(data)/3+1:]...),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(dflyPath, "--port", strconv.Itoa(freePort(t)), "--dir", dir, "--bind", "127.0.0.1")
			done := make(chan struct{})
			var out []byte
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("dfly started on a corrupt file")
			}
			failOnRace(t, string(out))
			if err == nil {
				t.Fatalf("dfly exited 0 on a corrupt file:\n%s", out)
			}
			if !strings.Contains(string(out), "offset") {
				t.Errorf("error does not name the offset:\n%s", out)
			}
		})
	}
}

func TestPersistDumpRestore(t *testing.T) {
	needPersistTools(t, "redis-server")
	d := StartServer(t, "--shards", "2")
	dc := d.Raw(t)
	fillAllTypes(t, dc, 0)
	r := startRedisOn(t, t.TempDir(), "dump.rdb")
	rc := r.Raw(t)
	want := dataset(t, dc, []int{0})
	keys := dc.Do("KEYS", "*").Elems
	// dfly -> redis
	for _, k := range keys {
		p := dc.Do("DUMP", k.Str)
		if p.IsError() {
			t.Fatalf("DUMP %s: %s", k.Str, p.Str)
		}
		ttl := "0"
		if pt := dc.Do("PTTL", k.Str).Int; pt > 0 {
			ttl = strconv.FormatInt(pt, 10)
		}
		if res := rc.Do("RESTORE", k.Str, ttl, p.Str); res.Str != "OK" {
			t.Fatalf("redis RESTORE %s: %v", k.Str, res)
		}
	}
	compareDatasets(t, want, dataset(t, rc, []int{0}), "redis after RESTORE of dfly's DUMP")
	// redis -> dfly, replacing
	for _, k := range keys {
		p := rc.Do("DUMP", k.Str)
		ttl := "0"
		if pt := rc.Do("PTTL", k.Str).Int; pt > 0 {
			ttl = strconv.FormatInt(pt, 10)
		}
		if res := dc.Do("RESTORE", k.Str, ttl, p.Str); !strings.HasPrefix(res.Str, "BUSYKEY Target key name already exists.") {
			t.Fatalf("RESTORE over an existing key: %v", res)
		}
		if res := dc.Do("RESTORE", k.Str, ttl, p.Str, "REPLACE"); res.Str != "OK" {
			t.Fatalf("dfly RESTORE %s: %v", k.Str, res)
		}
	}
	compareDatasets(t, want, dataset(t, dc, []int{0}), "dfly after RESTORE of redis's DUMP")

	// Errors, worded as Redis words them.
	p := dc.Do("DUMP", "d0:str").Str
	bad := []byte(p)
	bad[len(bad)-1] ^= 1
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"RESTORE", "nk", "0", string(bad)}, "ERR DUMP payload version or checksum are wrong"},
		{[]string{"RESTORE", "nk", "-1", p}, "ERR Invalid TTL value, must be >= 0"},
		{[]string{"RESTORE", "nk", "0", p, "FOO"}, "ERR syntax error"},
		{[]string{"RESTORE", "nk", "0", p, "IDLETIME", "-1"}, "ERR Invalid IDLETIME value, must be >= 0"},
		{[]string{"RESTORE", "nk", "0", p, "FREQ", "300"}, "ERR Invalid FREQ value, must be >= 0 and <= 255"},
	} {
		for _, c := range []*RawConn{dc, rc} {
			if got := c.Do(tc.args...); got.Str != tc.want {
				t.Errorf("%q: got %v, want %q", tc.args[3:], got, tc.want)
			}
		}
	}
	if got := dc.Do("RESTORE", "nk", "0", p, "ABSTTL", "IDLETIME", "10"); got.Str != "OK" {
		t.Errorf("RESTORE ABSTTL IDLETIME: %v", got)
	}
	if got := dc.Do("DUMP", "nosuchkey"); got.Kind != KindNil {
		t.Errorf("DUMP of a missing key: %v", got)
	}
	// RESTORE-ASKING (what a cluster's MIGRATE sends) is RESTORE.
	for _, c := range []*RawConn{dc, rc} {
		if got := c.Do("RESTORE-ASKING", "asked", "0", p); got.Str != "OK" {
			t.Errorf("RESTORE-ASKING: %v", got)
		}
		if got := c.Do("RESTORE-ASKING", "asked", "0", p); !strings.HasPrefix(got.Str, "BUSYKEY") {
			t.Errorf("RESTORE-ASKING of an existing key: %v", got)
		}
		if got := c.Do("GET", "asked"); got.Str != c.Do("GET", "d0:str").Str {
			t.Errorf("RESTORE-ASKING restored %v", got)
		}
	}
}
