package persist

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// benchLoadKeys is the dataset of the load benchmarks: DEBUG POPULATE n
// key 100, as tests/bench/persist.sh uses (DFLY_BENCH_KEYS overrides n).
func benchLoadKeys() int {
	if n, err := strconv.Atoi(os.Getenv("DFLY_BENCH_KEYS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// benchValueSize is DFLY_BENCH_SIZE, or def.
func benchValueSize(def int) int {
	if v, err := strconv.Atoi(os.Getenv("DFLY_BENCH_SIZE")); err == nil && v > 0 {
		return v
	}
	return def
}

// benchHost is a server without function libraries or tiered storage.
type benchHost struct{ settings Settings }

func (h *benchHost) Settings() Settings                                       { return h.settings }
func (h *benchHost) Functions() []byte                                        { return nil }
func (h *benchHost) FunctionsAtCut(*shard.Shard, chan<- snapshot.Chunk, bool) {}
func (h *benchHost) LoadFunctions([]byte) error                               { return nil }
func (h *benchHost) Tiered() bool                                             { return false }
func (h *benchHost) TierView(_ *shard.Shard, _ *rdb.Encoder, v *shard.Value) *shard.Value {
	return v
}
func (h *benchHost) TierLoader(*shard.Shard) snapshot.Loader { return nil }
func (h *benchHost) PositionCut() replpos.Cut                { return nil }

type quietLog struct{}

func (quietLog) Noticef(string, ...any) {}
func (quietLog) Warnf(string, ...any)   {}

// benchServer is the persistence of shards fresh shards of 16 databases
// saving to dir in format.
func benchServer(dir, format string, shards int) *Engine {
	sh := make([]*shard.Shard, shards)
	for i := range sh {
		sh[i] = shard.New(i, 16)
	}
	shardOf := func(key []byte) int { return int(xxhash.Sum64(key) % uint64(shards)) }
	return New(sh, shardOf, &benchHost{Settings{Dir: dir, DBFilename: "dump.rdb", DBFormat: format,
		SerializationMaxChunk: 64 << 10}}, quietLog{}, "7.2.0")
}

// benchDataset is a 2-shard server saving to a temporary directory,
// filled as DEBUG POPULATE n key size (n: benchLoadKeys).
func benchDataset(b *testing.B, format string, size int) (s *Engine, dir string, n int) {
	n, dir = benchLoadKeys(), b.TempDir()
	s = benchServer(dir, format, 2)
	populate(s, n, size)
	return s, dir, n
}

// populate fills s as DEBUG POPULATE n key size does.
func populate(s *Engine, n, size int) {
	for _, sh := range s.shards {
		db := sh.DBs[0]
		var key, val []byte
		for i := range n {
			key = strconv.AppendInt(append(key[:0], "key:"...), int64(i), 10)
			if s.shardOf(key) != sh.ID {
				continue
			}
			val = strconv.AppendInt(append(val[:0], "value:"...), int64(i), 10)
			for len(val) < size {
				val = append(val, 0)
			}
			db.Insert(key, shard.NewString(val[:size]))
		}
	}
}

// BenchmarkLoadOnStart loads a saved dataset into a fresh 2-shard server,
// as dfly does at start: the dfly format and the RDB file (values of 100
// bytes, DFLY_BENCH_SIZE overrides).
func BenchmarkLoadOnStart(b *testing.B) {
	size := benchValueSize(100)
	for _, format := range []string{"dfly", "rdb"} {
		b.Run(format, func(b *testing.B) {
			src, dir, n := benchDataset(b, format, size)
			if format == "dfly" {
				files := make([]dfsEntry, len(src.shards))
				for i, sh := range src.shards {
					files[i] = src.encodeShardFile(sh, dir, shardFileName("dump", i), nil).wait()
				}
				if err := src.writeSummary(dir, "dump", files, nil); err != nil {
					b.Fatal(err)
				}
			} else {
				snap := make([]ShardRecords, len(src.shards))
				for i, sh := range src.shards {
					snap[i] = src.serializeShard(sh)
				}
				if _, err := src.writeSnapshotFile(src.rdbPath(), snap, nil); err != nil {
					b.Fatal(err)
				}
			}
			src = nil
			runtime.GC()
			b.ResetTimer()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				s := benchServer(dir, format, 2)
				runtime.GC()
				debug.SetGCPercent(200) // as dfly runs (cmd/dfly tuneGC)
				b.StartTimer()
				c0 := cpuTime()
				if err := s.LoadOnStart(); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
				if got := s.shards[0].DBs[0].Len() + s.shards[1].DBs[0].Len(); got != n {
					b.Fatalf("loaded %d keys, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/key")
		})
	}
}

// cpuTime is the process's user and system CPU time: on a shared machine
// it is a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSave saves a 2-shard dataset of DEBUG POPULATE n key size
// (DFLY_BENCH_KEYS, DFLY_BENCH_SIZE; default 1M of 1 KiB) as SAVE does,
// in both formats.
func BenchmarkSave(b *testing.B) {
	size := benchValueSize(1024)
	for _, format := range []string{"dfly", "rdb"} {
		b.Run(format, func(b *testing.B) {
			s, _, n := benchDataset(b, format, size)
			for _, sh := range s.shards {
				sh.Start()
				defer sh.Stop()
			}
			runtime.GC()
			b.ResetTimer()
			var cpu time.Duration
			for b.Loop() {
				c0 := cpuTime()
				if err := s.Save(tx.New(s.shards)); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/key")
		})
	}
}
