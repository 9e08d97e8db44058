package debug

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/family"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/list"
)

// Host is what DEBUG needs of the server.
type Host interface {
	// Reload is DEBUG RELOAD: save, flush and load the dataset, replying.
	Reload(x *command.Coord)
	// ChangeReplID gives the server a new replication id (replid2 cleared).
	ChangeReplID()
	// Log writes msg to the server's log at Redis's warning level.
	Log(msg string)
}

// NotAllowed is Redis's refusal of DEBUG while enable-debug-command
// forbids it for the client.
const NotAllowed = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

// Allowed reports whether enable-debug-command's value lets a client run
// DEBUG: yes, or local and the client is local (loopback, unix socket).
func Allowed(setting string, local bool) bool {
	return setting == "yes" || setting == "local" && local
}

// Run answers DEBUG x.Args.
func Run(x *command.Coord, h Host) {
	a := x.Args
	sub := strings.ToLower(string(a[1]))
	n := len(a)
	switch {
	case sub == "help" && n == 2:
		command.WriteHelp(x.W, help)
	case sub == "sleep" && n == 3:
		// strtod: what does not parse is 0.
		f, _ := strconv.ParseFloat(floatPrefix(string(a[2])), 64)
		if f > 0 {
			time.Sleep(time.Duration(f * float64(time.Second)))
		}
		x.W.SimpleString("OK")
	case sub == "set-active-expire" && n == 3:
		on := atoi(a[2]) != 0
		x.OnEach(func(s *shard.Shard) { s.NoActiveExpiry = !on })
		x.W.SimpleString("OK")
	case sub == "digest" && n == 2:
		digestAll(x)
	case sub == "digest-value" && n >= 2:
		digestValues(x)
	case sub == "object" && n == 3:
		object(x)
	case sub == "populate" && n >= 3 && n <= 5:
		populate(x)
	case sub == "reload":
		h.Reload(x)
	case sub == "change-repl-id" && n == 2:
		h.ChangeReplID()
		x.W.SimpleString("OK")
	case sub == "error" && n == 3:
		x.W.Buf = append(append(append(x.W.Buf, '-'), oneLine(a[2])...), '\r', '\n')
	case sub == "log" && n == 3:
		h.Log("DEBUG LOG: " + string(a[2]))
		x.W.SimpleString("OK")
	case sub == "protocol" && n == 3:
		protocol(x)
	case sub == "listpack" && n == 3:
		structure(x, "listpack", "Listpack")
	case sub == "quicklist" && (n == 3 || n == 4):
		structure(x, "quicklist", "Quicklist")
	case sub == "quicklist-packed-threshold" && n == 3:
		sz, ok := config.Memtoull(string(a[2]))
		if !ok || sz > 1<<32-1<<20 {
			x.W.Error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
			return
		}
		x.W.SimpleString("OK")
	case sub == "stringmatch-test" && n == 2:
		x.W.SimpleString("Apparently Redis did not crash: test passed")
	case (sub == "set-skip-checksum-validation" || sub == "pause-cron" || sub == "aof-flush-sleep" || sub == "leak") && n == 3,
		sub == "replybuffer" && n == 4:
		x.W.SimpleString("OK") // tuning without meaning here
	case sub == "gc" && n == 2:
		// dfly's own: collect garbage now, so INFO's used_memory shows live
		// data (benchmarks compare it with Redis's allocator count).
		runtime.GC()
		runtime.GC() // a second cycle also empties sync.Pool victim caches (I/O buffers)
		x.W.SimpleString("OK")
	default:
		command.SubcommandSyntaxErr(x.W, a, "debug")
	}
}

// object is DEBUG OBJECT key in Redis's words: the value's address,
// refcount (always 1: values are not shared), encoding (as OBJECT
// ENCODING), serialized length (its RDB encoding, LZF included; for an
// offloaded string its length), and its LRU clock and idle seconds; for a
// list the quicklist's ql_* fields (its nodes, their sizes as listpacks,
// list-max-listpack-size, whether list-compress-depth is set).
func object(x *command.Coord) {
	key := x.Args[2]
	var line string
	x.On(x.ShardOf(key), func(s *shard.Shard) {
		_, v := s.DBs[x.DB].FindNoTouch(key)
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
		if v.Type == shard.TypeList {
			l := v.Obj().(*list.List)
			compressed := 0
			if list.CompressDepth() != 0 {
				compressed = 1
			}
			line += fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d ql_uncompressed_size:%d",
				l.NumNodes(), float64(l.Len())/float64(max(l.NumNodes(), 1)), list.Fill(), compressed, l.ListpackBytes())
		}
	})
	if line == "" {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	x.W.SimpleString(line)
}

// structure is DEBUG LISTPACK and QUICKLIST: Redis prints the value's
// structure on its stdout; here only the checks and the reply remain.
func structure(x *command.Coord, encoding, title string) {
	key := x.Args[2]
	enc := ""
	x.On(x.ShardOf(key), func(s *shard.Shard) {
		if _, v := s.DBs[x.DB].Find(key); v != nil {
			enc = family.EncodingOf(v)
		}
	})
	switch enc {
	case "":
		x.W.Error(command.ErrNoSuchKey)
	case encoding:
		x.W.SimpleString(title + " structure printed on stdout")
	default:
		x.W.Error("ERR Not a " + encoding + " encoded object.")
	}
}

// populate: DEBUG POPULATE count [prefix] [size] creates keys
// prefix:0..count-1 with values "value:N" (padded with zeros or cut to size
// when given), skipping keys that exist. Every shard walks the whole range
// and inserts the keys it owns, so all shards work in parallel.
func populate(x *command.Coord) {
	const outOfRange = "ERR value is out of range, must be positive"
	count, err := strconv.ParseInt(string(x.Args[2]), 10, 64)
	if err != nil || count < 0 {
		x.W.Error(outOfRange)
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
			x.W.Error(outOfRange)
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
			if n > 1 && x.ShardOf(key) != s.ID {
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

// protocol is DEBUG PROTOCOL type: Redis's test value of each reply type.
func protocol(x *command.Coord) {
	w := x.W
	switch strings.ToLower(string(x.Args[2])) {
	case "string":
		w.BulkString("Hello World")
	case "integer":
		w.Int(12345)
	case "double":
		w.Double(3.141)
	case "bignum":
		w.BigNumber("1234567999999999999999999999999999999")
	case "null":
		w.Null()
	case "array":
		w.Array(3)
		for i := range 3 {
			w.Int(int64(i))
		}
	case "set":
		w.Set(3)
		for i := range 3 {
			w.Int(int64(i))
		}
	case "map":
		w.Map(3)
		for i := range 3 {
			w.Int(int64(i))
			w.Bool(i == 1)
		}
	case "attrib":
		if w.Proto == 3 {
			w.Buf = append(w.Buf, "|1\r\n"...)
			w.BulkString("key-popularity")
			w.Array(2)
			w.BulkString("key:123")
			w.Int(90)
		}
		w.BulkString("Some real reply following the attribute")
	case "push":
		if w.Proto != 3 {
			w.Error("ERR RESP2 is not supported by this command")
			return
		}
		w.Push(2)
		w.BulkString("server-cpu-usage")
		w.Int(42)
		w.BulkString("Some real reply following the push reply")
	case "true":
		w.Bool(true)
	case "false":
		w.Bool(false)
	case "verbatim":
		w.Verbatim("txt", []byte("This is a verbatim\nstring"))
	default:
		w.Error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

// floatPrefix is the longest prefix of s that strtod reads.
func floatPrefix(s string) string {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	for end := len(s); end > 0; end-- {
		if _, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return s[:end]
		}
	}
	return "0"
}

// atoi is C's atoi: the leading integer of b, 0 if none.
func atoi(b []byte) int64 {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseInt(s[:end], 10, 64)
	return n
}

// oneLine is an error text as Redis sends it: CR and LF become spaces.
func oneLine(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		out[i] = c
	}
	return out
}
