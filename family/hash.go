package family

import (
	"github.com/dfly/dfly/command"

	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/hash"
	"github.com/dfly/dfly/types/num"
)

func init() { command.Register("hash", hashCommands) }

func hashCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	k1 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	ro := command.FlagReadonly | command.FlagFast
	return []*command.Command{
		withKeyFlags(k1("hset", -4, rw|command.FlagFast, func(x *command.Exec) { hsetGeneric(x, false) }), "RW update"),
		withKeyFlags(k1("hmset", -4, rw|command.FlagFast, func(x *command.Exec) { hsetGeneric(x, true) }), "RW update"),
		withKeyFlags(k1("hsetnx", 4, rw|command.FlagFast, cmdHSetNX), "RW insert"),
		k1("hget", 3, ro, cmdHGet),
		k1("hmget", -3, ro, cmdHMGet),
		withKeyFlags(k1("hdel", -3, command.FlagWrite|command.FlagFast, cmdHDel), "RW delete"),
		withKeyFlags(k1("hexists", 3, ro, cmdHExists), "RO"),
		withKeyFlags(k1("hlen", 2, ro, cmdHLen), "RO"),
		withKeyFlags(k1("hstrlen", 3, ro, cmdHStrlen), "RO"),
		withTips(k1("hkeys", 2, command.FlagReadonly, func(x *command.Exec) { hgetAllGeneric(x, true, false) }), "nondeterministic_output_order"),
		withTips(k1("hvals", 2, command.FlagReadonly, func(x *command.Exec) { hgetAllGeneric(x, false, true) }), "nondeterministic_output_order"),
		withTips(k1("hgetall", 2, command.FlagReadonly, func(x *command.Exec) { hgetAllGeneric(x, true, true) }), "nondeterministic_output_order"),
		k1("hincrby", 4, rw|command.FlagFast, cmdHIncrBy),
		rewritten(k1("hincrbyfloat", 4, rw|command.FlagFast, cmdHIncrByFloat), rewriteHIncrByFloat),
		withTips(k1("hrandfield", -2, command.FlagReadonly, cmdHRandField), "nondeterministic_output"),
		withTips(k1("hscan", -3, command.FlagReadonly, cmdHScan), "nondeterministic_output"),
	}
}

// hashValue finds key as a hash, writing WRONGTYPE for another type; h is
// nil for a missing key.
func hashValue(x *command.Exec, key []byte) (shard.Iterator, *hash.Hash, bool) {
	return command.TypedValue[*hash.Hash](x, key, shard.TypeHash)
}

// hashForWrite finds or creates key as a hash and announces the update.
func hashForWrite(x *command.Exec, key []byte) (shard.Iterator, *hash.Hash, bool) {
	it, h, ok := hashValue(x, key)
	if !ok {
		return it, nil, false
	}
	if h == nil {
		h = hash.New()
		it, _ = x.DB.Insert(key, shard.ObjectValue(shard.TypeHash, h))
		return it, h, true
	}
	return it, command.Mutable[*hash.Hash](x.DB, it), true
}

func hsetGeneric(x *command.Exec, hmset bool) {
	if len(x.Args)%2 != 0 {
		x.W.Error(command.WrongArity(strings.ToLower(string(x.Args[0]))))
		return
	}
	_, h, ok := hashForWrite(x, x.Args[1])
	if !ok {
		return
	}
	added := 0
	for i := 2; i < len(x.Args); i += 2 {
		if h.Set(x.Args[i], x.Args[i+1]) {
			added++
		}
	}
	x.DB.Notify(notify.Hash, "hset", x.Args[1])
	if hmset {
		x.W.SimpleString("OK")
	} else {
		x.W.Int(int64(added))
	}
}

func cmdHSetNX(x *command.Exec) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h != nil && h.Contains(x.Args[2]) {
		x.W.Int(0)
		return
	}
	_, h, _ = hashForWrite(x, x.Args[1])
	h.Set(x.Args[2], x.Args[3])
	x.DB.Notify(notify.Hash, "hset", x.Args[1])
	x.W.Int(1)
}

func cmdHGet(x *command.Exec) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h == nil {
		x.W.Null()
		return
	}
	if v, found := h.Get(x.Args[2]); found {
		x.W.Bulk(v)
	} else {
		x.W.Null()
	}
}

func cmdHMGet(x *command.Exec) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	x.W.Array(len(x.Args) - 2)
	for _, f := range x.Args[2:] {
		if h == nil {
			x.W.Null()
			continue
		}
		if v, found := h.Get(f); found {
			x.W.Bulk(v)
		} else {
			x.W.Null()
		}
	}
}

func cmdHDel(x *command.Exec) {
	it, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h == nil {
		x.W.Int(0)
		return
	}
	present := false
	for _, f := range x.Args[2:] {
		if h.Contains(f) {
			present = true
			break
		}
	}
	if !present {
		x.W.Int(0)
		return
	}
	h = command.Mutable[*hash.Hash](x.DB, it)
	n := 0
	for _, f := range x.Args[2:] {
		if h.Delete(f) {
			n++
		}
	}
	if n > 0 {
		x.DB.Notify(notify.Hash, "hdel", x.Args[1])
	}
	if h.Len() == 0 {
		x.DB.Delete(it)
		x.DB.Notify(notify.Generic, "del", x.Args[1])
	}
	x.W.Int(int64(n))
}

func cmdHExists(x *command.Exec) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h != nil && h.Contains(x.Args[2]) {
		x.W.Int(1)
	} else {
		x.W.Int(0)
	}
}

func cmdHLen(x *command.Exec) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(h.Len()))
}

func cmdHStrlen(x *command.Exec) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	var n int
	if h != nil {
		v, _ := h.Get(x.Args[2])
		n = len(v)
	}
	x.W.Int(int64(n))
}

func hgetAllGeneric(x *command.Exec, fields, values bool) {
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	if fields && values {
		x.W.Map(n)
	} else {
		x.W.Array(n)
	}
	if h == nil {
		return
	}
	h.Range(func(f, v []byte) bool {
		if fields {
			x.W.Bulk(f)
		}
		if values {
			x.W.Bulk(v)
		}
		return true
	})
}

func cmdHIncrBy(x *command.Exec) {
	incr, ok := num.ParseInt(x.Args[3])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	var cur int64
	if h != nil {
		if v, found := h.Get(x.Args[2]); found {
			if cur, ok = num.ParseInt(v); !ok {
				x.W.Error("ERR hash value is not an integer")
				return
			}
		}
	}
	n, err := num.AddInt(cur, incr)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	_, h, _ = hashForWrite(x, x.Args[1])
	var buf [24]byte
	h.Set(x.Args[2], strconv.AppendInt(buf[:0], n, 10))
	x.DB.Notify(notify.Hash, "hincrby", x.Args[1])
	x.W.Int(n)
}

func cmdHIncrByFloat(x *command.Exec) {
	incr, err := num.LongDoubleArg(x.Args[3])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	if incr.IsInf() {
		x.W.Error(string(num.ErrIncrNaNInf))
		return
	}
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	var cur num.LongDouble
	if h != nil {
		if v, found := h.Get(x.Args[2]); found {
			if cur, ok = num.ParseLongDouble(v); !ok {
				x.W.Error("ERR hash value is not a float")
				return
			}
		}
	}
	res, err := num.IncrFloat(cur, incr)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	s := num.AppendFloatIncr(nil, res)
	_, h, _ = hashForWrite(x, x.Args[1])
	h.Set(x.Args[2], s)
	x.DB.Notify(notify.Hash, "hincrbyfloat", x.Args[1])
	x.W.Bulk(s)
}

func cmdHRandField(x *command.Exec) {
	if len(x.Args) == 2 {
		_, h, ok := hashValue(x, x.Args[1])
		if !ok {
			return
		}
		if h == nil {
			x.W.Null()
			return
		}
		f, _ := h.Random(rand.Uint64())
		x.W.Bulk(f)
		return
	}
	n, ok := num.ParseInt(x.Args[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	if n == math.MinInt64 {
		x.W.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	withValues := false
	if len(x.Args) > 4 || (len(x.Args) == 4 && !strings.EqualFold(string(x.Args[3]), "withvalues")) {
		x.W.Error(command.ErrSyntax)
		return
	}
	if len(x.Args) == 4 {
		withValues = true
		if n < -math.MaxInt64/2 || n > math.MaxInt64/2 {
			x.W.Error("ERR value is out of range")
			return
		}
	}
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h == nil || n == 0 {
		x.W.Array(0)
		return
	}
	writePair := func(f, v []byte) {
		if !withValues {
			x.W.Bulk(f)
			return
		}
		if x.W.Proto == 3 {
			x.W.Array(2)
		}
		x.W.Bulk(f)
		x.W.Bulk(v)
	}
	header := func(count int) {
		if withValues && x.W.Proto != 3 {
			x.W.Array(2 * count)
		} else {
			x.W.Array(count)
		}
	}
	size := h.Len()
	switch {
	case n < 0:
		count := -n
		header(int(count))
		pairs := hashPairs(h)
		for i := int64(0); i < count; i++ {
			var f, v []byte
			if pairs != nil {
				p := pairs[rand.IntN(len(pairs))]
				f, v = p[0], p[1]
			} else {
				f, v = h.Random(rand.Uint64())
			}
			writePair(f, v)
		}
	case n >= int64(size):
		header(size)
		h.Range(func(f, v []byte) bool { writePair(f, v); return true })
	default:
		count := int(n)
		header(count)
		pairs := hashPairs(h)
		if pairs == nil && count*3 > size {
			pairs = make([][2][]byte, 0, size)
			h.Range(func(f, v []byte) bool { pairs = append(pairs, [2][]byte{f, v}); return true })
		}
		if pairs != nil {
			// A partial Fisher-Yates shuffle picks count distinct entries.
			for i := 0; i < count; i++ {
				j := i + rand.IntN(len(pairs)-i)
				pairs[i], pairs[j] = pairs[j], pairs[i]
				writePair(pairs[i][0], pairs[i][1])
			}
			return
		}
		seen := make(map[string]struct{}, count)
		for len(seen) < count {
			f, v := h.Random(rand.Uint64())
			if _, dup := seen[string(f)]; dup {
				continue
			}
			seen[string(f)] = struct{}{}
			writePair(f, v)
		}
	}
}

// hashPairs lists a listpack hash's entries (aliasing it) so random picks
// need no walk each; nil for a hashtable, which picks directly.
func hashPairs(h *hash.Hash) [][2][]byte {
	if h.Encoding() != "listpack" {
		return nil
	}
	pairs := make([][2][]byte, 0, h.Len())
	h.Range(func(f, v []byte) bool { pairs = append(pairs, [2][]byte{f, v}); return true })
	return pairs
}

// scanOpts are the arguments of HSCAN, SSCAN and ZSCAN after the key.
type scanOpts struct {
	cursor uint64
	count  int
	match  []byte // nil: everything
	typ    string // SCAN's TYPE filter, "" for none
}

// parseScanCursor parses a cursor as Redis 7.0 does (strtoul: '+' and '-'
// accepted, '-' wrapping; no leading space; out of range is an error).
func parseScanCursor(b []byte) (uint64, bool) {
	s := string(b)
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, len(b) == 0
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseScan parses "cursor [MATCH pattern] [COUNT count]" from args.
func parseScan(w *resp.Writer, args [][]byte) (scanOpts, bool) {
	c, ok := parseScanCursor(args[0])
	if !ok {
		w.Error("ERR invalid cursor")
		return scanOpts{}, false
	}
	o, ok := parseScanOptions(w, args[1:], false)
	o.cursor = c
	return o, ok
}

// parseScanOptions parses the SCAN family's "[MATCH pattern] [COUNT
// count]" (and "[TYPE type]" when withType), writing Redis's error for a
// bad one.
func parseScanOptions(w *resp.Writer, args [][]byte, withType bool) (scanOpts, bool) {
	o := scanOpts{count: 10}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			w.Error(command.ErrSyntax)
			return o, false
		}
		switch opt := strings.ToLower(string(args[i])); {
		case opt == "count":
			n, ok := num.ParseInt(args[i+1])
			if !ok {
				w.Error(command.ErrNotInt)
				return o, false
			}
			if n < 1 {
				w.Error(command.ErrSyntax)
				return o, false
			}
			o.count = int(min(n, math.MaxInt32))
		case opt == "match":
			o.match = args[i+1]
			if len(o.match) == 1 && o.match[0] == '*' {
				o.match = nil
			}
		case opt == "type" && withType:
			o.typ = strings.ToLower(string(args[i+1]))
		default:
			w.Error(command.ErrSyntax)
			return o, false
		}
	}
	return o, true
}

// runScan drives a Redis-style scan: step visits one bucket from a cursor
// (calling emit per element) and returns the next cursor; it stops once
// count elements were collected, after 10*count steps, or at cursor 0.
func runScan(o scanOpts, step func(cursor uint64) uint64, collected func() int) uint64 {
	cursor := o.cursor
	maxSteps := o.count * 10
	for {
		cursor = step(cursor)
		if cursor == 0 || maxSteps == 0 || collected() >= o.count {
			return cursor
		}
		maxSteps--
	}
}

func writeScan(w *resp.Writer, cursor uint64, items [][]byte) {
	w.Array(2)
	w.BulkString(strconv.FormatUint(cursor, 10))
	w.Array(len(items))
	for _, it := range items {
		w.Bulk(it)
	}
}

func cmdHScan(x *command.Exec) {
	o, ok := parseScan(x.W, x.Args[2:])
	if !ok {
		return
	}
	_, h, ok := hashValue(x, x.Args[1])
	if !ok {
		return
	}
	if h == nil {
		writeScan(x.W, 0, nil)
		return
	}
	var items [][]byte
	n := 0
	emit := func(f, v []byte) {
		n++
		if o.match == nil || glob.Match(o.match, f, false) {
			items = append(items, f, v)
		}
	}
	next := runScan(o, func(c uint64) uint64 { return h.Scan(c, emit) }, func() int { return n })
	writeScan(x.W, next, items)
}
