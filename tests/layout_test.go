package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The layout tells the architecture (docs/DESIGN.md §1): the command
// families run behind the command context (package command) and know
// nothing of the listener, persistence or replication; server/ keeps the
// listener, connections, dispatch and wiring, in files of one subject.

const module = "github.com/dfly/dfly/"

func TestLayoutFamiliesImportNoServerSide(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	forbidden := []string{"server", "persist", "master", "replica"}
	for _, pkg := range []string{"command", "family"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == module+f || strings.HasPrefix(dep, module+f+"/") {
					t.Errorf("package %s depends on %s", pkg, dep)
				}
			}
		}
	}
}

func TestLayoutServerSize(t *testing.T) {
	const maxTotal, maxFile = 12000, 1200
	files, err := filepath.Glob(filepath.Join("..", "server", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no server sources: %v", err)
	}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte("\n"))
		total += n
		if n > maxFile {
			t.Errorf("%s has %d lines (at most %d: split it by subject)", f, n, maxFile)
		}
	}
	if total >= maxTotal {
		t.Errorf("server/ has %d lines (below %d: move what is not the listener, connections, dispatch or wiring out)", total, maxTotal)
	}
}
