package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

var statOnce sync.Once

// statSources stats every source file of the module outside tests/. The
// suite runs the dfly binary it builds, not code linked into the test, so
// `go test ./...` would otherwise report a cached pass after a change to
// the server; go test's cache does record the files a test stats (once
// the tests run: launch calls it, TestMain is too early) and reruns it
// when one of them changed.
func statSources() {
	root, err := filepath.Abs("..")
	if err != nil {
		return
	}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || path == filepath.Join(root, "tests")) {
				return filepath.SkipDir
			}
			return nil
		}
		if name := d.Name(); strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			_, _ = os.Stat(path)
		}
		return nil
	})
}
