package script

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsNoServerSide: the package, and everything it imports, stays
// clear of the server and of persistence and replication (doc.go).
func TestImportsNoServerSide(t *testing.T) {
	const module = "github.com/dfly/dfly/"
	forbidden := []string{"server", "persist", "master", "replica", "cmd/dfly"}
	seen := map[string]bool{}
	var walk func(path, via string)
	walk = func(path, via string) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, f := range forbidden {
			if path == module+f || strings.HasPrefix(path, module+f+"/") {
				t.Errorf("script imports %s (through %s)", path, via)
			}
		}
		p, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				walk(imp, path)
			}
		}
	}
	walk(module+"script", "")
}
