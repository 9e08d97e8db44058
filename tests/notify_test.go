package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Keyspace notifications (notify-keyspace-events) as Redis 7.0 publishes
// them: each case runs its commands with the classes "KEA" plus the case's
// own, and a subscriber to __key*__:* must receive exactly the events
// listed, in order: "event key" (key "k@1" for database 1) stands for the
// pair __keyspace@<db>__:<key> → event, __keyevent@<db>__:<event> → key.
// Keys with a hash tag share a shard in dfly, so one command's events
// come in Redis's order; a case marked apart has keys on several shards,
// whose events are compared key by key.
var notifyCases = []struct {
	name    string
	classes string // beyond KE
	setup   [][]string
	cmds    [][]string
	events  []string
	apart   bool
}{
	// strings
	{name: "set", classes: "An", cmds: [][]string{{"SET", "k", "v"}, {"SET", "k", "w"}, {"SET", "k", "x", "EX", "100"}, {"SETNX", "k", "y"}, {"SETNX", "n", "y"}},
		events: []string{"new k", "set k", "set k", "set k", "expire k", "new n", "set n"}},
	{name: "set-past", classes: "An", cmds: [][]string{{"SET", "k", "v", "PXAT", "1"}, {"GET", "k"}},
		events: []string{"new k", "set k", "expire k", "expired k"}},
	{name: "setex", cmds: [][]string{{"SETEX", "k", "10", "v"}, {"PSETEX", "k", "10000", "v"}, {"GETSET", "k", "w"}},
		events: []string{"set k", "expire k", "set k", "expire k", "set k"}},
	{name: "getex-getdel", setup: [][]string{{"SET", "k", "v", "EX", "100"}, {"SET", "d", "v"}},
		cmds:   [][]string{{"GETEX", "k"}, {"GETEX", "k", "PERSIST"}, {"GETEX", "k", "EX", "5"}, {"GETEX", "k", "PXAT", "1"}, {"GETDEL", "d"}, {"GETDEL", "d"}},
		events: []string{"persist k", "expire k", "del k", "del d"}},
	{name: "mset", cmds: [][]string{{"MSET", "{m}a", "1", "{m}b", "2"}, {"MSETNX", "{m}a", "1", "{m}c", "3"}, {"MSETNX", "{m}c", "3", "{m}d", "4"}},
		events: []string{"set {m}a", "set {m}b", "set {m}c", "set {m}d"}},
	{name: "mset-apart", apart: true, cmds: [][]string{{"MSET", "a", "1", "b", "2", "c", "3", "d", "4"}},
		events: []string{"set a", "set b", "set c", "set d"}},
	{name: "incr-append-setrange", cmds: [][]string{{"INCR", "n"}, {"DECRBY", "n", "3"}, {"INCRBYFLOAT", "n", "1.5"}, {"APPEND", "s", "ab"}, {"APPEND", "s", "c"},
		{"SETRANGE", "s", "1", "xy"}, {"SETRANGE", "s", "0", ""}, {"SETRANGE", "e", "0", ""}},
		events: []string{"incrby n", "incrby n", "incrbyfloat n", "append s", "append s", "setrange s"}},
	{name: "bits", setup: [][]string{{"SET", "{b}x", "a"}},
		cmds: [][]string{{"SETBIT", "{b}b", "3", "1"}, {"SETBIT", "{b}b", "3", "1"}, {"BITFIELD", "{b}f", "SET", "u8", "0", "5"}, {"BITOP", "OR", "{b}d", "{b}b", "{b}x"},
			{"BITOP", "AND", "{b}d", "{b}none"}, {"BITOP", "AND", "{b}d", "{b}none"}},
		events: []string{"setbit {b}b", "setbit {b}f", "set {b}d", "del {b}d"}},
	{name: "hll", setup: [][]string{{"PFADD", "{h}b", "z"}},
		cmds:   [][]string{{"PFADD", "{h}a", "x"}, {"PFADD", "{h}a", "x"}, {"PFADD", "{h}a", "y"}, {"PFMERGE", "{h}c", "{h}a", "{h}b"}},
		events: []string{"pfadd {h}a", "pfadd {h}a", "pfadd {h}c"}},

	// generic
	{name: "del-expire-persist", setup: [][]string{{"SET", "{g}a", "1"}, {"SET", "{g}b", "2"}, {"SET", "{g}c", "3"}},
		cmds: [][]string{{"DEL", "{g}a", "{g}none"}, {"UNLINK", "{g}b"}, {"EXPIRE", "{g}c", "100"}, {"EXPIRE", "{g}c", "50", "NX"}, {"PERSIST", "{g}c"},
			{"PERSIST", "{g}c"}, {"PEXPIREAT", "{g}c", "1"}, {"EXPIRE", "{g}none", "5"}},
		events: []string{"del {g}a", "del {g}b", "expire {g}c", "persist {g}c", "del {g}c"}},
	{name: "rename", classes: "n", setup: [][]string{{"SET", "{r}a", "1"}, {"SET", "{r}c", "3"}},
		cmds:   [][]string{{"RENAME", "{r}a", "{r}b"}, {"RENAMENX", "{r}b", "{r}c"}, {"RENAME", "{r}b", "{r}c"}},
		events: []string{"new {r}b", "rename_from {r}a", "rename_to {r}b", "new {r}c", "rename_from {r}b", "rename_to {r}c"}},
	{name: "rename-apart", apart: true, setup: [][]string{{"SET", "a", "1"}},
		cmds:   [][]string{{"RENAME", "a", "b"}, {"RENAME", "b", "c"}},
		events: []string{"rename_from a", "rename_to b", "rename_from b", "rename_to c"}},
	{name: "copy-move", classes: "n", setup: [][]string{{"SET", "{c}a", "1"}, {"SET", "{c}b", "2"}},
		cmds: [][]string{{"COPY", "{c}a", "{c}b"}, {"COPY", "{c}a", "{c}b", "REPLACE"}, {"COPY", "{c}a", "{c}n"}, {"COPY", "{c}a", "{c}a", "DB", "1"},
			{"MOVE", "{c}b", "1"}, {"MOVE", "{c}a", "1"}},
		events: []string{"new {c}b", "copy_to {c}b", "new {c}n", "copy_to {c}n", "new {c}a@1", "copy_to {c}a@1", "new {c}b@1", "move_from {c}b", "move_to {c}b@1"}},
	{name: "restore", classes: "n", setup: [][]string{{"SET", "k", "v"}},
		cmds:   [][]string{{"RESTORE", "r", "0", "$dump"}, {"RESTORE", "r", "0", "$dump", "REPLACE"}, {"RESTORE", "r", "1", "$dump", "REPLACE", "ABSTTL"}},
		events: []string{"new r", "restore r", "new r", "restore r", "del r"}},
	{name: "expired-lazy", setup: [][]string{{"DEBUG", "SET-ACTIVE-EXPIRE", "0"}, {"SET", "k", "v", "PX", "1"}, {"DEBUG", "SLEEP", "0.01"}},
		cmds:   [][]string{{"GET", "k"}, {"GET", "k"}, {"DEBUG", "SET-ACTIVE-EXPIRE", "1"}},
		events: []string{"expired k"}},

	// lists
	{name: "list", setup: [][]string{{"RPUSH", "l", "a", "b", "c", "d", "e"}},
		cmds: [][]string{{"LPUSH", "l", "x"}, {"RPUSH", "l", "y", "z"}, {"LPUSHX", "none", "x"}, {"RPUSHX", "l", "w"}, {"LINSERT", "l", "BEFORE", "a", "q"},
			{"LINSERT", "l", "BEFORE", "nope", "q"}, {"LSET", "l", "0", "s"}, {"LREM", "l", "0", "q"}, {"LREM", "l", "0", "nope"}, {"LTRIM", "l", "0", "-1"},
			{"LPOP", "l"}, {"RPOP", "l", "2"}, {"LTRIM", "l", "1", "0"}},
		events: []string{"lpush l", "rpush l", "rpush l", "linsert l", "lset l", "lrem l", "ltrim l", "lpop l", "rpop l", "ltrim l", "del l"}},
	{name: "list-empty", setup: [][]string{{"RPUSH", "l", "a", "b"}, {"RPUSH", "m", "a"}},
		cmds:   [][]string{{"LPOP", "l", "5"}, {"LREM", "m", "0", "a"}, {"LMPOP", "1", "l", "LEFT"}, {"BLPOP", "l", "0.01"}},
		events: []string{"lpop l", "del l", "lrem m", "del m"}},
	{name: "lmove", classes: "n", setup: [][]string{{"RPUSH", "{l}s", "a", "b"}, {"RPUSH", "{l}r", "x"}},
		cmds:   [][]string{{"LMOVE", "{l}s", "{l}d", "LEFT", "RIGHT"}, {"RPOPLPUSH", "{l}s", "{l}d"}, {"LMOVE", "{l}r", "{l}r", "LEFT", "LEFT"}, {"BLMOVE", "{l}d", "{l}e", "LEFT", "LEFT", "0"}},
		events: []string{"new {l}d", "rpush {l}d", "lpop {l}s", "lpush {l}d", "rpop {l}s", "del {l}s", "lpush {l}r", "lpop {l}r", "new {l}e", "lpush {l}e", "lpop {l}d"}},
	{name: "lmove-apart", apart: true, setup: [][]string{{"RPUSH", "s", "a"}},
		cmds:   [][]string{{"LMOVE", "s", "d", "LEFT", "RIGHT"}},
		events: []string{"rpush d", "lpop s", "del s"}},

	// hashes
	{name: "hash", cmds: [][]string{{"HSET", "h", "a", "1", "b", "2"}, {"HSET", "h", "a", "1"}, {"HMSET", "h", "c", "3"}, {"HSETNX", "h", "a", "9"}, {"HSETNX", "h", "d", "4"},
		{"HINCRBY", "h", "n", "2"}, {"HINCRBYFLOAT", "h", "f", "0.5"}, {"HDEL", "h", "nope"}, {"HDEL", "h", "a", "b"}, {"HDEL", "h", "c", "d", "n", "f"}},
		events: []string{"hset h", "hset h", "hset h", "hset h", "hincrby h", "hincrbyfloat h", "hdel h", "hdel h", "del h"}},

	// sets
	{name: "set-type", setup: [][]string{{"SADD", "{s}o", "x", "y"}},
		cmds: [][]string{{"SADD", "{s}s", "a", "b", "c"}, {"SADD", "{s}s", "a"}, {"SREM", "{s}s", "nope"}, {"SREM", "{s}s", "a"}, {"SPOP", "{s}s"},
			{"SPOP", "{s}s", "5"}, {"SMOVE", "{s}o", "{s}d", "x"}, {"SMOVE", "{s}o", "{s}d", "y"}, {"SMOVE", "{s}d", "{s}o", "nope"}},
		events: []string{"sadd {s}s", "srem {s}s", "spop {s}s", "spop {s}s", "del {s}s", "srem {s}o", "sadd {s}d", "srem {s}o", "del {s}o", "sadd {s}d"}},
	{name: "set-store", setup: [][]string{{"SADD", "{s}a", "1", "2"}, {"SADD", "{s}b", "2", "3"}},
		cmds: [][]string{{"SINTERSTORE", "{s}d", "{s}a", "{s}b"}, {"SUNIONSTORE", "{s}d", "{s}a", "{s}b"}, {"SDIFFSTORE", "{s}d", "{s}a", "{s}b"},
			{"SINTERSTORE", "{s}d", "{s}a", "{s}none"}, {"SINTERSTORE", "{s}d", "{s}a", "{s}none"}},
		events: []string{"sinterstore {s}d", "sunionstore {s}d", "sdiffstore {s}d", "del {s}d"}},

	// sorted sets and geo
	{name: "zset", cmds: [][]string{{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"}, {"ZADD", "z", "1", "a"}, {"ZADD", "z", "INCR", "1", "a"}, {"ZINCRBY", "z", "1", "b"},
		{"ZREM", "z", "nope"}, {"ZREM", "z", "a"}, {"ZREMRANGEBYSCORE", "z", "100", "200"}, {"ZREMRANGEBYSCORE", "z", "4", "4"}, {"ZREMRANGEBYRANK", "z", "0", "0"},
		{"ZREMRANGEBYLEX", "z", "[e", "[e"}, {"ZPOPMIN", "z"}, {"ZPOPMAX", "z", "3"}},
		events: []string{"zadd z", "zincr z", "zincr z", "zrem z", "zremrangebyscore z", "zremrangebyrank z", "zremrangebylex z", "zpopmin z", "del z"}},
	{name: "zset-store", setup: [][]string{{"ZADD", "{z}a", "1", "x", "2", "y"}, {"ZADD", "{z}b", "1", "y"}},
		cmds: [][]string{{"ZUNIONSTORE", "{z}d", "2", "{z}a", "{z}b"}, {"ZINTERSTORE", "{z}d", "2", "{z}a", "{z}b"}, {"ZDIFFSTORE", "{z}d", "2", "{z}a", "{z}b"},
			{"ZRANGESTORE", "{z}e", "{z}a", "0", "-1"}, {"ZINTERSTORE", "{z}d", "2", "{z}a", "{z}none"}, {"BZPOPMIN", "{z}b", "0"}, {"ZMPOP", "1", "{z}e", "MAX"}},
		events: []string{"zunionstore {z}d", "zinterstore {z}d", "zdiffstore {z}d", "zrangestore {z}e", "del {z}d", "zpopmin {z}b", "del {z}b", "zpopmax {z}e"}},
	{name: "geo", cmds: [][]string{{"GEOADD", "{o}g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}, {"GEOADD", "{o}g", "13.361389", "38.115556", "Palermo"},
		{"GEOSEARCHSTORE", "{o}d", "{o}g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"}, {"GEORADIUS", "{o}g", "15", "37", "200", "km", "STORE", "{o}r"},
		{"GEOSEARCHSTORE", "{o}d", "{o}g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"}},
		events: []string{"zadd {o}g", "geosearchstore {o}d", "georadiusstore {o}r", "del {o}d"}},

	// streams
	{name: "stream", cmds: [][]string{{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "f", "v"}, {"XADD", "x", "MAXLEN", "1", "3-1", "f", "v"}, {"XDEL", "x", "9-9"},
		{"XDEL", "x", "3-1"}, {"XADD", "x", "4-1", "f", "v"}, {"XTRIM", "x", "MAXLEN", "5"}, {"XTRIM", "x", "MAXLEN", "0"}, {"XSETID", "x", "10-1"},
		{"XGROUP", "CREATE", "x", "g", "$"}, {"XGROUP", "SETID", "x", "g", "0"}, {"XGROUP", "CREATECONSUMER", "x", "g", "c"}, {"XGROUP", "DELCONSUMER", "x", "g", "c"},
		{"XGROUP", "DESTROY", "x", "g"}, {"XGROUP", "CREATE", "y", "g", "$", "MKSTREAM"}},
		events: []string{"xadd x", "xadd x", "xadd x", "xtrim x", "xdel x", "xadd x", "xtrim x", "xsetid x", "xgroup-create x", "xgroup-setid x",
			"xgroup-createconsumer x", "xgroup-delconsumer x", "xgroup-destroy x", "xgroup-create y"}},

	// keymiss (m): a read of a missing key, Redis 7.0's lookupKeyRead: read
	// commands, and the reads of write commands (GETSET, SET ... GET, GETDEL,
	// GETEX, a STORE's sources, PFMERGE's destination too, COPY's source,
	// BITFIELD with only GETs, XACK/XCLAIM's stream); never a write's own
	// key (LPOP, INCR), OBJECT, MEMORY USAGE or BLPOP.
	{name: "keymiss-strings", classes: "m", cmds: [][]string{{"GET", "k"}, {"MGET", "{m}a", "{m}b"}, {"STRLEN", "k"}, {"GETRANGE", "k", "0", "1"}, {"GETEX", "k", "EX", "5"},
		{"GETDEL", "k"}, {"SET", "k", "v", "GET"}, {"DEL", "k"}, {"GETSET", "k", "v"}, {"DEL", "k"}, {"SET", "k", "v", "NX"}, {"DEL", "k"}, {"INCR", "n"}, {"APPEND", "a", "x"}},
		events: []string{"keymiss k", "keymiss {m}a", "keymiss {m}b", "keymiss k", "keymiss k", "keymiss k", "keymiss k", "keymiss k", "set k", "del k",
			"keymiss k", "set k", "del k", "set k", "del k", "incrby n", "append a"}},
	{name: "keymiss-keys", classes: "m", cmds: [][]string{{"EXISTS", "k"}, {"TYPE", "k"}, {"TTL", "k"}, {"PTTL", "k"}, {"EXPIRETIME", "k"}, {"DUMP", "k"}, {"TOUCH", "k"},
		{"OBJECT", "ENCODING", "k"}, {"OBJECT", "FREQ", "k"}, {"MEMORY", "USAGE", "k"}, {"RANDOMKEY"}, {"DEL", "k"}, {"EXPIRE", "k", "5"}, {"PERSIST", "k"}, {"MOVE", "k", "1"},
		{"COPY", "{m}a", "{m}b"}, {"EXISTS", "{m}a", "{m}b"}},
		events: []string{"keymiss k", "keymiss k", "keymiss k", "keymiss k", "keymiss k", "keymiss k", "keymiss k", "keymiss {m}a", "keymiss {m}a", "keymiss {m}b"}},
	{name: "keymiss-types", classes: "m", cmds: [][]string{{"LRANGE", "l", "0", "-1"}, {"LINDEX", "l", "0"}, {"LPOP", "l"}, {"RPOPLPUSH", "{m}l", "{m}d"}, {"BLPOP", "l", "0.01"},
		{"HGET", "h", "f"}, {"HGETALL", "h"}, {"HDEL", "h", "f"}, {"SMEMBERS", "s"}, {"SISMEMBER", "s", "a"}, {"SREM", "s", "a"}, {"SINTER", "{m}a", "{m}b"},
		{"ZSCORE", "z", "a"}, {"ZRANGE", "z", "0", "-1"}, {"ZREM", "z", "a"}, {"ZPOPMIN", "z"}, {"GEOPOS", "g", "a"}, {"GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"},
		{"PFCOUNT", "p"}, {"GETBIT", "b", "0"}, {"BITCOUNT", "b"}, {"BITFIELD", "b", "GET", "u8", "0"}, {"BITFIELD_RO", "b", "GET", "u8", "0"}, {"LCS", "{m}a", "{m}b"},
		{"XRANGE", "x", "-", "+"}, {"XLEN", "x"}, {"XREAD", "STREAMS", "{m}x", "{m}y", "0", "0"}, {"XACK", "x", "g", "1-1"}, {"XDEL", "x", "1-1"}, {"SORT", "l"}, {"SORT_RO", "l"}},
		events: []string{"keymiss l", "keymiss l", "keymiss h", "keymiss h", "keymiss s", "keymiss s", "keymiss {m}a", "keymiss {m}b", "keymiss z", "keymiss z",
			"keymiss g", "keymiss g", "keymiss p", "keymiss b", "keymiss b", "keymiss b", "keymiss b", "keymiss {m}a", "keymiss {m}b", "keymiss x", "keymiss x",
			"keymiss {m}x", "keymiss {m}y", "keymiss {m}x", "keymiss {m}y", "keymiss x", "keymiss l", "keymiss l"}},
	{name: "keymiss-store", classes: "m", setup: [][]string{{"SADD", "{m}s", "x"}, {"ZADD", "{m}z", "1", "x"}, {"SET", "{m}t", "x"}},
		cmds: [][]string{{"SINTERSTORE", "{m}d", "{m}s", "{m}a"}, {"SUNIONSTORE", "{m}d", "{m}s", "{m}a"}, {"ZUNIONSTORE", "{m}e", "2", "{m}a", "{m}z"}, {"ZRANGESTORE", "{m}f", "{m}a", "0", "-1"},
			{"GEOSEARCHSTORE", "{m}f", "{m}a", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"}, {"GEORADIUS", "{m}a", "0", "0", "1", "km", "STORE", "{m}f"},
			{"BITOP", "OR", "{m}g", "{m}t", "{m}a"}, {"PFMERGE", "{m}h", "{m}a"}, {"SORT", "{m}a", "STORE", "{m}i"}, {"SMOVE", "{m}a", "{m}b", "x"}, {"RENAMENX", "{m}t", "{m}u"}},
		events: []string{"keymiss {m}a", "keymiss {m}a", "sunionstore {m}d", "keymiss {m}a", "zunionstore {m}e", "keymiss {m}a", "keymiss {m}a", "keymiss {m}a",
			"keymiss {m}a", "set {m}g", "keymiss {m}h", "keymiss {m}a", "pfadd {m}h", "keymiss {m}a", "rename_from {m}t", "rename_to {m}u"}},
	{name: "keymiss-expired", classes: "m", setup: [][]string{{"DEBUG", "SET-ACTIVE-EXPIRE", "0"}, {"SET", "k", "v", "PX", "1"}, {"SET", "j", "v", "PX", "1"}, {"DEBUG", "SLEEP", "0.01"}},
		cmds:   [][]string{{"GET", "k"}, {"SET", "j", "w"}, {"DEBUG", "SET-ACTIVE-EXPIRE", "1"}},
		events: []string{"expired k", "keymiss k", "expired j", "set j"}},
	{name: "keymiss-multi-script", classes: "m", cmds: [][]string{{"MULTI"}, {"GET", "{t}k"}, {"INCR", "{t}n"}, {"EXEC"},
		{"EVAL", "redis.call('get', KEYS[1]); return redis.call('lpush', KEYS[1], 'a')", "1", "k"}, {"EVAL_RO", "return redis.call('hget', KEYS[1], 'f')", "1", "h"}},
		events: []string{"keymiss {t}k", "incrby {t}n", "keymiss k", "lpush k", "keymiss h"}},

	// SORT ... STORE: sortstore, or del when nothing is stored; its BY and
	// GET patterns read keys (keymiss)
	{name: "sortstore", classes: "nm", setup: [][]string{{"RPUSH", "{o}l", "3", "1", "2"}, {"SET", "{o}w_1", "5"}},
		cmds: [][]string{{"SORT", "{o}l", "STORE", "{o}d"}, {"SORT", "{o}l", "STORE", "{o}d"}, {"SORT", "{o}l", "LIMIT", "5", "1", "STORE", "{o}d"}, {"SORT", "{o}l", "LIMIT", "5", "1", "STORE", "{o}d"},
			{"SORT", "{o}l", "BY", "{o}w_*", "STORE", "{o}l"}, {"SORT", "{o}l", "BY", "nosort", "GET", "{o}w_*"}},
		events: []string{"new {o}d", "sortstore {o}d", "sortstore {o}d", "del {o}d", "keymiss {o}w_3", "keymiss {o}w_2", "sortstore {o}l",
			"keymiss {o}w_2", "keymiss {o}w_3"}},

	// stream consumers created by a read or a claim
	{name: "stream-consumers", setup: [][]string{{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "0"}},
		cmds: [][]string{{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "x", ">"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"},
			{"XREADGROUP", "GROUP", "g", "e", "STREAMS", "x", ">"}, {"XCLAIM", "x", "g", "d", "0", "1-1"}, {"XCLAIM", "x", "g", "d", "0", "2-1", "JUSTID"},
			{"XAUTOCLAIM", "x", "g", "f", "0", "0"}, {"XAUTOCLAIM", "x", "g", "f", "0", "0"}, {"XACK", "x", "g", "1-1"}, {"XGROUP", "DELCONSUMER", "x", "g", "f"}},
		events: []string{"xgroup-createconsumer x", "xgroup-createconsumer x", "xgroup-createconsumer x", "xgroup-delconsumer x"}},

	// classes: only those asked for
	{name: "classes", classes: "-", cmds: [][]string{{"CONFIG", "SET", "notify-keyspace-events", "E$"}, {"SET", "k", "v"}, {"DEL", "k"}, {"LPUSH", "l", "a"},
		{"CONFIG", "SET", "notify-keyspace-events", "Kl"}, {"SET", "k", "v"}, {"LPUSH", "l", "a"}, {"CONFIG", "SET", "notify-keyspace-events", "gl"}, {"DEL", "l"}},
		events: []string{"E set k", "K l lpush"}},
}

// notifyEvent is one Pub/Sub message: channel and payload.
type notifyEvent struct{ channel, message string }

// expand turns "event key[@db]" into its keyspace and keyevent messages;
// "E event key" and "K key event" name one of them.
func expandEvent(spec string) []notifyEvent {
	f := strings.Fields(spec)
	if len(f) == 3 {
		if f[0] == "E" {
			return []notifyEvent{{"__keyevent@0__:" + f[1], f[2]}}
		}
		return []notifyEvent{{"__keyspace@0__:" + f[1], f[2]}}
	}
	event, key, db := f[0], f[1], "0"
	if i := strings.LastIndexByte(key, '@'); i >= 0 {
		key, db = key[:i], key[i+1:]
	}
	return []notifyEvent{{"__keyspace@" + db + "__:" + key, event}, {"__keyevent@" + db + "__:" + event, key}}
}

// readEvents reads a pattern subscriber's messages until the marker
// published on __keyend__:done.
func readEvents(t *testing.T, sub *RawConn) []notifyEvent {
	t.Helper()
	var got []notifyEvent
	for {
		r := sub.MustRead()
		if len(r.Elems) != 4 || r.Elems[0].Str != "pmessage" {
			t.Fatalf("unexpected message %s", r)
		}
		e := notifyEvent{r.Elems[2].Str, r.Elems[3].Str}
		if e.channel == "__keyend__:done" {
			return got
		}
		got = append(got, e)
	}
}

// eventKey is what orders an event among those of several shards: its key.
func eventKey(e notifyEvent) string {
	if strings.HasPrefix(e.channel, "__keyspace@") {
		return e.channel[strings.Index(e.channel, "__:")+3:]
	}
	return e.message
}

func byKey(evs []notifyEvent) []notifyEvent {
	out := slices.Clone(evs)
	slices.SortStableFunc(out, func(a, b notifyEvent) int { return strings.Compare(eventKey(a), eventKey(b)) })
	return out
}

func TestKeyspaceNotifications(t *testing.T) {
	srv := StartServer(t, "--notify-keyspace-events", "KEA")
	c, sub := srv.Raw(t), srv.Raw(t)
	expectReply(t, c.Do("CONFIG", "GET", "notify-keyspace-events"), "(array)\n  \"notify-keyspace-events\"\n  \"AKE\"")
	sub.Send("PSUBSCRIBE", "__key*__:*")
	expectReply(t, sub.MustRead(), "(array)\n  \"psubscribe\"\n  \"__key*__:*\"\n  (integer) 1")
	for _, tc := range notifyCases {
		t.Run(tc.name, func(t *testing.T) {
			expectReply(t, c.Do("CONFIG", "SET", "notify-keyspace-events", ""), "OK")
			expectReply(t, c.Do("FLUSHALL"), "OK")
			for _, cmd := range tc.setup {
				if r := c.Do(cmd...); r.IsError() {
					t.Fatalf("setup %q: %s", cmd, r)
				}
			}
			var dump string // "$dump" in a command: k's payload
			if tc.name == "restore" {
				dump = c.Do("DUMP", "k").Str
			}
			if tc.classes != "-" {
				expectReply(t, c.Do("CONFIG", "SET", "notify-keyspace-events", "KEA"+tc.classes), "OK")
			}
			for _, cmd := range tc.cmds {
				cmd = slices.Clone(cmd)
				if i := slices.Index(cmd, "$dump"); i >= 0 {
					cmd[i] = dump
				}
				if r := c.Do(cmd...); r.IsError() && !strings.Contains(r.Str, "no such key") {
					t.Fatalf("%q: %s", cmd, r)
				}
			}
			expectReply(t, c.Do("PUBLISH", "__keyend__:done", "x"), "(integer) 1")
			got := readEvents(t, sub)
			var want []notifyEvent
			for _, e := range tc.events {
				want = append(want, expandEvent(e)...)
			}
			if tc.apart {
				got, want = byKey(got), byKey(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("events:\n got  %v\n want %v", got, want)
			}
		})
	}
}

// TestKeyspaceEventsConfig: the letters CONFIG SET takes and how CONFIG
// GET shows them (Redis's order, A for all, n hidden behind A), and the
// error for a letter Redis does not know; and that the letters take
// effect, n with A included though not shown.
func TestKeyspaceEventsConfig(t *testing.T) {
	srv := StartServer(t)
	c := srv.Raw(t)
	expectReply(t, c.Do("CONFIG", "GET", "notify-keyspace-events"), "(array)\n  \"notify-keyspace-events\"\n  \"\"")
	for _, tc := range [][2]string{{"KEA", "AKE"}, {"Agn", "A"}, {"mEK", "KEm"}, {"zhs$lg", "g$lshz"}, {"tdex", "xetd"}, {"g$lshzxetd", "A"}, {"nK", "nK"}, {"", ""}} {
		expectReply(t, c.Do("CONFIG", "SET", "notify-keyspace-events", tc[0]), "OK")
		expectReply(t, c.Do("CONFIG", "GET", "notify-keyspace-events"), "(array)\n  \"notify-keyspace-events\"\n  \""+tc[1]+"\"")
	}
	c.Do("CONFIG", "SET", "notify-keyspace-events", "Kg")
	expectReply(t, c.Do("CONFIG", "SET", "notify-keyspace-events", "KEq"),
		"(error) ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
	expectReply(t, c.Do("CONFIG", "GET", "notify-keyspace-events"), "(array)\n  \"notify-keyspace-events\"\n  \"gK\"")
	expectReply(t, c.Do("CONFIG", "SET", "notify-keyspace-events", "AnK"), "OK")
	expectReply(t, c.Do("CONFIG", "GET", "notify-keyspace-events"), "(array)\n  \"notify-keyspace-events\"\n  \"AK\"")
	sub := srv.Raw(t)
	sub.Send("SUBSCRIBE", "__keyspace@0__:k")
	sub.MustRead()
	c.Do("SET", "k", "v")
	expectReply(t, sub.MustRead(), "(array)\n  \"message\"\n  \"__keyspace@0__:k\"\n  \"new\"")
	expectReply(t, sub.MustRead(), "(array)\n  \"message\"\n  \"__keyspace@0__:k\"\n  \"set\"")
}

// TestExpiredEventsUnderLoad: keys with short TTLs expire while a writer
// runs (some found expired by reads, the rest by the active sweep); every
// key's "expired" event arrives, once.
func TestExpiredEventsUnderLoad(t *testing.T) {
	srv := StartServer(t)
	c, w, sub := srv.Raw(t), srv.Raw(t), srv.Raw(t)
	expectReply(t, c.Do("CONFIG", "SET", "notify-keyspace-events", "Ex"), "OK")
	sub.Send("SUBSCRIBE", "__keyevent@0__:expired")
	sub.MustRead()
	const n = 2000
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the load: writes without TTL, never expiring
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			w.Send("SET", fmt.Sprintf("load:%d", i%500), "v")
			w.MustRead()
		}
	}()
	var pipe strings.Builder
	for i := 0; i < n; i++ {
		pipe.WriteString(EncodeCommand("SET", fmt.Sprintf("ttl:%d", i), "v", "PX", fmt.Sprint(20+i%200)))
	}
	c.Write(pipe.String())
	for i := 0; i < n; i++ {
		c.MustRead()
	}
	time.Sleep(100 * time.Millisecond)
	pipe.Reset()
	for i := 0; i < n; i += 7 { // reads find some expired first
		pipe.WriteString(EncodeCommand("GET", fmt.Sprintf("ttl:%d", i)))
	}
	c.Write(pipe.String())
	for i := 0; i < n; i += 7 {
		c.MustRead()
	}
	seen := map[string]int{}
	sub.Timeout = 60 * time.Second
	for len(seen) < n {
		r := sub.MustRead()
		if len(r.Elems) != 3 || r.Elems[0].Str != "message" {
			t.Fatalf("unexpected message %s", r)
		}
		seen[r.Elems[2].Str]++
	}
	close(stop)
	<-done
	// Anything more would be a second event for some key.
	expectReply(t, c.Do("PUBLISH", "__keyevent@0__:expired", "end"), "(integer) 1")
	if r := sub.MustRead(); r.Elems[2].Str != "end" {
		t.Fatalf("an event after every key's: %s", r)
	}
	for k, cnt := range seen {
		if cnt != 1 || !strings.HasPrefix(k, "ttl:") {
			t.Fatalf("key %q: %d expired events", k, cnt)
		}
	}
	expectReply(t, c.Do("DBSIZE"), "(integer) 500")
}
