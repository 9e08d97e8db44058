package tiered

import (
	"errors"
	"math/bits"
)

// PageSize is the allocation unit of the backing file.
const PageSize = 4096

// Segment is a value's place in the backing file.
type Segment struct {
	Off int64
	Len uint32
}

// End is the offset just past the segment.
func (s Segment) End() int64 { return s.Off + int64(s.Len) }

// ErrFull: the allocator reached its size limit (treated like ENOSPC).
var ErrFull = errors.New("tiered: backing file size limit reached")

// ErrBusy: the file is being truncated and cannot grow until that is done
// (Store.shrink); not a failure, try again later.
var ErrBusy = errors.New("tiered: backing file being truncated")

// classes are the slot sizes of small pages: multiples of 8 (offsets stay
// 8-aligned, see shard.Value), each close to PageSize/k so a page wastes
// little. A value above the largest class takes whole pages.
var classes = [...]uint32{64, 96, 128, 160, 192, 256, 320, 408, 512, 584, 680, 816, 1024, 1360, 2048}

// MaxSmall is the largest value packed into shared pages.
const MaxSmall = 2048

func classOf(n uint32) int {
	for i, c := range classes {
		if n <= c {
			return i
		}
	}
	return -1
}

// smallPage is a page split into slots of one class; used has a bit per
// slot (at most 64 slots: the smallest class is PageSize/64).
type smallPage struct {
	class int
	used  uint64
	slots int
}

func (p *smallPage) full() bool { return bits.OnesCount64(p.used) == p.slots }

// Allocator places segments in a file of pages. Pages are tracked by a
// bitmap; small pages keep a slot mask per page and each class a list of
// pages with a free slot. Freed pages and slots are reused before the file
// grows.
type Allocator struct {
	used     []uint64 // a bit per page: allocated (as a run or a small page)
	npages   int64    // pages in the file (the file's logical size)
	maxPages int64
	freePgs  int64
	hint     int64 // where the next single-page search starts
	small    map[int64]*smallPage
	// fixed: the file may not grow (a truncation is in flight).
	fixed   bool
	partial [len(classes)][]int64 // pages with a free slot (may hold stale entries)
	// Bytes is the sum of the lengths of allocated segments.
	Bytes int64
	// Segments counts allocated segments.
	Segments int64
}

// NewAllocator makes an allocator for a file of at most maxBytes (0: no
// limit short of what a Value can address, 32 GiB).
func NewAllocator(maxBytes int64) *Allocator {
	const addressable = int64(1) << 35 // shard.Value keeps offset/8 in 32 bits
	if maxBytes <= 0 || maxBytes > addressable {
		maxBytes = addressable
	}
	return &Allocator{maxPages: maxBytes / PageSize, small: make(map[int64]*smallPage)}
}

// FileSize is the size the file needs to hold every page handed out.
func (a *Allocator) FileSize() int64 { return a.npages * PageSize }

// Alloc places a value of n bytes (n > 0).
func (a *Allocator) Alloc(n uint32) (Segment, error) {
	if n == 0 {
		n = 1
	}
	if n <= MaxSmall {
		return a.allocSmall(n)
	}
	pages := (int64(n) + PageSize - 1) / PageSize
	p, err := a.allocPages(pages)
	if err != nil {
		return Segment{}, err
	}
	a.Bytes += int64(n)
	a.Segments++
	return Segment{Off: p * PageSize, Len: n}, nil
}

func (a *Allocator) allocSmall(n uint32) (Segment, error) {
	ci := classOf(n)
	list := &a.partial[ci]
	for len(*list) > 0 {
		pi := (*list)[len(*list)-1]
		sp := a.small[pi]
		if sp == nil || sp.class != ci || sp.full() {
			*list = (*list)[:len(*list)-1] // stale entry
			continue
		}
		slot := bits.TrailingZeros64(^sp.used)
		sp.used |= 1 << slot
		if sp.full() {
			*list = (*list)[:len(*list)-1]
		}
		a.Bytes += int64(n)
		a.Segments++
		return Segment{Off: pi*PageSize + int64(slot)*int64(classes[ci]), Len: n}, nil
	}
	pi, err := a.allocPages(1)
	if err != nil {
		return Segment{}, err
	}
	sp := &smallPage{class: ci, used: 1, slots: int(PageSize / classes[ci])}
	a.small[pi] = sp
	if !sp.full() {
		*list = append(*list, pi)
	}
	a.Bytes += int64(n)
	a.Segments++
	return Segment{Off: pi * PageSize, Len: n}, nil
}

// Free gives a segment's space back. Freeing a segment that was not
// allocated is a bug of the caller; it is ignored rather than corrupting
// the maps.
func (a *Allocator) Free(s Segment) {
	pi := s.Off / PageSize
	if s.Len <= MaxSmall {
		sp := a.small[pi]
		if sp == nil {
			return
		}
		slot := int(s.Off-pi*PageSize) / int(classes[sp.class])
		if sp.used&(1<<slot) == 0 {
			return
		}
		wasFull := sp.full()
		sp.used &^= 1 << slot
		a.Bytes -= int64(s.Len)
		a.Segments--
		if sp.used == 0 {
			delete(a.small, pi) // its partial entry goes stale
			a.freePages(pi, 1)
		} else if wasFull {
			a.partial[sp.class] = append(a.partial[sp.class], pi)
		}
		return
	}
	if pi >= a.npages || !a.isUsed(pi) {
		return
	}
	a.Bytes -= int64(s.Len)
	a.Segments--
	a.freePages(pi, (int64(s.Len)+PageSize-1)/PageSize)
}

func (a *Allocator) isUsed(p int64) bool { return a.used[p/64]&(1<<(p%64)) != 0 }

func (a *Allocator) setUsed(p, n int64, on bool) {
	for i := p; i < p+n; i++ {
		if on {
			a.used[i/64] |= 1 << (i % 64)
		} else {
			a.used[i/64] &^= 1 << (i % 64)
		}
	}
}

func (a *Allocator) freePages(p, n int64) {
	a.setUsed(p, n, false)
	a.freePgs += n
	if p < a.hint {
		a.hint = p
	}
	// Free pages at the end leave the file: FileSize shrinks and the
	// store truncates the file to it.
	for a.npages > 0 && !a.isUsed(a.npages-1) {
		a.npages--
		a.freePgs--
	}
}

// allocPages finds n contiguous free pages, first fit, or grows the file.
func (a *Allocator) allocPages(n int64) (int64, error) {
	if a.freePgs >= n {
		if p, ok := a.findRun(n); ok {
			a.setUsed(p, n, true)
			a.freePgs -= n
			if n == 1 {
				a.hint = p + 1
			}
			return p, nil
		}
	}
	if a.npages+n > a.maxPages {
		return 0, ErrFull
	}
	if a.fixed {
		return 0, ErrBusy
	}
	p := a.npages
	a.npages += n
	for int64(len(a.used))*64 < a.npages {
		a.used = append(a.used, 0)
	}
	a.setUsed(p, n, true)
	return p, nil
}

func (a *Allocator) findRun(n int64) (int64, bool) {
	if n == 1 {
		for w := a.hint / 64; w < int64(len(a.used)); w++ {
			if free := ^a.used[w]; free != 0 {
				p := w*64 + int64(bits.TrailingZeros64(free))
				if p < a.npages {
					return p, true
				}
			}
		}
		a.hint = a.npages // nothing free at or above the hint, nor below it
		return 0, false
	}
	run := int64(0)
	for p := int64(0); p < a.npages; p++ {
		if a.isUsed(p) {
			run = 0
			continue
		}
		run++
		if run == n {
			return p - n + 1, true
		}
	}
	return 0, false
}
