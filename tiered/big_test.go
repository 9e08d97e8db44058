package tiered

import (
	"bytes"
	"errors"
	"math/rand"
	"syscall"
	"testing"
)

// writeBig writes val in parts of part bytes and waits for them.
func writeBig(t *testing.T, s *Store, o *owner, val []byte, part int) *BigWrite {
	t.Helper()
	var w *BigWrite
	done := make(chan struct{}, len(val)/part+1)
	o.do(func() {
		var err error
		if w, err = s.Reserve(uint32(len(val))); err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(val); off += part {
			s.WritePart(w, val[off:min(off+part, len(val))], func() { done <- struct{}{} })
		}
		if !w.Copied() {
			t.Error("not every byte handed to WritePart")
		}
	})
	for off := 0; off < len(val); off += part {
		<-done
	}
	return w
}

func TestBigWriteInPartsAndPrivateReads(t *testing.T) {
	f := &memFile{}
	s, o := newTestStore(t, f)
	val := make([]byte, 3<<20+5)
	rand.New(rand.NewSource(1)).Read(val)
	w := writeBig(t, s, o, val, 1<<20)
	o.do(func() {
		if w.Err != nil || w.Pending() != 0 || s.Stats.Writes != 4 || s.Stats.WrittenBytes != uint64(len(val)) {
			t.Errorf("err %v pending %d stats %+v", w.Err, w.Pending(), s.Stats)
		}
	})
	// A private read does its own I/O and its bytes are the caller's: a
	// shared read issued at the same time is not affected by changing them.
	f.gate = make(chan struct{})
	shared, private := make(chan []byte, 1), make(chan []byte, 1)
	o.do(func() {
		s.Read(w.Seg, func(d []byte, err error) { shared <- d })
		s.ReadPrivate(w.Seg, func(d []byte, err error) {
			if err != nil {
				t.Error(err)
			}
			if !s.Pinned(w.Seg) {
				t.Error("segment not pinned during the callback")
			}
			d[0]++ // the caller's to modify
			private <- d
		})
	})
	close(f.gate)
	p, sh := <-private, <-shared
	if f.reads.Load() != 2 {
		t.Fatalf("%d ReadAt calls, want 2 (a private read shares no I/O)", f.reads.Load())
	}
	if !bytes.Equal(sh, val) || !bytes.Equal(p[1:], val[1:]) || p[0] != val[0]+1 {
		t.Fatal("read back other bytes")
	}
	o.do(func() {
		if s.Pinned(w.Seg) || s.Stats.PendingReads != 0 || s.Stats.SharedReads != 0 {
			t.Errorf("pinned %v stats %+v", s.Pinned(w.Seg), s.Stats)
		}
	})
}

// TestBigWriteAbortWaitsForParts: aborting a value with a part in flight
// frees its space only once that part is written, so the part cannot land
// on space given to another value.
func TestBigWriteAbortWaitsForParts(t *testing.T) {
	f := &memFile{wgate: make(chan struct{})}
	s, o := newTestStore(t, f)
	val := bytes.Repeat([]byte("b"), 2<<20)
	done := make(chan struct{}, 1)
	var w *BigWrite
	o.do(func() {
		w, _ = s.Reserve(uint32(len(val)))
		s.WritePart(w, val[:1<<20], func() { done <- struct{}{} })
		s.Abort(w) // the value changed
		if s.alloc.Segments != 1 {
			t.Error("space freed with a part in flight")
		}
		if seg, _ := s.alloc.Alloc(PageSize); seg.Off >= w.Seg.Off && seg.Off < w.Seg.End() {
			t.Error("space reused with a part in flight")
		}
	})
	close(f.wgate)
	<-done
	o.do(func() {
		if s.alloc.Segments != 1 || s.Stats.PendingWrite != 0 { // the page allocated above
			t.Errorf("after the part: %d segments, stats %+v", s.alloc.Segments, s.Stats)
		}
	})
}

func TestBigWriteError(t *testing.T) {
	f := &memFile{writeErr: syscall.ENOSPC}
	s, o := newTestStore(t, f)
	w := writeBig(t, s, o, bytes.Repeat([]byte("e"), 3<<20), 1<<20)
	o.do(func() {
		if !errors.Is(w.Err, syscall.ENOSPC) || s.Stats.WriteErrors != 3 {
			t.Errorf("err %v stats %+v", w.Err, s.Stats)
		}
		s.Abort(w)
		if s.alloc.Segments != 0 || s.alloc.Bytes != 0 {
			t.Errorf("%d segments left after Abort", s.alloc.Segments)
		}
	})
}
