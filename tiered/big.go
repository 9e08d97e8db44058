package tiered

import "fmt"

// BigWrite is a value written in parts (Reserve, WritePart): the owner
// copies one part per step, so a value of any size is offloaded without
// a copy longer than a part on the owner goroutine.
type BigWrite struct {
	Seg     Segment
	next    int64 // bytes handed to WritePart so far
	pending int   // parts in flight
	aborted bool
	// Err is the first failed part's error.
	Err error
}

// Copied reports whether every byte was handed to WritePart.
func (w *BigWrite) Copied() bool { return w.next == int64(w.Seg.Len) }

// Pending is the number of parts in flight.
func (w *BigWrite) Pending() int { return w.pending }

// Remaining is the number of bytes not yet handed to WritePart.
func (w *BigWrite) Remaining() int64 { return int64(w.Seg.Len) - w.next }

// Reserve places a value of n bytes that WritePart then writes a part at
// a time. The value stays the owner's until every part is written; then
// the owner either switches it to w.Seg or calls Abort.
func (s *Store) Reserve(n uint32) (*BigWrite, error) {
	seg, err := s.alloc.Alloc(n)
	if err == ErrBusy {
		return nil, err
	}
	if err != nil {
		s.Stats.WriteErrors++
		return nil, err
	}
	s.size = max(s.size, s.alloc.FileSize())
	return &BigWrite{Seg: seg}, nil
}

// WritePart copies data, the value's next len(data) bytes, and writes them
// on the pool; done runs on the owner once they are written (w.Err says
// whether they were).
func (s *Store) WritePart(w *BigWrite, data []byte, done func()) {
	if int64(len(data)) > w.Remaining() {
		panic("tiered: WritePart past the reserved segment")
	}
	buf := s.partBuffer(len(data))
	copy(buf, data)
	off := w.Seg.Off + w.next
	w.next += int64(len(data))
	w.pending++
	s.Stats.PendingWrite++
	s.pool.jobs <- func() {
		_, err := s.f.WriteAt(buf, off)
		if err != nil {
			err = fmt.Errorf("tiered: write %d bytes at %d: %w", len(buf), off, err)
		}
		s.post(func() {
			s.Stats.PendingWrite--
			w.pending--
			if err != nil {
				s.Stats.WriteErrors++
				if w.Err == nil {
					w.Err = err
				}
			} else {
				s.Stats.Writes++
				s.Stats.WrittenBytes += uint64(len(buf))
			}
			if len(s.parts) < maxParts {
				s.parts = append(s.parts, buf)
			}
			if w.aborted && w.pending == 0 {
				s.Free(w.Seg)
			}
			done()
		})
	}
}

// maxParts bounds the part buffers kept for reuse.
const maxParts = 4

// partBuffer is a buffer of n bytes for a part, reused when one is free.
func (s *Store) partBuffer(n int) []byte {
	for i, b := range s.parts {
		if cap(b) >= n {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return b[:n]
		}
	}
	return make([]byte, n)
}

// Abort gives w's space back, once no part of it is in flight: a part
// written late must not land on space given to another value.
func (s *Store) Abort(w *BigWrite) {
	if w.aborted {
		return
	}
	w.aborted = true
	if w.pending == 0 {
		s.Free(w.Seg)
	}
}
