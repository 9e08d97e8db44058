package server

import (
	"runtime/metrics"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/script"
	"github.com/dfly/dfly/snapshot"
)

// Over maxmemory, dfly refuses what Redis's noeviction policy refuses
// (with another policy, only while eviction finds nothing to evict): a command that may grow memory
// (denyoom) gets "OOM command not allowed when used memory > 'maxmemory'.",
// and so does every command queued in MULTI but EXEC, DISCARD, QUIT and
// RESET (the transaction then aborts); an EXEC holding a denyoom command
// is itself refused and discarded (cmdExec). Reads and DEL still run.
//
// Used memory is the Go heap's objects (live and not yet swept), as the
// scripts' check (overMaxmemory). Reading it costs a runtime/metrics call,
// too much for every command, so a ticker samples it every oomTick into
// oom, and CONFIG SET refreshes it at once. A replica (it applies its
// master's writes, as Redis's replica-ignore-maxmemory) and a server with
// tiered storage (maxmemory bounds what stays in memory: values are
// offloaded instead) are never over.
const oomTick = 10 * time.Millisecond

// watchMemory keeps oom current until the server stops.
func (s *Server) watchMemory() {
	t := time.NewTicker(oomTick)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.refreshOOM(true)
			s.evictClients() // clientbuf.go
		}
	}
}

// refreshOOM samples used memory against maxmemory into oom. Over it
// with an evicting policy, each shard is asked to evict its share (package
// evict; shard/evict.go) and writes are refused only while a shard finds
// nothing it may evict. Only the watcher (not CONFIG SET, on a loop) asks,
// right after a collection (at most one per evict.Budget.CollectDue), so
// what the shards evict is live data over maxmemory, not garbage, nor the free
// space of packed string chunks (shard.PackedDead: a defragmentation pass
// gives it back, evicting more keys would not).
func (s *Server) refreshOOM(watcher bool) {
	s.cfg.Mu.RLock()
	limit, tiered := s.cfg.MaxMemory, s.cfg.TieredPrefix != ""
	s.cfg.Mu.RUnlock()
	if !watcher {
		reclaim.LimitHeap(limit, tiered) // CONFIG SET maxmemory moves the heap's cap
	}
	over := false
	if limit > 0 && !tiered && !s.isReplica() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(sample)
		used := int64(sample[0].Value.Uint64()) - s.notCountedForEvict()
		over = used > limit
		if over && s.cfg.Evict.Policy() != evict.NoEviction {
			if watcher && s.evictBudget.CollectDue(time.Now()) {
				used = s.evictBudget.Collect(sample) - s.notCountedForEvict() // garbage is not used memory
				for _, sh := range s.shards {
					used -= sh.PackedDead() // nor chunk space evicting more would not free
				}
				if excess := s.evictBudget.Over(used, limit, sample[1].Value.Uint64()); excess > 0 {
					for _, sh := range s.shards {
						sh.RequestEviction(evict.Share(excess, len(s.shards)), &s.evictBudget)
					}
				}
			}
			over = s.evictBudget.Stuck.Load()
		}
	}
	s.oom.Store(over)
	s.refreshGoodReplicas() // repl.go
}

// notCountedForEvict is what the master holds for its replicas and its
// snapshots for their consumers, as Redis's mem_not_counted_for_evict (its
// replicas' output buffers; a fork's copy-on-write is not in its used
// memory either): counted, a full sync under a write load had the master
// evict most of its dataset to make room for the writes queued to the
// replica.
func (s *Server) notCountedForEvict() int64 { return snapshot.Held() + s.master.Buffered() }

// oomRefusal is the OOM error c's command gets, "" when it may run.
func (c *Conn) oomRefusal(cmd *command.Command) string {
	if !c.srv.oom.Load() {
		return ""
	}
	if c.multi != nil {
		switch cmd.Name {
		case "exec", "discard", "quit", "reset":
			return ""
		}
		return script.ErrOOM
	}
	if cmd.Flags&command.FlagDenyOOM != 0 {
		return script.ErrOOM
	}
	return ""
}

// deniesOOM reports whether a queued command may grow memory (EXEC is
// refused over maxmemory then).
func (m *multiState) deniesOOM() bool {
	for _, q := range m.cmds {
		if q.cmd.Flags&command.FlagDenyOOM != 0 {
			return true
		}
	}
	return false
}
