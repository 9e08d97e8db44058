package tests

// dfly's own snapshot format (--dbformat dfly: a file per shard and a
// summary), loading it with another shard count, refusing a corrupt
// shard file, and the save schedule (--save).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPersistDflyFormatRoundTrip(t *testing.T) {
	needPersistTools(t)
	dir := t.TempDir()
	d := StartServer(t, "--dir", dir, "--shards", "3", "--dbformat", "dfly")
	c := d.Raw(t)
	if r := c.Do("CONFIG", "GET", "dbformat"); len(r.Elems) != 2 || r.Elems[1].Str != "dfly" {
		t.Fatalf("CONFIG GET dbformat: %v", r)
	}
	for _, db := range persistDBs {
		fillAllTypes(t, c, db)
	}
	// big values that compress (in a blob) and one that does not
	mustOK(t, c.Do("SET", "bigstr", strings.Repeat("compressible ", 2000)), "SET")
	rnd := make([]byte, 20000)
	for i := range rnd {
		rnd[i] = byte(i*7919 + i*i*31 + i>>3)
	}
	mustOK(t, c.Do("SET", "noise", string(rnd)), "SET")
	want := dataset(t, c, persistDBs)
	if r := c.Do("SAVE"); r.Str != "OK" {
		t.Fatalf("SAVE: %v", r)
	}
	for _, f := range []string{"dump-0000.dfs", "dump-0001.dfs", "dump-0002.dfs", "dump-summary.dfs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err == nil {
		t.Error("dbformat dfly wrote dump.rdb")
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "dump-summary.dfs"))
	if !strings.Contains(string(sum), "shards 3") {
		t.Errorf("summary:\n%s", sum)
	}
	d.Terminate(10 * time.Second)

	for _, shards := range []string{"2", "5"} {
		d2 := StartServer(t, "--dir", dir, "--shards", shards, "--dbformat", "dfly")
		c2 := d2.Raw(t)
		compareDatasets(t, want, dataset(t, c2, persistDBs), "dfly files loaded with --shards "+shards)
		if !strings.Contains(d2.Output(), "DB loaded from disk") {
			t.Errorf("no load message in the log:\n%s", d2.Output())
		}
		d2.Terminate(10 * time.Second)
	}
	// Without an RDB file, the summary is loaded whatever --dbformat.
	d3 := StartServer(t, "--dir", dir, "--shards", "1")
	compareDatasets(t, want, dataset(t, d3.Raw(t), persistDBs), "dfly files loaded with --dbformat rdb")
}

func TestPersistDflyCorruptShardRefusesStart(t *testing.T) {
	needPersistTools(t)
	dir := t.TempDir()
	d := StartServer(t, "--dir", dir, "--shards", "2", "--dbformat", "dfly")
	c := d.Raw(t)
	fillAllTypes(t, c, 0)
	mustOK(t, c.Do("SAVE"), "SAVE")
	d.Terminate(10 * time.Second)
	file := filepath.Join(dir, "dump-0001.dfs")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/2] ^= 0x5a
	for name, bad := range map[string][]byte{"flipped": flipped, "missing": nil} {
		t.Run(name, func(t *testing.T) {
			if bad == nil {
				if err := os.Remove(file); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(file, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(dflyPath, "--port", strconv.Itoa(freePort(t)), "--dir", dir, "--bind", "127.0.0.1",
				"--dbformat", "dfly")
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("dfly started on a corrupt shard file")
			}
			failOnRace(t, string(out))
			if err == nil {
				t.Fatalf("dfly exited 0 on a corrupt shard file:\n%s", out)
			}
			if !strings.Contains(string(out), "dump-0001.dfs") {
				t.Errorf("error does not name the file:\n%s", out)
			}
			if bad != nil && !strings.Contains(string(out), "offset") {
				t.Errorf("error does not name the offset:\n%s", out)
			}
		})
	}
}

func TestPersistSaveSchedule(t *testing.T) {
	needPersistTools(t)
	dir := t.TempDir()
	d := StartServer(t, "--dir", dir, "--save", "1 1", "--dbformat", "dfly")
	c := d.Raw(t)
	if r := c.Do("CONFIG", "GET", "save"); len(r.Elems) != 2 || r.Elems[1].Str != "1 1" {
		t.Fatalf("CONFIG GET save: %v", r)
	}
	before := c.Do("LASTSAVE").Int
	mustOK(t, c.Do("SET", "k", "v"), "SET")
	deadline := time.Now().Add(6 * time.Second)
	for c.Do("LASTSAVE").Int <= before {
		if time.Now().After(deadline) {
			t.Fatalf("LASTSAVE did not advance; log:\n%s", d.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "dump-summary.dfs")); err != nil {
		t.Fatal(err)
	}
	// No changes, no more saves; CONFIG SET save "" disables.
	mustOK(t, c.Do("CONFIG", "SET", "save", ""), "CONFIG SET save")
	if r := c.Do("CONFIG", "SET", "save", "1"); !r.IsError() {
		t.Errorf("CONFIG SET save 1: %v", r)
	}
	if r := c.Do("CONFIG", "GET", "save"); len(r.Elems) != 2 || r.Elems[1].Str != "" {
		t.Errorf("CONFIG GET save: %v", r)
	}
	info := c.Do("INFO", "persistence").Str
	if !strings.Contains(info, "loading:0") || !strings.Contains(info, "rdb_changes_since_last_save:0") {
		t.Errorf("INFO persistence:\n%s", info)
	}
}
