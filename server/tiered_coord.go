package server

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
)

// Tiered storage for coordinated commands: the offloaded values a
// command on a coordinator reads are loaded and pinned in memory before it
// runs (tierPreload), and INFO's tiered section. See tiered.go.

// tieredInfo writes INFO's tiered section, summed over the shards:
// entries/entries_bytes: values offloaded now and their lengths;
// allocated_bytes, file_size: the allocators' view of the files;
// truncations: files shrunk to a free tail; reads:
// ReadAt calls, shared_reads: reads that joined one in flight; read_serves:
// read-only commands served from a read (value left offloaded); loads /
// sync_loads: values loaded back into memory asynchronously / by Find's
// blocking fallback; serializer_reads: reads by SAVE, BGSAVE, full syncs
// and DEBUG RELOAD, serializer_sync_reads: those of them that blocked
// (tierView); writes, written_bytes: write jobs done; pending_*: I/O in
// flight; read_errors, write_errors: failures (a write error or a full
// file leaves the values in memory); max_step_us: the longest offload step
// (wall time, so it includes time the goroutine was descheduled).
func (s *Server) tieredInfo(field func(string, any)) {
	ts := s.tiered
	if ts == nil {
		field("tiered_enabled", 0)
		return
	}
	type stats struct {
		st                                tiered.Stats
		entries, bytes, file, alloc, step int64
		loads, syncLoads, serves, serial  uint64
		serialSync                        uint64
	}
	all := make([]stats, len(ts.shards))
	s.OnEachShard(func(sh *shard.Shard) {
		t := ts.shards[sh.ID]
		a := t.store.Allocator()
		all[sh.ID] = stats{st: t.store.Stats, entries: t.entries, bytes: t.bytes, file: a.FileSize(),
			alloc: a.Bytes, step: t.stepNanos, loads: t.loads, syncLoads: t.syncLoads, serves: t.readServes,
			serial: t.serialReads, serialSync: t.serialSync}
	})
	var sum stats
	for _, x := range all {
		sum.entries += x.entries
		sum.bytes += x.bytes
		sum.file += x.file
		sum.alloc += x.alloc
		sum.step = max(sum.step, x.step)
		sum.loads += x.loads
		sum.syncLoads += x.syncLoads
		sum.serves += x.serves
		sum.serial += x.serial
		sum.serialSync += x.serialSync
		sum.st.Reads += x.st.Reads
		sum.st.SharedReads += x.st.SharedReads
		sum.st.Writes += x.st.Writes
		sum.st.WrittenBytes += x.st.WrittenBytes
		sum.st.ReadErrors += x.st.ReadErrors
		sum.st.WriteErrors += x.st.WriteErrors
		sum.st.PendingReads += x.st.PendingReads
		sum.st.PendingWrite += x.st.PendingWrite
		sum.st.Truncations += x.st.Truncations
	}
	field("tiered_enabled", 1)
	field("tiered_entries", sum.entries)
	field("tiered_entries_bytes", sum.bytes)
	field("tiered_allocated_bytes", sum.alloc)
	field("tiered_file_size", sum.file)
	field("tiered_truncations", sum.st.Truncations)
	field("tiered_reads", sum.st.Reads)
	field("tiered_shared_reads", sum.st.SharedReads)
	field("tiered_read_serves", sum.serves)
	field("tiered_loads", sum.loads)
	field("tiered_sync_loads", sum.syncLoads)
	field("tiered_serializer_reads", sum.serial)
	field("tiered_serializer_sync_reads", sum.serialSync)
	field("tiered_writes", sum.st.Writes)
	field("tiered_written_bytes", sum.st.WrittenBytes)
	field("tiered_pending_reads", sum.st.PendingReads)
	field("tiered_pending_writes", sum.st.PendingWrite)
	field("tiered_read_errors", sum.st.ReadErrors)
	field("tiered_write_errors", sum.st.WriteErrors)
	field("tiered_max_step_us", sum.step/1000)
}

// tierDBKey is a key of a coordinated command with its database.
type tierDBKey struct {
	db  int
	key string // a copy: unpin runs after the command's arguments are reused
}

// tierPins are the keys whose string bytes a coordinated command reads,
// by shard: load loads their offloaded values into memory and pins them
// (see pin) until unpin, each shard issuing the reads and storing the
// bytes when they arrive while the caller waits on its own goroutine
// (never a shard's).
type tierPins struct {
	srv    *Server
	keys   [][]tierDBKey
	pos    []int
	pinned bool        // load pinned the keys
	failed atomic.Bool // a read failed: the value stays offloaded
}

// tierRetry is how long a replica waits before loading again values whose
// read failed (the retries-th time).
func tierRetry(retries int) time.Duration {
	return min(time.Duration(retries)*100*time.Millisecond, time.Second)
}

// add adds the keys cmd reads the bytes of.
func (p *tierPins) add(db int, cmd *command.Command, args [][]byte) {
	if !cmdNeedsBytes(cmd, args) {
		return
	}
	p.pos = cmd.Keys(p.pos[:0], args)
	for _, i := range p.pos {
		if p.keys == nil {
			p.keys = make([][]tierDBKey, len(p.srv.shards))
		}
		sid := p.srv.ShardOf(args[i])
		p.keys[sid] = append(p.keys[sid], tierDBKey{db, string(args[i])})
	}
}

// load pins the keys (on its first call) and loads their values, waiting
// until they are in memory; false when a read failed (the command must
// then not run: its value is still offloaded, and only a blocking load
// would read it). It may be called again.
func (p *tierPins) load() bool {
	var wg sync.WaitGroup
	pin := !p.pinned
	p.pinned = true
	p.failed.Store(false)
	for sid, ks := range p.keys {
		if len(ks) == 0 {
			continue
		}
		wg.Add(1)
		t := p.srv.tiered.shards[sid]
		t.sh.Send(tierFunc(func() {
			if pin {
				t.pin(ks)
			}
			t.load(ks, func(failed bool) {
				if failed {
					p.failed.Store(true)
				}
				wg.Done()
			})
		}))
	}
	wg.Wait()
	return !p.failed.Load()
}

// unpin unpins what load pinned. The command is done: every step of its
// transactions ran (Tx.Run and Finish wait for them), so each shard
// unpins after the command's last read there.
func (p *tierPins) unpin() {
	for sid, ks := range p.keys {
		if len(ks) == 0 {
			continue
		}
		t := p.srv.tiered.shards[sid]
		t.sh.Send(tierFunc(func() { t.unpin(ks) }))
	}
}

// tierPreload loads the offloaded values of a coordinated command's keys
// into memory before it runs (tierPins). The keys of EXEC are those of its
// queued commands (nested commands of EXEC and scripts run inTx and
// preload nothing: the outer command did). It returns the pinned keys, for
// unpin once the command is done, nil when none; ok=false when a read
// failed (the error is written, the command must not run).
func (x *Coord) tierPreload() (pins *tierPins, ok bool) {
	if x.Srv.tiered == nil || x.Local != nil || x.InTx {
		return nil, true
	}
	p := &tierPins{srv: x.Srv}
	if x.Cmd.Name == "exec" {
		if m, _ := x.execState(); m != nil && !m.dirty {
			for _, q := range m.cmds {
				if q.cmd.Local == nil {
					p.add(q.db, q.cmd, q.args)
				}
			}
		}
	} else {
		p.add(x.DB, x.Cmd, x.Args)
	}
	if p.keys == nil {
		return nil, true
	}
	if !p.load() {
		x.W.Error(command.ErrTierRead)
		return p, false
	}
	return p, true
}

// pin keeps the values of keys in memory until unpin: the offload walk
// skips pinned keys and a write job finishing for one frees its space
// instead of making the value external (Run, written). That, and nothing
// else making a value external (tierAfter only restores values it made
// in-memory within one command), is the invariant that lets a coordinated
// command whose values preload loaded find them all in memory in its
// transaction's steps, with no blocking load (DB.Find's fallback).
func (t *tierShard) pin(keys []tierDBKey) {
	for _, k := range keys {
		t.pins[tierKey(k)]++
	}
}

func (t *tierShard) unpin(keys []tierDBKey) {
	for _, k := range keys {
		tk := tierKey(k)
		if t.pins[tk]--; t.pins[tk] <= 0 {
			delete(t.pins, tk)
		}
	}
	t.unpins++ // the walk may have passed over them: not idle
}

// applyLoad: a replica about to apply a command of its master that reads
// the string bytes of offloaded values loads them first, like tierPreload.
// It reports whether it issued reads; then done runs once they are loaded
// (on the shard goroutine, in the same message, so they are still in
// memory when done applies the command), failed when one is not.
func (t *tierShard) applyLoad(s *shard.Shard, cmd *command.Command, db int, args [][]byte, done func(failed bool)) bool {
	if t.entries == 0 || !cmdNeedsBytes(cmd, args) {
		return false
	}
	var keys []tierDBKey
	for _, i := range cmd.Keys(nil, args) {
		if v := s.DBs[db].Peek(args[i]); v != nil && v.IsExternal() {
			keys = append(keys, tierDBKey{db, string(args[i])})
		}
	}
	if len(keys) == 0 {
		return false
	}
	t.load(keys, done)
	return true
}

// load reads the offloaded values among keys and loads them into memory,
// then calls done (on the shard goroutine, possibly at once); failed: a
// value is still offloaded because its read failed.
func (t *tierShard) load(keys []tierDBKey, done func(failed bool)) {
	if t.entries == 0 {
		done(false)
		return
	}
	var segs []tiered.Segment
	for _, k := range keys {
		if v := t.sh.DBs[k.db].Peek(unsafe.Slice(unsafe.StringData(k.key), len(k.key))); v != nil && v.IsExternal() {
			segs = append(segs, segOf(v))
		}
	}
	if len(segs) == 0 {
		done(false)
		return
	}
	data := make(map[int64][]byte, len(segs))
	var read []tiered.Segment // each segment once (a key may be named twice)
	waiting := 0
	failed := false
	finish := func() {
		for _, k := range keys {
			v := t.sh.DBs[k.db].Peek(unsafe.Slice(unsafe.StringData(k.key), len(k.key)))
			if v == nil || !v.IsExternal() {
				continue
			}
			// Not read: its read failed (a key of a preload is pinned, so
			// it cannot be offloaded again at another segment meanwhile).
			b, ok := data[segOf(v).Off]
			failed = failed || !ok
			if ok && len(b) == v.StrLen() {
				t.loads++
				t.Free(v) // deferred until the Release below
				if len(b) <= tierBigValue {
					b = bytes.Clone(b) // shared with other readers
				}
				v.SetStr(b) // a big value's bytes are a private read's
			}
		}
		for _, g := range read {
			t.store.Release(g)
		}
		done(failed)
	}
	for _, g := range segs {
		if _, dup := data[g.Off]; dup {
			continue
		}
		data[g.Off] = nil
		read = append(read, g)
		waiting++
		t.store.Retain(g)
		cb := func(b []byte, err error) {
			if err != nil {
				t.logErr(err)
				delete(data, g.Off)
			} else {
				data[g.Off] = b
			}
			if waiting--; waiting == 0 {
				finish()
			}
		}
		if g.Len > tierBigValue {
			t.store.ReadPrivate(g, cb) // taken over by finish, not copied
		} else {
			t.store.Read(g, cb)
		}
	}
}
