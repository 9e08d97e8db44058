// Package atomicfile replaces files whole: the new content is written to
// a temporary file in the same directory, synced to disk and renamed over
// the old one, so the path holds the old file or the whole new one, never
// a part of it, whatever crash comes in between. The snapshot files (RDB,
// dfly shard files and summary) and the ACL file are written this way.
//
// Never: leave the temporary file behind after a failure it saw, or at an
// orderly exit (RemoveAll): a shutdown during a background save leaves no
// temporary file, as Redis's removes its child's. A crash (kill -9) may
// leave one; nothing loads it.
package atomicfile

import (
	"errors"
	"os"
	"sync"
)

// ErrExiting is Commit's error once RemoveAll ran.
var ErrExiting = errors.New("atomicfile: the process is exiting; the file is not replaced")

// temps are the temporary files being written, for RemoveAll.
var temps struct {
	sync.Mutex
	open    map[string]bool
	exiting bool
}

// Create creates tmp, a temporary file that Commit completes.
func Create(tmp string) (*os.File, error) {
	temps.Lock()
	defer temps.Unlock()
	if temps.exiting {
		return nil, ErrExiting
	}
	f, err := os.Create(tmp)
	if err == nil {
		if temps.open == nil {
			temps.open = map[string]bool{}
		}
		temps.open[tmp] = true
	}
	return f, err
}

// Commit completes a file written at tmp (by Create): unless an earlier
// step failed (err), its data goes to disk (fsync) and it replaces path
// (rename); on any failure, or once RemoveAll ran, tmp goes. f is closed
// either way.
func Commit(f *os.File, tmp, path string, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	temps.Lock()
	defer temps.Unlock()
	delete(temps.open, tmp)
	if err == nil && temps.exiting {
		err = ErrExiting
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// RemoveAll removes the temporary files being written, at exit: their
// writers' Commits then replace nothing, and no Create succeeds.
func RemoveAll() {
	temps.Lock()
	defer temps.Unlock()
	temps.exiting = true
	for tmp := range temps.open {
		os.Remove(tmp)
	}
	temps.open = nil
}

// Write replaces path with data, through path.tmp.
func Write(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return Commit(f, tmp, path, err)
}
