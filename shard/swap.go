package shard

// SwapDBs exchanges the contents of databases a and b (SWAPDB): every key,
// TTL and packed string of one becomes the other's, while the DB values
// (and their Index) stay where they are, so state kept by index (locks,
// blocked clients, watchers) needs no renaming.
//
// A snapshot's walk keeps its state per database index (the tables of its
// cut, what it walked, the order of its records against the journal), so
// it cannot follow a swap: the caller calls SwapDBs only while SwapBlocked
// is false on every shard, checked under the same hold of all shards (a
// walk starts only at a cut, which needs that hold too). Copy-on-write
// for deferred records (cowHook) goes by value, not by index, and stays.
//
// As in Redis: a watched key that exists in either database is dirty, and
// clients blocked on a key that now exists are offered it; client tracking's
// registrations stay, and nobody is told (Redis 7.0 sends no invalidation).
func (s *Shard) SwapDBs(a, b int) {
	if a == b {
		return
	}
	if s.SwapBlocked() {
		panic("shard: SwapDBs while a snapshot walks the shard")
	}
	da, db := s.DBs[a], s.DBs[b]
	s.swapWatched(da, db)
	if da.Len() > 0 || db.Len() > 0 {
		s.Stats.Writes++ // journal, dirty count
	}
	da.Table, db.Table = db.Table, da.Table
	da.Swaps++
	db.Swaps++
	da.Expire, db.Expire = db.Expire, da.Expire
	da.strs, db.strs = db.strs, da.strs
	da.expiryCursor, db.expiryCursor = db.expiryCursor, da.expiryCursor
	da.reserved, db.reserved = db.reserved, da.reserved
	da.reservedExp, db.reservedExp = db.reservedExp, da.reservedExp
	da.reportMoves()
	db.reportMoves()
	for k := range s.block.blocked {
		if k.db == a || k.db == b {
			if s.DBs[k.db].Table.Find(k.key).Valid() {
				s.block.ready[k] = struct{}{}
			}
		}
	}
}

// SwapBlocked reports whether a hook that cannot follow SwapDBs is on the
// shard: a snapshot's walk (its hooks say so with BlocksSwap).
func (s *Shard) SwapBlocked() bool {
	for _, h := range s.hooks {
		if b, ok := h.(interface{ BlocksSwap() bool }); ok && b.BlocksSwap() {
			return true
		}
	}
	return len(s.moveHooks) > 0
}

// swapWatched marks dirty the watchers of a's and b's keys that exist in
// either database, before they swap.
func (s *Shard) swapWatched(a, b *DB) {
	if s.watch.dbs[a.Index] == 0 && s.watch.dbs[b.Index] == 0 {
		return
	}
	for k, ws := range s.watch.keys {
		if k.db != a.Index && k.db != b.Index {
			continue
		}
		if a.Table.Find(k.key).Valid() || b.Table.Find(k.key).Valid() {
			for _, w := range ws {
				w.dirty.Store(true)
			}
		}
	}
}
