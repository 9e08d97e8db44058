package tiered

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestAllocatorPacksSmallValues(t *testing.T) {
	a := NewAllocator(0)
	var segs []Segment
	for i := 0; i < 4; i++ {
		s, err := a.Alloc(1000) // class 1024: four to a page
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s)
	}
	for i, s := range segs {
		if s.Off != int64(i)*1024 {
			t.Fatalf("slot %d at %d, want %d", i, s.Off, i*1024)
		}
	}
	if a.FileSize() != PageSize {
		t.Fatalf("file size %d, want one page", a.FileSize())
	}
	s, _ := a.Alloc(64) // another class: another page
	if s.Off != PageSize {
		t.Fatalf("64-byte value at %d, want %d", s.Off, PageSize)
	}
	// A freed slot is reused before the file grows.
	a.Free(segs[2])
	s, _ = a.Alloc(1024)
	if s.Off != segs[2].Off {
		t.Fatalf("freed slot not reused: got %d want %d", s.Off, segs[2].Off)
	}
	if a.FileSize() != 2*PageSize {
		t.Fatalf("file grew to %d", a.FileSize())
	}
}

func TestAllocatorPageRunsAndReuse(t *testing.T) {
	a := NewAllocator(0)
	big, _ := a.Alloc(3 * PageSize) // pages 0..2
	small, _ := a.Alloc(100)        // page 3
	if big.Off != 0 || small.Off != 3*PageSize {
		t.Fatalf("big at %d small at %d", big.Off, small.Off)
	}
	a.Free(big)
	// Two runs fit in the freed three pages before the file grows.
	b1, _ := a.Alloc(2*PageSize - 5)
	b2, _ := a.Alloc(PageSize + 1) // needs two pages: only one left in the hole
	if b1.Off != 0 {
		t.Fatalf("run not reused: %d", b1.Off)
	}
	if b2.Off != 4*PageSize {
		t.Fatalf("two-page run at %d, want 4 pages (after the small page)", b2.Off)
	}
	s, _ := a.Alloc(5000) // 2 pages
	if s.Off != 6*PageSize {
		t.Fatalf("got %d", s.Off)
	}
	// An emptied small page goes back to the page pool.
	a.Free(small)
	p, _ := a.Alloc(PageSize)
	if p.Off != 2*PageSize {
		t.Fatalf("single page at %d, want the first free page (2)", p.Off)
	}
	q, _ := a.Alloc(PageSize)
	if q.Off != 3*PageSize {
		t.Fatalf("single page at %d, want the emptied small page (3)", q.Off)
	}
	if a.Segments != 5 {
		t.Fatalf("segments %d", a.Segments)
	}
}

func TestAllocatorLimit(t *testing.T) {
	a := NewAllocator(2 * PageSize)
	if _, err := a.Alloc(2 * PageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(10); !errors.Is(err, ErrFull) {
		t.Fatalf("err %v, want ErrFull", err)
	}
}

// TestAllocatorRandom checks that live segments never overlap and that
// freeing everything empties every page, under a random mix.
func TestAllocatorRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	a := NewAllocator(0)
	live := map[int64]Segment{}
	for i := 0; i < 6000; i++ {
		if len(live) > 0 && r.Intn(3) == 0 {
			for off, s := range live {
				a.Free(s)
				delete(live, off)
				break
			}
			continue
		}
		n := uint32(1 + r.Intn(300))
		if r.Intn(10) == 0 {
			n = uint32(1 + r.Intn(5*PageSize))
		}
		s, err := a.Alloc(n)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if s.Off%8 != 0 {
			t.Fatalf("seed %d: offset %d not 8-aligned", seed, s.Off)
		}
		for _, o := range live {
			if s.Off < o.End() && o.Off < s.End() {
				t.Fatalf("seed %d: %v overlaps %v", seed, s, o)
			}
		}
		live[s.Off] = s
	}
	for _, s := range live {
		a.Free(s)
	}
	if a.Segments != 0 || a.Bytes != 0 || len(a.small) != 0 || a.freePgs != 0 || a.FileSize() != 0 {
		t.Fatalf("seed %d: after freeing all: %d segments %d bytes %d small pages, %d/%d pages free",
			seed, a.Segments, a.Bytes, len(a.small), a.freePgs, a.npages)
	}
}

// TestAllocatorTailShrinks: free pages at the end of the file leave it;
// a hole inside stays (and is reused).
func TestAllocatorTailShrinks(t *testing.T) {
	a := NewAllocator(0)
	x, _ := a.Alloc(2 * PageSize) // pages 0-1
	y, _ := a.Alloc(100)          // page 2
	z, _ := a.Alloc(3 * PageSize) // pages 3-5
	a.Free(y)
	if a.FileSize() != 6*PageSize {
		t.Fatalf("a hole shrank the file: %d", a.FileSize())
	}
	a.Free(z) // pages 2-5 are free: the file ends after x
	if a.FileSize() != 2*PageSize || a.freePgs != 0 {
		t.Fatalf("size %d free pages %d, want 2 pages and 0", a.FileSize(), a.freePgs)
	}
	w, _ := a.Alloc(PageSize)
	if w.Off != 2*PageSize {
		t.Fatalf("the file grew from %d, want 2 pages", w.Off)
	}
	a.fixed = true
	if _, err := a.Alloc(PageSize); err != ErrBusy {
		t.Fatalf("growth while fixed: %v", err)
	}
	a.Free(w)
	a.Free(x)
	if a.FileSize() != 0 {
		t.Fatalf("size %d after freeing all", a.FileSize())
	}
}

// memFile is an in-memory File that counts reads and can fail or stall.
type memFile struct {
	mu       sync.Mutex
	data     []byte
	reads    atomic.Int32
	writeErr error
	readErr  error
	gate     chan struct{} // when set, reads wait for it to close
	wgate    chan struct{} // when set, writes wait for it to close
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErr != nil {
		return 0, f.readErr
	}
	if off+int64(len(p)) > int64(len(f.data)) {
		return 0, fmt.Errorf("short read")
	}
	return copy(p, f.data[off:]), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.wgate != nil {
		<-f.wgate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	for int64(len(f.data)) < off+int64(len(p)) {
		f.data = append(f.data, 0)
	}
	return copy(f.data[off:], p), nil
}

func (f *memFile) Close() error { return nil }

// owner is a goroutine standing in for the shard: it runs posted funcs.
type owner struct{ ch chan func() }

func newOwner(t *testing.T) *owner {
	o := &owner{ch: make(chan func(), 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range o.ch {
			f()
		}
	}()
	t.Cleanup(func() { close(o.ch); <-done })
	return o
}

func (o *owner) post(f func()) { o.ch <- f }

// do runs f on the owner and waits.
func (o *owner) do(f func()) {
	done := make(chan struct{})
	o.ch <- func() { f(); close(done) }
	<-done
}

func newTestStore(t *testing.T, f File) (*Store, *owner) {
	pool := NewPool(2)
	t.Cleanup(pool.Close)
	o := newOwner(t)
	return NewStore(f, pool, o.post, 0), o
}

// write stashes values and waits for the job; it returns their segments.
func write(t *testing.T, s *Store, o *owner, vals ...[]byte) ([]Segment, error) {
	t.Helper()
	res := make(chan error, 1)
	var segs []Segment
	o.do(func() {
		for i, v := range vals {
			if err := s.Stash(0, fmt.Sprint(i), v); err != nil {
				res <- err
				return
			}
		}
		s.Commit(func(es []Entry, err error) {
			for _, e := range es {
				segs = append(segs, e.Seg)
			}
			res <- err
		})
	})
	err := <-res
	return segs, err
}

func TestStoreWriteReadCoalesced(t *testing.T) {
	f := &memFile{}
	s, o := newTestStore(t, f)
	a, b := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 1020)
	segs, err := write(t, s, o, a, b)
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	o.do(func() { st = s.Stats })
	if st.Writes != 1 || st.WrittenBytes != 1024+1020 || len(f.data) != 2044 {
		t.Fatalf("adjacent slots not written as one run: %+v", st)
	}
	for i, want := range [][]byte{a, b} {
		got := make(chan []byte, 1)
		o.do(func() { s.Read(segs[i], func(d []byte, err error) { got <- d }) })
		if d := <-got; !bytes.Equal(d, want) {
			t.Fatalf("value %d read back wrong", i)
		}
	}
}

func TestStoreConcurrentReadsShareOneIO(t *testing.T) {
	f := &memFile{}
	s, o := newTestStore(t, f)
	val := bytes.Repeat([]byte("x"), 3000)
	segs, err := write(t, s, o, val)
	if err != nil {
		t.Fatal(err)
	}
	f.gate = make(chan struct{})
	const n = 10
	got := make(chan []byte, n)
	o.do(func() {
		for i := 0; i < n; i++ {
			s.Read(segs[0], func(d []byte, err error) { got <- d })
		}
	})
	close(f.gate)
	for i := 0; i < n; i++ {
		if d := <-got; !bytes.Equal(d, val) {
			t.Fatal("wrong bytes")
		}
	}
	if r := f.reads.Load(); r != 1 {
		t.Fatalf("%d ReadAt calls for %d concurrent reads, want 1", r, n)
	}
	o.do(func() {
		if s.Stats.SharedReads != n-1 || s.Stats.PendingReads != 0 || s.Pinned(segs[0]) {
			t.Errorf("stats %+v pinned %v", s.Stats, s.Pinned(segs[0]))
		}
	})
}

func TestStoreFreeWaitsForPendingReads(t *testing.T) {
	f := &memFile{}
	s, o := newTestStore(t, f)
	old := bytes.Repeat([]byte("o"), 500)
	segs, err := write(t, s, o, old)
	if err != nil {
		t.Fatal(err)
	}
	f.gate = make(chan struct{})
	got := make(chan []byte, 1)
	o.do(func() {
		s.Read(segs[0], func(d []byte, err error) { got <- append([]byte(nil), d...) })
		s.Free(segs[0]) // the value was deleted while its read is pending
		// The space is not reused while the read is pending.
		seg, _ := s.alloc.Alloc(500)
		if seg.Off == segs[0].Off {
			t.Error("segment reused while a read of it is pending")
		}
		s.alloc.Free(seg)
	})
	close(f.gate)
	if d := <-got; !bytes.Equal(d, old) {
		t.Fatal("pending read returned other bytes")
	}
	o.do(func() {
		if s.alloc.Segments != 0 {
			t.Errorf("segment not freed after the read: %d live", s.alloc.Segments)
		}
		seg, _ := s.alloc.Alloc(500)
		if seg.Off != segs[0].Off {
			t.Errorf("freed segment not reused: %d", seg.Off)
		}
	})
	// Retain holds a freed segment the same way.
	o.do(func() {
		seg := Segment{Off: segs[0].Off, Len: 500}
		s.Retain(seg)
		s.Free(seg)
		if s.alloc.Segments != 1 {
			t.Error("freed while retained")
		}
		s.Release(seg)
		if s.alloc.Segments != 0 {
			t.Error("not freed on release")
		}
	})
}

func TestStoreWriteErrorsKeepNothingAllocated(t *testing.T) {
	for _, e := range []error{syscall.ENOSPC, syscall.EIO} {
		f := &memFile{writeErr: e}
		s, o := newTestStore(t, f)
		_, err := write(t, s, o, bytes.Repeat([]byte("v"), 100), bytes.Repeat([]byte("w"), 9000))
		if !errors.Is(err, e) {
			t.Fatalf("write error %v, want %v", err, e)
		}
		o.do(func() {
			if s.Stats.WriteErrors != 1 || s.alloc.Segments != 0 || s.alloc.Bytes != 0 {
				t.Errorf("%v: stats %+v, %d segments still allocated", e, s.Stats, s.alloc.Segments)
			}
		})
		// Once the disk recovers, writes work and reuse the space.
		f.mu.Lock()
		f.writeErr = nil
		f.mu.Unlock()
		segs, err := write(t, s, o, bytes.Repeat([]byte("v"), 100))
		if err != nil || segs[0].Off != 0 {
			t.Fatalf("after recovery: %v %v", segs, err)
		}
	}
}

func TestStoreReadError(t *testing.T) {
	f := &memFile{}
	s, o := newTestStore(t, f)
	segs, err := write(t, s, o, bytes.Repeat([]byte("v"), 100))
	if err != nil {
		t.Fatal(err)
	}
	f.readErr = syscall.EIO
	got := make(chan error, 1)
	o.do(func() { s.Read(segs[0], func(d []byte, err error) { got <- err }) })
	if err := <-got; !errors.Is(err, syscall.EIO) {
		t.Fatalf("err %v", err)
	}
	o.do(func() {
		if _, err := s.ReadSync(segs[0]); !errors.Is(err, syscall.EIO) {
			t.Errorf("sync err %v", err)
		}
		if s.Stats.ReadErrors != 2 || s.Pinned(segs[0]) {
			t.Errorf("stats %+v", s.Stats)
		}
	})
}

func TestStoreRecyclesReadBuffers(t *testing.T) {
	f := &memFile{}
	s, o := newTestStore(t, f)
	segs, err := write(t, s, o, bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 1000))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	o.do(func() {
		s.ReadOwned(segs[0], func(d []byte, shared bool, err error) {
			if shared {
				t.Error("a lone read reported shared")
			}
			got <- d
		})
	})
	first := <-got
	o.do(func() { s.Recycle(first) })
	o.do(func() { s.Read(segs[1], func(d []byte, err error) { got <- d }) })
	second := <-got
	if &first[0] != &second[0] || string(second) != string(bytes.Repeat([]byte("b"), 1000)) {
		t.Fatal("recycled buffer not reused, or reused with wrong contents")
	}
}

// truncFile is a memFile that can shrink; truncations wait for gate.
type truncFile struct {
	memFile
	tgate chan struct{}
	sizes chan int64
}

func (f *truncFile) Truncate(size int64) error {
	<-f.tgate
	f.mu.Lock()
	if int64(len(f.data)) > size {
		f.data = f.data[:size]
	}
	f.mu.Unlock()
	f.sizes <- size
	return nil
}

// TestStoreShrinksFile: freeing the values at the end of the file
// truncates it; while the truncation is in flight the file does not grow
// (Stash reports ErrBusy, not a write error), and values still held are
// read back intact after it.
func TestStoreShrinksFile(t *testing.T) {
	defer func(old int64) { shrinkMin = old }(shrinkMin)
	shrinkMin = 2 * PageSize
	f := &truncFile{tgate: make(chan struct{}), sizes: make(chan int64, 4)}
	s, o := newTestStore(t, f)
	keep := bytes.Repeat([]byte("k"), 3000)
	segs, err := write(t, s, o, keep, bytes.Repeat([]byte("t"), 4*PageSize))
	if err != nil {
		t.Fatal(err)
	}
	o.do(func() {
		s.Free(segs[1]) // 4 free pages at the end: a truncation starts
		if !s.truncating {
			t.Error("no truncation started")
		}
		if err := s.Stash(0, "x", bytes.Repeat([]byte("x"), 2*PageSize)); err != ErrBusy {
			t.Errorf("Stash during the truncation: %v, want ErrBusy", err)
		}
		if s.Stats.WriteErrors != 0 {
			t.Error("ErrBusy counted as a write error")
		}
	})
	close(f.tgate)
	if size := <-f.sizes; size != PageSize {
		t.Fatalf("truncated to %d, want one page", size)
	}
	for busy := true; busy; { // until the truncation's callback has run on the owner
		o.do(func() { busy = s.truncating })
		runtime.Gosched()
	}
	got := make(chan []byte, 1)
	o.do(func() {
		if s.truncating || s.Stats.Truncations != 1 {
			t.Errorf("truncating %v, %d truncations", s.truncating, s.Stats.Truncations)
		}
		s.Read(segs[0], func(d []byte, err error) { got <- bytes.Clone(d) })
	})
	if d := <-got; !bytes.Equal(d, keep) {
		t.Fatal("the value kept was damaged by the truncation")
	}
	if _, err := write(t, s, o, bytes.Repeat([]byte("y"), 2*PageSize)); err != nil {
		t.Fatalf("write after the truncation: %v", err)
	}
}
