package server

// Tiered storage (issue #9, docs/DESIGN.md §7): with --tiered_prefix, each shard
// keeps large string values in a backing file (package tiered) when memory
// runs short, and reads them back without blocking the shard. Package
// offload decides what to offload and moves values there and back, and
// holds the serializers' view of them; the server holds the wiring (this
// file) and what needs its dispatch:
//
//   - Loading: before a connection's batch runs a command on a shard
//     (shardBatch.exec), tierBefore looks its keys up; when one is
//     external and the command reads string bytes, it issues the reads
//     (for the next commands of the batch too), parks the batch and
//     resumes it when the last read is back (posted to the shard by
//     shard.Send). A read-only command then runs on the bytes in place and
//     the value becomes external again afterwards (GET does not undo the
//     offloading); any other command keeps the value in memory and frees
//     its space, with a copy of the bytes (shared with other readers),
//     but for a value over 1 MiB: that one is read by a private read of
//     the batch (tiered.Store.ReadPrivate) whose bytes become the value,
//     so no step copies a big value (nor allocates its buffer: the I/O
//     pool does). Commands that need no bytes (SET, DEL, EXISTS, TTL,
//     EXPIRE, STRLEN ...) run on the external value as it is.
//   - Ordering: a read pins its segment (tiered.Store), and the batch
//     retains the segments it read until it resumed, so space is reused
//     only after the reads and their users are done; a resumed batch looks
//     every key up again, so a write or delete that ran while it waited is
//     seen (a value no longer at the segment read is read anew).
//   - A multi-shard command (coordinator) first has the offloaded values
//     of its keys loaded into memory by their shards, asynchronously, and
//     waits for that on its own goroutine (tierPreload, tierPins); the
//     keys stay pinned, never offloaded again, until the command is done
//     (offload.Shard.Pin). For EXEC the keys are those of the queued
//     commands, for a script its declared keys (the only ones it may
//     touch); their nested commands then find every value in memory, and
//     those that read no bytes run with Find's loading off (runQueued). A
//     read that fails fails the command (command.ErrTierRead), as in a
//     batch, instead of leaving the value to Find's blocking load. A
//     script or EXEC confined to one shard runs inside a batch, which
//     loads all its keys first (tierBefore); a script the batch hands to a
//     coordinator (script.Run.Demote, the inline budget) has them loaded
//     and pinned again there (Coord.runMulti), as they may be offloaded
//     meanwhile.
//   - SORT reads offloaded BY/GET pattern values asynchronously between
//     its steps, on a coordinator that waits for them (family/sort.go). SORT
//     itself always takes a coordinator; a script that may call it does
//     too, with tiering, instead of running on a shard's goroutine, which
//     cannot wait: confined to a shard, inside an EXEC on one shard, or in
//     a step of a coordinator's EXEC (evalCoordinate). A script may call
//     SORT when its text names it (script.MentionsSort) or when a command
//     it calls is not named by a literal (script.Script.MaySort:
//     redis.call(ARGV[1], ...), an alias of redis.call, _G ...). Should a
//     script still reach SORT inline (a construct that check missed),
//     that call sends its later runs to a coordinator (scriptCall.Call), and
//     an offloaded pattern value stops the script if it has not written
//     yet, to run again on a coordinator (script.Run.Demote).
//   - A replica applying its master's single-shard commands loads the
//     values a command reads first, parking its apply batch
//     (tierApplyLoad); its multi-shard commands and transactions are
//     preloaded and pinned like a coordinator's, the applier's goroutine
//     waiting (replicaTier.Preload). A failed read is tried again
//     later (tierRetry), the apply waiting: the master's command cannot
//     fail. Commands that read no bytes run with Find's loading off.
//   - DB.Find's blocking load (tiered_sync_loads) is left to no command
//     path: only to the inline SORT that the script check above would
//     have missed, when it meets an offloaded pattern value after its
//     script has written, or inside an EXEC (which cannot hand the
//     script to a coordinator), at most once per script.
//   - Snapshots read offloaded values through offload.Loader; DEBUG
//     RELOAD through offload.ReadAhead (serializeAsync).

import (
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/tiered"
)

// tierPrefetchCmd: commands of a batch whose reads are issued together.
const tierPrefetchCmd = 64

// openTierFile opens a backing file; tests replace it to inject errors.
var openTierFile = func(path string) (tiered.File, error) { return tiered.OpenFile(path) }

// setupTiered opens a backing file per shard (PREFIX-NNNN) and installs
// the offloaders. A failure is logged and leaves tiering off.
func (s *Server) setupTiered() {
	prefix := s.cfg.TieredPrefix
	if prefix == "" {
		return
	}
	ts, err := offload.Open(offload.Config{
		Prefix:           prefix,
		MinValueSize:     s.cfg.TieredMinValueSize,
		OffloadThreshold: s.cfg.TieredOffloadThreshold,
		MaxFileSize:      s.cfg.TieredMaxFileSize,
		MaxMemory:        s.maxMemory,
		Warnf:            s.log.Warnf,
		Open:             openTierFile,
	}, s.shards)
	if err != nil {
		s.log.Warnf("tiered storage disabled: %v", err)
		return
	}
	s.tiered = ts
	s.log.Noticef("tiered storage on %s-NNNN, values of %d bytes and more", prefix, s.cfg.TieredMinValueSize)
}

// startTiered runs the offload ticker once the shards are attached to
// their loops; it closes and removes the files when the server stops.
func (s *Server) startTiered() {
	if s.tiered != nil {
		s.tiered.Start(s.done)
	}
}

func (s *Server) maxMemory() int64 {
	s.cfg.Mu.RLock()
	defer s.cfg.Mu.RUnlock()
	return s.cfg.MaxMemory
}
