package rdbvalue

// Values to and from the RDB format: Encode feeds an rdb.Encoder from a
// stored value; Loader is the rdb.Handler that builds values from a file
// (start-up, DEBUG RELOAD), a replication stream or a DUMP payload
// (RESTORE).

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/dfly/dfly/lock"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/hash"
	"github.com/dfly/dfly/types/list"
	"github.com/dfly/dfly/types/set"
	"github.com/dfly/dfly/types/stream"
	"github.com/dfly/dfly/types/zset"
)

// Encode writes key's value v with meta m to e.
func Encode(e *rdb.Encoder, key []byte, v *shard.Value, m rdb.Meta) {
	switch v.Type {
	case shard.TypeString:
		e.String(key, v.Str(), m)
	case shard.TypeList:
		l := v.Obj().(*list.List)
		e.BeginList(key, l.Len(), m)
		l.Range(0, l.Len()-1, func(b []byte) bool { e.ListElement(b); return true })
		e.End()
	case shard.TypeHash:
		h := v.Obj().(*hash.Hash)
		e.BeginHash(key, h.Len(), m)
		h.Range(func(f, val []byte) bool { e.HashField(f, val); return true })
		e.End()
	case shard.TypeSet:
		s := v.Obj().(*set.Set)
		e.BeginSet(key, s.Len(), m)
		s.Range(func(b []byte) bool { e.SetMember(b); return true })
		e.End()
	case shard.TypeZSet:
		z := v.Obj().(*zset.Set)
		e.BeginZSet(key, z.Len(), m)
		var buf []byte
		z.Ascend(0, func(member string, score float64) bool {
			buf = append(buf[:0], member...)
			e.ZSetMember(buf, score)
			return true
		})
		e.End()
	case shard.TypeStream:
		encodeStream(e, key, v.Obj().(*stream.Stream), m)
	case shard.TypeLock:
		// A hash redis-server loads as one (lock.Fields; README "Locks").
		f := v.Obj().(*lock.Lock).Fields(lock.Process.UnixMs)
		e.BeginHash(key, len(f), m)
		for _, kv := range f {
			e.HashField([]byte(kv[0]), []byte(kv[1]))
		}
		e.End()
	}
}

func rdbID(id stream.ID) rdb.StreamID { return rdb.StreamID{Ms: id.Ms, Seq: id.Seq} }

func encodeStream(e *rdb.Encoder, key []byte, s *stream.Stream, m rdb.Meta) {
	e.BeginStream(key, s.Len(), m)
	var fields [][]byte
	it := s.Range(stream.ID{}, stream.MaxID, false)
	for {
		ent, ok := it.Next()
		if !ok {
			break
		}
		fields = ent.Fields(fields[:0])
		e.StreamEntry(rdbID(ent.ID), fields)
	}
	var first stream.ID
	if s.Len() > 0 {
		first = s.FirstID()
	}
	groups := s.Groups()
	e.StreamMeta(rdb.StreamMeta{Length: uint64(s.Len()), LastID: rdbID(s.LastID), FirstID: rdbID(first),
		MaxDeletedID: rdbID(s.MaxDeletedID), EntriesAdded: uint64(s.EntriesAdded), Groups: uint64(len(groups))})
	for _, g := range groups {
		e.StreamGroup(rdb.StreamGroup{Name: []byte(g.Name), LastID: rdbID(g.LastID), EntriesRead: g.EntriesRead,
			Pending: uint64(g.PendingLen())})
		for i := 0; i < g.PendingLen(); i++ {
			p := g.PendingAt(i)
			e.StreamPending(rdb.StreamPending{ID: rdbID(p.ID), DeliveryTime: p.DeliveryTime, DeliveryCount: uint64(p.DeliveryCount)})
		}
		consumers := g.Consumers()
		e.StreamConsumers(uint64(len(consumers)))
		for _, c := range consumers {
			ids := c.Pending()
			e.StreamConsumer(rdb.StreamConsumer{Name: []byte(c.Name), SeenTime: c.SeenTime, ActiveTime: c.SeenTime,
				Pending: uint64(len(ids))})
			for _, id := range ids {
				e.StreamConsumerPending(rdbID(id))
			}
		}
	}
	e.End()
}

const (
	// loadBatch is how many keys go to a shard in one message.
	loadBatch = 256
	// loadKeyArena is the size of the blocks the loader copies keys into.
	loadKeyArena = 16 << 10
)

// Loader builds values from decoded records. In file mode each finished
// key goes into its shard's batch, handed to dispatch when full; in dump
// mode (RESTORE) the one value is kept in result.
type Loader struct {
	shardOf  func(key []byte) int
	dbs      int // databases per shard
	dispatch func(sid int, items []Item)
	// Reuse: dispatch applies the items before it returns, so the batch
	// and its keys' bytes can be reused; otherwise dispatch keeps them.
	Reuse bool
	// Free, if not nil, offers applied batches back (when not Reuse).
	Free chan []Item
	// OnFunction, if not nil, loads a function library record; one that
	// does not load is its to report and skip (the keys matter more).
	OnFunction func(code []byte)
	// OnAUX, if not nil, sees the file's AUX fields (used-mem ...).
	OnAUX   func(key, val []byte)
	now     int64
	db      int
	batches [][]Item
	// keyBufs[sid] holds the keys of shard sid's batch: one allocation per
	// block of keys, not one per key (the table copies them anyway). Bytes
	// below its length are never written again unless reuse is set.
	keyBufs [][]byte
	// valBufs[sid]: the same for the small string values of the batch.
	valBufs [][]byte
	keys    int // keys loaded (Keys)
	// reserveBudget: the keys ResizeDB may still reserve room for.
	reserveBudget int

	// the value being built
	cur      Item
	curSid   int
	typ      rdb.Type
	list     *list.List
	hash     *hash.Hash
	set      *set.Set
	zset     *zset.Set
	strm     *stream.Stream
	group    *stream.Group
	consumer *stream.Consumer

	dump   bool
	result shard.Value
	got    bool
}

// NewLoader returns a Loader for shards shards of dbs databases each,
// routing a key to shardOf(key) and handing full batches to dispatch.
func NewLoader(shards, dbs int, shardOf func(key []byte) int, dispatch func(sid int, items []Item)) *Loader {
	return &Loader{shardOf: shardOf, dbs: dbs, dispatch: dispatch, now: time.Now().UnixMilli(),
		reserveBudget: loadReserveBudget, batches: make([][]Item, shards), keyBufs: make([][]byte, shards),
		valBufs: make([][]byte, shards)}
}

// KeepExpired loads keys whose expiry passed too: a replica's master
// decides what expired.
func (l *Loader) KeepExpired() { l.now = math.MinInt64 }

// Keys is the number of keys loaded so far.
func (l *Loader) Keys() int { return l.keys }

// Load decodes a whole RDB file and hands every key to its shard.
func (l *Loader) Load(r io.Reader) error {
	d := rdb.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	err := d.Decode(l)
	if err == nil {
		l.Flush()
	}
	return err
}

// Flush dispatches every shard's partial batch.
func (l *Loader) Flush() {
	for sid, b := range l.batches {
		if len(b) > 0 {
			l.send(sid)
		}
	}
}

// send dispatches shard sid's batch.
func (l *Loader) send(sid int) {
	l.dispatch(sid, l.batches[sid])
	if l.Reuse {
		l.batches[sid] = l.batches[sid][:0]
		l.keyBufs[sid] = l.keyBufs[sid][:0]
		l.valBufs[sid] = l.valBufs[sid][:0]
	} else {
		l.batches[sid] = nil
	}
}

// key starts the value of key, copied into its shard's key block.
func (l *Loader) key(key []byte, expireAt int64) {
	if l.dump {
		l.cur = Item{key: append([]byte(nil), key...), expireAt: expireAt}
		return
	}
	sid := l.shardOf(key)
	a := l.keyBufs[sid]
	if len(a)+len(key) > cap(a) {
		a = make([]byte, 0, max(loadKeyArena, len(key))) // earlier keys keep the old block
	}
	a = append(a, key...)
	l.keyBufs[sid] = a
	l.cur = Item{key: a[len(a)-len(key) : len(a) : len(a)], expireAt: expireAt}
	l.curSid = sid
}

// DecodeDump builds the value of a DUMP payload (RESTORE).
func DecodeDump(payload []byte) (shard.Value, error) {
	l := &Loader{dump: true}
	if err := rdb.DecodeDump(payload, l); err != nil {
		return shard.Value{}, err
	}
	if !l.got {
		return shard.Value{}, rdb.ErrBadDataFormat
	}
	return l.result, nil
}

func (l *Loader) finish(v shard.Value) {
	if l.dump {
		l.result, l.got = v, true
		return
	}
	at := l.cur.expireAt
	if at != 0 && at <= l.now {
		return // expired while the file sat on disk: Redis skips it too
	}
	l.keys++
	l.add(l.curSid, Item{db: l.db, key: l.cur.key, val: v, expireAt: at})
}

// add appends an item to shard sid's batch, sending a full one.
func (l *Loader) add(sid int, it Item) {
	b := l.batches[sid]
	if b == nil {
		select {
		case b = <-l.Free: // a nil channel never delivers
		default:
			b = make([]Item, 0, loadBatch)
		}
	}
	l.batches[sid] = append(b, it)
	if len(l.batches[sid]) >= loadBatch {
		l.send(sid)
	}
}

// loadReserveBudget bounds the keys a load reserves room for (RESIZEDB):
// the counts come from the stream, and room for 1<<23 keys is about 400
// MiB of empty tables. LimitReserve lowers it to what a stream of known
// size can hold.
const loadReserveBudget = 1 << 23

// LimitReserve bounds the reservations by the input's size: a key takes
// at least 3 bytes of an RDB stream; size <= 0 is unknown.
func (l *Loader) LimitReserve(size int64) {
	if size > 0 {
		l.reserveBudget = int(min(int64(l.reserveBudget), size/3))
	}
}

func (l *Loader) AUX(key, val []byte) error {
	if l.OnAUX != nil {
		l.OnAUX(key, val)
	}
	return nil
}

// ResizeDB reserves room for the keys the stream announces for the
// current DB (DB.Reserve), each shard its share: a shard's table grows by
// splitting otherwise, which was about 14% of a replica's CPU during a
// full sync of 1M keys.
func (l *Loader) ResizeDB(keys, exp uint64) error {
	if l.dump || keys == 0 {
		return nil
	}
	n := int(min(keys, uint64(l.reserveBudget)))
	l.reserveBudget -= n
	e := int(min(exp, uint64(n)))
	shards := len(l.batches)
	for sid := range shards {
		// The shares vary by a few square roots of n/shards: Reserve plans
		// for 70% of the room it makes.
		l.add(sid, Item{db: l.db, reservation: true, reserve: int32(n / shards), reserveExp: int32(e / shards)})
	}
	return nil
}

// Function hands a function library record to OnFunction, if set.
func (l *Loader) Function(code []byte) error {
	if l.OnFunction != nil {
		l.OnFunction(code)
	}
	return nil
}

func (l *Loader) SelectDB(db uint64) error {
	if db >= uint64(l.dbs) {
		return fmt.Errorf("%w: DB index %d out of range (databases %d)", rdb.ErrCorrupt, db, l.dbs)
	}
	l.db = int(db)
	return nil
}

func (l *Loader) String(key, val []byte, m rdb.Meta) error {
	l.key(key, m.ExpireAt)
	if l.dump || !shard.Packable(len(val)) {
		l.finish(shard.NewString(val))
		return nil
	}
	// A small value waits in a block of its shard's values, not in a heap
	// object of its own: the block becomes one of the DB's chunks
	// (DB.ImportChunk), or, when the batch is reused, Load copies it.
	a := l.valBufs[l.curSid]
	off := (len(a) + 7) &^ 7 // chunks are 8-byte aligned
	if off+len(val) > cap(a) {
		a, off = make([]byte, 0, shard.ChunkSize), 0
		if !l.Reuse {
			l.add(l.curSid, Item{db: l.db, key: a[:cap(a)], chunk: true})
		}
	}
	a = append(a[:off], val...)
	l.valBufs[l.curSid] = a
	l.finish(shard.StringValue(a[off:len(a):len(a)]))
	return nil
}

func (l *Loader) Begin(key []byte, t rdb.Type, sizeHint int, m rdb.Meta) error {
	l.key(key, m.ExpireAt)
	l.typ = t
	switch t {
	case rdb.TypeList:
		l.list = list.New()
	case rdb.TypeHash:
		l.hash = hash.New()
	case rdb.TypeSet:
		l.set = set.New()
	case rdb.TypeZSet:
		l.zset = zset.New()
	case rdb.TypeStream:
		l.strm = stream.New()
		l.group, l.consumer = nil, nil
	default:
		return fmt.Errorf("%w: value type %v", rdb.ErrCorrupt, t)
	}
	return nil
}

var errLoadOrder = fmt.Errorf("%w: element outside its value", rdb.ErrCorrupt)

func (l *Loader) ListElement(val []byte) error {
	if l.list == nil {
		return errLoadOrder
	}
	l.list.PushRight(val)
	return nil
}

func (l *Loader) SetMember(member []byte) error {
	if l.set == nil {
		return errLoadOrder
	}
	if !l.set.Add(member) {
		return fmt.Errorf("%w: duplicate set member", rdb.ErrCorrupt)
	}
	return nil
}

func (l *Loader) HashField(field, val []byte) error {
	if l.hash == nil {
		return errLoadOrder
	}
	if !l.hash.Set(field, val) {
		return fmt.Errorf("%w: duplicate hash field", rdb.ErrCorrupt)
	}
	return nil
}

func (l *Loader) ZSetMember(member []byte, score float64) error {
	if l.zset == nil {
		return errLoadOrder
	}
	if !l.zset.Add(member, score) {
		return fmt.Errorf("%w: duplicate sorted set member", rdb.ErrCorrupt)
	}
	return nil
}

func streamID(id rdb.StreamID) stream.ID { return stream.ID{Ms: id.Ms, Seq: id.Seq} }

func (l *Loader) StreamEntry(id rdb.StreamID, fieldsValues [][]byte) error {
	if l.strm == nil {
		return errLoadOrder
	}
	if n := l.strm.Len(); n > 0 && !l.strm.LastEntryID().Less(streamID(id)) {
		return fmt.Errorf("%w: stream entry IDs out of order", rdb.ErrCorrupt)
	}
	l.strm.Append(streamID(id), fieldsValues)
	return nil
}

func (l *Loader) StreamMeta(m rdb.StreamMeta) error {
	if l.strm == nil {
		return errLoadOrder
	}
	l.strm.LastID = streamID(m.LastID)
	l.strm.MaxDeletedID = streamID(m.MaxDeletedID)
	l.strm.EntriesAdded = int64(m.EntriesAdded)
	return nil
}

func (l *Loader) StreamGroup(g rdb.StreamGroup) error {
	if l.strm == nil {
		return errLoadOrder
	}
	grp, ok := l.strm.CreateGroup(g.Name, streamID(g.LastID), g.EntriesRead)
	if !ok {
		return fmt.Errorf("%w: duplicate stream group %q", rdb.ErrCorrupt, g.Name)
	}
	l.group, l.consumer = grp, nil
	return nil
}

func (l *Loader) StreamPending(p rdb.StreamPending) error {
	if l.group == nil {
		return errLoadOrder
	}
	if !l.group.AddPending(streamID(p.ID), p.DeliveryTime, int64(p.DeliveryCount)) {
		return fmt.Errorf("%w: duplicate stream PEL entry %v", rdb.ErrCorrupt, p.ID)
	}
	return nil
}

func (l *Loader) StreamConsumer(c rdb.StreamConsumer) error {
	if l.group == nil {
		return errLoadOrder
	}
	cons, created := l.group.CreateConsumer(c.Name, c.SeenTime)
	if !created {
		return fmt.Errorf("%w: duplicate stream consumer %q", rdb.ErrCorrupt, c.Name)
	}
	cons.SeenTime = c.SeenTime
	l.consumer = cons
	return nil
}

func (l *Loader) StreamConsumerPending(id rdb.StreamID) error {
	if l.consumer == nil {
		return errLoadOrder
	}
	if !l.group.Own(l.consumer, streamID(id)) {
		return fmt.Errorf("%w: consumer PEL entry %v not in the group PEL", rdb.ErrCorrupt, id)
	}
	return nil
}

func (l *Loader) End() error {
	var v shard.Value
	switch l.typ {
	case rdb.TypeList:
		if l.list == nil {
			return errLoadOrder
		}
		v = shard.ObjectValue(shard.TypeList, l.list)
	case rdb.TypeHash:
		if l.hash == nil {
			return errLoadOrder
		}
		v = shard.ObjectValue(shard.TypeHash, l.hash)
		if lk, ok, err := lockOf(l.hash); err != nil {
			return fmt.Errorf("%w: %v", rdb.ErrCorrupt, err)
		} else if ok {
			v = shard.ObjectValue(shard.TypeLock, lk)
		}
	case rdb.TypeSet:
		if l.set == nil {
			return errLoadOrder
		}
		v = shard.ObjectValue(shard.TypeSet, l.set)
	case rdb.TypeZSet:
		if l.zset == nil {
			return errLoadOrder
		}
		v = shard.ObjectValue(shard.TypeZSet, l.zset)
	case rdb.TypeStream:
		if l.strm == nil {
			return errLoadOrder
		}
		for _, g := range l.strm.Groups() {
			for i := 0; i < g.PendingLen(); i++ {
				if g.PendingAt(i).Owner == nil {
					return fmt.Errorf("%w: stream PEL entry %v has no consumer", rdb.ErrCorrupt, g.PendingAt(i).ID)
				}
			}
		}
		v = shard.ObjectValue(shard.TypeStream, l.strm)
	default:
		return errLoadOrder
	}
	l.list, l.hash, l.set, l.zset, l.strm, l.group, l.consumer = nil, nil, nil, nil, nil, nil, nil
	l.finish(v)
	return nil
}

var _ rdb.Handler = (*Loader)(nil)

// lockOf reads a hash carrying lock.MarkerField as the lock it stands for.
func lockOf(h *hash.Hash) (*lock.Lock, bool, error) {
	if _, ok := h.Get([]byte(lock.MarkerField)); !ok {
		return nil, false, nil
	}
	get := func(f string) (string, bool) {
		v, ok := h.Get([]byte(f))
		return string(v), ok
	}
	each := func(fn func(f, v string)) {
		h.Range(func(f, v []byte) bool { fn(string(f), string(v)); return true })
	}
	lk, err := lock.FromFields(get, each, lock.Process.FromUnixMs)
	if err != nil {
		return nil, false, err
	}
	lock.Observe(lk.Gen)
	return lk, true, nil
}
