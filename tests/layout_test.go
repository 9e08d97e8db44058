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
// nothing of the listener, persistence or replication, nor do ACL and
// scripting; the layers below them import only what they stand on;
// server/ keeps the listener, connections, dispatch and wiring, in files
// of one subject.

const module = "github.com/dfly/dfly/"

// serverSide are the packages that only the server and the binary may
// depend on: the listener, persistence, replication.
var serverSide = []string{"server", "persist", "master", "replica"}

// layoutRules are the packages whose imports the layout fixes (each
// package's doc.go says why): transitive ones import nothing of
// forbidden through any path; direct ones check their own imports only,
// against forbidden or, when allowed is set, against that list (a name
// ending in "/" allows the packages under it).
var layoutRules = []struct {
	pkg        string
	transitive bool
	forbidden  []string
	allowed    []string
}{
	{pkg: "command", transitive: true, forbidden: serverSide},
	{pkg: "family", transitive: true, forbidden: serverSide},
	{pkg: "acl", transitive: true, forbidden: serverSide},
	{pkg: "txn", transitive: true, forbidden: serverSide},
	{pkg: "script", transitive: true, forbidden: append([]string{"cmd/dfly"}, serverSide...)},
	{pkg: "replica", forbidden: []string{"server", "persist", "script", "family"}},
	{pkg: "offload", allowed: []string{"shard", "snapshot", "rdb", "tiered"}},
	{pkg: "rdbvalue", allowed: []string{"shard", "rdb", "types/", "lock"}},
}

func TestLayoutImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	matches := func(own string, names []string) bool {
		for _, n := range names {
			if own == n || strings.HasSuffix(n, "/") && strings.HasPrefix(own, n) || strings.HasPrefix(own, n+"/") {
				return true
			}
		}
		return false
	}
	for _, r := range layoutRules {
		args := []string{"list", "-f", "{{join .Imports \"\\n\"}}", "../" + r.pkg}
		if r.transitive {
			args = []string{"list", "-deps", "-f", "{{.ImportPath}}", "../" + r.pkg}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			own, ok := strings.CutPrefix(dep, module)
			if !ok || own == r.pkg {
				continue
			}
			if r.allowed != nil && !matches(own, r.allowed) || matches(own, r.forbidden) {
				t.Errorf("package %s depends on %s", r.pkg, dep)
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
