// Package tieredtest holds test doubles for tiered storage's users: an
// in-memory backing file whose I/O can fail or be held.
package tieredtest

import "sync"

// File is an in-memory tiered.File whose writes and reads can be made to
// fail (Fail) or be held while the caller holds its lock (Lock).
type File struct {
	mu                sync.Mutex
	data              []byte
	writeErr, readErr error
}

func (f *File) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErr != nil {
		return 0, f.readErr
	}
	return copy(p, f.data[off:]), nil
}

func (f *File) WriteAt(p []byte, off int64) (int, error) {
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

func (f *File) Close() error { return nil }

// Fail makes writes fail with w and reads with r from now on (nil: they
// succeed).
func (f *File) Fail(w, r error) {
	f.mu.Lock()
	f.writeErr, f.readErr = w, r
	f.mu.Unlock()
}

// Lock holds every read and write until Unlock.
func (f *File) Lock() { f.mu.Lock() }

// Unlock lets reads and writes run again.
func (f *File) Unlock() { f.mu.Unlock() }

// Bytes is a copy of the n bytes written at off.
func (f *File) Bytes(off int64, n int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.data[off:off+int64(n)]...)
}
