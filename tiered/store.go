package tiered

import (
	"fmt"
	"os"
	"sync"
)

// File is the backing file's I/O, an interface so tests can inject
// ENOSPC or EIO. *os.File implements it.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Close() error
}

// OpenFile creates (or truncates) a backing file; its old contents are
// never needed, offloaded values live only as long as the process.
func OpenFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
}

// Pool runs file I/O on a few goroutines shared by the stores.
type Pool struct {
	jobs chan func()
	wg   sync.WaitGroup
	once sync.Once
}

// NewPool starts n I/O goroutines.
func NewPool(n int) *Pool {
	p := &Pool{jobs: make(chan func(), 8192)}
	p.wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer p.wg.Done()
			for j := range p.jobs {
				j()
			}
		}()
	}
	return p
}

// Close lets the queued jobs run and stops the goroutines.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.jobs); p.wg.Wait() })
}

// Stats are a store's counters, owned by its goroutine.
type Stats struct {
	Reads        uint64 // ReadAt calls issued (async and sync)
	SharedReads  uint64 // reads served by an I/O already in flight
	Writes       uint64 // write jobs completed
	WrittenBytes uint64
	ReadErrors   uint64
	WriteErrors  uint64
	PendingReads int64 // reads in flight
	PendingWrite int64 // write jobs in flight
	Truncations  uint64
}

// pin is the state of a segment being read or retained.
type pin struct {
	refs    int32 // pending read callbacks + retains
	freed   bool  // Free was called: give the space back on the last unpin
	reading bool
	cbs     []readCB
}

// readCB is a Read or ReadOwned callback.
type readCB struct {
	fn  func(data []byte, err error)
	own func(data []byte, shared bool, err error)
}

// Entry is one value in a write job: where it goes and whose it is (DB
// and Key identify the owner's entry; the store does not interpret them).
type Entry struct {
	Seg  Segment
	DB   int
	Key  string
	Data []byte // the bytes written (a view into the job's buffer)
}

type run struct {
	off int64
	buf []byte
}

// Store is one shard's backing file. All methods but ReadSync run on the
// owner goroutine; see the package comment.
type Store struct {
	f     File
	alloc *Allocator
	pool  *Pool
	post  func(func())
	pins  map[int64]*pin
	// the write job being built by Stash
	runs    []run
	entries []Entry
	bufs    [][]byte     // free write buffers
	parts   [][]byte     // free buffers of WritePart
	free    [11][][]byte // free read buffers by size class (Recycle)
	// size: the file's size as far as the store knows (the pages of its
	// writes, or what it was truncated to); truncating: a truncation is
	// in flight (shrink).
	size       int64
	truncating bool
	Stats      Stats
}

// truncater is a File that can shrink (*os.File).
type truncater interface{ Truncate(size int64) error }

// shrinkMin is how much free space at the end of the file makes the store
// truncate it (all of it, when nothing is left).
var shrinkMin int64 = 1 << 20

// shrink truncates the file to the allocator's size once enough of its
// tail is free. Invariant: while a truncation to T is in flight nothing
// can reach past T — the allocator does not grow the file (fixed: Stash
// gets ErrBusy), and every page past T is free, which the allocator only
// makes a page once no read of it is pending and no holder retains it
// (Free, unpin) — so the truncation removes nothing any I/O needs.
func (s *Store) shrink() {
	target := s.alloc.FileSize()
	if s.truncating || s.size <= target || (s.size-target < shrinkMin && target > 0) {
		return
	}
	tr, ok := s.f.(truncater)
	if !ok {
		return
	}
	s.truncating, s.alloc.fixed = true, true
	s.pool.jobs <- func() {
		err := tr.Truncate(target)
		s.post(func() {
			s.truncating, s.alloc.fixed = false, false
			if err == nil {
				s.size = target
				s.Stats.Truncations++
				s.shrink() // freed meanwhile
			}
		})
	}
}

// NewStore makes a store on f. post runs a function on the owner
// goroutine (from any goroutine); maxBytes bounds the file (0: none).
func NewStore(f File, pool *Pool, post func(func()), maxBytes int64) *Store {
	return &Store{f: f, alloc: NewAllocator(maxBytes), pool: pool, post: post, pins: make(map[int64]*pin)}
}

// Allocator exposes the placement state (sizes for INFO, tests).
func (s *Store) Allocator() *Allocator { return s.alloc }

// Close closes the file. Callbacks of I/O still in flight may never run.
func (s *Store) Close() error { return s.f.Close() }

// Stash places data and adds it to the write job being built (adjacent
// segments share one WriteAt). data is copied. The value stays the
// owner's until Commit's callback reports the write done.
func (s *Store) Stash(db int, key string, data []byte) error {
	seg, err := s.alloc.Alloc(uint32(len(data)))
	if err == ErrBusy {
		return err
	}
	if err != nil {
		s.Stats.WriteErrors++
		return err
	}
	var r *run
	if n := len(s.runs); n > 0 && slotEnd(s.entries[len(s.entries)-1].Seg) == seg.Off &&
		seg.Off+int64(len(data))-s.runs[n-1].off <= int64(cap(s.runs[n-1].buf)) {
		// The next slot and room in the buffer: pad the previous value's
		// slot (its own space) so both go in one WriteAt.
		r = &s.runs[n-1]
		r.buf = r.buf[:seg.Off-r.off]
	} else {
		s.runs = append(s.runs, run{off: seg.Off, buf: s.buffer(len(data))})
		r = &s.runs[len(s.runs)-1]
	}
	start := len(r.buf)
	r.buf = append(r.buf, data...)
	s.entries = append(s.entries, Entry{Seg: seg, DB: db, Key: key, Data: r.buf[start:len(r.buf):len(r.buf)]})
	return nil
}

// runSize is the size of write buffers; a bigger value gets its own.
const runSize = 64 << 10

// buffer is an empty write buffer for at least n bytes, recycled when it
// can be. Padding between slots is whatever the buffer held before: the
// bytes of a slot past its value's length are never read.
func (s *Store) buffer(n int) []byte {
	if n > runSize {
		return make([]byte, 0, n)
	}
	if k := len(s.bufs); k > 0 {
		b := s.bufs[k-1]
		s.bufs = s.bufs[:k-1]
		return b[:0]
	}
	return make([]byte, 0, runSize)
}

// slotEnd is the end of the space seg occupies: its slot or its pages.
func slotEnd(seg Segment) int64 {
	if seg.Len <= MaxSmall {
		return seg.Off + int64(classes[classOf(seg.Len)])
	}
	return seg.Off + (int64(seg.Len)+PageSize-1)/PageSize*PageSize
}

// Staged is the number of values in the job being built.
func (s *Store) Staged() int { return len(s.entries) }

// Commit writes the job built by Stash on the pool; done runs on the
// owner with its entries when every write finished (their Data is valid
// only until done returns). On err != nil the
// entries' segments are already freed: the owner keeps the values. On
// success the owner must either switch each value to its segment or Free
// the segment.
func (s *Store) Commit(done func(entries []Entry, err error)) {
	if len(s.entries) == 0 {
		return
	}
	runs, entries := s.runs, s.entries
	s.runs, s.entries = nil, nil
	s.size = max(s.size, s.alloc.FileSize())
	s.Stats.PendingWrite++
	s.pool.jobs <- func() {
		var err error
		for _, r := range runs {
			if _, err = s.f.WriteAt(r.buf, r.off); err != nil {
				err = fmt.Errorf("tiered: write %d bytes at %d: %w", len(r.buf), r.off, err)
				break
			}
		}
		s.post(func() {
			s.Stats.PendingWrite--
			if err != nil {
				s.Stats.WriteErrors++
				for _, e := range entries {
					s.alloc.Free(e.Seg)
				}
				s.shrink()
			} else {
				s.Stats.Writes++
				for _, r := range runs {
					s.Stats.WrittenBytes += uint64(len(r.buf))
				}
			}
			done(entries, err)
			for _, r := range runs {
				if cap(r.buf) == runSize && len(s.bufs) < 32 {
					s.bufs = append(s.bufs, r.buf)
				}
			}
		})
	}
}

// Read reads seg on the pool and calls cb on the owner with its bytes.
// Reads of a segment already being read join that I/O; every callback
// gets the same slice, which none may modify (copy to keep it). The
// segment is pinned until cb returns: Free during the read is deferred.
func (s *Store) Read(seg Segment, cb func(data []byte, err error)) {
	s.read(seg, readCB{fn: cb})
}

// ReadOwned is Read whose callback also learns whether the bytes went to
// other callbacks too; when they did not (shared=false), its caller owns
// them and may hand them to Recycle once done with them.
func (s *Store) ReadOwned(seg Segment, cb func(data []byte, shared bool, err error)) {
	s.read(seg, readCB{own: cb})
}

func (s *Store) read(seg Segment, cb readCB) {
	p := s.pin(seg)
	p.cbs = append(p.cbs, cb)
	if p.reading {
		s.Stats.SharedReads++
		return
	}
	p.reading = true
	s.Stats.Reads++
	s.Stats.PendingReads++
	buf := s.readBuffer(int(seg.Len))
	s.pool.jobs <- func() {
		buf, err := readAt(s.f, buf, seg)
		s.post(func() { s.readDone(seg, buf, err) })
	}
}

// readAt reads seg into buf, or into a new buffer when buf is nil: a
// buffer too big to recycle is allocated on the pool, so the owner never
// pays for zeroing it.
func readAt(f File, buf []byte, seg Segment) ([]byte, error) {
	if buf == nil {
		buf = make([]byte, seg.Len)
	}
	if _, err := f.ReadAt(buf, seg.Off); err != nil {
		return buf, fmt.Errorf("tiered: read %d bytes at %d: %w", seg.Len, seg.Off, err)
	}
	return buf, nil
}

// ReadPrivate reads seg on the pool with an I/O of its own, shared with no
// other read, and calls cb on the owner with bytes the caller owns: it may
// keep and modify them (a big value loaded back into memory without a
// copy). The segment is pinned until cb returns, as for Read.
func (s *Store) ReadPrivate(seg Segment, cb func(data []byte, err error)) {
	s.pin(seg)
	s.Stats.Reads++
	s.Stats.PendingReads++
	s.pool.jobs <- func() {
		buf, err := readAt(s.f, nil, seg)
		s.post(func() {
			s.Stats.PendingReads--
			if err != nil {
				s.Stats.ReadErrors++
			}
			cb(buf, err)
			s.unpin(seg)
		})
	}
}

func (s *Store) readDone(seg Segment, buf []byte, err error) {
	s.Stats.PendingReads--
	if err != nil {
		s.Stats.ReadErrors++
	}
	p := s.pins[seg.Off]
	cbs := p.cbs
	p.cbs, p.reading = nil, false
	shared := len(cbs) > 1
	for _, cb := range cbs {
		if cb.own != nil {
			cb.own(buf, shared, err)
		} else {
			cb.fn(buf, err)
		}
		s.unpin(seg)
	}
}

// readBuffer is a buffer of n bytes for a read, recycled when possible;
// nil when n is too big to recycle (readAt allocates it on the pool).
func (s *Store) readBuffer(n int) []byte {
	if c := recycleClass(n); c >= 0 {
		if k := len(s.free[c]); k > 0 {
			b := s.free[c][k-1]
			s.free[c] = s.free[c][:k-1]
			return b[:n]
		}
		return make([]byte, n, 64<<c)
	}
	return nil
}

// recycleClass is the free list for buffers of n bytes: capacity 64<<c,
// up to 64 KiB; -1 when n is bigger.
func recycleClass(n int) int {
	c := 0
	for 64<<c < n {
		c++
	}
	if c >= len(Store{}.free) {
		return -1
	}
	return c
}

// Recycle hands back bytes a ReadOwned callback owned (shared=false), once
// nothing holds them, so the next read reuses the buffer instead of
// allocating (optional: an unrecycled buffer is simply collected).
func (s *Store) Recycle(b []byte) {
	c := recycleClass(cap(b))
	if c < 0 || cap(b) != 64<<c || len(s.free[c]) >= maxFree>>(c/2) {
		return
	}
	s.free[c] = append(s.free[c], b)
}

// maxFree bounds the free list of the smallest buffers (fewer of bigger).
const maxFree = 1024

// ReadSync reads seg now, blocking the caller: only for paths that cannot
// wait (--debug_snapshot_reference, the fallback for values not loaded
// ahead).
// The caller is the owner goroutine, so seg cannot be freed meanwhile.
func (s *Store) ReadSync(seg Segment) ([]byte, error) {
	s.Stats.Reads++
	buf := make([]byte, seg.Len)
	if _, err := s.f.ReadAt(buf, seg.Off); err != nil {
		s.Stats.ReadErrors++
		return nil, fmt.Errorf("tiered: read %d bytes at %d: %w", seg.Len, seg.Off, err)
	}
	return buf, nil
}

// Retain keeps seg's space from reuse until Release, even if freed
// meanwhile: a holder of bytes read earlier can then trust that a value
// still at seg holds those bytes.
func (s *Store) Retain(seg Segment) { s.pin(seg) }

// Release ends a Retain.
func (s *Store) Release(seg Segment) { s.unpin(seg) }

func (s *Store) pin(seg Segment) *pin {
	p := s.pins[seg.Off]
	if p == nil {
		p = &pin{}
		s.pins[seg.Off] = p
	}
	p.refs++
	return p
}

func (s *Store) unpin(seg Segment) {
	p := s.pins[seg.Off]
	if p == nil {
		return
	}
	p.refs--
	if p.refs > 0 {
		return
	}
	delete(s.pins, seg.Off)
	if p.freed {
		s.alloc.Free(seg)
		s.shrink()
	}
}

// Free gives seg's space back, once no read of it is pending and no
// holder retains it.
func (s *Store) Free(seg Segment) {
	if p := s.pins[seg.Off]; p != nil {
		p.freed = true
		return
	}
	s.alloc.Free(seg)
	s.shrink()
}

// Pinned reports whether seg has a pending read or a holder.
func (s *Store) Pinned(seg Segment) bool { return s.pins[seg.Off] != nil }
