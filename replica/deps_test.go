package replica

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The replica side reaches the server only through Host and ApplyHost: it
// imports neither the server nor persistence nor scripting (the master
// side, package master, for a dfly master's histories).
func TestImportsNoServerSide(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/dfly/dfly/"
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch strings.TrimPrefix(path, module) {
			case "server", "persist", "script", "family":
				t.Errorf("%s imports %s: the replica side reaches the server through Host and ApplyHost", name, path)
			}
		}
	}
}
