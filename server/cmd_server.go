package server

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/family"
	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

func init() { command.Register("server", serverCommands) }

func serverCommands() []*command.Command {
	return []*command.Command{
		{Name: "dbsize", Arity: 1, Flags: command.FlagReadonly | command.FlagFast, Multi: viaCoord(cmdDBSize)},
		{Name: "flushdb", Arity: -1, Flags: command.FlagWrite, Multi: viaCoord(func(x *Coord) { flush(x, false) })},
		{Name: "flushall", Arity: -1, Flags: command.FlagWrite, Multi: viaCoord(func(x *Coord) { flush(x, true) })},
		{Name: "swapdb", Arity: 3, Flags: command.FlagWrite | command.FlagFast, Multi: viaCoord(cmdSwapDB)},
		{Name: "acl", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Local: viaConn(cmdACL)},
		{Name: "info", Arity: -1, Flags: command.FlagLoading | command.FlagStale, Multi: viaCoord(cmdInfo)},
		{Name: "config", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Local: viaConn(cmdConfig)},
		{Name: "debug", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Multi: viaCoord(cmdDebug)},
		{Name: "slowlog", Arity: -2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Local: viaConn(cmdSlowlog)},
		{Name: "latency", Arity: -2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Local: viaConn(cmdLatency)},
		{Name: "shutdown", Arity: -1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Local: viaConn(cmdShutdown)},
	}
}

func cmdDBSize(x *Coord) {
	counts := make([]int, x.NumShards())
	x.OnEach(func(s *shard.Shard) { counts[s.ID] = s.DBs[x.DB].Len() })
	total := 0
	for _, n := range counts {
		total += n
	}
	x.W.Int(int64(total))
}

// cmdSwapDB is SWAPDB index1 index2, on every shard under one lock, so
// no client sees one shard swapped and another not.
func cmdSwapDB(x *Coord) {
	n := len(x.Srv.shards[0].DBs)
	var idx [2]int
	for i, which := range []string{"first", "second"} {
		v, err := strconv.Atoi(string(x.Args[1+i]))
		if err != nil {
			x.W.Error("ERR invalid " + which + " DB index")
			return
		}
		idx[i] = v
	}
	for _, v := range idx {
		if v < 0 || v >= n {
			x.W.Error("ERR DB index is out of range")
			return
		}
	}
	if x.Srv.tiered != nil {
		x.W.Error("ERR SWAPDB is not supported with tiered storage")
		return
	}
	for {
		t := x.Tx()
		t.AddAllShards()
		t.Lock()
		// A snapshot's walk cannot follow a swap (shard.SwapDBs): wait for
		// it to end (a BGSAVE, a replica's full sync), holding nothing
		// meanwhile. Within EXEC or a script the locks cannot be let go:
		// refuse instead.
		var blocked atomic.Bool
		t.RunAll(func(sh *shard.Shard) {
			if sh.SwapBlocked() {
				blocked.Store(true)
			}
		})
		if !blocked.Load() {
			t.Finish(func(sh *shard.Shard) { sh.SwapDBs(idx[0], idx[1]) })
			break
		}
		t.Finish(nil)
		if x.InTx {
			x.W.Error("ERR SWAPDB cannot run in a transaction while a snapshot is being taken")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	x.Srv.trackingFlushed()
	x.W.SimpleString("OK")
}

// flush drops one DB or all, under a lock on every shard so no
// multi-shard command is half-applied on either side of it.
func flush(x *Coord, all bool) {
	if len(x.Args) > 2 {
		x.W.Error(command.ErrSyntax)
		return
	}
	if len(x.Args) == 2 {
		switch strings.ToLower(string(x.Args[1])) {
		case "async", "sync":
		default:
			x.W.Error(command.ErrSyntax)
			return
		}
	}
	t := x.Tx()
	t.AddAllShards()
	t.Lock()
	t.Finish(func(s *shard.Shard) {
		if all {
			for _, db := range s.DBs {
				db.Flush()
			}
		} else {
			s.DBs[x.DB].Flush()
		}
	})
	x.Srv.trackingFlushed()
	x.Srv.reclaim.Flushed() // the last GC's live heap is garbage now
	x.W.SimpleString("OK")
}

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. As in
// Redis, it saves the dataset first when told to (SAVE) or when save
// points are configured (unless NOSAVE); a failed save refuses the
// shutdown with an error, unless FORCE. The save runs off the event loop
// (Conn.deferred); on success nothing is answered: the server closes.
// There is no delayed shutdown here, so NOW changes nothing and ABORT has
// nothing to abort.
func cmdShutdown(c *Conn, a [][]byte, w *resp.Writer) {
	var save, nosave, force, abort bool
	for _, o := range a[1:] {
		switch strings.ToLower(string(o)) {
		case "nosave":
			nosave = true
		case "save":
			save = true
		case "now":
		case "force":
			force = true
		case "abort":
			abort = true
		default:
			w.Error(command.ErrSyntax)
			return
		}
	}
	if save && nosave || abort && len(a) > 2 {
		w.Error(command.ErrSyntax)
		return
	}
	if abort {
		w.Error("ERR No shutdown in progress.")
		return
	}
	srv := c.srv
	srv.log.Warnf("User requested shutdown...")
	if !save && (nosave || !srv.cfg.savePoints()) {
		go srv.Shutdown()
		c.closing = true
		return
	}
	c.deferred = func(w *resp.Writer) {
		if err := srv.SaveBeforeShutdown(); err != nil && !force {
			w.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
		go srv.Shutdown()
	}
}

func cmdConfig(c *Conn, a [][]byte, w *resp.Writer) {
	cfg := c.srv.cfg
	sub := strings.ToLower(string(a[1]))
	switch {
	case sub == "get" && len(a) >= 3:
		cfg.mu.RLock()
		var out []string
		seen := map[string]bool{}
		for _, pat := range a[2:] {
			for _, p := range params {
				if !seen[p.name] && glob.Match(pat, []byte(p.name), true) {
					seen[p.name] = true
					out = append(out, p.name, p.get(cfg))
				}
			}
		}
		cfg.mu.RUnlock()
		w.Map(len(out) / 2)
		for _, s := range out {
			w.BulkString(s)
		}
	case sub == "set" && len(a) >= 4 && len(a)%2 == 0:
		cfg.mu.Lock()
		defer cfg.mu.Unlock()
		for i := 2; i < len(a); i += 2 {
			name := strings.ToLower(string(a[i]))
			var p *param
			for j := range params {
				if params[j].name == name {
					p = &params[j]
				}
			}
			if p == nil {
				w.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + string(a[i]) + "'")
				return
			}
			if p.set == nil {
				w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config")
				return
			}
			if err := p.set(cfg, string(a[i+1])); err != nil {
				w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
				return
			}
			if name == "requirepass" {
				c.srv.acl.setRequirepass(string(a[i+1])) // the default user's password
			}
		}
		w.SimpleString("OK")
	case sub == "resetstat" && len(a) == 2:
		c.srv.resetStats()
		w.SimpleString("OK")
	case sub == "rewrite" && len(a) == 2:
		w.Error("ERR The server is running without a config file")
	case sub == "help":
		w.Array(4)
		w.SimpleString("CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		w.SimpleString("GET <pattern>")
		w.SimpleString("SET <directive> <value>")
		w.SimpleString("RESETSTAT")
	default:
		if sub == "get" || sub == "set" || sub == "resetstat" {
			w.Error(command.WrongArity("config|" + sub))
			return
		}
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try CONFIG HELP.")
	}
}

func (s *Server) resetStats() {
	snapshot.ResetMaxStall()
	for _, cmd := range s.table.ByName {
		cmd.Calls.Store(0)
		cmd.Nsec.Store(0)
		cmd.Failed.Store(0)
		cmd.Rejected.Store(0)
	}
	// CONFIG runs on a connection's event loop, which may own a shard:
	// waiting for the shards here would wait for itself. The resets are
	// posted; each shard runs its reset before any later message.
	for _, sh := range s.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) {
			clear(s.cmdStats[sh.ID].calls)
			sh.Stats = shard.Stats{}
		}))
	}
	s.errors.reset()
	s.totalConns.Store(0)
	s.rejectedConns.Store(0)
}

func cmdDebug(x *Coord) {
	sub := strings.ToLower(string(x.Args[1]))
	switch {
	case sub == "sleep" && len(x.Args) == 3:
		f, err := strconv.ParseFloat(string(x.Args[2]), 64)
		if err != nil {
			x.W.Error(command.ErrNotFloat)
			return
		}
		time.Sleep(time.Duration(f * float64(time.Second)))
		x.W.SimpleString("OK")
	case sub == "populate" && len(x.Args) >= 3 && len(x.Args) <= 5:
		debugPopulate(x)
	case sub == "reload" && len(x.Args) == 2:
		debugReload(x) // persist.go
	case sub == "object" && len(x.Args) == 3:
		debugObject(x)
	case sub == "gc" && len(x.Args) == 2:
		// dfly's own: collect garbage now, so INFO's used_memory shows live
		// data (benchmarks compare it with Redis's allocator count).
		runtime.GC()
		runtime.GC() // a second cycle also empties sync.Pool victim caches (I/O buffers)
		x.W.SimpleString("OK")
	case sub == "object":
		x.W.Error("ERR unknown subcommand or wrong number of arguments for '" + command.TruncArg(x.Args[1]) + "'. Try DEBUG HELP.")
	default:
		x.W.Error("ERR unknown subcommand '" + command.TruncArg(x.Args[1]) + "'. Try DEBUG HELP.")
	}
}

// debugObject is DEBUG OBJECT key in Redis's words: the value's address,
// refcount (always 1: values are not shared), encoding (as OBJECT
// ENCODING), serialized length (its RDB encoding, LZF included; for an
// offloaded string its length), and its LRU clock and idle seconds.
func debugObject(x *Coord) {
	key := x.Args[2]
	var line string
	x.On(x.ShardOf(key), func(s *shard.Shard) {
		_, v := s.DBs[x.DB].Find(key)
		if v == nil {
			return
		}
		size := int(v.StrLen())
		if !v.IsExternal() {
			if p, err := rdbvalue.Dump(v); err == nil {
				size = len(p) - 11 // the type byte, the version and the CRC
			}
		}
		line = fmt.Sprintf("Value at:%p refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
			v, family.EncodingOf(v), size, v.Access&(1<<24-1), s.IdleSeconds(v))
	})
	if line == "" {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	x.W.SimpleString(line)
}

// debugPopulate: DEBUG POPULATE count [prefix] [size] creates keys
// prefix:0..count-1 with values "value:N" (padded with zeros or cut to size
// when given), skipping keys that exist. Every shard walks the whole range
// and inserts the keys it owns, so all shards work in parallel.
func debugPopulate(x *Coord) {
	count, err := strconv.ParseInt(string(x.Args[2]), 10, 64)
	if err != nil || count < 0 {
		x.W.Error("ERR count must be a positive integer")
		return
	}
	prefix := "key"
	if len(x.Args) > 3 {
		prefix = string(x.Args[3])
	}
	size := -1
	if len(x.Args) > 4 {
		n, err := strconv.Atoi(string(x.Args[4]))
		if err != nil || n < 0 {
			x.W.Error(command.ErrNotInt)
			return
		}
		size = n
	}
	n := x.NumShards()
	x.OnEach(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		key := []byte(prefix + ":")
		kl := len(key)
		var val []byte
		for i := int64(0); i < count; i++ {
			key = strconv.AppendInt(key[:kl], i, 10)
			if n > 1 && x.Srv.ShardOf(key) != s.ID {
				continue
			}
			if it, _ := db.Find(key); it.Valid() {
				continue
			}
			val = strconv.AppendInt(append(val[:0], "value:"...), i, 10)
			if size >= 0 {
				for len(val) < size {
					val = append(val, 0)
				}
				val = val[:size]
			}
			db.Insert(key, db.NewString(val))
		}
	})
	x.W.SimpleString("OK")
}

func cmdInfo(x *Coord) {
	sections := map[string]bool{}
	for _, a := range x.Args[1:] {
		sections[strings.ToLower(string(a))] = true
	}
	all := len(sections) == 0 || sections["all"] || sections["everything"]
	want := func(name string, dflt bool) bool {
		if all {
			return true
		}
		if sections["default"] && dflt {
			return true
		}
		return sections[name]
	}
	var b strings.Builder
	section := func(name string) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
	}
	field := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	srv := x.Srv

	// One message per shard gathers everything the sections need.
	type shardInfo struct {
		stats    shard.Stats
		keys     []int
		expires  []int
		calls    map[string]cmdCount
		saveKeys uint64
		// packed, packedLive: bytes of the chunks of small strings
		// (shard/strs.go) and of the live values in them.
		packed shard.PackedStats
	}
	infos := make([]shardInfo, x.NumShards())
	x.OnEach(func(s *shard.Shard) {
		in := &infos[s.ID]
		in.stats = s.Stats
		for _, db := range s.DBs {
			in.keys = append(in.keys, db.Len())
			in.expires = append(in.expires, db.Expire.Len())
			in.packed.Add(db.Packed())
		}
		if sl := srv.persist.Slice(s.ID); sl != nil {
			in.saveKeys = sl.Keys
		}
		in.calls = map[string]cmdCount{}
		for cmd, n := range srv.cmdStats[s.ID].calls {
			addCount(in.calls, cmd.Name, *n)
		}
	})
	var st shard.Stats
	for _, in := range infos {
		st.Commands += in.stats.Commands
		st.ExpiredKeys += in.stats.ExpiredKeys
		st.Hits += in.stats.Hits
		st.Misses += in.stats.Misses
		st.Writes += in.stats.Writes
	}
	uptime := time.Since(srv.start)
	if want("server", true) {
		section("Server")
		field("redis_version", RedisVersion)
		field("dfly_version", Version)
		field("redis_mode", "standalone")
		field("os", runtime.GOOS+" "+runtime.GOARCH)
		field("arch_bits", 64)
		field("multiplexing_api", "epoll")
		field("go_version", runtime.Version())
		field("process_id", os.Getpid())
		field("run_id", srv.runID)
		field("tcp_port", srv.cfg.Port)
		field("uptime_in_seconds", int64(uptime.Seconds()))
		field("uptime_in_days", int64(uptime.Hours()/24))
		field("executable", os.Args[0])
		field("config_file", "")
		field("hz", 10) // the shards' expiry and defragmentation tick
		field("configured_hz", 10)
		field("lru_clock", time.Now().Unix()&(1<<24-1))
		field("server_time_usec", time.Now().UnixMicro())
		field("num_shards", x.NumShards())
	}
	if want("clients", true) {
		section("Clients")
		srv.connsMu.Lock()
		n := len(srv.conns)
		srv.connsMu.Unlock()
		field("connected_clients", n)
		field("maxclients", srv.cfg.MaxClients)
		in, out := srv.maxClientBuffers()
		field("client_recent_max_input_buffer", in)
		field("client_recent_max_output_buffer", out)
		field("blocked_clients", srv.blockedClients.Load())
		srv.tracking.mu.RLock()
		field("tracking_clients", len(srv.tracking.conns))
		srv.tracking.mu.RUnlock()
	}
	if want("memory", true) {
		section("Memory")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		field("used_memory", ms.HeapAlloc)
		field("used_memory_human", humanBytes(int64(ms.HeapAlloc)))
		rssBytes := rss()
		field("used_memory_rss", rssBytes)
		field("used_memory_rss_human", humanBytes(int64(rssBytes)))
		field("used_memory_peak", ms.HeapSys)
		field("used_memory_peak_human", humanBytes(int64(ms.HeapSys)))
		if ms.HeapAlloc > 0 {
			field("mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rssBytes)/float64(ms.HeapAlloc)))
		}
		field("mem_allocator", "go")
		e := srv.scripts()
		e.mu.RLock()
		scripts, libs, fns := len(e.protos), len(e.fn.libs), len(e.fn.funcs)
		e.mu.RUnlock()
		field("number_of_cached_scripts", scripts)
		field("number_of_functions", fns)
		field("number_of_libraries", libs)
		field("used_memory_heap_sys", ms.HeapSys)
		field("maxmemory", srv.cfg.MaxMemory)
		field("maxmemory_human", humanBytes(srv.cfg.MaxMemory))
		field("maxmemory_policy", "noeviction")
		field("gc_cycles", ms.NumGC)
		field("gc_pause_total_ns", ms.PauseTotalNs)
		field("gc_cpu_fraction", fmt.Sprintf("%.6f", ms.GCCPUFraction))
		field("mem_reclaims", srv.reclaim.Releases())
		var packed shard.PackedStats
		for _, in := range infos {
			packed.Add(in.packed)
		}
		field("packed_strings_bytes", packed.Used)
		field("packed_strings_live_bytes", packed.Live)
		field("packed_strings_defrag_passes", packed.Passes)
		field("packed_strings_defrag_moves", packed.Moves)
	}
	if want("persistence", true) {
		section("Persistence")
		var saveKeys uint64
		for _, in := range infos {
			saveKeys += in.saveKeys
		}
		srv.persist.Info(st.Writes, saveKeys, field)
		field("aof_enabled", 0)
	}
	if want("stats", true) {
		section("Stats")
		field("total_connections_received", srv.totalConns.Load())
		var local uint64
		for _, cmd := range srv.table.ByName {
			local += cmd.Calls.Load()
		}
		field("total_commands_processed", st.Commands+local)
		field("rejected_connections", srv.rejectedConns.Load())
		// Redis 7.2's counters (clientbuf.go).
		field("client_query_buffer_limit_disconnections", srv.cfg.limits.queryClosed.Load())
		field("client_output_buffer_limit_disconnections", srv.cfg.limits.outClosed.Load())
		in, out, _ := srv.traffic.totals()
		field("total_net_input_bytes", in)
		field("total_net_output_bytes", out)
		field("instantaneous_ops_per_sec", srv.traffic.opsRate.Load())
		field("instantaneous_input_kbps", fmt.Sprintf("%.2f", float64(srv.traffic.inRate.Load())/1024))
		field("instantaneous_output_kbps", fmt.Sprintf("%.2f", float64(srv.traffic.outRate.Load())/1024))
		channels, patterns, shardChannels := srv.pubsub.counts()
		field("pubsub_channels", channels)
		field("pubsub_patterns", patterns)
		field("pubsubshard_channels", shardChannels)
		field("command_panics", commandPanics.Load()) // recover.go
		field("unexpected_error_replies", 0)          // replies of a master a replica could not apply are logged
		field("total_error_replies", srv.errors.total.Load())
		field("expired_keys", st.ExpiredKeys)
		field("evicted_keys", 0)
		field("keyspace_hits", st.Hits)
		field("keyspace_misses", st.Misses)
		bs := srv.borrowStats()
		field("script_borrowed_runs", bs.runs)                    // borrow.go
		field("script_borrowed_held_runs", bs.held)               // of those, over shards held from the run before
		field("script_borrow_fallbacks", bs.fallbacks)            // tried, then a coordinator ran it
		field("script_forwarded_runs", bs.forwarded)              // forward.go: runs sent to a lower loop
		field("script_borrow_asks", bs.asks)                      // tries that asked other loops for shards
		field("script_borrow_answer_wait_us", bs.answerWait/1000) // waiting for their answers
		field("script_borrow_return_wait_us", bs.returnWait/1000) // waiting for the loop's own shards to come back
		srv.syncStats(field)
	}
	if want("replication", true) {
		section("Replication")
		srv.replicationInfo(field)
	}
	if want("cpu", true) {
		section("CPU")
		u, sy := cpuTimes()
		field("used_cpu_sys", fmt.Sprintf("%.6f", sy))
		field("used_cpu_user", fmt.Sprintf("%.6f", u))
	}
	if want("commandstats", false) {
		section("Commandstats")
		calls := map[string]cmdCount{}
		for _, in := range infos {
			for k, v := range in.calls {
				addCount(calls, k, v)
			}
		}
		for _, cmd := range srv.table.ByName {
			addCount(calls, cmd.Name, cmdCount{calls: cmd.Calls.Load(), nsec: cmd.Nsec.Load()})
		}
		names := make([]string, 0, len(calls))
		for k, v := range calls {
			if cmd := srv.table.ByName[k]; v.calls > 0 || cmd != nil && cmd.Failed.Load()+cmd.Rejected.Load() > 0 {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			c := calls[k]
			var failed, rejected uint64
			if cmd := srv.table.ByName[k]; cmd != nil {
				failed, rejected = cmd.Failed.Load(), cmd.Rejected.Load()
			}
			field("cmdstat_"+k, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
				c.calls, c.nsec/1000, float64(c.nsec)/1000/float64(max(c.calls, 1)), rejected, failed))
		}
	}
	if want("errorstats", true) {
		section("Errorstats")
		srv.errors.each(func(code string, n uint64) { field("errorstat_"+code, fmt.Sprintf("count=%d", n)) })
	}
	if want("tiered", srv.tiered != nil) {
		section("Tiered")
		srv.tieredInfo(field) // tiered.go
	}
	if want("keyspace", true) {
		section("Keyspace")
		for db := 0; db < srv.cfg.Databases; db++ {
			keys, expires := 0, 0
			for _, in := range infos {
				keys += in.keys[db]
				expires += in.expires[db]
			}
			if keys > 0 {
				field("db"+strconv.Itoa(db), fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", keys, expires))
			}
		}
	}
	x.W.Verbatim("txt", []byte(b.String()))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// rss reads the resident set size from /proc (0 where unavailable).
func rss() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
