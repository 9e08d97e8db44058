// Package atomicfile replaces files whole: the new content is written to
// a temporary file in the same directory, synced to disk and renamed over
// the old one, so the path holds the old file or the whole new one, never
// a part of it, whatever crash comes in between. The snapshot files (RDB,
// dfly shard files and summary) and the ACL file are written this way.
//
// Never: leave the temporary file behind after a failure it saw.
package atomicfile

import "os"

// Commit completes a file written at tmp: unless an earlier step failed
// (err), its data goes to disk (fsync) and it replaces path (rename); on
// any failure tmp goes. f is closed either way.
func Commit(f *os.File, tmp, path string, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Write replaces path with data, through path.tmp.
func Write(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return Commit(f, tmp, path, err)
}
