package journal

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Op is an entry's kind.
type Op uint8

const (
	// OpCommand is a write outside any transaction.
	OpCommand Op = 1
	// OpMulti is one command of a transaction's part on this shard.
	OpMulti Op = 2
	// OpExec ends this shard's part of transaction TxID; Shards names every
	// shard of the transaction.
	OpExec Op = 3
)

func (o Op) String() string {
	switch o {
	case OpCommand:
		return "COMMAND"
	case OpMulti:
		return "MULTI"
	case OpExec:
		return "EXEC"
	}
	return "UNKNOWN"
}

// Entry is one journal record.
type Entry struct {
	LSN uint64
	Op  Op
	DB  int
	// TxID is the transaction's id (OpMulti, OpExec); 0 for OpCommand.
	TxID uint64
	// Seq orders a transaction's commands across all of its shards.
	Seq uint32
	// Shards are the transaction's shards, ascending (OpExec only).
	Shards []uint16
	// Args is the command (OpCommand, OpMulti), e.g. SET k v PXAT 123.
	Args [][]byte
}

// Config bounds the backlog.
type Config struct {
	// BacklogBytes bounds the ring (the entries' encoded bytes); 0 keeps
	// no backlog.
	BacklogBytes int
	// BacklogAge drops entries older than this from the ring (0: no bound).
	BacklogAge time.Duration
	// Now, when set, is the clock (unix ms) the age bound reads: the
	// shard's, read once per batch of commands. time.Now per write was
	// 0.76% of a master's CPU during a full sync (perf, tests/bench/repl.sh).
	Now func() int64
}

type subscriber struct {
	id int
	fn func(*Entry)
}

// Journal is one shard's journal. See the package doc for its rules.
type Journal struct {
	shard  int
	cfg    Config
	active atomic.Bool
	keep   bool // the backlog is retained without subscribers
	lsn    uint64
	subs   []subscriber
	nextID int

	// ring holds the backlog: entries ring[head], ring[head+1] ... (mod
	// len), n of them, bytes in all. Their encodings (Encode) lie in buf,
	// a circular buffer of the bound's size, one after the other from
	// ring[head]'s (the next at tail), wrapping around its end.
	//
	// The backlog keeps encodings, not entries: an Entry and a copy of its
	// arguments per write were the garbage of every write while a replica
	// synced (a heap profile of a master: half of its allocations during a
	// full sync under tests/bench/repl.sh's SET load, once the snapshot's
	// own went), and the collector's cycles they brought were the
	// master's worst latency (a 50-150 ms stall of an open-loop load).
	ring    []slot
	head    int
	n       int
	bytes   int
	buf     []byte
	tail    int
	scratch []byte // an encoding that wraps, written or read

	cur *Part
	rec Entry // Record's entry, valid during the call (subscribers' rule)
}

// slot is a backlog entry with what trimming the backlog reads: the
// oldest entry's size and age are in the ring itself.
type slot struct {
	lsn  uint64
	off  int   // of its encoding in buf
	size int   // of its encoding
	at   int64 // unix ms of the append, for the age bound
}

// New makes the journal of shard sid.
func New(sid int, cfg Config) *Journal { return &Journal{shard: sid, cfg: cfg} }

// Shard is the id of the journal's shard.
func (j *Journal) Shard() int { return j.shard }

// Active reports whether writes must be recorded: someone subscribed or a
// backlog is retained. Safe from any goroutine; false for a nil Journal.
func (j *Journal) Active() bool { return j != nil && j.active.Load() }

// update sets active. Invariant: no reader continues across writes the
// journal did not record. When recording stops, the writes after it go
// unrecorded and leave the LSN where it is, so a replica holding every
// entry to the last LSN would find ReadFrom(LSN()+1) good once recording
// starts again; one LSN is skipped instead (no entry ever has it), and
// ReadFrom from before the stop fails: that replica syncs in full.
func (j *Journal) update() {
	on := j.keep || len(j.subs) > 0
	if !on && j.active.Load() {
		j.lsn++
	}
	j.active.Store(on)
}

// Start retains a backlog (and so records) even without subscribers.
func (j *Journal) Start() {
	j.keep = true
	j.update()
}

// Stop drops the retained backlog; recording goes on while subscribers
// remain.
func (j *Journal) Stop() {
	j.keep = false
	j.ring, j.head, j.n, j.bytes, j.buf, j.tail = nil, 0, 0, 0, nil, 0
	j.update()
}

// LSN is the last LSN assigned (0 before the first entry).
func (j *Journal) LSN() uint64 { return j.lsn }

// Subscribe registers fn for every entry appended from now on; it returns
// the subscription's id and the last LSN before it, so that LSN+1 is the
// first entry fn sees. fn runs on the shard goroutine and must not block;
// the entry and its Args are valid only during the call (Clone keeps one).
func (j *Journal) Subscribe(fn func(*Entry)) (id int, lsn uint64) {
	j.nextID++
	j.subs = append(j.subs, subscriber{id: j.nextID, fn: fn})
	j.update()
	return j.nextID, j.lsn
}

// Unsubscribe removes a subscription.
func (j *Journal) Unsubscribe(id int) {
	for i, s := range j.subs {
		if s.id == id {
			j.subs = append(j.subs[:i], j.subs[i+1:]...)
			break
		}
	}
	j.update()
}

// First is the LSN of the oldest entry the backlog holds (0: empty).
func (j *Journal) First() uint64 {
	if j.n == 0 {
		return 0
	}
	return j.ring[j.head].lsn
}

// BacklogBytes is the size of the entries the backlog holds.
func (j *Journal) BacklogBytes() int { return j.bytes }

// ReadFrom calls fn with every held entry whose LSN is at least lsn, in
// order, and reports true; it reports false (calling nothing) when the
// backlog no longer holds lsn. lsn = LSN()+1 reads nothing and succeeds.
// As for a subscriber, an entry is valid only during the call.
func (j *Journal) ReadFrom(lsn uint64, fn func(*Entry)) bool {
	if lsn == 0 || lsn > j.lsn+1 {
		return false
	}
	if lsn == j.lsn+1 {
		return true
	}
	first := j.First()
	if first == 0 || lsn < first {
		return false
	}
	for i := int(lsn - first); i < j.n; i++ {
		s := j.ring[(j.head+i)%len(j.ring)]
		e, _, err := Decode(j.encoding(s))
		if err != nil {
			panic(fmt.Sprintf("journal: backlog entry %d does not decode: %v", s.lsn, err)) // our own encoding
		}
		fn(&e)
	}
	return true
}

// Record journals a write of the command args in database db: into the
// transaction part being built when one is entered (a copy), else as an
// OpCommand, which subscribers see during the call and the backlog keeps
// encoded: args are not kept.
func (j *Journal) Record(db int, args [][]byte) {
	if p := j.cur; p != nil {
		p.add(db, args)
		return
	}
	j.rec = Entry{Op: OpCommand, DB: db, Args: args}
	j.append(&j.rec)
	j.rec = Entry{}
}

// Enter makes p the part that Record fills until Leave; it returns the
// part entered before, for Leave.
func (j *Journal) Enter(p *Part) *Part {
	prev := j.cur
	j.cur = p
	return prev
}

// Leave restores the part entered before Enter.
func (j *Journal) Leave(prev *Part) { j.cur = prev }

// InPart reports whether a part is entered.
func (j *Journal) InPart() bool { return j.cur != nil }

// Commit appends p as this shard's part of transaction txid over shards
// (ascending): its entries as OpMulti, then the OpExec. p is reset.
func (j *Journal) Commit(p *Part, txid uint64, shards []uint16) {
	for i := range p.entries {
		e := &p.entries[i]
		e.Op, e.TxID = OpMulti, txid
		j.append(e)
	}
	j.rec = Entry{Op: OpExec, TxID: txid, Shards: shards}
	j.append(&j.rec)
	j.rec = Entry{}
	clear(p.entries) // their arguments may go
	p.entries = p.entries[:0]
}

// Append appends e (LSN assigned here) and returns its LSN.
func (j *Journal) Append(e Entry) uint64 {
	j.append(&e)
	return e.LSN
}

func (j *Journal) append(e *Entry) {
	j.lsn++
	e.LSN = j.lsn
	if j.cfg.BacklogBytes > 0 {
		j.keepInRing(e)
	}
	for _, s := range j.subs {
		s.fn(e)
	}
}

// keepInRing encodes e into the backlog, first dropping the oldest
// entries past the bounds or in the way; the newest entry always stays,
// so ReadFrom(LSN()) works. An encoding may wrap around buf's end.
func (j *Journal) keepInRing(e *Entry) {
	size := e.EncodedSize()
	s := slot{lsn: e.LSN, size: size}
	if j.cfg.BacklogAge > 0 {
		if j.cfg.Now != nil {
			s.at = j.cfg.Now()
		} else {
			s.at = time.Now().UnixMilli()
		}
	}
	if size > len(j.buf) {
		// The first entry, or one larger than the bound: it stays alone.
		j.clearRing()
		j.buf = make([]byte, max(j.cfg.BacklogBytes, size))
	}
	oldest := int64(0)
	if j.cfg.BacklogAge > 0 {
		oldest = s.at - j.cfg.BacklogAge.Milliseconds()
	}
	room := min(j.cfg.BacklogBytes, len(j.buf))
	for j.n > 0 && (j.bytes+size > room || j.ring[j.head].at < oldest) {
		j.bytes -= j.ring[j.head].size
		j.ring[j.head] = slot{}
		j.head = (j.head + 1) % len(j.ring)
		j.n--
	}
	if j.n == 0 {
		j.tail = 0
		if want := max(j.cfg.BacklogBytes, size); len(j.buf) > want {
			// A large entry has gone: so does its buffer.
			j.buf = make([]byte, want)
		}
	}
	if j.n == len(j.ring) {
		j.grow()
	}
	s.off = j.tail
	if end := j.tail + size; end <= len(j.buf) {
		e.Encode(j.buf[j.tail:j.tail:end])
	} else {
		j.scratch = e.Encode(j.scratch[:0])
		k := copy(j.buf[j.tail:], j.scratch)
		copy(j.buf, j.scratch[k:])
	}
	j.tail = (j.tail + size) % len(j.buf)
	j.ring[(j.head+j.n)%len(j.ring)] = s
	j.n++
	j.bytes += size
	if j.n < len(j.ring)/4 && len(j.ring) > 64 {
		j.shrink()
	}
}

// encoding is the held entry s's encoding (in scratch when it wraps).
func (j *Journal) encoding(s slot) []byte {
	if end := s.off + s.size; end <= len(j.buf) {
		return j.buf[s.off:end]
	}
	j.scratch = append(append(j.scratch[:0], j.buf[s.off:]...), j.buf[:s.size-(len(j.buf)-s.off)]...)
	return j.scratch
}

// clearRing drops every held entry.
func (j *Journal) clearRing() {
	clear(j.ring)
	j.head, j.n, j.bytes, j.tail = 0, 0, 0, 0
}

func (j *Journal) grow() {
	r := make([]slot, max(16, 2*len(j.ring)))
	for i := 0; i < j.n; i++ {
		r[i] = j.ring[(j.head+i)%len(j.ring)]
	}
	j.ring, j.head = r, 0
}

func (j *Journal) shrink() {
	r := make([]slot, len(j.ring)/2)
	for i := 0; i < j.n; i++ {
		r[i] = j.ring[(j.head+i)%len(j.ring)]
	}
	j.ring, j.head = r, 0
}

// Part is a shard's part of a transaction while the transaction runs: its
// commands are buffered here and appended together at Commit.
type Part struct {
	entries []Entry
	// seq is shared by every part of the transaction (nil: this part's own).
	seq *atomic.Uint32
	own atomic.Uint32
}

// NewPart makes a part whose commands are ordered by the transaction-wide
// counter seq (nil for a transaction of one shard).
func NewPart(seq *atomic.Uint32) *Part { return &Part{seq: seq} }

// Len is the number of buffered commands.
func (p *Part) Len() int { return len(p.entries) }

// Add buffers a command; safe only while no shard step of the transaction
// runs (the coordinator's own records, between steps). args are copied.
func (p *Part) Add(db int, args [][]byte) { p.add(db, args) }

func (p *Part) add(db int, args [][]byte) {
	c := p.seq
	if c == nil {
		c = &p.own
	}
	p.entries = append(p.entries, Entry{DB: db, Seq: c.Add(1), Args: cloneArgs(args)})
}

// cloneArgs copies args into one allocation.
func cloneArgs(args [][]byte) [][]byte {
	if args == nil {
		return nil
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}
