package shard

import (
	"unsafe"

	"github.com/dfly/dfly/dash"
	"github.com/dfly/dfly/notify"
)

// DB is one numbered database of a shard: the keyspace table and the expiry
// table (absolute unix milliseconds, present only for keys with a TTL).
type DB struct {
	Index  int
	Table  *dash.Table[Value]
	Expire *dash.Table[int64]
	shard  *Shard
	// strs packs the small string values (strs.go).
	strs strArena
	// expiryCursor is where the active expiry sweep resumes.
	expiryCursor uint64
	// reserved, reservedExp: the keys (with TTL) Reserve announced since
	// the last Flush.
	reserved, reservedExp int
	// Swaps counts the SWAPDBs this index took part in: the same key in
	// the same bucket may be another table's after one, so a key's version
	// (package txn) includes it.
	Swaps uint64
}

func newDB(s *Shard, index int) *DB {
	db := &DB{Index: index, shard: s}
	db.newTables()
	return db
}

// newTables gives db empty tables, reporting the main table's item moves
// to the shard's move hooks.
func (db *DB) newTables() {
	db.Table, db.Expire = dash.New[Value](), dash.New[int64]()
	db.strs = newStrArena(&db.shard.defragDue) // the old tables keep their chunks alive
	db.reportMoves()
}

// reportMoves makes db's main table report its item moves, as db's, to
// the shard's move hooks.
func (db *DB) reportMoves() {
	db.Table.OnMove(func(moves []dash.Move) {
		for _, h := range db.shard.moveHooks {
			h.OnMoved(db, moves)
		}
	})
}

// view returns a string sharing b's bytes. Only for look-ups: the table
// never retains a key it was asked to find, so no copy is needed.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Len is the number of keys, including logically expired ones not yet swept.
func (db *DB) Len() int { return db.Table.Len() }

// Find looks key up, expiring it first when its TTL has passed (lazy
// expiry), and stamps the access (evict.go). The returned pointer is
// valid until the next mutation of db. Within a read (ReadMisses) a miss publishes "keymiss".
func (db *DB) Find(key []byte) (dash.Iterator, *Value) {
	it, v := db.find(key, true, true)
	if v == nil && db.shard.reading {
		db.missed(key)
	}
	return it, v
}

// FindRead is Find for a write command's read of a key (GETSET, a STORE
// command's sources: Redis's lookupKeyRead), whose miss publishes
// "keymiss" as a read command's does.
func (db *DB) FindRead(key []byte) (dash.Iterator, *Value) {
	it, v := db.find(key, true, true)
	if v == nil {
		db.missed(key)
	}
	return it, v
}

// missed publishes a read's miss of key: "keymiss", as Redis's
// lookupKeyRead.
func (db *DB) missed(key []byte) {
	if db.shard.Notify.On(notify.KeyMiss) {
		db.shard.Notify.Emit(notify.KeyMiss, "keymiss", db.Index, key)
	}
}

// ReadMisses sets whether the commands run from now on read their keys
// (Redis's read-only commands), so that Find's misses publish "keymiss";
// it returns the previous setting.
func (s *Shard) ReadMisses(on bool) bool {
	prev := s.reading
	s.reading = on
	return prev
}

// FindNoTouch is Find that leaves the key's access stamp as it was and
// publishes no keymiss (OBJECT, DEBUG OBJECT: Redis's LOOKUP_NOTOUCH and
// LOOKUP_NONOTIFY).
func (db *DB) FindNoTouch(key []byte) (dash.Iterator, *Value) { return db.find(key, true, false) }

// FindMetaNoTouch is FindMeta that leaves the access stamp (TYPE, EXISTS:
// Redis's LOOKUP_NOTOUCH); within a read a miss publishes "keymiss".
func (db *DB) FindMetaNoTouch(key []byte) (dash.Iterator, *Value) {
	it, v := db.find(key, false, false)
	if v == nil && db.shard.reading {
		db.missed(key)
	}
	return it, v
}

// find is Find; load=false leaves an offloaded value offloaded (tier.go),
// touch=false the access stamp.
func (db *DB) find(key []byte, load, touch bool) (dash.Iterator, *Value) {
	it := db.Table.Find(view(key))
	if touch && db.shard.reading && db.shard.sketching() {
		db.shard.sketch.Add(dash.Hash(view(key))) // a read; a miss too (evict.Sketch)
	}
	if !it.Valid() {
		return it, nil
	}
	v := db.Table.Value(it)
	if v.HasExpire && !db.shard.MasterApply && db.expired(it) {
		if db.shard.NoExpiry() {
			return dash.Iterator{}, nil // issue 8 (or a pause): hidden, not deleted
		}
		db.deleteExpired(it)
		return dash.Iterator{}, nil
	}
	if touch {
		db.shard.touch(v)
	}
	if v.ext && load {
		db.shard.loadExternal(v)
	}
	return it, v
}

// FindType is Find that also reports a type mismatch: ok=false when the key
// exists with another type.
func (db *DB) FindType(key []byte, t Type) (it dash.Iterator, v *Value, ok bool) {
	it, v = db.Find(key)
	if v != nil && v.Type != t {
		return it, nil, false
	}
	return it, v, true
}

func (db *DB) expired(it dash.Iterator) bool {
	at, ok := db.ExpireAt(it)
	return ok && at <= db.shard.Now()
}

// ExpireAt is the key's absolute expiry in unix ms, ok=false when it has none.
func (db *DB) ExpireAt(it dash.Iterator) (int64, bool) {
	v := db.Table.Value(it)
	if !v.HasExpire {
		return 0, false
	}
	eit := db.Expire.Find(db.Table.Key(it))
	if !eit.Valid() {
		return 0, false
	}
	return *db.Expire.Value(eit), true
}

// Mutate announces an in-place update of the value at it: change hooks run
// first (a snapshot serializes the bucket while it still holds the old
// value), then the bucket version is stamped. The caller then edits the
// value through the returned pointer, before any other mutation of db.
func (db *DB) Mutate(it dash.Iterator) *Value {
	db.unpack(db.Table.Value(it)) // an edit in place needs bytes of the value's own (strs.go)
	return db.mutate(it)
}

// MutateMeta is Mutate for a change that leaves the value's bytes alone
// (its TTL: EXPIRE, PERSIST, GETEX): a packed string stays packed.
func (db *DB) MutateMeta(it dash.Iterator) *Value { return db.mutate(it) }

// SetBytes makes the string value at it hold a copy of b, keeping its TTL
// (SET over a string). The bytes the value has take b in place when it
// fits, packed (strs.go) or not: an overwrite allocates nothing. A packed
// value's bytes that a snapshot may still read (Shared) are left alone,
// as copy-on-write does for a value of its own (snapshot's cow).
func (db *DB) SetBytes(it dash.Iterator, b []byte) {
	p := db.mutate(it)
	if p.ext {
		db.shard.tier.Free(p)
		p.SetStr(nil) // its bytes are replaced unread
	}
	if !p.Packed() {
		p.SetStr(append(p.Str()[:0], b...))
		return
	}
	if len(b) > 0 && len(b) <= int(p.n) && !p.Shared() {
		copy(p.Str(), b)
		db.strs.shrink(p, uint32(len(b)))
		p.SetEncoding(EncByBytes)
		return
	}
	db.strs.drop(p)
	if Packable(len(b)) {
		nv := db.strs.alloc(b)
		p.ptr, p.n, p.c, p.flags = nv.ptr, nv.n, nv.c, nv.flags
		db.strs.adopt(p)
		return
	}
	p.SetStr(append(make([]byte, 0, len(b)), b...)) // non-nil when empty, as NewString
}

// mutate is Mutate for a caller that replaces the whole value (Set).
func (db *DB) mutate(it dash.Iterator) *Value {
	s := db.shard
	for _, h := range s.hooks {
		h.PreUpdate(db, it)
	}
	db.Table.Bump(it, s.nextVersion())
	s.Stats.Writes++
	s.signal(db.Index, db.Table.Key(it))
	s.touched(db.Index, db.Table.Key(it))
	v := db.Table.Value(it)
	v.flags &^= flagMark // the caller may edit the bytes in place (Value.Mark)
	return v
}

// Version is the version of the key at it, its bucket's (dash): every
// write of the key stamps it with the shard's next version, so it changes
// on every write and never comes back to an earlier value in this
// process; a write of another key of the bucket, a move of the key within
// the table or a snapshot's pass over the bucket raise it too.
func (db *DB) Version(it dash.Iterator) uint64 {
	return db.Table.Version(db.Table.BucketOf(it))
}

// TouchAlways is Touch even inside Quiet: a quiet command's change that
// Redis does signal (XGROUP CREATE MKSTREAM creating the stream).
func (db *DB) TouchAlways(key []byte) {
	q := db.shard.quiet
	db.shard.quiet = 0
	db.Touch(key)
	db.shard.quiet = q
}

// Shard is the shard that owns the DB.
func (db *DB) Shard() *Shard { return db.shard }

// Touch marks key changed for its watchers (WATCH) without changing it:
// a command Redis counts as a write of the key even when it left it as it
// was (LTRIM keeping every element).
func (db *DB) Touch(key []byte) { db.shard.touched(db.Index, view(key)) }

// Insert adds key, which must be absent from the table (not only hidden:
// see Set), with value v; a key in the table keeps its old value.
func (db *DB) Insert(key []byte, v Value) (dash.Iterator, *Value) {
	s := db.shard
	k := view(key)
	for _, h := range s.hooks {
		h.PreInsert(db, k)
	}
	v.Access = s.newStamp()
	db.strs.adopt(&v)
	it, _ := db.Table.Insert(k, v, s.nextVersion()) // Insert copies the key
	if s.sketching() {
		s.admit(db, db.Table.Key(it))
	}
	s.Stats.Writes++
	s.signal(db.Index, k)
	s.touched(db.Index, k)
	if !s.loading && s.Notify.On(notify.New) {
		s.Notify.Emit(notify.New, "new", db.Index, key)
	}
	return it, db.Table.Value(it)
}

// Set stores v under key, replacing any old value and dropping its TTL
// unless keepTTL, and returns the key's position.
//
// A key a replica hides (logically expired, waiting for its master's DEL:
// see find) is gone for readers but still in the table, so Set replaces it
// in place, TTL included, as it would replace a live key: Insert needs the
// key absent from the table, and a key loaded again (a non-PIT full sync
// sends a key twice, or after a journal entry created it) is often one
// whose short TTL passed on the replica's clock meanwhile.
func (db *DB) Set(key []byte, v Value, keepTTL bool) dash.Iterator {
	it, old := db.find(key, false, true) // the old bytes are not needed
	if old == nil {
		if it = db.hidden(key); !it.Valid() {
			it, _ = db.Insert(key, v)
			return it
		}
		keepTTL = false // the old value is logically expired: so is its TTL
	}
	p := db.mutate(it)
	hadExpire := p.HasExpire
	v.Access = db.shard.newStamp()
	if db.shard.LFU() {
		v.Access = p.Access // as Redis's dbSetValue: the counter is the key's, not the value's
	}
	if p.ext {
		db.shard.tier.Free(p)
	}
	db.strs.drop(p)
	db.strs.adopt(&v)
	*p = v
	if hadExpire {
		if keepTTL {
			p.HasExpire = true
		} else {
			db.Expire.Delete(db.Table.Key(it))
		}
	}
	return it
}

// hidden is the item of a key find hides on a replica (see Set), or an
// invalid Iterator. It costs a probe only where find hides keys.
func (db *DB) hidden(key []byte) dash.Iterator {
	if !db.shard.NoExpiry() || db.shard.MasterApply {
		return dash.Iterator{}
	}
	return db.Table.Find(view(key))
}

// Load stores a key read from a snapshot or a replication stream with its
// absolute expiry in unix ms (0: none), replacing any old value and TTL
// (a hidden one too: see Set). The key is usually absent: then it costs
// one table probe, not Set's two.
func (db *DB) Load(key []byte, v Value, expireAt int64) {
	s := db.shard
	if v.Type == TypeString && v.flags&flagPacked == 0 && !v.ext && Packable(int(v.n)) {
		if db.strs.imported(&v) {
			v.c, v.flags = uint32(db.strs.imp), flagPacked
		} else {
			v = db.strs.alloc(v.Str()) // a loaded value's bytes are nobody's
		}
	}
	if len(s.hooks) == 0 {
		k := view(key)
		v.Access = s.newStamp()
		if it, inserted := db.Table.Insert(k, v, s.nextVersion()); inserted { // Insert copies the key
			db.strs.adopt(db.Table.Value(it))
			s.Stats.Writes++
			s.signal(db.Index, k)
			s.touched(db.Index, k)
			if expireAt != 0 {
				db.SetExpire(it, expireAt)
			}
			return
		}
	}
	s.loading = true
	it := db.Set(key, v, false)
	s.loading = false
	if expireAt != 0 {
		db.SetExpire(it, expireAt)
	}
}

// Notify publishes event of class c on key (package notify), for the
// command that just changed it on this shard.
func (db *DB) Notify(c notify.Class, event string, key []byte) {
	db.shard.Notify.Emit(c, event, db.Index, key)
}

// Reserve prepares the tables for keys more keys, expires of them with a
// TTL, about to be loaded (a loader's share of an RDB stream's RESIZEDB):
// the tables split now, while nearly empty, instead of under the load.
// Reservations add up until the next Flush, so the streams loading into
// one DB (a replica's flows, a dfly snapshot's shard files) each announce
// their own keys. It does nothing while a hook is registered: a snapshot
// captures a segment before an Insert splits it (PreInsert), and these
// splits would bypass that.
func (db *DB) Reserve(keys, expires int) {
	db.reserved += keys
	db.reservedExp += expires
	if len(db.shard.hooks) > 0 {
		return
	}
	db.Table.Reserve(db.reserved)
	db.Expire.Reserve(db.reservedExp)
}

// Delete removes the entry at it, with its TTL.
func (db *DB) Delete(it dash.Iterator) {
	for _, h := range db.shard.hooks {
		h.PreDelete(db, it)
	}
	db.erase(it)
}

// Take removes the entry at it, as Delete, and returns its value for
// storing under another key (RENAME, MOVE), on this shard or another.
// Its bytes go with it, while a reader of this shard may still have to
// read them (a snapshot's deferred record, Value.Share), and the next
// in-place edit of the value is announced to the hooks of the shard it
// lands on, which know nothing of this shard's readers. So the hooks are
// told first that the value changes (PreUpdate: copy-on-write gives it
// bytes of its own while the old ones are referenced, after a capture
// that may reference them), and the value is read after them: a copy
// read before would miss the mark a capture puts on it.
func (db *DB) Take(it dash.Iterator) Value {
	for _, h := range db.shard.hooks {
		h.PreUpdate(db, it)
	}
	for _, h := range db.shard.hooks {
		h.PreDelete(db, it)
	}
	v := *db.Table.Value(it)
	db.erase(it)
	return v
}

func (db *DB) erase(it dash.Iterator) {
	db.shard.touched(db.Index, db.Table.Key(it))
	db.shard.signal(db.Index, db.Table.Key(it)) // XREADGROUP's waiters learn the stream is gone
	v := db.Table.Value(it)
	if v.HasExpire {
		db.Expire.Delete(db.Table.Key(it))
	}
	if v.ext {
		db.shard.tier.Free(v)
	}
	db.strs.drop(v)
	db.Table.Erase(it)
	db.shard.Stats.Writes++
}

// deleteExpired removes a key whose TTL passed. It bypasses the change
// hooks on purpose: expiry is not a transactional mutation, and the
// snapshot handles it through its deferred deletion queue (docs/DESIGN.md §4).
//
// While the journal records, the expiry is journaled as DEL, whoever made
// it record (a dfly flow, the Redis feed, a backlog kept for a replica
// whose link is down: a partial sync must find the DELs of the expiries
// it missed). The expiry hooks run first, so that a snapshot streaming
// with the journal writes the key's baseline before its DEL (§8.4).
func (db *DB) deleteExpired(it dash.Iterator) {
	db.dropBypassing(it, notify.Expired, "expired")
	db.shard.Stats.ExpiredKeys++
}

// dropBypassing deletes the key at it without a command: expiry or
// eviction (evict.go). The expiry hooks run first (a snapshot defers the
// deletion of a bucket it has not covered, or writes the key's baseline
// before the DEL), then the journal records a DEL, then the event of
// class c is published.
func (db *DB) dropBypassing(it dash.Iterator, c notify.Class, event string) {
	s := db.shard
	key := db.Table.Key(it)
	for _, h := range s.expiryHooks {
		h.OnExpire(db, it, key)
	}
	if j := s.Journal; j.Active() {
		j.Record(db.Index, [][]byte{delWord, []byte(key)})
	}
	if s.Notify.On(c) {
		k := []byte(key) // erase frees what key points into
		db.erase(it)
		s.Notify.Emit(c, event, db.Index, k)
	} else {
		db.erase(it)
	}
}

var delWord = []byte("DEL")

// SetExpire gives the key at it an absolute expiry in unix ms. The caller
// has already announced the update with Mutate (or just inserted the key).
func (db *DB) SetExpire(it dash.Iterator, at int64) {
	if !it.Valid() {
		// The zero Iterator names slot 0 of the first bucket: another key
		// would get this TTL (and vanish from a replica's readers).
		panic("shard: SetExpire of a key that is not in the table")
	}
	v := db.Table.Value(it)
	key := db.Table.Key(it)
	eit := db.Expire.Find(key)
	if eit.Valid() {
		*db.Expire.Value(eit) = at
	} else {
		db.Expire.Insert(key, at, 0)
	}
	v.HasExpire = true
}

// Persist drops the key's TTL; the caller has announced the update.
func (db *DB) Persist(it dash.Iterator) bool {
	v := db.Table.Value(it)
	if !v.HasExpire {
		return false
	}
	db.Expire.Delete(db.Table.Key(it))
	v.HasExpire = false
	return true
}

// Flush drops every key of the database. The old tables are not cleared
// but replaced: a snapshot told by PreFlush may keep walking them (they
// are then nobody else's), so a flush costs no serialization stall.
func (db *DB) Flush() {
	for _, h := range db.shard.hooks {
		h.PreFlush(db)
	}
	db.shard.flushed(db)
	db.freeExternals() // tier.go
	if db.Table.Len() > 0 {
		db.shard.Stats.Writes++ // a flush of keys is a write (journal, dirty count)
	}
	db.newTables()
	db.expiryCursor = 0
	db.reserved, db.reservedExp = 0, 0
}

// lockedWhileJournaled: while the journal records, the sweep leaves keys
// that a transaction holds alone. The transaction's writes are journaled
// when it commits, so a DEL journaled now could land before a write that
// the key had before it expired.
func (db *DB) lockedWhileJournaled(key string) bool {
	s := db.shard
	return s.Journal.Active() && !s.Locks.Idle() && s.Locks.heldConflict(db.Index, key, true)
}

// ExpireStep runs one bounded step of the active expiry sweep: it visits
// about maxVisits keys that have a TTL and deletes those that passed it.
// It returns how many it deleted.
func (db *DB) ExpireStep(maxVisits int) int {
	if db.Expire.Len() == 0 {
		return 0
	}
	now := db.shard.Now()
	if h := db.shard.ExpiryHorizon; h != nil {
		now = min(now, h())
	}
	deleted := 0
	var victims [64]string
	for visited := 0; visited < maxVisits; {
		n := 0
		db.expiryCursor = db.Expire.Traverse(db.expiryCursor, func(eit dash.Iterator) {
			visited++
			if *db.Expire.Value(eit) <= now && n < len(victims) {
				victims[n] = db.Expire.Key(eit) // dash keeps Key strings valid after an erase
				n++
			}
		})
		for _, k := range victims[:n] {
			if db.lockedWhileJournaled(k) {
				continue // a later sweep (or the lock holder's lookup) expires it
			}
			if it := db.Table.Find(k); it.Valid() {
				db.deleteExpired(it)
				deleted++
			} else {
				db.Expire.Delete(k)
			}
		}
		if db.expiryCursor == 0 {
			break
		}
	}
	return deleted
}
