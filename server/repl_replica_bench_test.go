package server

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/shard"
)

// startShards is a server of n shards whose goroutines run (no
// listener), stopped when tb ends.
func startShards(tb testing.TB, n int) *Server {
	cfg := config.Default()
	cfg.Shards = n
	s := New(cfg, NewLogger(io.Discard, "warning"))
	for _, sh := range s.shards {
		sh.Start()
	}
	tb.Cleanup(func() {
		for _, sh := range s.shards {
			sh.Stop()
		}
	})
	return s
}

// BenchmarkReplicaFullSync loads an RDB file (DFLY_BENCH_RDB, e.g. one
// redis-server wrote after DEBUG POPULATE 1000000) through the replica's
// FullSync into two shards.
func BenchmarkReplicaFullSync(b *testing.B) {
	path := os.Getenv("DFLY_BENCH_RDB")
	if path == "" {
		b.Skip("DFLY_BENCH_RDB not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s := startShards(b, 2)
	a := (*replicaHost)(s).NewApplier()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if err := a.FullSync(bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
	var keys int
	s.OnEachShard(func(sh *shard.Shard) {})
	for _, sh := range s.shards {
		keys += sh.DBs[0].Len()
	}
	b.ReportMetric(float64(keys), "keys")
}
