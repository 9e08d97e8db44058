package server

import (
	"bytes"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
	"github.com/dfly/dfly/tiered/tieredtest"
)

// The offloader's own tests are package offload's; these test the
// server's use of it: coordinators' preloads and a replica's loads.

// tierServer is a one-shard server with tiering on a tieredtest.File, its shard
// running on its own goroutine; offload steps are run by hand.
func tierServer(t *testing.T) (*Server, *offload.Shard, *tieredtest.File) {
	f := &tieredtest.File{}
	old := openTierFile
	openTierFile = func(string) (tiered.File, error) { return f, nil }
	t.Cleanup(func() { openTierFile = old })
	cfg := config.Default()
	cfg.Shards, cfg.Databases = 1, 1
	cfg.TieredPrefix = t.TempDir() + "/tier"
	srv := New(cfg, NewLogger(io.Discard, "notice"))
	if srv.tiered == nil {
		t.Fatal("tiering not set up")
	}
	sh := srv.shards[0]
	sh.Start()
	t.Cleanup(func() { sh.Stop(); srv.tiered.Close() })
	return srv, srv.tiered.Shard(0), f
}

// offloadAll runs steps (each waiting for its writes) until one whole pass
// over the table has been made.
func offloadAll(t *testing.T, srv *Server, ts *offload.Shard) {
	t.Helper()
	for i := 0; i < 40; i++ {
		srv.OnShard(0, func(s *shard.Shard) { ts.Step(s) })
		waitWrites(t, srv, ts)
	}
}

func waitWrites(t *testing.T, srv *Server, ts *offload.Shard) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		var pending int
		srv.OnShard(0, func(*shard.Shard) { pending = ts.Writes() })
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writes never completed")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTieredPreloadReadError: a coordinated command whose preload read
// fails is not run (tierPins.load reports it; the coordinator replies an
// error) rather than left to DB.Find's blocking load; the value stays
// offloaded, and reads again once the disk recovers.
func TestTieredPreloadReadError(t *testing.T) {
	srv, ts, f := tierServer(t)
	want := bytes.Repeat([]byte("r"), 900)
	srv.OnShard(0, func(s *shard.Shard) { s.DBs[0].Insert([]byte("k"), shard.NewString(want)) })
	offloadAll(t, srv, ts)
	appendCmd := srv.table.Lookup([]byte("append"))
	args := [][]byte{[]byte("append"), []byte("k"), []byte("!")}
	for _, readErr := range []error{syscall.EIO, nil} {
		f.Fail(nil, readErr)
		p := &tierPins{srv: srv}
		p.add(0, appendCmd, args)
		if ok := p.load(); ok != (readErr == nil) {
			t.Fatalf("read error %v: load reported ok=%v", readErr, ok)
		}
		srv.OnShard(0, func(s *shard.Shard) {
			v := s.DBs[0].Peek([]byte("k"))
			if v.IsExternal() != (readErr != nil) || ts.Stats().SyncLoads != 0 || ts.PinCount(offload.Key{DB: 0, Key: "k"}) != 1 {
				t.Errorf("read error %v: external %v, sync loads %d, pins %d", readErr, v.IsExternal(), ts.Stats().SyncLoads, ts.PinCount(offload.Key{DB: 0, Key: "k"}))
			}
			if readErr == nil && !bytes.Equal(v.Str(), want) {
				t.Error("loaded other bytes")
			}
		})
		p.unpin()
		srv.OnShard(0, func(*shard.Shard) {
			if ts.Pinned() != 0 {
				t.Errorf("pins left: %d", ts.Pinned())
			}
		})
	}
}

// TestTieredReplicaRetriesFailedRead: a replica applying its master's
// command (alone, or in a block) that reads an offloaded value it fails to
// read waits and reads it again, rather than running the command on a
// value still offloaded or loading it blocking; once the disk recovers the
// command is applied.
func TestTieredReplicaRetriesFailedRead(t *testing.T) {
	srv, ts, f := tierServer(t)
	want := bytes.Repeat([]byte("r"), 900)
	a := (*replicaHost)(srv).NewApplier()
	op := func(args ...string) replica.Op {
		o := replica.Op{DB: 0}
		for _, x := range args {
			o.Args = append(o.Args, []byte(x))
		}
		return o
	}
	for _, block := range []bool{false, true} {
		srv.OnShard(0, func(s *shard.Shard) {
			s.DBs[0].Flush()
			s.DBs[0].Insert([]byte("k"), shard.NewString(want))
		})
		offloadAll(t, srv, ts)
		f.Fail(nil, syscall.EIO)
		ops := []replica.Op{op("append", "k", "!")}
		if block {
			ops = []replica.Op{{Tx: []replica.Op{op("append", "k", "!"), op("set", "other", "x")}}}
		}
		applied := make(chan struct{})
		go func() { a.Apply(ops); close(applied) }()
		time.Sleep(300 * time.Millisecond) // a few failed reads
		select {
		case <-applied:
			t.Fatalf("block %v: applied with the value unread", block)
		default:
		}
		srv.OnShard(0, func(s *shard.Shard) {
			if v := s.DBs[0].Peek([]byte("k")); !v.IsExternal() || ts.Stats().SyncLoads != 0 || ts.Store().Stats.ReadErrors < 2 {
				t.Errorf("block %v: external %v, sync loads %d, read errors %d", block, v.IsExternal(), ts.Stats().SyncLoads, ts.Store().Stats.ReadErrors)
			}
		})
		f.Fail(nil, nil)
		select {
		case <-applied:
		case <-time.After(5 * time.Second):
			t.Fatalf("block %v: not applied after the disk recovered", block)
		}
		srv.OnShard(0, func(s *shard.Shard) {
			if v := s.DBs[0].Peek([]byte("k")); v.IsExternal() || !bytes.Equal(v.Str(), append(want, '!')) {
				t.Errorf("block %v: APPEND applied on other bytes", block)
			}
			if ts.Pinned() != 0 {
				t.Errorf("block %v: pins left %d", block, ts.Pinned())
			}
		})
	}
}
