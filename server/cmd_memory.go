package server

import (
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

// MEMORY: USAGE reports what a key takes in RAM (redis-cli --memkeys,
// RedisInsight), on the key's shard; STATS, DOCTOR, MALLOC-STATS, PURGE
// and HELP, keyless, on a coordinator, from the Go runtime's figures.
func init() { command.Register("server", memoryCommands) }

func memoryCommands() []*command.Command {
	return []*command.Command{{Name: "memory", Arity: -2, Flags: command.FlagReadonly, Subcommands: memorySubcommands,
		KeyPositions: func(dst []int, args [][]byte) []int {
			if len(args) >= 3 && strings.EqualFold(string(args[1]), "usage") {
				dst = append(dst, 2)
			}
			return dst
		},
		Coordinate: viaServer(func(_ *Server, args [][]byte) bool {
			return len(args) < 3 || !strings.EqualFold(string(args[1]), "usage")
		}),
		Shard: cmdMemoryUsage,
		Multi: viaCoord(cmdMemory),
	}}
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}

// memoryArity checks a keyless subcommand's argument count as Redis does.
func memoryArity(x *Coord, sub string, want int) bool {
	if len(x.Args) != want {
		x.W.Error(command.WrongArity("memory|" + sub))
		return false
	}
	return true
}

// memorySubcommands describe MEMORY's subcommands: arity, flags, key specs, ACL categories.
var memorySubcommands = []command.SubcommandInfo{
	{Name: "doctor", Tips: "nondeterministic_output request_policy:all_shards response_policy:special", Arity: 2},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "malloc-stats", Tips: "nondeterministic_output request_policy:all_shards response_policy:special", Arity: 2},
	{Name: "purge", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: 2},
	{Name: "stats", Tips: "nondeterministic_output request_policy:all_shards response_policy:special", Arity: 2},
	{Name: "usage", Arity: -3, Flags: command.FlagReadonly, KeySpecs: "RO @2", ACLCats: "read"},
}

func cmdMemory(x *Coord) {
	sub := strings.ToLower(string(x.Args[1]))
	switch sub {
	case "help":
		if memoryArity(x, sub, 2) {
			x.W.Array(len(memoryHelp))
			for _, l := range memoryHelp {
				x.W.SimpleString(l)
			}
		}
	case "usage": // no key: a key routes it to its shard (cmdMemoryUsage)
		x.W.Error(command.WrongArity("memory|usage"))
	case "stats":
		if memoryArity(x, sub, 2) {
			memoryStats(x)
		}
	case "doctor":
		if memoryArity(x, sub, 2) {
			x.W.Verbatim("txt", []byte(memoryDoctor(x)))
		}
	case "malloc-stats":
		if memoryArity(x, sub, 2) {
			x.W.Verbatim("txt", []byte("Stats not supported for the current allocator"))
		}
	case "purge":
		if memoryArity(x, sub, 2) {
			debug.FreeOSMemory() // a GC, then the free pages go back to the OS
			x.W.SimpleString("OK")
		}
	default:
		x.W.Error("ERR unknown subcommand '" + command.TruncArg(x.Args[1]) + "'. Try MEMORY HELP.")
	}
}

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count].
func cmdMemoryUsage(x *command.Exec) {
	if len(x.Args) < 3 { // no key: routed to a shard all the same
		x.W.Error(command.WrongArity("memory|usage"))
		return
	}
	samples := 5
	for i := 3; i < len(x.Args); i++ {
		if !strings.EqualFold(string(x.Args[i]), "samples") || i+1 >= len(x.Args) {
			x.W.Error(command.ErrSyntax)
			return
		}
		n, ok := num.ParseInt(x.Args[i+1])
		if !ok {
			x.W.Error(command.ErrNotInt)
			return
		}
		if n < 0 {
			x.W.Error(command.ErrSyntax)
			return
		}
		samples = int(min(n, math.MaxInt32))
		i++
	}
	_, v := x.DB.FindMetaQuiet(x.Args[2]) // an offloaded value stays on disk
	if v == nil {
		x.W.Null()
		return
	}
	x.W.Int(int64(shard.MemoryUsage(string(x.Args[2]), v, samples)))
}

// memoryStats is MEMORY STATS: Redis's fields that have a meaning here.
func memoryStats(x *Coord) {
	type dbStat struct{ keys, expires, main, exp int }
	per := make([][]dbStat, x.NumShards())
	backlog := make([]int, x.NumShards())
	x.OnEach(func(s *shard.Shard) {
		st := make([]dbStat, len(s.DBs))
		for i, db := range s.DBs {
			st[i] = dbStat{db.Table.Len(), db.Expire.Len(), db.Table.MemUsage(), db.Expire.MemUsage()}
		}
		per[s.ID] = st
		if s.Journal != nil {
			backlog[s.ID] = s.Journal.BacklogBytes()
		}
	})
	var dbs []dbStat
	for _, st := range per {
		if dbs == nil {
			dbs = make([]dbStat, len(st))
		}
		for i, d := range st {
			dbs[i].keys += d.keys
			dbs[i].expires += d.expires
			dbs[i].main += d.main
			dbs[i].exp += d.exp
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	total := int64(ms.HeapAlloc)
	startup := x.Srv.startupHeap
	keys, overhead, used := 0, int64(0), 0
	for _, d := range dbs {
		keys += d.keys
		overhead += int64(d.main + d.exp)
		if d.keys > 0 {
			used++
		}
	}
	dataset := max(total-startup, 0)
	rssBytes := rss()
	fields := 8 + used
	x.W.Map(fields + 5)
	x.W.BulkString("peak.allocated")
	x.W.Int(int64(ms.HeapSys))
	x.W.BulkString("total.allocated")
	x.W.Int(total)
	x.W.BulkString("startup.allocated")
	x.W.Int(startup)
	x.W.BulkString("replication.backlog")
	var backlogBytes int
	for _, b := range backlog {
		backlogBytes += b
	}
	x.W.Int(int64(backlogBytes))
	for i, d := range dbs {
		if d.keys == 0 {
			continue
		}
		x.W.BulkString("db." + strconv.Itoa(i))
		x.W.Map(2)
		x.W.BulkString("overhead.hashtable.main")
		x.W.Int(int64(d.main))
		x.W.BulkString("overhead.hashtable.expires")
		x.W.Int(int64(d.exp))
	}
	x.W.BulkString("overhead.total")
	x.W.Int(startup + overhead)
	x.W.BulkString("keys.count")
	x.W.Int(int64(keys))
	x.W.BulkString("keys.bytes-per-key")
	if keys > 0 {
		x.W.Int(dataset / int64(keys))
	} else {
		x.W.Int(0)
	}
	x.W.BulkString("dataset.bytes")
	x.W.Int(dataset)
	x.W.BulkString("dataset.percentage")
	x.W.Double(percent(dataset, total))
	x.W.BulkString("peak.percentage")
	x.W.Double(percent(total, int64(ms.HeapSys)))
	x.W.BulkString("gc.cycles")
	x.W.Int(int64(ms.NumGC))
	x.W.BulkString("fragmentation")
	if total > 0 {
		x.W.Double(float64(rssBytes) / float64(total))
	} else {
		x.W.Double(0)
	}
	x.W.BulkString("fragmentation.bytes")
	x.W.Int(rssBytes - total)
}

func percent(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// memoryDoctor is MEMORY DOCTOR's report: Redis's words for an empty
// instance, else what the runtime's figures show.
func memoryDoctor(x *Coord) string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc < 5<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting."
	}
	var issues []string
	if r := rss(); r > 0 && float64(r) > 1.4*float64(ms.HeapAlloc) {
		issues = append(issues, " * High fragmentation: the process's RSS is "+strconv.FormatFloat(float64(r)/float64(ms.HeapAlloc), 'f', 2, 64)+
			" times the memory in use. Garbage waiting for the next collection and free pages not yet returned count here; MEMORY PURGE runs a collection and returns free pages now.")
	}
	if ms.HeapSys > 0 && float64(ms.HeapAlloc) < 0.5*float64(ms.HeapSys) {
		issues = append(issues, " * Peak memory: in the past this instance used more than twice the memory it uses now (the heap holds "+humanBytes(int64(ms.HeapSys))+").")
	}
	if len(issues) == 0 {
		return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."
	}
	return "Sam, I detected a few issues in this instance memory implementation:\n\n" + strings.Join(issues, "\n\n") +
		"\n\nI'm here to keep you safe, Sam. I want to help you.\n"
}
