package rdbvalue

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rdbvalue sits below persistence, replication and DUMP/RESTORE (whose
// command family must import neither): of dfly's own packages it imports
// only shard, rdb and types/*.
func TestImportsOnlyShardRDBAndTypes(t *testing.T) {
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
			own, ok := strings.CutPrefix(path, module)
			if !ok {
				continue
			}
			if own != "shard" && own != "rdb" && !strings.HasPrefix(own, "types/") {
				t.Errorf("%s imports %s: rdbvalue may import only shard, rdb and types/*", name, path)
			}
		}
	}
}
