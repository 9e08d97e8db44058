package shard

import (
	"strings"
	"sync/atomic"
)

// Watch is one client's WATCH: any change to a watched key — a write, a
// deletion, an expiry, a FLUSHDB/FLUSHALL of its database — marks it
// dirty, and a dirty Watch makes EXEC fail. Registrations live on the
// shards owning the keys; Dirty is read by the client's EXEC.
type Watch struct {
	dirty atomic.Bool
}

// Dirty reports whether a watched key changed.
func (w *Watch) Dirty() bool { return w.dirty.Load() }

// MarkDirty fails the transaction (used when a watch cannot be kept).
func (w *Watch) MarkDirty() { w.dirty.Store(true) }

type watchState struct {
	keys map[blockKey][]*Watch
	dbs  map[int]int // number of watched keys per db, for flushes
}

// AddWatch registers w on key; called on the shard goroutine.
func (s *Shard) AddWatch(db int, key string, w *Watch) {
	if s.watch.keys == nil {
		s.watch.keys = map[blockKey][]*Watch{}
		s.watch.dbs = map[int]int{}
	}
	k := blockKey{db, strings.Clone(key)}
	s.watch.keys[k] = append(s.watch.keys[k], w)
	s.watch.dbs[db]++
}

// RemoveWatch unregisters w from key.
func (s *Shard) RemoveWatch(db int, key string, w *Watch) {
	k := blockKey{db, key}
	q := s.watch.keys[k]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			s.watch.dbs[db]--
			break
		}
	}
	if len(q) == 0 {
		delete(s.watch.keys, k)
	} else {
		s.watch.keys[k] = q
	}
}

// touched marks the watchers of key dirty.
func (s *Shard) touched(db int, key string) {
	if s.quiet > 0 {
		return
	}
	s.tracking.Changed(key) // CLIENT TRACKING (tracking.go)
	if len(s.watch.keys) == 0 {
		return
	}
	for _, w := range s.watch.keys[blockKey{db, key}] {
		w.dirty.Store(true)
	}
}

// Quiet turns off (on) or back on (off) what touched does, around a
// command whose writes Redis 7.0 does not signal as key changes: a
// consumer group's state (XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM,
// XSETID), a BITFIELD whose writes all failed. WATCH and CLIENT TRACKING
// then see no change; the journal, snapshots and blocked clients still do.
// Calls nest.
func (s *Shard) Quiet(on bool) {
	if on {
		s.quiet++
	} else {
		s.quiet--
	}
}

// flushed marks dirty the watchers of db's keys that hold a value (an
// expired one not yet deleted too), before db is emptied: as in Redis 7,
// a flush changes nothing for a key watched while absent, and EXEC then
// runs.
func (s *Shard) flushed(db *DB) {
	s.tracking.Flushed()
	if s.watch.dbs[db.Index] == 0 {
		return
	}
	for k, ws := range s.watch.keys {
		if k.db == db.Index && db.Table.Find(k.key).Valid() {
			for _, w := range ws {
				w.dirty.Store(true)
			}
		}
	}
}
