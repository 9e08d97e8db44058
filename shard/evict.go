package shard

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dfly/dfly/dash"
	"github.com/dfly/dfly/evict"
	"github.com/dfly/dfly/notify"
)

// Eviction (package evict holds the policies and the pool): a shard
// evicts only its own keys, on its own goroutine, when the server asks it
// to free its share of the memory over maxmemory (EvictStep). An evicted
// key goes the way an expired one does (dropBypassing): the expiry hooks
// first, so a snapshot that has not covered the key's bucket writes the
// key's value at its cut before the deletion (or defers the DEL), then a
// DEL in the journal, an "evicted" event, evicted_keys.

// LFU reports whether the policy keeps access counters, not times.
func (s *Shard) LFU() bool { return s.Evict != nil && s.Evict.Policy().LFU() }

// sketching: allkeys-tinylfu counts requests in the shard's sketch.
func (s *Shard) sketching() bool { return s.Evict != nil && s.Evict.Policy() == evict.AllKeysTinyLFU }

// keys is the shard's key count, every DB.
func (s *Shard) keys() int {
	n := 0
	for _, db := range s.DBs {
		n += db.Table.Len()
	}
	return n
}

// maxRejected bounds the keys admission turned away and not evicted yet.
const maxRejected = 4096

// admit is allkeys-tinylfu's admission (TinyLFU): while memory is over
// maxmemory (an eviction pass ran in the last second), a key just
// written is weighed against the lesser of two sampled keys of its DB; if
// it was asked for no more often, it is the next to go (rejected), not
// a resident asked for more. A cache that admits every new key lets a
// stream of keys asked for once push out keys asked for often.
func (s *Shard) admit(db *DB, key string) {
	if s.now-s.pressed > 1000 || len(s.rejected) >= maxRejected || db.Table.Len() < 16 {
		return
	}
	est := s.sketch.Estimate(dash.Hash(key))
	victim := uint8(15)
	for i := 0; i < 2; i++ {
		if it := db.Table.Random(rand.Uint64()); it.Valid() && db.Table.Key(it) != key {
			victim = min(victim, s.sketch.Estimate(dash.Hash(db.Table.Key(it))))
		}
	}
	if est <= victim && est < 15 {
		// A copy: the table's key is a view of its segment, which a
		// compaction rewrites and which it would keep alive.
		s.rejected = append(s.rejected, evict.Candidate{DB: db.Index, Key: strings.Clone(key)})
	}
}

// takeRejected is the next key admission turned away that may go now.
func (s *Shard) takeRejected(p evict.Policy) (*DB, dash.Iterator) {
	for len(s.rejected) > 0 {
		c := s.rejected[0]
		s.rejected[0] = evict.Candidate{}
		s.rejected = s.rejected[1:]
		if c.DB < len(s.DBs) {
			db := s.DBs[c.DB]
			if it := db.Table.Find(c.Key); it.Valid() && s.evictable(db, it, p) {
				return db, it
			}
		}
	}
	s.rejected = nil
	return nil, dash.Iterator{}
}

// tinyScore is a key's score under allkeys-tinylfu: the least asked for
// first, the longest idle among equals.
func (s *Shard) tinyScore(key string, v *Value) uint64 {
	return uint64(15-s.sketch.Estimate(dash.Hash(key)))<<32 | uint64(min(max(s.IdleSeconds(v), 0), 1<<31))
}

// touch stamps an access of v: the LRU clock, or the LFU counter.
func (s *Shard) touch(v *Value) {
	if s.LFU() {
		v.Access = evict.Touch(v.Access, s.now, s.Evict)
		return
	}
	v.Access = s.clockSeconds()
}

// newStamp is a new key's access stamp.
func (s *Shard) newStamp() uint32 {
	if s.LFU() {
		return evict.LFUNew(s.now)
	}
	return s.clockSeconds()
}

// Freq is v's LFU counter as OBJECT FREQ shows it (decayed).
func (s *Shard) Freq(v *Value) int64 {
	return int64(evict.Counter(v.Access, s.now, s.Evict.DecayTime.Load()))
}

// SetFreq gives v the LFU counter freq (RESTORE ... FREQ).
func (s *Shard) SetFreq(v *Value, freq uint8) { v.Access = evict.LFUStamp(s.now, freq) }

// EvictStep evicts keys by the policy until it freed about need bytes
// (MemoryUsage's estimate) or limit passed. It returns the bytes freed
// and whether it found no key it may evict (stuck). A replica evicts
// nothing: it applies its master's DELs.
func (s *Shard) EvictStep(need int64, limit time.Duration) (freed int64, stuck bool) {
	if s.Evict == nil || s.ReplicaMode || s.MasterApply {
		return 0, false
	}
	p := s.Evict.Policy()
	if p == evict.NoEviction {
		return 0, false
	}
	start := time.Now()
	for n := 0; freed < need; n++ {
		if n&15 == 15 && time.Since(start) >= limit {
			s.notePackedDead()
			return freed, false
		}
		s.spareOwed = true
		db, it := s.victim(p)
		if db == nil && s.owing() {
			s.spareOwed = false // every candidate is owed: one of them goes
			db, it = s.victim(p)
		}
		if db == nil {
			s.notePackedDead()
			return freed, !s.Locks.allHeld && s.Locks.allShared == 0
		}
		freed += int64(MemoryUsage(db.Table.Key(it), db.Table.Value(it), 5))
		db.dropBypassing(it, notify.Evicted, "evicted")
		s.Stats.EvictedKeys++
	}
	s.notePackedDead()
	return freed, false
}

// notePackedDead publishes the dead bytes of the shard's string chunks
// (PackedDead).
func (s *Shard) notePackedDead() {
	n := 0
	for _, db := range s.DBs {
		n += db.strs.used - db.strs.live
	}
	s.packedDead.Store(int64(n))
}

// PackedDead is the bytes of the shard's string chunks that no value
// holds, as of its last eviction pass or tick, from any goroutine: what
// eviction does not count as used memory, since evicting more keys would
// not give it back (a defragmentation pass does, strs.go).
func (s *Shard) PackedDead() int64 { return s.packedDead.Load() }

// victim picks the next key to evict, or a nil db when none may go.
func (s *Shard) victim(p evict.Policy) (*DB, dash.Iterator) {
	samples := int(min(s.Evict.Samples.Load(), 1<<16))
	if p == evict.AllKeysTinyLFU {
		samples *= 2 // a sample costs a sketch look-up, no more: twice the look at the keys
	}
	if p == evict.AllKeysRandom || p == evict.VolatileRandom {
		for tries := 0; tries < 2*len(s.DBs)+samples; tries++ {
			db := s.DBs[rand.IntN(len(s.DBs))]
			if it := s.sample(db, p); it.Valid() {
				return db, it
			}
		}
		return s.anyKey(p)
	}
	if p == evict.AllKeysTinyLFU {
		s.pressed = s.now
		if db, it := s.takeRejected(p); db != nil {
			return db, it
		}
	}
	for tries := 0; tries < 4; tries++ {
		for _, db := range s.DBs {
			for i := 0; i < samples; i++ {
				it := s.sample(db, p)
				if !it.Valid() {
					break
				}
				v := db.Table.Value(it)
				c := evict.Candidate{DB: db.Index, Key: db.Table.Key(it)}
				switch {
				case p.LFU():
					c.Score = 255 - uint64(evict.Counter(v.Access, s.now, s.Evict.DecayTime.Load()))
				case p == evict.AllKeysTinyLFU:
					c.Score = s.tinyScore(c.Key, v)
				case p == evict.VolatileTTL:
					at, _ := db.ExpireAt(it)
					c.Score = math.MaxUint64 - uint64(at)
				default:
					c.Score = uint64(max(s.IdleSeconds(v), 0))
				}
				s.pool.Offer(c)
			}
		}
		for {
			c, ok := s.pool.Pop()
			if !ok {
				break
			}
			if c.DB >= len(s.DBs) {
				continue
			}
			db := s.DBs[c.DB]
			it := db.Table.Find(c.Key)
			if it.Valid() && s.evictable(db, it, p) {
				return db, it
			}
		}
	}
	return nil, dash.Iterator{}
}

// sample is a random key of db that p may evict, or an invalid Iterator.
func (s *Shard) sample(db *DB, p evict.Policy) dash.Iterator {
	if p.Volatile() {
		eit := db.Expire.Random(rand.Uint64())
		if !eit.Valid() {
			return eit
		}
		it := db.Table.Find(db.Expire.Key(eit))
		if !it.Valid() || !s.evictable(db, it, p) {
			return dash.Iterator{}
		}
		return it
	}
	it := db.Table.Random(rand.Uint64())
	if !it.Valid() || !s.evictable(db, it, p) {
		return dash.Iterator{}
	}
	return it
}

// anyKey is the first evictable key of any DB, for random policies whose
// samples all missed (a table of locked keys).
func (s *Shard) anyKey(p evict.Policy) (*DB, dash.Iterator) {
	for _, db := range s.DBs {
		for i := 0; i < 64; i++ {
			if it := s.sample(db, p); it.Valid() {
				return db, it
			}
		}
	}
	return nil, dash.Iterator{}
}

// evictable: p may evict the key at it now. A key a transaction holds is
// left alone (its next step reads or writes it), as is one with a value
// being offloaded or a volatile policy's key without a TTL.
func (s *Shard) evictable(db *DB, it dash.Iterator, p evict.Policy) bool {
	v := db.Table.Value(it)
	if p.Volatile() && !v.HasExpire {
		return false
	}
	if v.Marked() {
		return false // a value copied across steps (tiered storage)
	}
	if s.spareOwed {
		for _, h := range s.expiryHooks {
			if o, ok := h.(Owing); ok && o.Owes(db, it) {
				return false
			}
		}
	}
	if !s.Locks.Idle() && (s.Locks.allHeld || s.Locks.heldConflict(db.Index, db.Table.Key(it), true)) {
		return false
	}
	return true
}

// owing: an expiry hook may owe entries (a snapshot runs).
func (s *Shard) owing() bool {
	for _, h := range s.expiryHooks {
		if _, ok := h.(Owing); ok {
			return true
		}
	}
	return false
}

// RequestEviction asks the shard, from any goroutine, to free need bytes
// for b. A request while the shard's last one still runs is dropped: the
// server samples memory again soon and asks for what is still over.
func (s *Shard) RequestEviction(need int64, b *evict.Budget) {
	if s.evicting.Swap(true) {
		return
	}
	s.Send(evictRun{need, b})
}

// evictRun is one eviction pass; past the tenacity's time limit it yields
// to the shard's other work and continues.
type evictRun struct {
	need   int64
	budget *evict.Budget
}

func (r evictRun) Run(s *Shard) {
	freed, stuck := s.EvictStep(r.need, evict.TimeLimit(s.Evict.Tenacity.Load()))
	r.budget.Freed(freed)
	r.budget.Stuck.Store(stuck)
	if !stuck && freed < r.need && s.Evict.Policy() != evict.NoEviction && !s.Locks.allHeld && s.Locks.allShared == 0 {
		s.Yield(evictRun{r.need - freed, r.budget})
		return
	}
	s.evicting.Store(false)
}
