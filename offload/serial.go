package offload

import (
	"sync"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tiered"
)

// Serializers and offloaded strings: BGSAVE, SAVE and full syncs read them
// asynchronously (Loader), DEBUG RELOAD reads them ahead in rounds
// (ReadAhead), one debugging aid reads them blocking (View).

// prefetchBytes bounds the offloaded bytes a shard reads ahead for a
// ReadAhead in one round.
const prefetchBytes = 8 << 20

// View is v with its bytes in memory: v itself, or for an offloaded
// string a copy read synchronously: a blocking read on the shard
// goroutine, for --debug_snapshot_reference (a debugging aid, taken
// inside the cut's step) and ReadAhead's retry of a failed read. SAVE and
// DEBUG RELOAD take asynchronous paths (Loader, ReadAhead). A read error
// fails e, so no file is written with a wrong value.
func View(sh *shard.Shard, e *rdb.Encoder, v *shard.Value) *shard.Value {
	if !v.IsExternal() {
		return v
	}
	t, ok := sh.Tier().(*Shard)
	if !ok {
		return v
	}
	t.serialReads++
	t.serialSync++
	b, err := t.store.ReadSync(SegmentOf(v))
	if err != nil {
		t.logErr(err)
		e.Fail(err)
	}
	c := *v
	c.SetStr(b)
	return &c
}

// Loader is the snapshot's Loader (BGSAVE, both formats): an offloaded
// string is read asynchronously while its bucket waits (DelayedPending);
// nil when tiering is off.
func Loader(sh *shard.Shard) snapshot.Loader {
	t, ok := sh.Tier().(*Shard)
	if !ok {
		return nil
	}
	return func(v *shard.Value, done func(shard.Value, error)) bool {
		if !v.IsExternal() {
			return false
		}
		c := *v
		t.serialReads++
		t.Read(v, func(data []byte, err error) {
			if err == nil {
				// Not copied: bytes of a shared read are never modified
				// (tiered.Store.Read; only private reads' bytes are taken
				// over) nor recycled (Recycle takes only bytes that went to
				// a single ReadOwned callback, and this one is not).
				c.SetStr(data)
			} else {
				t.logErr(err)
			}
			done(c, err)
		})
		return true
	}
}

// ReadAhead reads the offloaded strings of a shard's next buckets ahead of
// an encoder that walks its tables with a cursor and must not wait on the
// shard goroutine (DEBUG RELOAD, under a lock of every shard): the caller
// asks whether the next bucket is Missing bytes, has them fetched (Fetch)
// and waits for them off the shard, and encodes the values through View.
// The segments read stay retained until Release, so their space is not
// reused meanwhile.
type ReadAhead struct {
	sh    *shard.Shard
	t     *Shard
	ready map[int64][]byte // bytes read, by offset; retained until used
	segs  []tiered.Segment // segments retained
}

// NewReadAhead is a ReadAhead for sh, whose tiering is on.
func NewReadAhead(sh *shard.Shard) *ReadAhead {
	return &ReadAhead{sh: sh, t: sh.Tier().(*Shard), ready: map[int64][]byte{}}
}

// View is v with its bytes: those read ahead, else read blocking (the
// read failed: the package's View fails the encoder).
func (x *ReadAhead) View(e *rdb.Encoder, v *shard.Value) *shard.Value {
	if !v.IsExternal() {
		return v
	}
	seg := SegmentOf(v)
	if data, ok := x.ready[seg.Off]; ok && len(data) == int(seg.Len) {
		delete(x.ready, seg.Off)
		c := *v
		c.SetStr(data) // a shared read's bytes, never modified
		return &c
	}
	return View(x.sh, e, v)
}

// Missing reports whether the bucket of db at cursor holds an offloaded
// string not read yet.
func (x *ReadAhead) Missing(db *shard.DB, cursor uint64) bool {
	found := false
	db.Table.Traverse(cursor, func(it shard.Iterator) {
		if v := db.Table.Value(it); v.IsExternal() {
			if _, ok := x.ready[SegmentOf(v).Off]; !ok {
				found = true
			}
		}
	})
	return found
}

// Fetch reads the offloaded strings of db's buckets from cursor on, up to
// prefetchBytes (at least those of the bucket at cursor); wg is done when
// they are back.
func (x *ReadAhead) Fetch(db *shard.DB, cursor uint64, wg *sync.WaitGroup) {
	var n int64
	for {
		cursor = db.Table.Traverse(cursor, func(it shard.Iterator) {
			v := db.Table.Value(it)
			if !v.IsExternal() {
				return
			}
			seg := SegmentOf(v)
			if _, ok := x.ready[seg.Off]; ok {
				return
			}
			x.ready[seg.Off] = nil // being read
			n += int64(seg.Len)
			x.segs = append(x.segs, seg)
			x.t.store.Retain(seg) // until Release: space not reused while read ahead
			x.t.serialReads++
			wg.Add(1)
			x.t.store.Read(seg, func(data []byte, err error) {
				if err == nil {
					x.ready[seg.Off] = data
				} // else left nil, not read again here: View reads it blocking, and fails
				wg.Done()
			})
		})
		if cursor == 0 || n >= prefetchBytes {
			return
		}
	}
}

// Release releases the segments read ahead.
func (x *ReadAhead) Release() {
	for _, g := range x.segs {
		x.t.store.Release(g)
	}
	x.segs = nil
}
