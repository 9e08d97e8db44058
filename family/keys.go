package family

import (
	"time"

	"github.com/dfly/dfly/command"

	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

func init() { command.Register("generic", keyCommands) }

func keyCommands() []*command.Command {
	k1 := func(c *command.Command) *command.Command { c.FirstKey, c.LastKey, c.Step = 1, 1, 1; return c }
	kAll := func(c *command.Command) *command.Command { c.FirstKey, c.LastKey, c.Step = 1, -1, 1; return c }
	k12 := func(c *command.Command) *command.Command { c.FirstKey, c.LastKey, c.Step = 1, 2, 1; return c }
	return []*command.Command{
		kAll(&command.Command{Name: "del", Tips: "request_policy:multi_shard response_policy:agg_sum", Arity: -2, Flags: command.FlagWrite, KeyFlags: "RM delete", Shard: func(x *command.Exec) { countKeys(x, delOn) }, Multi: func(x *command.Coord) { multiCount(x, true, delOn) }}),
		kAll(&command.Command{Name: "unlink", Tips: "request_policy:multi_shard response_policy:agg_sum", Arity: -2, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RM delete", Shard: func(x *command.Exec) { countKeys(x, delOn) }, Multi: func(x *command.Coord) { multiCount(x, true, delOn) }}),
		kAll(&command.Command{Name: "exists", Tips: "request_policy:multi_shard response_policy:agg_sum", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, KeyFlags: "RO", Shard: func(x *command.Exec) { countKeys(x, existsOn) }, Multi: func(x *command.Coord) { multiCount(x, false, existsOn) }}),
		kAll(&command.Command{Name: "touch", Tips: "request_policy:multi_shard response_policy:agg_sum", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, KeyFlags: "RO", Shard: func(x *command.Exec) { countKeys(x, touchOn) }, Multi: func(x *command.Coord) { multiCount(x, false, touchOn) }}),
		k1(&command.Command{Name: "type", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, KeyFlags: "RO", Shard: cmdType}),
		{Name: "keys", Tips: "request_policy:all_shards nondeterministic_output_order", Arity: 2, Flags: command.FlagReadonly, ACLCats: "dangerous", Multi: cmdKeys},
		{Name: "scan", Tips: "nondeterministic_output request_policy:special", Arity: -2, Flags: command.FlagReadonly, Multi: cmdScan},
		{Name: "randomkey", Tips: "request_policy:all_shards nondeterministic_output", Arity: 1, Flags: command.FlagReadonly, Multi: cmdRandomKey},
		k12(&command.Command{Name: "rename", Arity: 3, Flags: command.FlagWrite, KeySpecs: "RW access delete @1; OW update @2", Shard: func(x *command.Exec) { renameOne(x, false) }, Multi: func(x *command.Coord) { renameMulti(x, false) }}),
		k12(&command.Command{Name: "renamenx", Arity: 3, Flags: command.FlagWrite | command.FlagFast, KeySpecs: "RW access delete @1; OW insert @2", Shard: func(x *command.Exec) { renameOne(x, true) }, Multi: func(x *command.Coord) { renameMulti(x, true) }}),
		k12(&command.Command{Name: "copy", Arity: -3, Flags: command.FlagWrite | command.FlagDenyOOM, KeySpecs: "RO access @1; OW update @2", Shard: cmdCopyOne, Multi: cmdCopyMulti}),
		k1(&command.Command{Name: "move", Arity: 3, Flags: command.FlagWrite | command.FlagFast, Shard: cmdMove}),
		{Name: "object", Arity: -2, Flags: command.FlagReadonly, Subcommands: objectSubcommands, FirstKey: 2, LastKey: 2, Step: 1, Shard: cmdObject},
		rewritten(k1(&command.Command{Name: "expire", Arity: -3, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW update", Shard: func(x *command.Exec) { expireGeneric(x, 1000, false, "expire") }}), rewriteExpire),
		rewritten(k1(&command.Command{Name: "pexpire", Arity: -3, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW update", Shard: func(x *command.Exec) { expireGeneric(x, 1, false, "pexpire") }}), rewriteExpire),
		rewritten(k1(&command.Command{Name: "expireat", Arity: -3, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW update", Shard: func(x *command.Exec) { expireGeneric(x, 1000, true, "expireat") }}), rewriteExpire),
		rewritten(k1(&command.Command{Name: "pexpireat", Arity: -3, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW update", Shard: func(x *command.Exec) { expireGeneric(x, 1, true, "pexpireat") }}), rewriteExpire),
		k1(&command.Command{Name: "ttl", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, Shard: func(x *command.Exec) { ttlGeneric(x, 1000, false) }}),
		k1(&command.Command{Name: "pttl", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, Shard: func(x *command.Exec) { ttlGeneric(x, 1, false) }}),
		k1(&command.Command{Name: "expiretime", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, Shard: func(x *command.Exec) { ttlGeneric(x, 1000, true) }}),
		k1(&command.Command{Name: "pexpiretime", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, Shard: func(x *command.Exec) { ttlGeneric(x, 1, true) }}),
		k1(&command.Command{Name: "persist", Arity: 2, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW update", Shard: cmdPersist}),
	}
}

// delOn deletes key from db, reporting whether it was there (an
// offloaded value is not read to be deleted).
func delOn(db *shard.DB, key []byte) bool {
	it, _ := db.FindMeta(key) // an offloaded value is not read to be deleted
	if !it.Valid() {
		return false
	}
	db.Delete(it)
	db.Notify(notify.Generic, "del", key)
	return true
}

// touchOn stamps an access of key (TOUCH), leaving an offloaded value so.
func touchOn(db *shard.DB, key []byte) bool {
	it, _ := db.FindMeta(key)
	return it.Valid()
}

func existsOn(db *shard.DB, key []byte) bool {
	it, _ := db.FindMetaNoTouch(key)
	return it.Valid()
}

func countKeys(x *command.Exec, fn func(db *shard.DB, key []byte) bool) {
	n := 0
	for _, k := range x.Args[1:] {
		if fn(x.DB, k) {
			n++
		}
	}
	x.W.Int(int64(n))
}

func multiCount(x *command.Coord, excl bool, fn func(db *shard.DB, key []byte) bool) {
	counts := make([]int, x.NumShards())
	x.SplitKeys(keyRange(1, len(x.Args), 1), excl, func(s *shard.Shard, db *shard.DB, pos []int) {
		for _, i := range pos {
			if fn(db, x.Args[i]) {
				counts[s.ID]++
			}
		}
	})
	total := 0
	for _, n := range counts {
		total += n
	}
	x.W.Int(int64(total))
}

func cmdType(x *command.Exec) {
	_, v := x.DB.FindMetaNoTouch(x.Args[1])
	if v == nil {
		x.W.SimpleString("none")
		return
	}
	x.W.SimpleString(v.Type.Name())
}

// live reports whether the entry at it has not passed its TTL, without
// deleting it (for traversals, which must not mutate the table).
func live(db *shard.DB, it shard.Iterator, now int64) bool {
	at, ok := db.ExpireAt(it)
	return !ok || at > now
}

func cmdKeys(x *command.Coord) {
	pat := x.Args[1]
	all := len(pat) == 1 && pat[0] == '*'
	res := make([][]string, x.NumShards())
	x.OnEach(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		now := s.Now()
		var cur uint64
		for {
			cur = db.Table.Traverse(cur, func(it shard.Iterator) {
				k := db.Table.Key(it)
				if (all || glob.MatchString(string(pat), k, false)) && live(db, it, now) {
					res[s.ID] = append(res[s.ID], strings.Clone(k))
				}
			})
			if cur == 0 {
				break
			}
		}
	})
	n := 0
	for _, r := range res {
		n += len(r)
	}
	x.W.Array(n)
	for _, r := range res {
		for _, k := range r {
			x.W.BulkString(k)
		}
	}
}

// SCAN cursors carry the shard in their low bits and the shard table's
// cursor above them; 0 starts and ends.
func scanCursor(x *command.Coord, sid int, table uint64) uint64 {
	return table*uint64(x.NumShards()) + uint64(sid)
}

func cmdScan(x *command.Coord) {
	cursor, err := strconv.ParseUint(string(x.Args[1]), 10, 64)
	if err != nil {
		x.W.Error("ERR invalid cursor")
		return
	}
	o, ok := parseScanOptions(x.W, x.Args[2:], true)
	if !ok {
		return
	}
	count, pat, typ := min(o.count, 1<<20), o.match, o.typ
	n := uint64(x.NumShards())
	sid, tcur := int(cursor%n), cursor/n
	var keys []string
	for len(keys) < count {
		x.On(sid, func(s *shard.Shard) {
			db := s.DBs[x.DB]
			now := s.Now()
			visits := 0
			for visits < count && len(keys) < count {
				tcur = db.Table.Traverse(tcur, func(it shard.Iterator) {
					visits++
					k := db.Table.Key(it)
					if pat != nil && !glob.MatchString(string(pat), k, false) {
						return
					}
					if typ != "" && db.Table.Value(it).Type.Name() != typ {
						return
					}
					if live(db, it, now) {
						keys = append(keys, strings.Clone(k))
					}
				})
				if tcur == 0 {
					break
				}
			}
		})
		if tcur == 0 {
			sid++
			if sid == int(n) {
				sid = 0
				break
			}
		}
		if tcur != 0 {
			break
		}
	}
	next := uint64(0)
	if tcur != 0 || sid != 0 {
		next = scanCursor(x, sid, tcur)
	}
	x.W.Array(2)
	x.W.BulkString(strconv.FormatUint(next, 10))
	x.W.Array(len(keys))
	for _, k := range keys {
		x.W.BulkString(k)
	}
}

func cmdRandomKey(x *command.Coord) {
	n := x.NumShards()
	start := rand.IntN(n)
	for i := 0; i < n; i++ {
		sid := (start + i) % n
		var key string
		found := false
		x.On(sid, func(s *shard.Shard) {
			db := s.DBs[x.DB]
			now := s.Now()
			for try := 0; try < 100 && db.Len() > 0; try++ {
				it := db.Table.Random(rand.Uint64())
				if !it.Valid() {
					return
				}
				if live(db, it, now) {
					key, found = strings.Clone(db.Table.Key(it)), true
					return
				}
			}
		})
		if found {
			x.W.BulkString(key)
			return
		}
	}
	x.W.Null()
}

// moved is a value taken out of one key on its way to another.
type moved struct {
	v        shard.Value
	expireAt int64
	ok       bool
}

func takeValue(db *shard.DB, key []byte, remove bool) moved {
	find := db.Find
	if !remove {
		find = db.FindRead // COPY reads its source: a miss is a keymiss
	}
	it, v := find(key)
	if v == nil {
		return moved{}
	}
	m := moved{ok: true}
	if at, ok := db.ExpireAt(it); ok {
		m.expireAt = at
	}
	if remove {
		m.v = db.Take(it)
	} else {
		m.v = v.Clone()
	}
	m.v.HasExpire = false
	return m
}

// putValue stores m under key. A key replaced notifies "new" all the same:
// Redis deletes it and adds the key again.
func putValue(db *shard.DB, key []byte, m moved) {
	if it, _ := db.FindMeta(key); it.Valid() {
		db.Notify(notify.New, "new", key)
	}
	it := db.Set(key, m.v, false)
	if m.expireAt != 0 {
		db.SetExpire(it, m.expireAt)
	}
}

func renameOne(x *command.Exec, nx bool) {
	src, dst := x.Args[1], x.Args[2]
	if it, _ := x.DB.Find(src); !it.Valid() {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	if string(src) == string(dst) {
		if nx {
			x.W.Int(0)
		} else {
			x.W.SimpleString("OK")
		}
		return
	}
	if nx {
		if it, _ := x.DB.Find(dst); it.Valid() {
			x.W.Int(0)
			return
		}
	}
	putValue(x.DB, dst, takeValue(x.DB, src, true))
	renamed(x.DB, src, dst)
	if nx {
		x.W.Int(1)
	} else {
		x.W.SimpleString("OK")
	}
}

// renameMulti moves a value between shards with both keys locked, so no
// client sees both keys or neither.
func renameMulti(x *command.Coord, nx bool) {
	src, dst := x.Args[1], x.Args[2]
	ss, ds := x.ShardOf(src), x.ShardOf(dst)
	t := x.Tx()
	t.Add(ss, x.DB, string(src), true)
	t.Add(ds, x.DB, string(dst), true)
	t.Lock()
	defer t.Finish(nil)
	exists := false
	t.Run(ss, func(s *shard.Shard) { exists = existsOn(s.DBs[x.DB], src) })
	if !exists {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	if nx {
		dstExists := false
		t.Run(ds, func(s *shard.Shard) { dstExists = existsOn(s.DBs[x.DB], dst) })
		if dstExists {
			x.W.Int(0)
			return
		}
	}
	var m moved
	t.Run(ss, func(s *shard.Shard) { m = takeValue(s.DBs[x.DB], src, true) })
	t.Run(ds, func(s *shard.Shard) {
		putValue(s.DBs[x.DB], dst, m)
		renamed(s.DBs[x.DB], src, dst) // src is locked: its events stay in order
	})
	if nx {
		x.W.Int(1)
	} else {
		x.W.SimpleString("OK")
	}
}

// renamed notifies a rename's events, as Redis after both keys changed.
func renamed(db *shard.DB, src, dst []byte) {
	db.Notify(notify.Generic, "rename_from", src)
	db.Notify(notify.Generic, "rename_to", dst)
}

type copyOpts struct {
	db      int
	replace bool
}

func parseCopy(args [][]byte, curDB, ndb int) (copyOpts, string) {
	o := copyOpts{db: curDB}
	for i := 3; i < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "replace":
			o.replace = true
		case "db":
			if i+1 >= len(args) {
				return o, command.ErrSyntax
			}
			n, ok := num.ParseInt(args[i+1])
			if !ok {
				return o, command.ErrNotInt
			}
			if n < 0 || n >= int64(ndb) {
				return o, "ERR DB index is out of range"
			}
			o.db = int(n)
			i++
		default:
			return o, command.ErrSyntax
		}
	}
	if o.db == curDB && string(args[1]) == string(args[2]) {
		return o, "ERR source and destination objects are the same"
	}
	return o, ""
}

func cmdCopyOne(x *command.Exec) {
	o, e := parseCopy(x.Args, x.DB.Index, len(x.S.DBs))
	if e != "" {
		x.W.Error(e)
		return
	}
	dstDB := x.S.DBs[o.db]
	m := takeValue(x.DB, x.Args[1], false)
	if !m.ok || (!o.replace && existsOn(dstDB, x.Args[2])) {
		x.W.Int(0)
		return
	}
	putValue(dstDB, x.Args[2], m)
	dstDB.Notify(notify.Generic, "copy_to", x.Args[2])
	x.W.Int(1)
}

func cmdCopyMulti(x *command.Coord) {
	o, e := parseCopy(x.Args, x.DB, x.Srv().Databases())
	if e != "" {
		x.W.Error(e)
		return
	}
	src, dst := x.Args[1], x.Args[2]
	ss, ds := x.ShardOf(src), x.ShardOf(dst)
	t := x.Tx()
	t.Add(ss, x.DB, string(src), false)
	t.Add(ds, o.db, string(dst), true)
	t.Lock()
	defer t.Finish(nil)
	var m moved
	t.Run(ss, func(s *shard.Shard) { m = takeValue(s.DBs[x.DB], src, false) })
	if !m.ok {
		x.W.Int(0)
		return
	}
	done := false
	t.Run(ds, func(s *shard.Shard) {
		db := s.DBs[o.db]
		if !o.replace && existsOn(db, dst) {
			return
		}
		putValue(db, dst, m)
		db.Notify(notify.Generic, "copy_to", dst)
		done = true
	})
	if done {
		x.W.Int(1)
	} else {
		x.W.Int(0)
	}
}

func cmdMove(x *command.Exec) {
	n, ok := num.ParseInt(x.Args[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	if n < 0 || n >= int64(len(x.S.DBs)) {
		x.W.Error("ERR DB index is out of range")
		return
	}
	if int(n) == x.DB.Index {
		x.W.Error("ERR source and destination objects are the same")
		return
	}
	dst := x.S.DBs[n]
	if !existsOn(x.DB, x.Args[1]) || existsOn(dst, x.Args[1]) {
		x.W.Int(0)
		return
	}
	putValue(dst, x.Args[1], takeValue(x.DB, x.Args[1], true))
	x.DB.Notify(notify.Generic, "move_from", x.Args[1])
	dst.Notify(notify.Generic, "move_to", x.Args[1])
	x.W.Int(1)
}

// objectSubcommands describe OBJECT's subcommands: arity, flags, key specs, ACL categories.
var objectSubcommands = []command.SubcommandInfo{
	{Name: "encoding", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagReadonly, KeySpecs: "RO @2", ACLCats: "keyspace read"},
	{Name: "freq", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagReadonly, KeySpecs: "RO @2", ACLCats: "keyspace read"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale, ACLCats: "keyspace"},
	{Name: "idletime", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagReadonly, KeySpecs: "RO @2", ACLCats: "keyspace read"},
	{Name: "refcount", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagReadonly, KeySpecs: "RO @2", ACLCats: "keyspace read"},
}

func cmdObject(x *command.Exec) {
	sub := command.Subcommand(x.W, x.Args, "object", objectSubcommands)
	switch sub {
	case "":
		return
	case "help":
		lines := []string{"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ENCODING <key>", "FREQ <key>", "IDLETIME <key>", "REFCOUNT <key>", "HELP"}
		x.W.Array(len(lines))
		for _, l := range lines {
			x.W.SimpleString(l)
		}
		return
	}
	_, v := x.DB.FindNoTouch(x.Args[2])
	if v == nil {
		x.W.Null()
		return
	}
	switch sub {
	case "encoding":
		x.W.BulkString(EncodingOf(v))
	case "idletime":
		if x.S.LFU() {
			x.W.Error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			return
		}
		x.W.Int(x.S.IdleSeconds(v))
	case "refcount":
		x.W.Int(1)
	case "freq":
		if !x.S.LFU() {
			x.W.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			return
		}
		x.W.Int(x.S.Freq(v))
	}
}

// EncodingOf names the value's encoding as Redis would for the same data.
func EncodingOf(v *shard.Value) string {
	if v.Type != shard.TypeString {
		if e, ok := v.Obj().(interface{ Encoding() string }); ok {
			return e.Encoding()
		}
		return "unknown"
	}
	enc := v.Encoding()
	if enc == shard.EncRaw {
		return "raw"
	}
	if enc == shard.EncByBytes && v.StrLen() <= 20 {
		if _, ok := num.ParseInt(v.Str()); ok {
			return "int"
		}
	}
	if v.StrLen() <= 44 {
		return "embstr"
	}
	return "raw"
}

func expireGeneric(x *command.Exec, unit int64, abs bool, name string) {
	// Redis's order: the options, then the time's value.
	var nx, xx, gt, lt bool
	for _, a := range x.Args[3:] {
		switch strings.ToLower(string(a)) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		default:
			x.W.Error("ERR Unsupported option " + string(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		x.W.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		x.W.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	n, ok := num.ParseInt(x.Args[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	bad := "ERR invalid expire time in '" + name + "' command"
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		x.W.Error(bad)
		return
	}
	at := n * unit
	// Only an overflow is an error: a negative time plus now cannot
	// underflow (now > 0), and deletes the key like any past time.
	if !abs {
		if at > math.MaxInt64-x.Now() {
			x.W.Error(bad)
			return
		}
		at += x.Now()
	}
	it, v := x.DB.Find(x.Args[1])
	if v == nil {
		x.W.Int(0)
		return
	}
	cur, has := x.DB.ExpireAt(it)
	switch {
	case nx && has, xx && !has:
		x.W.Int(0)
		return
	case gt && (!has || at <= cur):
		x.W.Int(0)
		return
	case lt && has && at >= cur:
		x.W.Int(0)
		return
	}
	if x.ExpiredAt(at) { // issue 8: not on a replica
		x.DB.Delete(it)
		x.DB.Notify(notify.Generic, "del", x.Args[1])
		x.W.Int(1)
		return
	}
	x.DB.MutateMeta(it)
	x.DB.SetExpire(it, at)
	x.DB.Notify(notify.Generic, "expire", x.Args[1])
	x.W.Int(1)
}

func ttlGeneric(x *command.Exec, unit int64, absolute bool) {
	it, v := x.DB.Find(x.Args[1])
	if v == nil {
		x.W.Int(-2)
		return
	}
	at, ok := x.DB.ExpireAt(it)
	if !ok {
		x.W.Int(-1)
		return
	}
	if !absolute {
		// The wall clock, as Redis 7.0's TTL: a script's expired key is
		// still there (its clock stopped at its start) with 0 left.
		at = max(at-time.Now().UnixMilli(), 0)
	}
	if unit == 1000 {
		// Rounded, TTL and EXPIRETIME alike, as in Redis; at >= 0, and
		// unsigned so a deadline near the int64 maximum rounds without
		// overflowing, as Redis's build computes it.
		x.W.Int(int64((uint64(at) + 500) / 1000))
		return
	}
	x.W.Int(at)
}

func cmdPersist(x *command.Exec) {
	it, v := x.DB.Find(x.Args[1])
	if v == nil || !v.HasExpire {
		x.W.Int(0)
		return
	}
	x.DB.MutateMeta(it)
	x.DB.Persist(it)
	x.DB.Notify(notify.Generic, "persist", x.Args[1])
	x.W.Int(1)
}
