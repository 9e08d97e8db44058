package shard

// Tiered storage (docs/DESIGN.md §7, packages tiered and offload): a string
// value may be offloaded to the shard's backing file, leaving an external
// Value (IsExternal) that records where its bytes are. The DB keeps such
// values consistent through the Tier: it frees their space when they are
// replaced, deleted, expired or flushed, and loads them when a caller
// looks one up with Find. The server loads values ahead of the commands
// that read them, asynchronously, so Find's blocking load is only the
// fallback of the one rare case not loaded ahead (see server/tiered.go).
//
// Without tiering, the cost is one test of a flag the value's cache line
// already holds, in Find, Set and erase.

// Tier is what the DB needs of the shard's tiered storage.
type Tier interface {
	// Free: the offloaded value v is being dropped or replaced.
	Free(v *Value)
	// FreeLater: v is dropped by a flush while a snapshot runs, which may
	// still walk the old tables and read v: free its space once no
	// change hook is registered (Hooked).
	FreeLater(v *Value)
	// Load reads v's bytes now, blocking (the fallback above).
	Load(v *Value) ([]byte, error)
	// Read reads v's bytes without blocking: cb runs later on the shard
	// goroutine. v's file space is not reused before cb returns, even if
	// v is deleted or replaced meanwhile, so cb gets the bytes v had when
	// Read was called. data is shared with other readers: copy to keep
	// it. For the snapshot's DelayedPending buckets and SORT's patterns.
	Read(v *Value, cb func(data []byte, err error))
}

// SetTier installs tiered storage; call it before Start (or on the shard
// goroutine).
func (s *Shard) SetTier(t Tier) { s.tier = t }

// Tier is the installed tiered storage, nil when off.
func (s *Shard) Tier() Tier { return s.tier }

// SetNoLoad makes Find leave offloaded values offloaded while set: for
// commands that do not read string bytes (SET, DEL, EXISTS, TTL ...). The
// caller clears it after the command.
func (s *Shard) SetNoLoad(on bool) { s.noLoad = on }

// NoLoad reports SetNoLoad's setting.
func (s *Shard) NoLoad() bool { return s.noLoad }

// loadExternal is Find's fallback: it loads v into memory and frees its
// file space. On a read error v stays offloaded (the Tier reports it).
func (s *Shard) loadExternal(v *Value) {
	if s.tier == nil || s.noLoad {
		return
	}
	b, err := s.tier.Load(v)
	if err != nil {
		return
	}
	s.tier.Free(v)
	v.SetStr(b)
}

// Hooked reports whether change hooks are registered (a snapshot runs).
func (s *Shard) Hooked() bool { return len(s.hooks) > 0 }

// freeExternals frees the file space of every offloaded value of db
// (later, when a snapshot may still read them from the old tables).
func (db *DB) freeExternals() {
	t := db.shard.tier
	if t == nil {
		return
	}
	later := db.shard.Hooked()
	var cursor uint64
	for {
		cursor = db.Table.Traverse(cursor, func(it Iterator) {
			if v := db.Table.Value(it); v.ext && later {
				t.FreeLater(v)
			} else if v.ext {
				t.Free(v)
			}
		})
		if cursor == 0 {
			return
		}
	}
}

// Peek is the value at key, nil when absent, without expiring, stamping or
// loading it: for tiered storage's own bookkeeping.
func (db *DB) Peek(key []byte) *Value {
	it := db.Table.Find(view(key))
	if !it.Valid() {
		return nil
	}
	return db.Table.Value(it)
}

// FindMeta is Find for callers that need no string bytes (DEL, EXISTS):
// an offloaded value stays offloaded.
func (db *DB) FindMeta(key []byte) (Iterator, *Value) {
	it, v := db.find(key, false, true)
	if v == nil && db.shard.reading {
		db.missed(key)
	}
	return it, v
}

// FindMetaQuiet is FindMeta that publishes no keymiss and leaves the
// access stamp (MEMORY USAGE: Redis's LOOKUP_NONOTIFY and NOTOUCH).
func (db *DB) FindMetaQuiet(key []byte) (Iterator, *Value) { return db.find(key, false, false) }
