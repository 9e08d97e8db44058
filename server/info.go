package server

// INFO: one message per shard gathers what the sections need, then each
// section writes its fields, as Redis 7.0 names them (and dfly's own).

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/lock"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/reclaim"
	"github.com/dfly/dfly/shard"
)

// shardInfo is what INFO reads of one shard, gathered on its goroutine.
type shardInfo struct {
	stats    shard.Stats
	keys     []int
	expires  []int
	calls    map[string]command.Count
	saveKeys uint64
	// packed: bytes of the chunks of small strings (shard/strs.go) and of
	// the live values in them.
	packed shard.PackedStats
	// For metrics (metrics.go): the tables' bytes, the journal's position
	// and backlog; tier: tiered storage's counters.
	tableBytes int64
	lsn        uint64
	backlog    int
	tier       offload.Stats
}

// infoWriter writes one INFO reply.
type infoWriter struct {
	srv    *Server
	b      strings.Builder
	shards []shardInfo
	st     shard.Stats // the shards' counters, summed
	uptime time.Duration
	emit   func(k string, v any) // instead of b, when set (metrics.go)
}

// section starts section name's lines with its title, as Redis's
// ("# Server", "# CPU"), after a blank line.
func (i *infoWriter) section(name string) {
	if i.b.Len() > 0 {
		i.b.WriteString("\r\n")
	}
	title := strings.ToUpper(name[:1]) + name[1:]
	if name == "cpu" {
		title = "CPU"
	}
	i.b.WriteString("# " + title + "\r\n")
}

func (i *infoWriter) field(k string, v any) {
	if i.emit != nil {
		i.emit(k, v)
		return
	}
	fmt.Fprintf(&i.b, "%s:%v\r\n", k, v)
}

// infoSections are INFO's sections in order: the argument naming each,
// whether "default" includes it, and the writer.
var infoSections = []struct {
	name  string
	dflt  func(s *Server) bool
	write func(i *infoWriter)
}{
	{"server", func(*Server) bool { return true }, (*infoWriter).infoServer},
	{"clients", func(*Server) bool { return true }, (*infoWriter).infoClients},
	{"memory", func(*Server) bool { return true }, (*infoWriter).infoMemory},
	{"persistence", func(*Server) bool { return true }, (*infoWriter).infoPersistence},
	{"stats", func(*Server) bool { return true }, (*infoWriter).infoStats},
	{"replication", func(*Server) bool { return true }, (*infoWriter).infoReplication},
	{"cpu", func(*Server) bool { return true }, (*infoWriter).infoCPU},
	{"commandstats", func(*Server) bool { return false }, (*infoWriter).infoCommandstats},
	{"errorstats", func(*Server) bool { return true }, (*infoWriter).infoErrorstats},
	{"latencystats", func(*Server) bool { return false }, (*infoWriter).infoLatencystats},
	{"tiered", func(s *Server) bool { return s.tiered != nil }, (*infoWriter).infoTiered},
	{"locks", func(*Server) bool { return false }, func(i *infoWriter) { lock.Info(i.field) }},
	{"cluster", func(*Server) bool { return true }, func(i *infoWriter) { i.srv.cluster.Info(i.field) }},
	{"keyspace", func(*Server) bool { return true }, (*infoWriter).infoKeyspace},
}

// cmdInfo is INFO [section ...].
func cmdInfo(x *Coord) {
	sections := map[string]bool{}
	for _, a := range x.Args[1:] {
		sections[strings.ToLower(string(a))] = true
	}
	if len(sections) == 0 {
		sections["default"] = true // as Redis: INFO alone is INFO default
	}
	all := sections["all"] || sections["everything"]
	i := &infoWriter{srv: x.Srv, uptime: time.Since(x.Srv.start)}
	i.gather(x)
	for _, sec := range infoSections {
		if all || sections[sec.name] || sections["default"] && sec.dflt(x.Srv) {
			i.section(sec.name)
			sec.write(i)
		}
	}
	x.W.Verbatim("txt", []byte(i.b.String()))
}

// gather reads every shard's part, in one message per shard.
func (i *infoWriter) gather(x *Coord) {
	i.shards = make([]shardInfo, x.NumShards())
	x.OnEach(func(s *shard.Shard) { x.Srv.readShard(s, &i.shards[s.ID]) })
	i.sum()
}

// readShard reads what INFO needs of shard s, on its goroutine.
func (srv *Server) readShard(s *shard.Shard, in *shardInfo) {
	in.stats = s.Stats
	for _, db := range s.DBs {
		in.keys = append(in.keys, db.Len())
		in.expires = append(in.expires, db.Expire.Len())
		in.packed.Add(db.Packed())
		in.tableBytes += int64(db.Table.MemUsage() + db.Expire.MemUsage())
	}
	if sl := srv.persist.Slice(s.ID); sl != nil {
		in.saveKeys = sl.Keys
	}
	in.calls = srv.cmdStats[s.ID].ByName()
	if s.Journal != nil {
		in.lsn, in.backlog = s.Journal.LSN(), s.Journal.BacklogBytes()
	}
	if srv.tiered != nil {
		in.tier = srv.tiered.Shard(s.ID).Stats()
	}
}

// sum adds up the shards' counters.
func (i *infoWriter) sum() {
	for _, in := range i.shards {
		i.st.Commands += in.stats.Commands
		i.st.ExpiredKeys += in.stats.ExpiredKeys
		i.st.EvictedKeys += in.stats.EvictedKeys
		i.st.SketchBytes += in.stats.SketchBytes
		i.st.Hits += in.stats.Hits
		i.st.Misses += in.stats.Misses
		i.st.Writes += in.stats.Writes
	}
}

func (i *infoWriter) infoServer() {
	i.field("redis_version", RedisVersion)
	i.field("dfly_version", Version)
	i.field("redis_mode", "standalone")
	i.field("os", runtime.GOOS+" "+runtime.GOARCH)
	i.field("arch_bits", 64)
	i.field("multiplexing_api", "epoll")
	i.field("go_version", runtime.Version())
	i.field("process_id", os.Getpid())
	i.field("run_id", i.srv.runID)
	i.field("tcp_port", i.srv.cfg.Port)
	i.field("uptime_in_seconds", int64(i.uptime.Seconds()))
	i.field("uptime_in_days", int64(i.uptime.Hours()/24))
	i.field("executable", os.Args[0])
	i.field("config_file", i.srv.cfg.ConfigFile)
	i.field("hz", 10) // the shards' expiry and defragmentation tick
	i.field("configured_hz", 10)
	i.field("lru_clock", time.Now().Unix()&(1<<24-1))
	i.field("server_time_usec", time.Now().UnixMicro())
	i.field("num_shards", len(i.shards))
}

func (i *infoWriter) infoClients() {
	i.srv.connsMu.Lock()
	n := len(i.srv.conns)
	i.srv.connsMu.Unlock()
	i.field("connected_clients", n)
	i.field("maxclients", i.srv.cfg.MaxClients)
	in, out := i.srv.maxClientBuffers()
	i.field("client_recent_max_input_buffer", in)
	i.field("client_recent_max_output_buffer", out)
	i.field("blocked_clients", i.srv.blockedClients.Load())
	clients, _, _, _ := i.srv.tracking.Stats()
	i.field("tracking_clients", clients)
}

func (i *infoWriter) infoMemory() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	i.field("used_memory", ms.HeapAlloc)
	i.field("used_memory_human", humanBytes(int64(ms.HeapAlloc)))
	rssBytes := rss()
	i.field("used_memory_rss", rssBytes)
	i.field("used_memory_rss_human", humanBytes(int64(rssBytes)))
	i.field("used_memory_peak", ms.HeapSys)
	i.field("used_memory_peak_human", humanBytes(int64(ms.HeapSys)))
	if ms.HeapAlloc > 0 {
		i.field("mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rssBytes)/float64(ms.HeapAlloc)))
	}
	i.field("mem_not_counted_for_evict", i.srv.notCountedForEvict())
	i.field("mem_allocator", "go")
	scripts, libs, fns := i.srv.scripts().Counts()
	i.field("number_of_cached_scripts", scripts)
	i.field("number_of_functions", fns)
	i.field("number_of_libraries", libs)
	i.field("used_memory_heap_sys", ms.HeapSys)
	i.field("maxmemory", i.srv.cfg.MaxMemory)
	i.field("maxmemory_human", humanBytes(i.srv.cfg.MaxMemory))
	i.field("maxmemory_policy", i.srv.cfg.Evict.Policy().String())
	i.field("evict_sketch_bytes", i.st.SketchBytes) // allkeys-tinylfu's, every shard
	i.field("gc_memory_limit", reclaim.HeapLimit())
	i.field("gc_cycles", ms.NumGC)
	i.field("gc_pause_total_ns", ms.PauseTotalNs)
	i.field("gc_cpu_fraction", fmt.Sprintf("%.6f", ms.GCCPUFraction))
	i.field("mem_reclaims", i.srv.reclaim.Releases())
	var packed shard.PackedStats
	for _, in := range i.shards {
		packed.Add(in.packed)
	}
	i.field("packed_strings_bytes", packed.Used)
	i.field("packed_strings_live_bytes", packed.Live)
	i.field("packed_strings_defrag_passes", packed.Passes)
	i.field("packed_strings_defrag_moves", packed.Moves)
}

func (i *infoWriter) infoPersistence() {
	var saveKeys uint64
	for _, in := range i.shards {
		saveKeys += in.saveKeys
	}
	i.srv.persist.Info(i.st.Writes, saveKeys, i.field)
	i.srv.aof.Info(i.field)
}

func (i *infoWriter) infoStats() {
	i.field("total_connections_received", i.srv.totalConns.Load())
	var local uint64
	for _, cmd := range i.srv.table.ByName {
		local += cmd.Calls.Load()
	}
	i.field("total_commands_processed", i.st.Commands+local)
	i.field("rejected_connections", i.srv.rejectedConns.Load())
	// Redis 7.2's counters (clientbuf.go).
	i.field("client_query_buffer_limit_disconnections", i.srv.cfg.Limits.QueryClosed.Load())
	i.field("client_output_buffer_limit_disconnections", i.srv.cfg.Limits.OutClosed.Load())
	in, out, _ := i.srv.traffic.totals()
	i.field("total_net_input_bytes", in)
	i.field("total_net_output_bytes", out)
	i.field("instantaneous_ops_per_sec", i.srv.traffic.opsRate.Load())
	i.field("instantaneous_input_kbps", fmt.Sprintf("%.2f", float64(i.srv.traffic.inRate.Load())/1024))
	i.field("instantaneous_output_kbps", fmt.Sprintf("%.2f", float64(i.srv.traffic.outRate.Load())/1024))
	channels, patterns, shardChannels := i.srv.pubsub.counts()
	i.field("pubsub_channels", channels)
	i.field("pubsub_patterns", patterns)
	i.field("pubsubshard_channels", shardChannels)
	_, keys, items, prefixes := i.srv.tracking.Stats()
	i.field("tracking_total_keys", keys)
	i.field("tracking_total_items", items)
	i.field("tracking_total_prefixes", prefixes)
	i.field("command_panics", commandPanics.Load()) // recover.go
	i.field("unexpected_error_replies", 0)          // replies of a master a replica could not apply are logged
	i.field("total_error_replies", i.srv.errors.Total())
	i.field("expired_keys", i.st.ExpiredKeys)
	i.field("evicted_keys", i.st.EvictedKeys)
	i.field("evicted_clients", i.srv.cfg.Limits.Evicted.Load())
	i.field("keyspace_hits", i.st.Hits)
	i.field("keyspace_misses", i.st.Misses)
	bs := i.srv.borrowStats()
	i.field("script_borrowed_runs", bs.runs)                    // borrow.go
	i.field("script_borrowed_held_runs", bs.held)               // of those, over shards held from the run before
	i.field("script_borrow_fallbacks", bs.fallbacks)            // tried, then a coordinator ran it
	i.field("script_forwarded_runs", bs.forwarded)              // forward.go: runs sent to a lower loop
	i.field("script_borrow_asks", bs.asks)                      // tries that asked other loops for shards
	i.field("script_borrow_answer_wait_us", bs.answerWait/1000) // waiting for their answers
	i.field("script_borrow_return_wait_us", bs.returnWait/1000) // waiting for the loop's own shards to come back
	i.srv.master.SyncStats(i.field)
}

func (i *infoWriter) infoReplication() {
	i.srv.replicationInfo(i.field)
}

func (i *infoWriter) infoCPU() {
	u, sy := cpuTimes()
	i.field("used_cpu_sys", fmt.Sprintf("%.6f", sy))
	i.field("used_cpu_user", fmt.Sprintf("%.6f", u))
}

func (i *infoWriter) infoCommandstats() {
	calls := map[string]command.Count{}
	for _, in := range i.shards {
		for k, v := range in.calls {
			command.AddCount(calls, k, v)
		}
	}
	for _, cmd := range i.srv.table.ByName {
		command.AddCount(calls, cmd.Name, command.Count{Calls: cmd.Calls.Load(), Nsec: cmd.Nsec.Load()})
	}
	names := make([]string, 0, len(calls))
	for k, v := range calls {
		if cmd := i.srv.table.ByName[k]; v.Calls > 0 || cmd != nil && cmd.Failed.Load()+cmd.Rejected.Load() > 0 {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		c := calls[k]
		var failed, rejected uint64
		if cmd := i.srv.table.ByName[k]; cmd != nil {
			failed, rejected = cmd.Failed.Load(), cmd.Rejected.Load()
		}
		i.field("cmdstat_"+k, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			c.Calls, c.Nsec/1000, float64(c.Nsec)/1000/float64(max(c.Calls, 1)), rejected, failed))
	}
}

func (i *infoWriter) infoErrorstats() {
	i.srv.errors.Each(func(code string, n uint64) { i.field("errorstat_"+code, fmt.Sprintf("count=%d", n)) })
}

func (i *infoWriter) infoTiered() {
	if i.srv.tiered == nil {
		i.field("tiered_enabled", 0)
		return
	}
	var sum offload.Stats
	for _, in := range i.shards {
		sum.Add(in.tier)
	}
	sum.Fields(i.field)
}

func (i *infoWriter) infoKeyspace() {
	for db := 0; db < i.srv.cfg.Databases; db++ {
		keys, expires := 0, 0
		for _, in := range i.shards {
			keys += in.keys[db]
			expires += in.expires[db]
		}
		if keys > 0 {
			i.field("db"+strconv.Itoa(db), fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", keys, expires))
		}
	}
}
