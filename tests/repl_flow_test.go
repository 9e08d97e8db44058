package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// dfly → dfly replication over per-shard flows (master/flows.go, replica/flows.go): a
// seeder drives every type (big values, expiries, MULTI/EXEC across shards,
// Lua) against the master while the replica full-syncs and stable-syncs,
// through a proxy that cuts every connection a few times (partial syncs
// from the flows' LSNs); afterwards both sides must hold the same keys,
// values and TTL classes. Equal and different shard counts, PIT and
// non-PIT.
func TestDflyFlowReplication(t *testing.T) {
	needTime(t, 90*time.Second)
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	for _, tc := range []struct {
		name           string
		master, replic int
		pit            bool
		tiered         bool // the master offloads strings (tiered storage)
		race           bool // in the -race pass too (raceSubset)
	}{
		{"pit-4to2", 4, 2, true, false, false},
		{"pit-3to3", 3, 3, true, false, false},
		{"nonpit-2to3", 2, 3, false, false, false}, // non-PIT runs under -race in TestDflyFlowFaults
		{"pit-tiered-2to2", 2, 2, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raceSubset(t, tc.race)
			seed := newSeed(t)
			flags := []string{"--shards", strconv.Itoa(tc.master), "--point_in_time_snapshot=" + strconv.FormatBool(tc.pit)}
			if tc.tiered {
				flags = append(flags, "--tiered_prefix", filepath.Join(t.TempDir(), "tier"), "--tiered_min_value_size", "1")
			}
			master := StartServer(t, flags...)
			mc := master.Raw(t)
			preload(t, mc, 3000)
			if tc.tiered {
				waitOffloaded(t, mc, 1000)
			}
			sd := &seeder{addr: master.Addr, seed: seed, keys: 200, bigEvery: 300, shortTTL: true}
			stop := make(chan struct{})
			wg := sd.run(t, 4, stop)
			time.Sleep(200 * time.Millisecond)
			rep := StartServer(t, "--shards", strconv.Itoa(tc.replic))
			rc := rep.Raw(t)
			px := startProxy(t, master.Addr)
			host, port := splitAddr(t, px.ln.Addr().String())
			mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
			time.Sleep(15 * time.Millisecond)
			px.cut()          // most likely in the middle of the full sync: it starts again
			waitLinkUp(t, rc) // full sync under load
			for i := 0; i < 3; i++ {
				time.Sleep(400 * time.Millisecond)
				px.cut()
				waitLinkUp(t, rc)
			}
			time.Sleep(500 * time.Millisecond)
			close(stop)
			wg.Wait()
			sd.check(t)
			time.Sleep(1500 * time.Millisecond) // short TTLs pass; their DELs follow
			if os.Getenv("DFLY_DEBUG_QUIT") != "" {
				defer rep.cmd.Process.Signal(syscall.SIGQUIT)
			}
			waitDigestsEqual(t, mc, rc)
			noFailedBaseline(t, master)
			full, _ := strconv.Atoi(infoField(mc, "replication", "dfly_flow_syncs_full"))
			partial, _ := strconv.Atoi(infoField(mc, "replication", "dfly_flow_syncs_partial"))
			t.Logf("flow syncs: %d full, %d partial", full, partial)
			if full < 1 || partial < 1 {
				t.Fatalf("want a full sync and partial syncs after the cuts, got %d full, %d partial", full, partial)
			}
			if r := rc.Do("SET", "x", "1"); !r.IsError() || r.Str[:8] != "READONLY" {
				t.Fatalf("a write on the replica: %s", r.String())
			}
			// The master lists the replica as Redis does, once: the
			// sessions the cuts broke are gone.
			_, rport := splitAddr(t, rep.Addr)
			waitFor(t, 10*time.Second, "the master to list its one replica", func() bool {
				return infoField(mc, "replication", "connected_slaves") == "1" &&
					strings.HasPrefix(infoField(mc, "replication", "slave0"), "ip=127.0.0.1,port="+rport+",state=online,")
			})
			if role := mc.Do("ROLE"); len(role.Elems) != 3 || len(role.Elems[2].Elems) != 1 || role.Elems[2].Elems[0].Elems[1].Str != rport {
				t.Fatalf("ROLE on the master: %s", role.String())
			}
		})
	}
}

// splitAddr is net.SplitHostPort, failing the test on a bad address.
func splitAddr(t *testing.T, addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// waitDigestsEqual polls until master and replica digests agree.
func waitDigestsEqual(t *testing.T, mc, rc *RawConn) {
	t.Helper()
	waitDigestsEqualMatch(t, mc, rc, "*")
}

// waitDigestsEqualMatch is waitDigestsEqual over the keys matching pattern.
func waitDigestsEqualMatch(t *testing.T, mc, rc *RawConn, pattern string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, r := digestMatch(t, mc, pattern), digestMatch(t, rc, pattern)
		diff := digestDiff(m, r)
		if len(diff) == 0 {
			if len(m) == 0 {
				t.Fatal("empty dataset")
			}
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(diff)
			missingOnReplica(t, m, r, rc)
			t.Fatalf("digests differ (%d keys on the master, %d on the replica): %s", len(m), len(r), strings.Join(diff[:min(len(diff), 10)], "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// missingOnReplica logs what the replica answers for a few keys its SCAN
// did not return (absent, or hidden as expired?).
func missingOnReplica(t *testing.T, m, r map[string]string, rc *RawConn) {
	t.Helper()
	n := 0
	for k := range m {
		if _, ok := r[k]; ok || n == 5 {
			continue
		}
		n++
		db, key, _ := strings.Cut(k, "/")
		rc.Do("SELECT", db)
		t.Logf("%s on the replica: EXISTS %s, PTTL %s", k, rc.Do("EXISTS", key).String(), rc.Do("PTTL", key).String())
	}
	rc.Do("SELECT", "0")
}

// Faults during a dfly-native full sync: FLUSHALL while the flows send
// their baselines, many keys expiring meanwhile, and the replica killed
// mid-sync and replaced by a new process that syncs again. Each ends with
// equal digests. PIT and non-PIT: a flush is handled differently by each
// (PIT holds the journal until its baseline ends; non-PIT must not).
func TestDflyFlowFaults(t *testing.T) {
	needTime(t, 90*time.Second)
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	for _, pit := range []bool{true, false} {
		t.Run("pit="+strconv.FormatBool(pit), func(t *testing.T) {
			raceSubset(t, !pit)
			flowFaults(t, pit)
		})
	}
}

func flowFaults(t *testing.T, pit bool) {
	seed := newSeed(t)
	master := StartServer(t, "--shards", "3", "--serialization_max_chunk_size", "4kb",
		"--point_in_time_snapshot="+strconv.FormatBool(pit))
	mc := master.Raw(t)
	preload(t, mc, 20000)
	for _, db := range replDBs { // keys that expire while the sync runs
		mustOK(t, mc.Do("SELECT", strconv.Itoa(db)), "select")
		for i := 0; i < 20000; i++ {
			mc.Send("SET", fmt.Sprintf("exp:%d", i), "x", "PX", strconv.Itoa(100+i%400))
		}
		for i := 0; i < 20000; i++ {
			mc.MustRead()
		}
	}
	mustOK(t, mc.Do("SELECT", "0"), "select")
	sd := &seeder{addr: master.Addr, seed: seed, keys: 200, bigEvery: 100, shortTTL: true}
	stop := make(chan struct{})
	wg := sd.run(t, 3, stop)
	host, port := splitAddr(t, master.Addr)

	// A replica killed in the middle of its full sync.
	doomed := StartServer(t, "--shards", "2")
	mustOK(t, doomed.Raw(t).Do("REPLICAOF", host, port), "replicaof")
	time.Sleep(30 * time.Millisecond)
	doomed.Kill()

	rep := StartServer(t, "--shards", "2")
	rc := rep.Raw(t)
	fulls := infoField(mc, "replication", "dfly_flow_syncs_full")
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	for deadline := time.Now().Add(10 * time.Second); infoField(mc, "replication", "dfly_flow_syncs_full") == fulls; {
		if time.Now().After(deadline) {
			t.Fatal("the replica's full sync did not start")
		}
		time.Sleep(time.Millisecond)
	}
	// One db flushed while the walk is in another (db 0 goes first), then
	// all of them.
	mustOK(t, mc.Do("SELECT", "3"), "select")
	mustOK(t, mc.Do("FLUSHDB"), "flushdb during the full sync")
	mustOK(t, mc.Do("SELECT", "0"), "select")
	time.Sleep(100 * time.Millisecond)
	mustOK(t, mc.Do("FLUSHALL"), "flushall during the full sync")
	preload(t, mc, 2000)
	waitLinkUp(t, rc)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	sd.check(t)
	time.Sleep(1500 * time.Millisecond)
	waitDigestsEqual(t, mc, rc)
	noFailedBaseline(t, master)
}

// Two replicas whose full syncs overlap on the master (PIT): each session's
// walk runs at its own consumer's pace, and a newer session's bucket stamps
// must not pass for an older one's captures. Big values make the walks
// drift apart. Both replicas end equal to the master.
func TestDflyFlowTwoReplicas(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	raceSubset(t, false) // the snapshot's unit tests cover it under -race
	seed := newSeed(t)
	master := StartServer(t, "--shards", "2", "--serialization_max_chunk_size", "4kb")
	mc := master.Raw(t)
	preload(t, mc, 5000)
	for i := 0; i < 60; i++ {
		mc.Send("SET", fmt.Sprintf("pre:bigs:%d", i), strings.Repeat(strconv.Itoa(i%10), 100_000+i*1000))
	}
	for i := 0; i < 60; i++ {
		mc.MustRead()
	}
	sd := &seeder{addr: master.Addr, seed: seed, keys: 200, bigEvery: 100, shortTTL: true}
	stop := make(chan struct{})
	wg := sd.run(t, 2, stop)
	host, port := splitAddr(t, master.Addr)
	var rcs []*RawConn
	for i := 0; i < 2; i++ {
		rc := StartServer(t, "--shards", strconv.Itoa(2+i)).Raw(t)
		mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
		rcs = append(rcs, rc)
		time.Sleep(20 * time.Millisecond)
	}
	for _, rc := range rcs {
		waitLinkUp(t, rc)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	sd.check(t)
	time.Sleep(1500 * time.Millisecond)
	for _, rc := range rcs {
		waitDigestsEqual(t, mc, rc)
	}
	noFailedBaseline(t, master)
}

// noFailedBaseline fails the test if the master logged a flow whose
// baseline failed to encode: the replica syncs again and ends equal, which
// would hide the bug.
func noFailedBaseline(t *testing.T, master *Server) {
	t.Helper()
	if out := master.Output(); strings.Contains(out, "the baseline failed") {
		t.Fatal("the master logged a failed baseline (see its output)")
	}
}

// WAIT counts a dfly replica once all its flows acknowledged the master's
// writes.
func TestDflyFlowWait(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	mustOK(t, mc.Do("SET", "a", "1"), "set")
	rep := StartServer(t, "--shards", "3")
	rc := rep.Raw(t)
	host, port := splitAddr(t, master.Addr)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	if r := mc.Do("WAIT", "1", "2000"); r.Int != 1 {
		t.Fatalf("WAIT 1 2000 after the full sync = %s", r.String())
	}
	for i := 0; i < 50; i++ {
		mc.Send("SET", "k"+strconv.Itoa(i), "v")
	}
	for i := 0; i < 50; i++ {
		mc.MustRead()
	}
	if r := mc.Do("WAIT", "1", "2000"); r.Int != 1 {
		t.Fatalf("WAIT 1 2000 after writes = %s", r.String())
	}
	if v := rc.Do("GET", "k49"); v.Str != "v" {
		t.Fatalf("GET k49 on the replica after WAIT = %s", v.String())
	}
	if r := mc.Do("WAIT", "2", "200"); r.Int != 1 {
		t.Fatalf("WAIT 2 200 with one replica = %s", r.String())
	}
}

// DFLY with bad arguments answers errors and leaves the connection usable.
func TestDflyCommandBadInput(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly-only command")
	}
	c := StartServer(t, "--shards", "2").Raw(t)
	for _, args := range [][]string{
		{"DFLY", "NOPE"},
		{"DFLY", "FLOW", "no-such-session", "0", "0"},
		{"DFLY", "HELLO", "extra"},
	} {
		if r := c.Do(args...); !r.IsError() {
			t.Fatalf("%v = %s, want an error", args, r.String())
		}
	}
	hello := c.Do("DFLY", "HELLO")
	if len(hello.Elems) != 4 {
		t.Fatalf("DFLY HELLO = %s", hello.String())
	}
	for _, args := range [][]string{
		{"DFLY", "FLOW", hello.Elems[2].Str, "99", "0"},
		{"DFLY", "FLOW", hello.Elems[2].Str, "0", "-1"},
		{"DFLY", "FLOW", hello.Elems[2].Str, "x", "0"},
	} {
		if r := c.Do(args...); !r.IsError() {
			t.Fatalf("%v = %s, want an error", args, r.String())
		}
	}
	if r := c.Do("DFLY", "FLOW", hello.Elems[2].Str, "0", "0", "NOPE"); r.Str != "ERR syntax error" {
		t.Fatalf("DFLY FLOW with an unknown option = %s, want a syntax error", r.String())
	}
	if r := c.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING after bad DFLY calls = %s", r.String())
	}
}

// A dfly master restarted under a dfly replica: killed (as a crash) and
// started again on the same port from its last save, with a new
// replication id. The replica reconnects, full-syncs the restarted
// dataset (its old LSNs mean nothing to the new master), then follows new
// writes; digests end equal.
func TestDflyFlowMasterRestart(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	// 18 s under the race build; there TestDflyFlowFaults takes the
	// replica's reconnect and full-sync-again paths.
	raceSubset(t, false)
	seed := newSeed(t)
	master := StartServer(t, "--shards", "2", "--dir", t.TempDir())
	mc := master.Raw(t)
	preload(t, mc, 2000)
	host, port := splitAddr(t, master.Addr)
	rep := StartServer(t, "--shards", "3")
	rc := rep.Raw(t)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	seedFor(t, &seeder{addr: master.Addr, seed: seed, keys: 200, bigEvery: 300}, 500*time.Millisecond)
	oldID := infoField(mc, "replication", "master_replid")
	mustOK(t, mc.Do("SAVE"), "save")
	// Writes after the save die with the master.
	mustOK(t, mc.Do("SET", "lost:after-save", "x"), "set")
	waitDigestsEqual(t, mc, rc)

	killServer(master)
	master = restartServer(t, master)
	mc = master.Raw(t)
	if id := infoField(mc, "replication", "master_replid"); id == oldID {
		t.Fatalf("the restarted master kept replication id %s", id)
	}
	if r := mc.Do("EXISTS", "lost:after-save"); r.Int != 0 {
		t.Fatal("the restarted master has a write made after its last save")
	}
	waitFor(t, 30*time.Second, "the replica to drop the lost write", func() bool {
		return rc.Do("EXISTS", "lost:after-save").Int == 0 && infoField(rc, "replication", "master_link_status") == "up"
	})
	seedFor(t, &seeder{addr: master.Addr, seed: seed + 1, keys: 200, bigEvery: 300, shortTTL: true}, 700*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // short TTLs pass; their DELs follow
	waitDigestsEqual(t, mc, rc)
	if v := infoField(rc, "replication", "master_replid"); v == oldID {
		t.Fatalf("the replica still follows replication id %s", v)
	}
}

// A dfly master with a password: the replica's flows authenticate with
// --masterauth (the handshake and every flow connection); without it the
// link stays down and says why.
func TestDflyFlowAuth(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	master := StartServer(t, "--shards", "2", "--requirepass", "s3cret")
	mc := master.Raw(t)
	mustOK(t, mc.Do("AUTH", "s3cret"), "auth")
	preload(t, mc, 500)
	host, port := splitAddr(t, master.Addr)

	noPass := StartServer(t, "--shards", "2")
	nc := noPass.Raw(t)
	mustOK(t, nc.Do("REPLICAOF", host, port), "replicaof")
	time.Sleep(time.Second)
	if v := infoField(nc, "replication", "master_link_status"); v != "down" {
		t.Fatalf("a replica without masterauth: master_link_status %s", v)
	}
	if n := nc.Do("DBSIZE").Int; n != 0 {
		t.Fatalf("a replica without masterauth loaded %d keys", n)
	}

	rep := StartServer(t, "--shards", "3", "--masterauth", "s3cret")
	rc := rep.Raw(t)
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	mustOK(t, mc.Do("SET", "after", "sync"), "set")
	waitDigestsEqual(t, mc, rc)
	if v := infoField(mc, "replication", "dfly_flow_syncs_full"); v != "1" {
		t.Fatalf("dfly_flow_syncs_full = %q: the replica did not sync over flows", v)
	}
}

// seedFor runs sd with two clients for d, then checks it met no errors.
func seedFor(t *testing.T, sd *seeder, d time.Duration) {
	t.Helper()
	stop := make(chan struct{})
	wg := sd.run(t, 2, stop)
	time.Sleep(d)
	close(stop)
	wg.Wait()
	sd.check(t)
}

// A flow's baseline uses blob chunks only for a replica that asks for them
// (DFLY FLOW ... BLOBS): one built before them reads strings compressed
// value by value, as it always did.
func TestDflyFlowBlobsOnRequest(t *testing.T) {
	t.Parallel()
	master, mc := populatedMaster(t, "1")
	for _, blobs := range []bool{false, true} {
		hello := mc.Do("DFLY", "HELLO")
		if len(hello.Elems) != 4 {
			t.Fatalf("DFLY HELLO = %s", hello.String())
		}
		fc := DialRaw(t, master.Addr)
		args := []string{"DFLY", "FLOW", hello.Elems[2].Str, "0", "0"}
		if blobs {
			args = append(args, "BLOBS")
		}
		fc.Send(args...)
		fc.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := fc.reader.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "+FULLSYNC") {
			t.Fatalf("%v: %q, %v", args, line, err)
		}
		ops := map[byte]int{}
		var hdr [9]byte
		for {
			if _, err := io.ReadFull(fc.reader, hdr[:]); err != nil {
				t.Fatalf("%v: reading the baseline: %v", args, err)
			}
			n := binary.LittleEndian.Uint32(hdr[5:])
			if _, err := io.CopyN(io.Discard, fc.reader, int64(n)); err != nil {
				t.Fatalf("%v: reading a chunk: %v", args, err)
			}
			ops[hdr[0]]++
			if hdr[0] == 0xD3 { // OpFullSyncCut
				break
			}
		}
		fc.conn.Close()
		blobChunks := ops[0xD4] + ops[0xD5] // OpZstdBlob, OpS2Blob
		t.Logf("BLOBS=%v: chunk opcodes %v", blobs, ops)
		if blobs && blobChunks == 0 {
			t.Fatalf("BLOBS asked, yet no blob chunk in the baseline: %v", ops)
		}
		if !blobs && blobChunks != 0 {
			t.Fatalf("a replica that did not ask for BLOBS got %d blob chunks", blobChunks)
		}
		if !blobs && ops[0xD1] == 0 { // OpChunkEnd: plain records
			t.Fatalf("no record chunk in the baseline: %v", ops)
		}
	}
}

// A master from before blob chunks refuses DFLY FLOW ... BLOBS as an
// unknown subcommand (played here by a proxy): the replica asks again
// without it and syncs.
func TestDflyFlowOlderMaster(t *testing.T) {
	t.Parallel()
	master, mc := populatedMaster(t, "2")
	var refused atomic.Int32
	px := startFilterProxy(t, master.Addr, func(b []byte) []byte {
		if bytes.Contains(b, []byte("$5\r\nBLOBS\r\n")) {
			refused.Add(1)
			return []byte("-ERR unknown subcommand 'FLOW'. Try DFLY HELLO.\r\n")
		}
		return nil
	})
	rep := StartServer(t, "--shards", "3")
	rc := rep.Raw(t)
	host, port := splitAddr(t, px.ln.Addr().String())
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	if refused.Load() == 0 {
		t.Fatal("the replica never asked for BLOBS")
	}
	mustOK(t, mc.Do("SET", "after", "sync"), "set")
	waitDigestsEqual(t, mc, rc)
}

// populatedMaster starts a dfly master with shards shards and 5000 keys of
// 100 bytes; it skips the test against Redis.
func populatedMaster(t *testing.T, shards string) (*Server, *RawConn) {
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	master := StartServer(t, "--shards", shards)
	mc := master.Raw(t)
	mustOK(t, mc.Do("DEBUG", "POPULATE", "5000", "key", "100"), "populate")
	return master, mc
}

// TestDflyFlowHeartbeat: an idle flow carries a heartbeat, so a replica
// with a short repl-timeout keeps a quiet link and its
// master_last_io_seconds_ago stays small; a master that goes silent (the
// network drops everything, nothing is closed) is given up after
// repl-timeout and the replica reconnects, resuming with a partial sync.
func TestDflyFlowHeartbeat(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly only: replication flows")
	}
	master := StartServer(t, "--shards", "2")
	mc := master.Raw(t)
	rep := StartServer(t, "--shards", "2", "--repl_timeout", "2")
	rc := rep.Raw(t)
	px := startProxy(t, master.Addr)
	host, port := splitAddr(t, px.ln.Addr().String())
	mustOK(t, mc.Do("SET", "before", "1"), "set")
	mustOK(t, rc.Do("REPLICAOF", host, port), "replicaof")
	waitLinkUp(t, rc)
	syncs := func() string {
		return infoField(mc, "replication", "dfly_flow_syncs_full") + "/" + infoField(mc, "replication", "dfly_flow_syncs_partial")
	}
	before := syncs()
	time.Sleep(5 * time.Second) // idle: 2.5 timeouts
	if now := syncs(); now != before || strings.Contains(rep.Output(), "MASTER timeout") {
		t.Fatalf("an idle link timed out: syncs %s -> %s\n%s", before, now, rep.Output())
	}
	if v, _ := strconv.Atoi(infoField(rc, "replication", "master_last_io_seconds_ago")); v > 1 {
		t.Fatalf("master_last_io_seconds_ago = %d on an idle link", v)
	}
	px.stall()
	mustOK(t, mc.Do("SET", "after", "2"), "set")
	waitFor(t, 20*time.Second, "the replica to give up the silent link and resync", func() bool {
		return strings.Contains(rep.Output(), "MASTER timeout") && rc.Do("GET", "after").Str == "2"
	})
	if p, _ := strconv.Atoi(infoField(mc, "replication", "dfly_flow_syncs_partial")); p < 1 {
		t.Fatalf("want a partial sync after the timeout, syncs %s\n%s\n%s", syncs(), rep.Output(), master.Output())
	}
}

// TestDflyFlowJournalGap: the journal stops recording when nothing needs
// it (the Redis-protocol backlog expired after --repl_backlog_ttl and no
// flow is attached). A dfly replica cut off over that time must not
// continue from its LSN as if nothing had been written since: the writes
// made while nothing recorded are in no backlog. (The replication id
// changes when the backlog goes, so the replica's HELLO finds another
// history and it takes a full sync.)
func TestDflyFlowJournalGap(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	g := startGapPair(t)
	// A Redis-protocol replica comes and goes: its feed keeps a backlog
	// until --repl_backlog_ttl passes without one.
	rr := DialRaw(t, g.master.Addr)
	rr.Send("PSYNC", "?", "-1")
	if line, err := rr.reader.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Fatalf("PSYNC: %q %v", line, err)
	}
	waitFor(t, 5*time.Second, "the backlog", func() bool { return infoField(g.mc, "replication", "repl_backlog_active") == "1" })
	rr.Close()
	mustOK(t, g.mc.Do("SET", "before", "1"), "set")
	waitUntil(t, 10*time.Second, "the write before the cut on the replica", func() bool { return g.rc.Do("GET", "before").Str == "1" })

	g.cutOff(t)
	waitFor(t, 10*time.Second, "the backlog to expire", func() bool { return infoField(g.mc, "replication", "repl_backlog_active") == "0" })
	g.writeAndReconnect(t)
}

// gapPair is a dfly master (--repl_backlog_ttl 1s, 100 keys) and a dfly
// replica of it linked through a proxy that can refuse the replica.
type gapPair struct {
	master *Server
	mc, rc *RawConn
	down   atomic.Bool
	px     *proxy
}

func startGapPair(t *testing.T, replicaArgs ...string) *gapPair {
	g := &gapPair{master: StartServer(t, "--shards", "2", "--repl_backlog_ttl", "1s")}
	g.mc = g.master.Raw(t)
	for i := range 100 {
		mustOK(t, g.mc.Do("SET", "k"+strconv.Itoa(i), "v"), "set")
	}
	g.px = startFilterProxy(t, g.master.Addr, func([]byte) []byte {
		if g.down.Load() {
			return []byte("-ERR the network is down\r\n")
		}
		return nil
	})
	rep := StartServer(t, append([]string{"--shards", "3"}, replicaArgs...)...)
	g.rc = rep.Raw(t)
	replicaOf(t, rep, g.px.ln.Addr().String())
	waitReplicaLinkUp(t, rep, 30*time.Second)
	return g
}

// cutOff cuts the replica's link and refuses it until writeAndReconnect.
func (g *gapPair) cutOff(t *testing.T) {
	g.down.Store(true)
	g.px.cut()
	waitUntil(t, 10*time.Second, "the replica's link to go down", func() bool {
		return info(t, g.rc, "replication")["master_link_status"] == "down"
	})
}

// writeAndReconnect writes on the master while the replica is away, lets
// it back and checks that it got those writes: it did not continue from
// its LSNs past writes no journal recorded.
func (g *gapPair) writeAndReconnect(t *testing.T) {
	for i := range 50 {
		mustOK(t, g.mc.Do("SET", "gap"+strconv.Itoa(i), "1"), "set")
	}
	mustOK(t, g.mc.Do("DEL", "k0"), "del")
	g.down.Store(false)
	waitUntil(t, 30*time.Second, "the replica's link to come back", func() bool {
		return info(t, g.rc, "replication")["master_link_status"] == "up"
	})
	mustOK(t, g.mc.Do("SET", "after", "1"), "set")
	waitUntil(t, 10*time.Second, "the write after the reconnect on the replica", func() bool { return g.rc.Do("GET", "after").Str == "1" })
	if got, want := g.rc.Do("DBSIZE").Int, g.mc.Do("DBSIZE").Int; got != want || g.rc.Do("EXISTS", "gap49").Int != 1 || g.rc.Do("EXISTS", "k0").Int != 0 {
		t.Fatalf("the replica holds %d keys (gap49 %v, k0 %v), the master %d: it continued past writes no journal recorded",
			got, g.rc.Do("EXISTS", "gap49"), g.rc.Do("EXISTS", "k0"), want)
	}
}

// TestDflyFlowJournalExpiry: the journals kept for dfly replicas stop once
// none has been attached for --repl_backlog_ttl (as Redis frees its
// backlog), on a master and on a promoted replica; a replica that comes
// back after that syncs in full and gets the writes made meanwhile.
func TestDflyFlowJournalExpiry(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("dfly-native replication")
	}
	g := startGapPair(t, "--repl_backlog_ttl", "1s")
	mc, rc := g.mc, g.rc
	if got := infoField(mc, "replication", "dfly_journal_active"); got != "1" {
		t.Fatalf("dfly_journal_active %q with a replica attached", got)
	}
	replid := infoField(mc, "replication", "master_replid")
	g.cutOff(t)
	waitFor(t, 10*time.Second, "the journals to stop", func() bool {
		return infoField(mc, "replication", "dfly_journal_active") == "0"
	})
	if infoField(mc, "replication", "master_replid") == replid {
		t.Error("the replication id stayed when the journals stopped")
	}
	g.writeAndReconnect(t)
	if full := infoField(mc, "replication", "dfly_flow_syncs_full"); full != "2" {
		t.Errorf("%s full syncs, want 2 (the second after the journals stopped)", full)
	}

	// A promoted replica journals from its promotion (DFLY HANDOVER) until
	// the same time has passed without a replica of its own.
	mustOK(t, rc.Do("REPLICAOF", "NO", "ONE"), "replicaof no one")
	if got := infoField(rc, "replication", "dfly_journal_active"); got != "1" {
		t.Fatalf("dfly_journal_active %q on the promoted replica", got)
	}
	waitFor(t, 10*time.Second, "the promoted replica's journals to stop", func() bool {
		return infoField(rc, "replication", "dfly_journal_active") == "0"
	})
	mustOK(t, rc.Do("SET", "x", "1"), "set on the promoted replica")
}
