package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/shard"
)

// Tiered storage for coordinated commands: the offloaded values a
// command on a coordinator reads are loaded and pinned in memory before it
// runs (tierPreload) and a replica's loads. See tiered.go; INFO's tiered
// section sums what each shard's part of INFO read (info.go).

// tierPins are the keys whose string bytes a coordinated command reads,
// by shard: load loads their offloaded values into memory and pins them
// (offload.Shard.Pin) until unpin, each shard issuing the reads and
// storing the bytes when they arrive while the caller waits on its own
// goroutine (never a shard's).
type tierPins struct {
	srv    *Server
	keys   [][]offload.Key
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
			p.keys = make([][]offload.Key, len(p.srv.shards))
		}
		sid := p.srv.ShardOf(args[i])
		p.keys[sid] = append(p.keys[sid], offload.Key{DB: db, Key: string(args[i])})
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
		t := p.srv.tiered.Shard(sid)
		t.Send(func() {
			if pin {
				t.Pin(ks)
			}
			t.LoadKeys(ks, func(failed bool) {
				if failed {
					p.failed.Store(true)
				}
				wg.Done()
			})
		})
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
		t := p.srv.tiered.Shard(sid)
		t.Send(func() { t.Unpin(ks) })
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

// tierApplyLoad: a replica about to apply a command of its master that reads
// the string bytes of offloaded values loads them first, like tierPreload.
// It reports whether it issued reads; then done runs once they are loaded
// (on the shard goroutine, in the same message, so they are still in
// memory when done applies the command), failed when one is not.
func tierApplyLoad(t *offload.Shard, s *shard.Shard, cmd *command.Command, db int, args [][]byte, done func(failed bool)) bool {
	if t.Entries() == 0 || !cmdNeedsBytes(cmd, args) {
		return false
	}
	var keys []offload.Key
	for _, i := range cmd.Keys(nil, args) {
		if v := s.DBs[db].Peek(args[i]); v != nil && v.IsExternal() {
			keys = append(keys, offload.Key{DB: db, Key: string(args[i])})
		}
	}
	if len(keys) == 0 {
		return false
	}
	t.LoadKeys(keys, done)
	return true
}
