package offload

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// offload sits below the server, persistence and replication (doc.go): of
// dfly's own packages it imports only shard, snapshot, rdb and tiered.
func TestImportsOnlyShardSnapshotRDBAndTiered(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/dfly/dfly/"
	allowed := map[string]bool{"shard": true, "snapshot": true, "rdb": true, "tiered": true}
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
			if own, ok := strings.CutPrefix(path, module); ok && !allowed[own] {
				t.Errorf("%s imports %s: offload may import only shard, snapshot, rdb and tiered", name, path)
			}
		}
	}
}
