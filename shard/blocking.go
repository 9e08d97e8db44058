package shard

import (
	"strings"
	"sync/atomic"
)

// Blocked clients (BLPOP, BZPOPMIN, XREAD BLOCK ...) wait on keys. A shard
// keeps, per key it owns, the FIFO of clients blocked on it. Every
// insertion, in-place update or deletion of such a key (any command: a
// push, a RENAME into the key, a transaction's step, a DEL or an expiry,
// which ends an XREADGROUP's wait) marks the key ready; after
// the message that changed it, and after a transaction releases its lock on
// it, the shard offers the key to its blocked clients in arrival order
// until one declines (the key ran dry or has the wrong type).
//
// A client blocked on keys of several shards is one Blocker registered on
// each; Claim makes sure only one shard serves it.

// Blocker states.
const (
	BlockWaiting int32 = iota
	BlockServed
	BlockCancelled // timed out, or the client went away
)

// Blocker is one blocked client.
type Blocker struct {
	state atomic.Int32
	// Serve runs on the shard goroutine when key (in db) may satisfy the
	// client. It must check, without changing anything, whether it can be
	// served; if so call Claim, and only when Claim succeeds change the data
	// and write the reply, then report true. It reports false otherwise.
	Serve func(s *Shard, db *DB, key string) bool
	// Done is closed by the shard that served the client.
	Done chan struct{}
}

// NewBlocker makes a waiting blocker.
func NewBlocker(serve func(s *Shard, db *DB, key string) bool) *Blocker {
	return &Blocker{Serve: serve, Done: make(chan struct{})}
}

// Claim moves the blocker from waiting to served; false if another shard
// served it first or it was cancelled.
func (b *Blocker) Claim() bool { return b.state.CompareAndSwap(BlockWaiting, BlockServed) }

// Cancel moves a waiting blocker to cancelled; false if it was served.
func (b *Blocker) Cancel() bool { return b.state.CompareAndSwap(BlockWaiting, BlockCancelled) }

// Waiting reports whether the blocker is still waiting.
func (b *Blocker) Waiting() bool { return b.state.Load() == BlockWaiting }

type blockKey struct {
	db  int
	key string
}

type blockState struct {
	blocked map[blockKey][]*Blocker
	ready   map[blockKey]struct{}
	serving bool
}

// Block registers b on key; called on the shard goroutine, normally while
// the caller holds the key's lock so no change can slip in between its
// check of the key and this registration.
func (s *Shard) Block(db int, key string, b *Blocker) {
	if s.block.blocked == nil {
		s.block.blocked = map[blockKey][]*Blocker{}
		s.block.ready = map[blockKey]struct{}{}
	}
	k := blockKey{db, key}
	s.block.blocked[k] = append(s.block.blocked[k], b)
}

// Unblock removes b from key's queue (after it was served elsewhere, timed
// out or disconnected).
func (s *Shard) Unblock(db int, key string, b *Blocker) {
	k := blockKey{db, key}
	q := s.block.blocked[k]
	for i, x := range q {
		if x == b {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.block.blocked, k)
		delete(s.block.ready, k)
	} else {
		s.block.blocked[k] = q
	}
}

// BlockedKeys is the number of keys with blocked clients.
func (s *Shard) BlockedKeys() int { return len(s.block.blocked) }

// signal marks key ready if clients are blocked on it.
func (s *Shard) signal(db int, key string) {
	if len(s.block.blocked) == 0 {
		return
	}
	k := blockKey{db, key}
	if _, ok := s.block.blocked[k]; ok {
		k.key = strings.Clone(key) // key may alias a request buffer
		s.block.ready[k] = struct{}{}
	}
}

// serveReady offers ready keys to their blocked clients. A key locked by
// a transaction waits until the lock is released, so a blocked client
// never sees the middle of a transaction.
func (s *Shard) serveReady() {
	// Under a hold of the whole shard (SWAPDB, DEBUG RELOAD) every key is
	// locked: the keys stay ready until its Release, which serves them
	// after the transaction's journal commit (a pop journaled before the
	// commit would reach replicas before the change that fed it). Under a
	// shared hold of the whole shard nothing writes it: a pop would change
	// a key that a transaction is reading.
	if len(s.block.ready) == 0 || s.block.serving || s.Locks.allHeld || s.Locks.allShared > 0 {
		return
	}
	s.block.serving = true
	defer func() { s.block.serving = false }()
	for len(s.block.ready) > 0 {
		progressed := false
		for k := range s.block.ready {
			delete(s.block.ready, k)
			if st := s.Locks.state(k.db, k.key); st != nil && (st.excl || st.shared > 0) {
				continue // re-signalled on release
			}
			db := s.DBs[k.db]
			for {
				q := s.block.blocked[k]
				if len(q) == 0 {
					delete(s.block.blocked, k)
					break
				}
				b := q[0]
				if !b.Waiting() {
					s.block.blocked[k] = q[1:]
					continue
				}
				if !b.Serve(s, db, k.key) {
					break
				}
				s.block.blocked[k] = s.block.blocked[k][1:]
				close(b.Done)
				progressed = true
			}
			if len(s.block.blocked[k]) == 0 {
				delete(s.block.blocked, k)
			}
		}
		if !progressed {
			// Keys a serve re-signalled without serving anyone stay
			// quiet until their next change.
			clear(s.block.ready)
		}
	}
}
