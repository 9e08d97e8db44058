package family

import (
	"github.com/dfly/dfly/command"

	"math"
	"strings"

	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

func init() { command.Register("string", stringCommands) }

func stringCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	return []*command.Command{
		{Name: "get", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdGet},
		{Name: "set", Arity: -3, Flags: rw, KeyFlags: "RW access update variable_flags", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdSet, Rewrite: rewriteSetTTL},
		{Name: "setnx", Arity: 3, Flags: rw | command.FlagFast, KeyFlags: "OW insert", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdSetNX},
		{Name: "setex", Arity: 4, Flags: rw, KeyFlags: "OW update", FirstKey: 1, LastKey: 1, Step: 1, Shard: func(x *command.Exec) { cmdSetEx(x, 1000) }, Rewrite: rewriteSetTTL},
		{Name: "psetex", Arity: 4, Flags: rw, KeyFlags: "OW update", FirstKey: 1, LastKey: 1, Step: 1, Shard: func(x *command.Exec) { cmdSetEx(x, 1) }, Rewrite: rewriteSetTTL},
		{Name: "getset", Arity: 3, Flags: rw | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdGetSet},
		{Name: "getdel", Arity: 2, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW access delete", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdGetDel},
		{Name: "getex", Arity: -2, Flags: command.FlagWrite | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdGetEx, Rewrite: rewriteExpire},
		{Name: "mget", Tips: "request_policy:multi_shard", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Shard: cmdMGet, Multi: multiMGet, SplitsByKey: true},
		{Name: "mset", Tips: "request_policy:multi_shard response_policy:all_succeeded", Arity: -3, Flags: rw, KeyFlags: "OW update", FirstKey: 1, LastKey: -1, Step: 2, Shard: cmdMSet, Multi: multiMSet},
		{Name: "msetnx", Tips: "request_policy:multi_shard response_policy:agg_min", Arity: -3, Flags: rw, KeyFlags: "OW insert", FirstKey: 1, LastKey: -1, Step: 2, Shard: cmdMSetNX, Multi: multiMSetNX},
		{Name: "append", Arity: 3, Flags: rw | command.FlagFast, KeyFlags: "RW insert", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdAppend},
		{Name: "strlen", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, KeyFlags: "RO", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdStrlen},
		{Name: "incr", Arity: 2, Flags: rw | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: func(x *command.Exec) { incrBy(x, 1) }},
		{Name: "decr", Arity: 2, Flags: rw | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: func(x *command.Exec) { incrBy(x, -1) }},
		{Name: "incrby", Arity: 3, Flags: rw | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdIncrBy},
		{Name: "decrby", Arity: 3, Flags: rw | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdDecrBy},
		{Name: "incrbyfloat", Arity: 3, Flags: rw | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdIncrByFloat, Rewrite: rewriteIncrByFloat},
	}
}

// strValue finds key as a string. It writes WRONGTYPE and returns ok=false
// for another type; v is nil for a missing key.
func strValue(x *command.Exec, key []byte) (it shard.Iterator, v *shard.Value, ok bool) {
	it, v, ok = x.DB.FindType(key, shard.TypeString)
	if !ok {
		x.W.Error(command.ErrWrongType)
	}
	return it, v, ok
}

func cmdGet(x *command.Exec) {
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.S.Stats.Misses++
		x.W.Null()
		return
	}
	x.S.Stats.Hits++
	x.W.Bulk(v.Str())
}

// setOpts are SET's options.
type setOpts struct {
	nx, xx, get, keepTTL bool
	expireAt             int64 // unix ms, 0 = none
	// cond: IFEQ, IFNE, IFDEQ or IFDNE (cas.go) with its argument.
	cond    casCond
	condArg []byte
}

// parseExpire turns an EX/PX/EXAT/PXAT argument into an absolute unix-ms
// time. unit is ms per argument unit; abs says the argument is absolute.
func parseExpire(now int64, arg []byte, unit int64, abs bool, cmd string) (int64, string) {
	n, ok := num.ParseInt(arg)
	if !ok {
		return 0, command.ErrNotInt
	}
	bad := "ERR invalid expire time in '" + cmd + "' command"
	if n <= 0 || n > math.MaxInt64/unit {
		return 0, bad
	}
	ms := n * unit
	if abs {
		return ms, ""
	}
	if ms > math.MaxInt64-now {
		return 0, bad
	}
	return now + ms, ""
}

func parseSetOpts(x *command.Exec, args [][]byte) (o setOpts, errText string) {
	// Redis's order: every option's syntax, then the expire time's value.
	var expArg []byte
	var unit int64
	var abs bool
	ttlSet := false
	for i := 0; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch opt {
		case "NX":
			if o.xx || o.cond != casNone {
				return o, command.ErrSyntax
			}
			o.nx = true
		case "XX":
			if o.nx || o.cond != casNone {
				return o, command.ErrSyntax
			}
			o.xx = true
		case "IFEQ", "IFNE", "IFDEQ", "IFDNE":
			if o.nx || o.xx || o.cond != casNone || i+1 >= len(args) {
				return o, command.ErrSyntax
			}
			o.cond, o.condArg = casCondOf(opt), args[i+1]
			i++
		case "GET":
			o.get = true
		case "KEEPTTL":
			if ttlSet {
				return o, command.ErrSyntax
			}
			o.keepTTL, ttlSet = true, true
		case "EX", "PX", "EXAT", "PXAT":
			if ttlSet || i+1 >= len(args) {
				return o, command.ErrSyntax
			}
			unit = 1
			if opt == "EX" || opt == "EXAT" {
				unit = 1000
			}
			expArg, abs, ttlSet = args[i+1], strings.HasSuffix(opt, "AT"), true
			i++
		default:
			return o, command.ErrSyntax
		}
	}
	if expArg != nil {
		at, e := parseExpire(x.Now(), expArg, unit, abs, "set")
		if e != "" {
			return o, e
		}
		o.expireAt = at
	}
	return o, ""
}

func cmdSet(x *command.Exec) {
	o, e := parseSetOpts(x, x.Args[3:])
	if e != "" {
		x.W.Error(e)
		return
	}
	setGeneric(x, x.Args[1], x.Args[2], o)
}

// setGeneric is SET with parsed options; it writes the reply.
func setGeneric(x *command.Exec, key, val []byte, o setOpts) {
	find := x.DB.Find
	if o.get {
		find = x.DB.FindRead // a read of the key, a miss a keymiss (as Redis)
	}
	it, old := find(key)
	if (o.get || o.cond != casNone) && old != nil && old.Type != shard.TypeString {
		x.W.Error(command.ErrWrongType)
		return
	}
	reply := func() {
		if o.get {
			if old == nil {
				x.W.Null()
			} else {
				x.W.Bulk(old.Str())
			}
		} else {
			x.W.SimpleString("OK")
		}
	}
	failed := (o.nx && old != nil) || (o.xx && old == nil)
	if o.cond != casNone {
		var oldStr []byte
		if old != nil {
			oldStr = old.Str()
		}
		ok, e := o.cond.holds(o.condArg, oldStr, old != nil)
		if e != "" {
			x.W.Error(e)
			return
		}
		failed = !ok
	}
	if failed {
		if o.get {
			reply()
		} else {
			x.W.Null()
		}
		return
	}
	if o.get && old != nil {
		// The reply needs the old bytes after the value is replaced.
		x.W.Bulk(old.Str())
		o.get = false
		reply = func() {}
	}
	if o.expireAt != 0 && x.ExpiredAt(o.expireAt) { // issue 8: not on a replica
		// An absolute time in the past: the key ends up deleted. Redis
		// stores it and expires it on the next look: its events.
		if old != nil {
			x.DB.Delete(it)
		} else {
			x.DB.Notify(notify.New, "new", key)
		}
		x.DB.Notify(notify.String, "set", key)
		x.DB.Notify(notify.Generic, "expire", key)
		x.DB.Notify(notify.Expired, "expired", key)
		reply()
		return
	}
	if old != nil && old.Type == shard.TypeString && !old.IsExternal() && !o.keepTTL && !old.HasExpire && o.expireAt == 0 {
		// Overwrite in place, reusing the buffer when it fits.
		x.DB.SetBytes(it, val)
		x.DB.Notify(notify.String, "set", key)
		reply()
		return
	}
	it = x.DB.Set(key, x.NewString(val), o.keepTTL)
	x.DB.Notify(notify.String, "set", key)
	if o.expireAt != 0 {
		x.DB.SetExpire(it, o.expireAt)
		x.DB.Notify(notify.Generic, "expire", key)
	}
	reply()
}

func cmdSetNX(x *command.Exec) {
	_, old := x.DB.Find(x.Args[1])
	if old != nil {
		x.W.Int(0)
		return
	}
	x.DB.Insert(x.Args[1], x.DB.NewString(x.Args[2]))
	x.DB.Notify(notify.String, "set", x.Args[1])
	x.W.Int(1)
}

func cmdSetEx(x *command.Exec, unit int64) {
	name := "setex"
	if unit == 1 {
		name = "psetex"
	}
	at, e := parseExpire(x.Now(), x.Args[2], unit, false, name)
	if e != "" {
		x.W.Error(e)
		return
	}
	setGeneric(x, x.Args[1], x.Args[3], setOpts{expireAt: at})
}

func cmdGetSet(x *command.Exec) {
	setGeneric(x, x.Args[1], x.Args[2], setOpts{get: true})
}

func cmdGetDel(x *command.Exec) {
	defer x.S.ReadMisses(x.S.ReadMisses(true)) // a read of the key, as Redis's
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.Null()
		return
	}
	x.W.Bulk(v.Str())
	x.DB.Delete(it)
	x.DB.Notify(notify.Generic, "del", x.Args[1])
}

func cmdGetEx(x *command.Exec) {
	// Redis's order: options (syntax), then the key (nil, WRONGTYPE), and
	// only then the expire time's value.
	var expArg []byte
	var unit int64
	var abs bool
	persist, ttlSet := false, false
	args := x.Args[2:]
	for i := 0; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch opt {
		case "PERSIST":
			if ttlSet {
				x.W.Error(command.ErrSyntax)
				return
			}
			persist, ttlSet = true, true
		case "EX", "PX", "EXAT", "PXAT":
			if ttlSet || i+1 >= len(args) {
				x.W.Error(command.ErrSyntax)
				return
			}
			unit = 1
			if opt == "EX" || opt == "EXAT" {
				unit = 1000
			}
			expArg, abs, ttlSet = args[i+1], strings.HasSuffix(opt, "AT"), true
			i++
		default:
			x.W.Error(command.ErrSyntax)
			return
		}
	}
	defer x.S.ReadMisses(x.S.ReadMisses(true)) // a read of the key, as Redis's
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.Null()
		return
	}
	var at int64
	if expArg != nil {
		var e string
		if at, e = parseExpire(x.Now(), expArg, unit, abs, "getex"); e != "" {
			x.W.Error(e)
			return
		}
	}
	x.W.Bulk(v.Str())
	switch {
	case at != 0 && x.ExpiredAt(at): // issue 8: not on a replica
		x.DB.Delete(it)
		x.DB.Notify(notify.Generic, "del", x.Args[1])
	case at != 0:
		x.DB.MutateMeta(it)
		x.DB.SetExpire(it, at)
		x.DB.Notify(notify.Generic, "expire", x.Args[1])
	case persist && v.HasExpire:
		x.DB.MutateMeta(it)
		x.DB.Persist(it)
		x.DB.Notify(notify.Generic, "persist", x.Args[1])
	}
}

func cmdMGet(x *command.Exec) {
	x.W.Array(len(x.Args) - 1)
	for _, k := range x.Args[1:] {
		_, v := x.DB.Find(k)
		if v == nil || v.Type != shard.TypeString {
			x.W.Null()
			continue
		}
		x.W.Bulk(v.Str())
	}
}

func multiMGet(x *command.Coord) { x.RunByKey(keyRange(1, len(x.Args), 1), cmdMGet) }

func keyRange(first, end, step int) []int {
	var pos []int
	for i := first; i < end; i += step {
		pos = append(pos, i)
	}
	return pos
}

// msetArity: MSET takes pairs.
func msetArity(args [][]byte) bool { return len(args)%2 == 1 }

func msetOn(db *shard.DB, args [][]byte, pos []int) {
	for _, i := range pos {
		db.Set(args[i], db.NewString(args[i+1]), false)
		db.Notify(notify.String, "set", args[i])
	}
}

func cmdMSet(x *command.Exec) {
	if !msetArity(x.Args) {
		x.W.Error(command.WrongArity("mset"))
		return
	}
	msetOn(x.DB, x.Args, keyRange(1, len(x.Args), 2))
	x.W.SimpleString("OK")
}

func multiMSet(x *command.Coord) {
	if !msetArity(x.Args) {
		x.W.Error(command.WrongArity("mset"))
		return
	}
	x.SplitKeys(keyRange(1, len(x.Args), 2), true, func(s *shard.Shard, db *shard.DB, pos []int) {
		msetOn(db, x.Args, pos)
	})
	x.W.SimpleString("OK")
}

func cmdMSetNX(x *command.Exec) {
	if !msetArity(x.Args) {
		x.W.Error(command.WrongArity("msetnx"))
		return
	}
	for i := 1; i < len(x.Args); i += 2 {
		if it, _ := x.DB.Find(x.Args[i]); it.Valid() {
			x.W.Int(0)
			return
		}
	}
	msetOn(x.DB, x.Args, keyRange(1, len(x.Args), 2))
	x.W.Int(1)
}

// multiMSetNX checks every shard under the locks, then sets on all or none.
func multiMSetNX(x *command.Coord) {
	if !msetArity(x.Args) {
		x.W.Error(command.WrongArity("msetnx"))
		return
	}
	t, parts := x.LockSplit(keyRange(1, len(x.Args), 2), true)
	exists := make([]bool, x.NumShards())
	t.RunAll(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		for _, i := range parts[s.ID] {
			if it, _ := db.Find(x.Args[i]); it.Valid() {
				exists[s.ID] = true
			}
		}
	})
	for _, e := range exists {
		if e {
			t.Finish(nil)
			x.W.Int(0)
			return
		}
	}
	t.Finish(func(s *shard.Shard) { msetOn(s.DBs[x.DB], x.Args, parts[s.ID]) })
	x.W.Int(1)
}

func cmdAppend(x *command.Exec) {
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.DB.Insert(x.Args[1], shard.NewString(x.Args[2]))
		x.DB.Notify(notify.String, "append", x.Args[1])
		x.W.Int(int64(len(x.Args[2])))
		return
	}
	if int64(len(v.Str())+len(x.Args[2])) > x.Srv.ProtoMaxBulk() {
		x.W.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	p := x.DB.Mutate(it)
	p.SetStr(append(p.Str(), x.Args[2]...))
	p.SetEncoding(shard.EncRaw)
	x.DB.Notify(notify.String, "append", x.Args[1])
	x.W.Int(int64(len(p.Str())))
}

func cmdStrlen(x *command.Exec) {
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(v.StrLen())) // also right for an offloaded value
}

func cmdIncrBy(x *command.Exec) {
	n, ok := num.ParseInt(x.Args[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	incrBy(x, n)
}

func cmdDecrBy(x *command.Exec) {
	n, ok := num.ParseInt(x.Args[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	d, err := num.Negate(n)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	incrBy(x, d)
}

func incrBy(x *command.Exec, delta int64) {
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	var cur int64
	if v != nil {
		if cur, ok = num.ParseInt(v.Str()); !ok {
			x.W.Error(command.ErrNotInt)
			return
		}
	}
	n, err := num.AddInt(cur, delta)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	var buf [24]byte
	s := appendInt(buf[:0], n)
	if v == nil {
		x.DB.Insert(x.Args[1], shard.NewString(s))
	} else {
		p := x.DB.Mutate(it)
		p.SetStr(append(p.Str()[:0], s...))
	}
	x.DB.Notify(notify.String, "incrby", x.Args[1])
	x.W.Int(n)
}

func cmdIncrByFloat(x *command.Exec) {
	it, v, ok := strValue(x, x.Args[1]) // Redis checks the type first
	if !ok {
		return
	}
	incr, err := num.LongDoubleArg(x.Args[2])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	var cur num.LongDouble
	if v != nil {
		if cur, ok = num.ParseLongDouble(v.Str()); !ok {
			x.W.Error(command.ErrNotFloat)
			return
		}
	}
	res, err := num.IncrFloat(cur, incr)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	s := num.AppendFloatIncr(nil, res)
	if v == nil {
		nv := shard.StringValue(s)
		nv.SetEncoding(shard.EncNotInt)
		x.DB.Insert(x.Args[1], nv)
	} else {
		p := x.DB.Mutate(it)
		p.SetStr(append(p.Str()[:0], s...))
		p.SetEncoding(shard.EncNotInt)
	}
	x.DB.Notify(notify.String, "incrbyfloat", x.Args[1])
	x.W.Bulk(s)
}
