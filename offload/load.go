package offload

import (
	"bytes"
	"unsafe"

	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
)

// Loading offloaded values back for the commands that read them: the
// server's batches read them ahead and park (the Ready/Failed bookkeeping
// below), coordinated commands and a replica's applier have them loaded
// and pinned (LoadKeys, Pin). Every method runs on the shard goroutine.

// Entries is the number of values offloaded now: 0 lets a command skip
// looking its keys up.
func (t *Shard) Entries() int64 { return t.entries }

// Store is the shard's backing file.
func (t *Shard) Store() *tiered.Store { return t.store }

// Send runs fn on the shard goroutine.
func (t *Shard) Send(fn func()) { t.sh.Send(shardFunc(fn)) }

// Ready is the bytes of seg read for a parked batch, if they are back.
func (t *Shard) Ready(seg tiered.Segment) ([]byte, bool) {
	data, ok := t.ready[seg.Off]
	if !ok || len(data) != int(seg.Len) {
		return nil, false
	}
	return data, true
}

// SetReady keeps the bytes of seg read for batches until Forget.
func (t *Shard) SetReady(seg tiered.Segment, data []byte) { t.ready[seg.Off] = data }

// Failed reports whether a batch's read of seg failed (until Forget).
func (t *Shard) Failed(seg tiered.Segment) bool { return t.failed[seg.Off] }

// ReadFailed logs err and marks seg's read failed until Forget.
func (t *Shard) ReadFailed(seg tiered.Segment, err error) {
	t.logErr(err)
	t.failed[seg.Off] = true
}

// Forget drops what a batch's read of seg left (a batch that still waits
// for seg reads it again) and releases seg, retained for the read.
func (t *Shard) Forget(seg tiered.Segment) {
	delete(t.ready, seg.Off)
	delete(t.failed, seg.Off)
	t.store.Release(seg)
}

// Loaded makes the offloaded v an in-memory value holding data (a copy,
// or a private read's bytes); v's space is freed, deferred while a read
// retains it.
func (t *Shard) Loaded(v *shard.Value, data []byte) {
	t.loads++
	t.Free(v)
	v.SetStr(data)
}

// Served counts a read-only command served from a read, its value left
// offloaded.
func (t *Shard) Served() { t.readServes++ }

// Restore offloads again the value at key that a read-only command ran
// on in place (data, read from seg): it becomes external at seg, or, gone
// meanwhile (a lazy expiry inside the command), seg is freed.
func (t *Shard) Restore(db *shard.DB, key []byte, seg tiered.Segment, data []byte) {
	v := db.Peek(key)
	if v != nil && v.Type == shard.TypeString && !v.IsExternal() && v.StrLen() == len(data) &&
		unsafe.SliceData(v.Str()) == unsafe.SliceData(data) {
		db.Offloaded(v, seg.Off, seg.Len)
		return
	}
	t.entries--
	t.bytes -= int64(seg.Len)
	t.store.Free(seg)
}

// Pin keeps the values of keys in memory until Unpin: the offload walk
// skips pinned keys and a write job finishing for one frees its space
// instead of making the value external (Run, written). That, and nothing
// else making a value external (the server's batches only restore values
// they made in-memory within one command), is the invariant that lets a
// coordinated command whose values LoadKeys loaded find them all in
// memory in its transaction's steps, with no blocking load (DB.Find's
// fallback).
func (t *Shard) Pin(keys []Key) {
	for _, k := range keys {
		t.pins[k]++
	}
}

// Unpin undoes Pin.
func (t *Shard) Unpin(keys []Key) {
	for _, k := range keys {
		if t.pins[k]--; t.pins[k] <= 0 {
			delete(t.pins, k)
		}
	}
	t.unpins++ // the walk may have passed over them: not idle
}

// Pinned is the number of keys pinned.
func (t *Shard) Pinned() int { return len(t.pins) }

// LoadKeys reads the offloaded values among keys and loads them into
// memory, then calls done (on the shard goroutine, possibly at once);
// failed: a value is still offloaded because its read failed.
func (t *Shard) LoadKeys(keys []Key, done func(failed bool)) {
	if t.entries == 0 {
		done(false)
		return
	}
	var segs []tiered.Segment
	for _, k := range keys {
		if v := t.sh.DBs[k.DB].Peek(unsafe.Slice(unsafe.StringData(k.Key), len(k.Key))); v != nil && v.IsExternal() {
			segs = append(segs, SegmentOf(v))
		}
	}
	if len(segs) == 0 {
		done(false)
		return
	}
	data := make(map[int64][]byte, len(segs))
	var read []tiered.Segment // each segment once (a key may be named twice)
	waiting := 0
	failed := false
	finish := func() {
		for _, k := range keys {
			v := t.sh.DBs[k.DB].Peek(unsafe.Slice(unsafe.StringData(k.Key), len(k.Key)))
			if v == nil || !v.IsExternal() {
				continue
			}
			// Not read: its read failed (a key of a preload is pinned, so
			// it cannot be offloaded again at another segment meanwhile).
			b, ok := data[SegmentOf(v).Off]
			failed = failed || !ok
			if ok && len(b) == v.StrLen() {
				if len(b) <= BigValue {
					b = bytes.Clone(b) // shared with other readers
				}
				t.Loaded(v, b) // a big value's bytes are a private read's; freed after the Release below
			}
		}
		for _, g := range read {
			t.store.Release(g)
		}
		done(failed)
	}
	for _, g := range segs {
		if _, dup := data[g.Off]; dup {
			continue
		}
		data[g.Off] = nil
		read = append(read, g)
		waiting++
		t.store.Retain(g)
		cb := func(b []byte, err error) {
			if err != nil {
				t.logErr(err)
				delete(data, g.Off)
			} else {
				data[g.Off] = b
			}
			if waiting--; waiting == 0 {
				finish()
			}
		}
		if g.Len > BigValue {
			t.store.ReadPrivate(g, cb) // taken over by finish, not copied
		} else {
			t.store.Read(g, cb)
		}
	}
}

// PinCount is the number of commands that pinned k.
func (t *Shard) PinCount(k Key) int { return t.pins[k] }
