package shard

// Client-side caching (CLIENT TRACKING), the shard's half: which keys
// tracking clients have read, so that a change to one of them tells those
// clients once. As in Redis, a key is tracked by name whatever its
// database, a registration is dropped when it fires, and a client that
// stopped tracking (or left) is skipped and forgotten lazily.
//
// Invariant: a read registers its keys on the shard goroutine in the same
// step as the read, or in an earlier message (see server/tracking.go), so
// no write can fall between the read and the registration unnoticed: at
// worst a client is told about a change it had already seen.

// Tracker is a tracking client as the shard sees it.
type Tracker interface {
	// Tracking reports whether the client still tracks keys it read.
	Tracking() bool
	// Invalidate tells the client that key changed, by the command of
	// writer (nil when not known); called on the shard goroutine, so it
	// must only queue the message.
	Invalidate(key string, writer Tracker)
}

// MaxTrackedKeys bounds the keys one shard tracks (Redis's
// tracking-table-max-keys, split over the shards): past it, the oldest
// registrations' keys are invalidated and forgotten, so the table does not
// grow without bound.
var MaxTrackedKeys = 1 << 20

type trackingState struct {
	keys  map[string][]Tracker
	order []string // registration order of keys, for the bound (may hold stale names)
	// OnChange, when set, sees every changed key (BCAST clients).
	OnChange func(key string, writer Tracker)
	// writer is the tracking client whose command runs now, if known
	// (SetWriter): NOLOOP clients are not told of their own writes.
	writer Tracker
}

// SetWriter records the tracking client whose command the shard runs
// next (nil: none, or not known); the caller resets it after.
func (s *Shard) SetWriter(t Tracker) { s.tracking.writer = t }

// Track registers t's interest in key (the client read it).
func (s *Shard) Track(key string, t Tracker) {
	ts := &s.tracking
	if ts.keys == nil {
		ts.keys = map[string][]Tracker{}
	}
	list, ok := ts.keys[key]
	for _, x := range list {
		if x == t {
			return
		}
	}
	if !ok {
		key = string([]byte(key)) // the table's key may be reused
		ts.order = append(ts.order, key)
	}
	ts.keys[key] = append(list, t)
	for len(ts.keys) > MaxTrackedKeys && len(ts.order) > 0 {
		old := ts.order[0]
		ts.order = ts.order[1:]
		s.invalidate(old)
	}
	if len(ts.order) > 2*len(ts.keys)+1024 {
		ts.compact()
	}
}

// compact drops the names of keys no longer tracked from order.
func (ts *trackingState) compact() {
	out := ts.order[:0]
	for _, k := range ts.order {
		if _, ok := ts.keys[k]; ok {
			out = append(out, k)
		}
	}
	clear(ts.order[len(out):])
	ts.order = out
}

// SetTrackingHook sets the function that sees every changed key of this
// shard (BCAST tracking), nil for none.
func (s *Shard) SetTrackingHook(f func(key string, writer Tracker)) { s.tracking.OnChange = f }

// invalidate tells the clients tracking key that it changed and forgets
// them.
func (s *Shard) invalidate(key string) {
	list, ok := s.tracking.keys[key]
	if !ok {
		return
	}
	delete(s.tracking.keys, key)
	for _, t := range list {
		if t.Tracking() {
			t.Invalidate(key, s.tracking.writer)
		}
	}
}

// trackingChanged runs for every changed key (touched).
func (s *Shard) trackingChanged(key string) {
	if len(s.tracking.keys) > 0 {
		s.invalidate(key)
	}
	if f := s.tracking.OnChange; f != nil {
		f(key, s.tracking.writer)
	}
}

// trackingFlushed forgets every registration: a flush tells every tracking
// client to drop its whole cache (the server sends that, once).
func (s *Shard) trackingFlushed() {
	clear(s.tracking.keys)
	s.tracking.order = nil
}

// TrackedKeys is the number of keys the shard tracks (INFO).
func (s *Shard) TrackedKeys() int { return len(s.tracking.keys) }
