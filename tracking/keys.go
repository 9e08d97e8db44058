package tracking

// Keys is one shard's tracking table: which clients read which keys (the
// default mode), and the keys the current step changed (for BCAST). It is
// the shard goroutine's alone.
type Keys struct {
	reg   *Registry
	keys  map[string][]*Client
	order []string // registration order of keys, for the bound (may hold stale names)
	// changed: the keys changed in this step while BCAST clients exist.
	changed []change
	// writer is the tracking client whose command runs now, if known
	// (SetWriter): NOLOOP clients are not told of their own writes.
	writer *Client
}

// MaxKeys bounds the keys one shard's table holds (Redis's
// tracking-table-max-keys, split over the shards): past it, the oldest
// registrations' keys are invalidated and forgotten.
var MaxKeys = 1 << 20

// Attach makes k report to r (its totals, BCAST clients, targets).
func (k *Keys) Attach(r *Registry) { k.reg = r }

// SetWriter records the tracking client whose command runs next (nil:
// none, or not known); the caller resets it after.
func (k *Keys) SetWriter(c *Client) { k.writer = c }

// Track remembers that c read key.
func (k *Keys) Track(key string, c *Client) {
	if k.keys == nil {
		k.keys = map[string][]*Client{}
	}
	list, ok := k.keys[key]
	for _, x := range list {
		if x == c {
			return
		}
	}
	if !ok {
		key = string([]byte(key)) // the caller's key may be reused
		k.order = append(k.order, key)
		k.count(1, 0)
	}
	k.keys[key] = append(list, c)
	k.count(0, 1)
	for len(k.keys) > MaxKeys && len(k.order) > 0 {
		old := k.order[0]
		k.order = k.order[1:]
		k.invalidate(old)
	}
	if len(k.order) > 2*len(k.keys)+1024 {
		k.compact()
	}
}

func (k *Keys) count(keys, items int64) {
	if k.reg != nil {
		k.reg.keys.Add(keys)
		k.reg.items.Add(items)
	}
}

// compact drops the names of keys no longer tracked from order.
func (k *Keys) compact() {
	out := k.order[:0]
	for _, key := range k.order {
		if _, ok := k.keys[key]; ok {
			out = append(out, key)
		}
	}
	clear(k.order[len(out):])
	k.order = out
}

// invalidate tells the clients that read key that it changed, one message
// each (Redis's default mode sends a key at a time), and forgets them.
func (k *Keys) invalidate(key string) {
	list, ok := k.keys[key]
	if !ok {
		return
	}
	delete(k.keys, key)
	k.count(-1, -int64(len(list)))
	for _, c := range list {
		if o := c.opts.Load(); o != nil && !o.BCAST && !(o.NoLoop && c == k.writer) {
			c.send([]string{key})
		}
	}
}

// Changed runs for every key a command, expiry or eviction changed.
func (k *Keys) Changed(key string) {
	if len(k.keys) > 0 {
		k.invalidate(key)
	}
	if k.reg != nil && k.reg.bcast.Load() > 0 {
		k.changed = append(k.changed, change{key: string([]byte(key)), writer: k.writer})
	}
}

// EndStep sends the BCAST invalidations of the keys changed since the
// last call; the shard calls it when a step (one message) is done.
func (k *Keys) EndStep() {
	if len(k.changed) == 0 {
		return
	}
	k.reg.broadcast(k.changed)
	clear(k.changed)
	k.changed = k.changed[:0]
}

// Flushed forgets every registration: a flush tells every tracking client
// to drop its whole cache (Registry.Flushed, once).
func (k *Keys) Flushed() {
	for _, list := range k.keys {
		k.count(-1, -int64(len(list)))
	}
	clear(k.keys)
	k.order = nil
}

// Drop forgets c's registrations (it disconnected or turned tracking
// off), so a client that leaves leaves nothing behind.
func (k *Keys) Drop(c *Client) {
	for key, list := range k.keys {
		for i, x := range list {
			if x != c {
				continue
			}
			k.count(0, -1)
			if len(list) == 1 {
				delete(k.keys, key)
				k.count(-1, 0)
			} else {
				k.keys[key] = append(list[:i], list[i+1:]...)
			}
			break
		}
	}
	if len(k.order) > 2*len(k.keys)+1024 {
		k.compact()
	}
}

// Len is the number of keys the table holds.
func (k *Keys) Len() int { return len(k.keys) }
