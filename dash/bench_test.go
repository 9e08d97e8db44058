package dash

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Benchmarks compare the table with a Go map[string]uint64 at 1K, 1M and
// 10M entries. The 10M sizes run only with DASH_BENCH_10M=1 (they need
// about 2 GB and minutes of setup). Keys are 16 bytes ("key:" and 12
// digits) cut from one pointer-free array, so key generation costs nothing;
// the map stores a private copy of each key (strings.Clone), as a server
// keeping keys in a map must, while the table copies keys into its arenas.

const keyLen = 16

var benchKeys []byte

func benchKey(i int) string {
	return unsafe.String(&benchKeys[i*keyLen], keyLen)
}

func ensureKeys(n int) {
	if len(benchKeys) >= n*keyLen {
		return
	}
	benchKeys = make([]byte, n*keyLen)
	for i := 0; i < n; i++ {
		b := benchKeys[i*keyLen : (i+1)*keyLen]
		copy(b, "key:")
		for j, x := keyLen-1, i; j >= 4; j-- {
			b[j] = byte('0' + x%10)
			x /= 10
		}
	}
}

// perm spreads consecutive i over [0, n) so look-ups miss the caches as
// they would under real traffic.
func perm(i, n int) int { return int(uint64(i) * 0x9E3779B97F4A7C15 >> 11 % uint64(n)) }

type sizeCase struct {
	name string
	n    int
}

func benchSizes(b *testing.B) []sizeCase {
	s := []sizeCase{{"1K", 1000}, {"1M", 1_000_000}}
	if os.Getenv("DASH_BENCH_10M") != "" {
		s = append(s, sizeCase{"10M", 10_000_000})
	}
	return s
}

var (
	filledDash = map[int]*Table[uint64]{}
	filledMap  = map[int]map[string]uint64{}
)

func filled(n int) (*Table[uint64], map[string]uint64) {
	ensureKeys(n)
	if filledDash[n] == nil {
		// Keep one size alive at a time so memory stays bounded.
		clear(filledDash)
		clear(filledMap)
		runtime.GC()
		t := New[uint64]()
		m := map[string]uint64{}
		for i := 0; i < n; i++ {
			t.Insert(benchKey(i), uint64(i), 1)
			m[strings.Clone(benchKey(i))] = uint64(i)
		}
		filledDash[n], filledMap[n] = t, m
		runtime.GC() // no collection of the build's garbage during the timing
	}
	return filledDash[n], filledMap[n]
}

func BenchmarkInsert(b *testing.B) {
	for _, sz := range benchSizes(b) {
		ensureKeys(sz.n)
		b.Run("dash/"+sz.name, func(b *testing.B) {
			t := New[uint64]()
			j := 0
			for i := 0; i < b.N; i++ {
				if j == sz.n {
					b.StopTimer()
					t, j = New[uint64](), 0
					b.StartTimer()
				}
				t.Insert(benchKey(j), uint64(i), 1)
				j++
			}
		})
		b.Run("map/"+sz.name, func(b *testing.B) {
			m := map[string]uint64{}
			j := 0
			for i := 0; i < b.N; i++ {
				if j == sz.n {
					b.StopTimer()
					m, j = map[string]uint64{}, 0
					b.StartTimer()
				}
				m[strings.Clone(benchKey(j))] = uint64(i)
				j++
			}
		})
	}
}

var sink uint64

func BenchmarkFindHit(b *testing.B) {
	for _, sz := range benchSizes(b) {
		t, m := filled(sz.n)
		b.Run("dash/"+sz.name, func(b *testing.B) {
			var s uint64
			for i := 0; i < b.N; i++ {
				s += *t.Value(t.Find(benchKey(perm(i, sz.n))))
			}
			sink = s
		})
		b.Run("map/"+sz.name, func(b *testing.B) {
			var s uint64
			for i := 0; i < b.N; i++ {
				s += m[benchKey(perm(i, sz.n))]
			}
			sink = s
		})
	}
}

func BenchmarkFindMiss(b *testing.B) {
	for _, sz := range benchSizes(b) {
		t, m := filled(sz.n)
		var buf [keyLen]byte
		miss := func(i int) string {
			copy(buf[:], benchKey(perm(i, sz.n)))
			buf[0] = 'm'
			return unsafe.String(&buf[0], keyLen)
		}
		b.Run("dash/"+sz.name, func(b *testing.B) {
			n := 0
			for i := 0; i < b.N; i++ {
				if t.Find(miss(i)).Valid() {
					n++
				}
			}
			sink = uint64(n)
		})
		b.Run("map/"+sz.name, func(b *testing.B) {
			n := 0
			for i := 0; i < b.N; i++ {
				if _, ok := m[miss(i)]; ok {
					n++
				}
			}
			sink = uint64(n)
		})
	}
}

func BenchmarkDelete(b *testing.B) {
	// Drop the look-up benchmarks' tables: a live 10M-key map makes every
	// GC cycle the refills trigger cost a second of CPU.
	clear(filledDash)
	clear(filledMap)
	runtime.GC()
	for _, sz := range benchSizes(b) {
		ensureKeys(sz.n)
		b.Run("dash/"+sz.name, func(b *testing.B) {
			b.StopTimer()
			var t *Table[uint64]
			j := sz.n
			for i := 0; i < b.N; i++ {
				if j == sz.n {
					b.StopTimer()
					t, j = nil, 0
					settle(sz.n)
					t = New[uint64]()
					for k := 0; k < sz.n; k++ {
						t.Insert(benchKey(k), 1, 1)
					}
					settle(sz.n)
					b.StartTimer()
				}
				t.Delete(benchKey(perm(j, sz.n)))
				j++
			}
		})
		b.Run("map/"+sz.name, func(b *testing.B) {
			b.StopTimer()
			var m map[string]uint64
			j := sz.n
			for i := 0; i < b.N; i++ {
				if j == sz.n {
					b.StopTimer()
					m, j = nil, 0
					settle(sz.n)
					m = map[string]uint64{}
					for k := 0; k < sz.n; k++ {
						m[strings.Clone(benchKey(k))] = 1
					}
					settle(sz.n)
					b.StartTimer()
				}
				delete(m, benchKey(perm(j, sz.n)))
				j++
			}
		})
	}
}

// settle collects the garbage of a large refill outside the timed part.
func settle(n int) {
	if n >= 1_000_000 {
		runtime.GC()
	}
}

// BenchmarkMemory builds each structure once per size and reports heap
// bytes per entry (key bytes included) and the cost of a full GC cycle
// with it live: wall time of runtime.GC, the stop-the-world pauses, and GC
// CPU seconds (runtime/metrics). Run with -benchtime=1x.
func BenchmarkMemory(b *testing.B) {
	for _, sz := range benchSizes(b) {
		ensureKeys(sz.n)
		clear(filledDash)
		clear(filledMap)
		b.Run("dash/"+sz.name, func(b *testing.B) {
			var t *Table[uint64]
			measureHeap(b, sz.n, func() {
				t = New[uint64]()
				for i := 0; i < sz.n; i++ {
					t.Insert(benchKey(i), uint64(i), 1)
				}
			}, func() { runtime.KeepAlive(t) })
			b.ReportMetric(float64(t.MemUsage())/float64(sz.n), "memusage-B/entry")
		})
		b.Run("map/"+sz.name, func(b *testing.B) {
			var m map[string]uint64
			measureHeap(b, sz.n, func() {
				m = map[string]uint64{}
				for i := 0; i < sz.n; i++ {
					m[strings.Clone(benchKey(i))] = uint64(i)
				}
			}, func() { runtime.KeepAlive(m) })
		})
	}
}

func measureHeap(b *testing.B, n int, build, keep func()) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/entry")

	const cycles = 5
	sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(sample)
	gcCPU := sample[0].Value.Float64()
	pause := after.PauseTotalNs
	start := time.Now()
	for i := 0; i < cycles; i++ {
		runtime.GC()
	}
	wall := time.Since(start)
	metrics.Read(sample)
	runtime.ReadMemStats(&after)
	keep()
	b.ReportMetric(float64(wall.Microseconds())/cycles, "gc-wall-µs/cycle")
	b.ReportMetric(float64(after.PauseTotalNs-pause)/1e3/cycles, "gc-pause-µs/cycle")
	b.ReportMetric((sample[0].Value.Float64()-gcCPU)*1e6/cycles, "gc-cpu-µs/cycle")
}
