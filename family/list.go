package family

import (
	"github.com/dfly/dfly/command"

	"bytes"
	"math"
	"strings"

	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/list"
	"github.com/dfly/dfly/types/num"
)

func init() { command.Register("list", listCommands) }

func listCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	k1 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	return []*command.Command{
		withKeyFlags(k1("lpush", -3, rw|command.FlagFast, func(x *command.Exec) { pushGeneric(x, true, false) }), "RW insert"),
		withKeyFlags(k1("rpush", -3, rw|command.FlagFast, func(x *command.Exec) { pushGeneric(x, false, false) }), "RW insert"),
		withKeyFlags(k1("lpushx", -3, rw|command.FlagFast, func(x *command.Exec) { pushGeneric(x, true, true) }), "RW insert"),
		withKeyFlags(k1("rpushx", -3, rw|command.FlagFast, func(x *command.Exec) { pushGeneric(x, false, true) }), "RW insert"),
		withKeyFlags(k1("lpop", -2, command.FlagWrite|command.FlagFast, func(x *command.Exec) { popGeneric(x, true) }), "RW access delete"),
		withKeyFlags(k1("rpop", -2, command.FlagWrite|command.FlagFast, func(x *command.Exec) { popGeneric(x, false) }), "RW access delete"),
		withKeyFlags(k1("llen", 2, command.FlagReadonly|command.FlagFast, cmdLLen), "RO"),
		k1("lrange", 4, command.FlagReadonly, cmdLRange),
		k1("lindex", 3, command.FlagReadonly, cmdLIndex),
		withKeyFlags(k1("lset", 4, rw, cmdLSet), "RW update"),
		withKeyFlags(k1("linsert", 5, rw, cmdLInsert), "RW insert"),
		withKeyFlags(k1("lrem", 4, command.FlagWrite, cmdLRem), "RW delete"),
		withKeyFlags(k1("ltrim", 4, command.FlagWrite, cmdLTrim), "RW delete"),
		k1("lpos", -3, command.FlagReadonly, cmdLPos),
		{Name: "lmove", Arity: 5, Flags: rw, KeySpecs: "RW access delete @1; RW insert @2", FirstKey: 1, LastKey: 2, Step: 1, Shard: cmdLMove, Multi: multiLMove},
		{Name: "rpoplpush", Arity: 3, Flags: rw, KeySpecs: "RW access delete @1; RW insert @2", FirstKey: 1, LastKey: 2, Step: 1, Shard: cmdLMove, Multi: multiLMove},
		{Name: "lmpop", Arity: -4, Flags: command.FlagWrite, KeySpecs: "RW access delete @1 keynum:0:1:1", KeyPositions: numKeysPositions(1), Shard: cmdLMPop, Multi: multiLMPop},
	}
}

// numKeysPositions is the key layout "numkeys key..." with numkeys at
// argument at; a bad numkeys yields no keys (the handler reports it).
func numKeysPositions(at int) func(dst []int, args [][]byte) []int {
	return zsetNumKeys(at, false)
}

// listValue finds key as a list, writing WRONGTYPE for another type.
func listValue(x *command.Exec, key []byte) (shard.Iterator, *list.List, bool) {
	return command.TypedValue[*list.List](x, key, shard.TypeList)
}

// mutableList announces an update of the list at it and returns it.
func mutableList(db *shard.DB, it shard.Iterator) *list.List {
	return command.Mutable[*list.List](db, it)
}

// listPush pushes vals onto key (creating it unless onlyExisting) and
// returns the new length, 0 when onlyExisting and the key is absent. The
// key must be absent or a list.
func listPush(db *shard.DB, key []byte, left, onlyExisting bool, vals ...[]byte) int {
	it, v := db.Find(key)
	var l *list.List
	if v == nil {
		if onlyExisting {
			return 0
		}
		l = list.New()
		db.Insert(key, shard.ObjectValue(shard.TypeList, l))
	} else {
		l = mutableList(db, it)
	}
	for _, e := range vals {
		if left {
			l.PushLeft(e)
		} else {
			l.PushRight(e)
		}
	}
	if len(vals) > 0 {
		db.Notify(notify.List, endEvent("lpush", "rpush", left), key)
	}
	return l.Len()
}

// endEvent is one of a command's two events: the first when first.
func endEvent(first, second string, isFirst bool) string {
	if isFirst {
		return first
	}
	return second
}

// popped notifies a pop from key and, when it emptied it, its deletion.
func popped(db *shard.DB, key []byte, left, emptied bool) {
	db.Notify(notify.List, endEvent("lpop", "rpop", left), key)
	if emptied {
		db.Notify(notify.Generic, "del", key)
	}
}

// listPop pops up to count elements from the head (left) or tail of key,
// deleting the key once empty, and returns copies of them: nil when the key
// is missing, empty or not a list. It is the entry point for the blocking
// commands (BLPOP, BRPOP, BLMPOP, BLMOVE) to serve a woken client on the
// key's shard.
func listPop(db *shard.DB, key []byte, left bool, count int) [][]byte {
	out, emptied := listPopQuiet(db, key, left, count)
	if out != nil {
		popped(db, key, left, emptied)
	}
	return out
}

// listPopQuiet is listPop without the events (LMOVE's come after the
// push's); emptied: it deleted the key.
func listPopQuiet(db *shard.DB, key []byte, left bool, count int) (out [][]byte, emptied bool) {
	it, v := db.Find(key)
	if v == nil || v.Type != shard.TypeList || count <= 0 {
		return nil, false
	}
	l := mutableList(db, it)
	out = make([][]byte, 0, min(count, l.Len()))
	for len(out) < count {
		var e []byte
		var ok bool
		if left {
			e, ok = l.PopLeft()
		} else {
			e, ok = l.PopRight()
		}
		if !ok {
			break
		}
		out = append(out, bytes.Clone(e))
	}
	if l.Len() == 0 {
		db.Delete(it)
	}
	return out, l.Len() == 0
}

// listMove is LMOVE on one shard (BLMOVE's wake-up uses it too): it pops
// from src and pushes onto dst, both already checked to be lists or absent.
// It returns the moved element, nil when src is empty. Its events are
// Redis's: the push onto dst, then the pop from src (and its deletion).
func listMove(db *shard.DB, src, dst []byte, fromLeft, toLeft bool) []byte {
	if bytes.Equal(src, dst) {
		// Rotating a one-element list in place: Redis pushes before it
		// deletes an emptied source, so the key and its TTL stay (found
		// by the replication tests, issue 8: a replica lost the TTL).
		if it, v := db.Find(src); v != nil && v.Type == shard.TypeList {
			if l := mutableList(db, it); l.Len() == 1 {
				var e []byte
				l.Range(0, 0, func(b []byte) bool { e = bytes.Clone(b); return false })
				db.Notify(notify.List, endEvent("lpush", "rpush", toLeft), dst)
				popped(db, src, fromLeft, false)
				return e
			}
		}
	}
	out, emptied := listPopQuiet(db, src, fromLeft, 1)
	if len(out) == 0 {
		return nil
	}
	listPush(db, dst, toLeft, false, out[0])
	popped(db, src, fromLeft, emptied)
	return out[0]
}

func pushGeneric(x *command.Exec, left, onlyExisting bool) {
	if _, _, ok := listValue(x, x.Args[1]); !ok {
		return
	}
	x.W.Int(int64(listPush(x.DB, x.Args[1], left, onlyExisting, x.Args[2:]...)))
}

func popGeneric(x *command.Exec, left bool) {
	if len(x.Args) > 3 {
		x.W.Error(command.WrongArity(strings.ToLower(string(x.Args[0]))))
		return
	}
	count, hasCount := 1, len(x.Args) == 3
	if hasCount {
		n, ok := num.ParseInt(x.Args[2])
		if !ok || n < 0 {
			x.W.Error("ERR value is out of range, must be positive")
			return
		}
		count = int(min(n, math.MaxInt32))
	}
	_, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		if hasCount {
			x.W.NullArray()
		} else {
			x.W.Null()
		}
		return
	}
	if hasCount && count == 0 {
		x.W.Array(0)
		return
	}
	out := listPop(x.DB, x.Args[1], left, count)
	if !hasCount {
		x.W.Bulk(out[0])
		return
	}
	writeBulks(x, out)
}

func writeBulks(x *command.Exec, vals [][]byte) {
	x.W.Array(len(vals))
	for _, v := range vals {
		x.W.Bulk(v)
	}
}

func cmdLLen(x *command.Exec) {
	_, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(l.Len()))
}

// intArgs parses integer arguments, writing Redis's error on failure.
func intArgs(x *command.Exec, args ...[]byte) ([]int64, bool) {
	out := make([]int64, len(args))
	for i, a := range args {
		n, ok := num.ParseInt(a)
		if !ok {
			x.W.Error(command.ErrNotInt)
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// clampRange turns LRANGE-style start/stop into 0 <= start <= stop < n, or
// ok=false for an empty range.
func clampRange(start, stop int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0, false
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop), true
}

func cmdLRange(x *command.Exec) {
	r, ok := intArgs(x, x.Args[2], x.Args[3])
	if !ok {
		return
	}
	_, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		x.W.Array(0)
		return
	}
	start, stop, ok := clampRange(r[0], r[1], l.Len())
	if !ok {
		x.W.Array(0)
		return
	}
	x.W.Array(stop - start + 1)
	l.Range(start, stop, func(v []byte) bool { x.W.Bulk(v); return true })
}

func cmdLIndex(x *command.Exec) {
	// Redis's order: the key (nil, WRONGTYPE), then the index.
	_, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		x.W.Null()
		return
	}
	r, ok := intArgs(x, x.Args[2])
	if !ok {
		return
	}
	if r[0] >= int64(l.Len()) || r[0] < -int64(l.Len()) {
		x.W.Null()
		return
	}
	v, _ := l.Index(int(r[0]))
	x.W.Bulk(v)
}

func cmdLSet(x *command.Exec) {
	// Redis's order: the key (no such key, WRONGTYPE), then the index.
	it, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	r, ok := intArgs(x, x.Args[2])
	if !ok {
		return
	}
	i := r[0]
	if i < 0 {
		i += int64(l.Len())
	}
	if i < 0 || i >= int64(l.Len()) {
		x.W.Error("ERR index out of range")
		return
	}
	mutableList(x.DB, it).Set(int(i), x.Args[3])
	x.DB.Notify(notify.List, "lset", x.Args[1])
	x.W.SimpleString("OK")
}

func cmdLInsert(x *command.Exec) {
	var after bool
	switch strings.ToLower(string(x.Args[2])) {
	case "before":
	case "after":
		after = true
	default:
		x.W.Error(command.ErrSyntax)
		return
	}
	it, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		x.W.Int(0)
		return
	}
	// Search before announcing a mutation: a missing pivot changes nothing.
	found := false
	l.Range(0, l.Len()-1, func(v []byte) bool { found = bytes.Equal(v, x.Args[3]); return !found })
	if !found {
		x.W.Int(-1)
		return
	}
	x.W.Int(int64(mutableList(x.DB, it).Insert(x.Args[3], x.Args[4], after)))
	x.DB.Notify(notify.List, "linsert", x.Args[1])
}

func cmdLRem(x *command.Exec) {
	r, ok := intArgs(x, x.Args[2])
	if !ok {
		return
	}
	it, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil || !listHas(l, x.Args[3]) {
		x.W.Int(0) // nothing to remove: no write (WATCH holds)
		return
	}
	count := int(max(min(r[0], math.MaxInt32), -math.MaxInt32))
	n := mutableList(x.DB, it).Remove(count, x.Args[3])
	x.DB.Notify(notify.List, "lrem", x.Args[1])
	if l.Len() == 0 {
		x.DB.Delete(it)
		x.DB.Notify(notify.Generic, "del", x.Args[1])
	}
	x.W.Int(int64(n))
}

func cmdLTrim(x *command.Exec) {
	r, ok := intArgs(x, x.Args[2], x.Args[3])
	if !ok {
		return
	}
	it, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		x.W.SimpleString("OK")
		return
	}
	n := l.Len()
	start, stop, keep := clampRange(r[0], r[1], n)
	if !keep {
		x.DB.Delete(it)
		x.DB.Notify(notify.List, "ltrim", x.Args[1])
		x.DB.Notify(notify.Generic, "del", x.Args[1])
		x.W.SimpleString("OK")
		return
	}
	if start > 0 || stop < n-1 {
		ml := mutableList(x.DB, it)
		ml.DropRight(n - 1 - stop)
		ml.DropLeft(start)
	} else {
		x.DB.Touch(x.Args[1]) // Redis signals LTRIM's key even when it kept all
	}
	x.DB.Notify(notify.List, "ltrim", x.Args[1])
	x.W.SimpleString("OK")
}

// listHas reports whether l holds an element equal to v.
func listHas(l *list.List, v []byte) bool {
	found := false
	l.Range(0, l.Len()-1, func(e []byte) bool {
		found = bytes.Equal(e, v)
		return !found
	})
	return found
}

func cmdLPos(x *command.Exec) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	args := x.Args[3:]
	for i := 0; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		if i+1 >= len(args) || (opt != "rank" && opt != "count" && opt != "maxlen") {
			x.W.Error(command.ErrSyntax)
			return
		}
		n, ok := num.ParseInt(args[i+1])
		if !ok {
			switch opt { // Redis: the range message for a non-integer too
			case "count":
				x.W.Error("ERR COUNT can't be negative")
			case "maxlen":
				x.W.Error("ERR MAXLEN can't be negative")
			default:
				x.W.Error(command.ErrNotInt)
			}
			return
		}
		i++
		switch opt {
		case "rank":
			if n == 0 {
				x.W.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case "count":
			if n < 0 {
				x.W.Error("ERR COUNT can't be negative")
				return
			}
			count = n
		case "maxlen":
			if n < 0 {
				x.W.Error("ERR MAXLEN can't be negative")
				return
			}
			maxlen = n
		}
	}
	_, l, ok := listValue(x, x.Args[1])
	if !ok {
		return
	}
	if l == nil {
		if count >= 0 {
			x.W.Array(0)
		} else {
			x.W.Null()
		}
		return
	}
	want := count
	if want == 0 {
		want = math.MaxInt64
	} else if want < 0 {
		want = 1
	}
	var matches []int64
	fwd := rank > 0
	skip := rank
	if !fwd {
		skip = -rank
	}
	skip--
	start := 0
	if !fwd {
		start = l.Len() - 1
	}
	scanned := int64(0)
	for it := l.At(start); it.Valid() && (maxlen == 0 || scanned < maxlen) && int64(len(matches)) < want; scanned++ {
		if bytes.Equal(it.Value(), x.Args[2]) {
			if skip > 0 {
				skip--
			} else {
				matches = append(matches, int64(it.Index()))
			}
		}
		if fwd {
			it.Next()
		} else {
			it.Prev()
		}
	}
	if count < 0 {
		if len(matches) == 0 {
			x.W.Null()
		} else {
			x.W.Int(matches[0])
		}
		return
	}
	x.W.Array(len(matches))
	for _, m := range matches {
		x.W.Int(m)
	}
}

// parseEnd parses LEFT/RIGHT.
func parseEnd(a []byte) (left, ok bool) {
	switch strings.ToLower(string(a)) {
	case "left":
		return true, true
	case "right":
		return false, true
	}
	return false, false
}

// lmoveArgs parses LMOVE's or RPOPLPUSH's directions.
func lmoveArgs(args [][]byte) (fromLeft, toLeft, ok bool) {
	if len(args) == 3 { // RPOPLPUSH
		return false, true, true
	}
	fromLeft, ok1 := parseEnd(args[3])
	toLeft, ok2 := parseEnd(args[4])
	return fromLeft, toLeft, ok1 && ok2
}

// listState classifies key for the move and multi-pop commands.
type listState uint8

const (
	listMissing listState = iota
	listPresent
	listWrongType
)

func listStateOf(db *shard.DB, key []byte) listState {
	_, v := db.Find(key)
	switch {
	case v == nil:
		return listMissing
	case v.Type != shard.TypeList:
		return listWrongType
	}
	return listPresent
}

func cmdLMove(x *command.Exec) {
	fromLeft, toLeft, ok := lmoveArgs(x.Args)
	if !ok {
		x.W.Error(command.ErrSyntax)
		return
	}
	src, dst := x.Args[1], x.Args[2]
	switch listStateOf(x.DB, src) {
	case listMissing:
		x.W.Null()
		return
	case listWrongType:
		x.W.Error(command.ErrWrongType)
		return
	}
	if listStateOf(x.DB, dst) == listWrongType {
		x.W.Error(command.ErrWrongType)
		return
	}
	x.W.Bulk(listMove(x.DB, src, dst, fromLeft, toLeft))
}

// multiLMove moves an element between lists on two shards, with both keys
// locked so no client sees it in both lists or in neither.
func multiLMove(x *command.Coord) {
	fromLeft, toLeft, ok := lmoveArgs(x.Args)
	if !ok {
		x.W.Error(command.ErrSyntax)
		return
	}
	src, dst := x.Args[1], x.Args[2]
	ss, ds := x.ShardOf(src), x.ShardOf(dst)
	t := x.Tx()
	t.Add(ss, x.DB, string(src), true)
	t.Add(ds, x.DB, string(dst), true)
	t.Lock()
	defer t.Finish(nil)
	var srcState, dstState listState
	t.Run(ss, func(s *shard.Shard) { srcState = listStateOf(s.DBs[x.DB], src) })
	switch srcState {
	case listMissing:
		x.W.Null()
		return
	case listWrongType:
		x.W.Error(command.ErrWrongType)
		return
	}
	t.Run(ds, func(s *shard.Shard) { dstState = listStateOf(s.DBs[x.DB], dst) })
	if dstState == listWrongType {
		x.W.Error(command.ErrWrongType)
		return
	}
	var out [][]byte
	var emptied bool
	t.Run(ss, func(s *shard.Shard) { out, emptied = listPopQuiet(s.DBs[x.DB], src, fromLeft, 1) })
	t.Run(ds, func(s *shard.Shard) {
		listPush(s.DBs[x.DB], dst, toLeft, false, out[0])
		popped(s.DBs[x.DB], src, fromLeft, emptied) // src is locked: its events stay in order
	})
	x.W.Bulk(out[0])
}

// parseMPop parses "numkeys key... LEFT|RIGHT [COUNT n]" starting at
// args[at] (LMPOP: 1); it returns the key positions.
func parseMPop(args [][]byte, at int, ends func([]byte) (bool, bool)) (pos []int, left bool, count int, errText string) {
	n, ok := num.ParseInt(args[at])
	if !ok || n <= 0 {
		return nil, false, 0, "ERR numkeys should be greater than 0"
	}
	if n > int64(len(args)-at-2) {
		return nil, false, 0, command.ErrSyntax
	}
	first := at + 1
	end := first + int(n)
	for i := first; i < end; i++ {
		pos = append(pos, i)
	}
	left, ok = ends(args[end])
	if !ok {
		return nil, false, 0, command.ErrSyntax
	}
	count = 1
	rest := args[end+1:]
	if len(rest) == 2 && strings.EqualFold(string(rest[0]), "count") {
		c, ok := num.ParseInt(rest[1])
		if !ok || c <= 0 {
			return nil, false, 0, "ERR count should be greater than 0"
		}
		count = int(min(c, math.MaxInt32))
	} else if len(rest) != 0 {
		return nil, false, 0, command.ErrSyntax
	}
	return pos, left, count, ""
}

func writeMPop(w *resp.Writer, key []byte, vals [][]byte) {
	w.Array(2)
	w.Bulk(key)
	w.Array(len(vals))
	for _, v := range vals {
		w.Bulk(v)
	}
}

func cmdLMPop(x *command.Exec) {
	pos, left, count, e := parseMPop(x.Args, 1, parseEnd)
	if e != "" {
		x.W.Error(e)
		return
	}
	for _, i := range pos {
		switch listStateOf(x.DB, x.Args[i]) {
		case listWrongType:
			x.W.Error(command.ErrWrongType)
			return
		case listPresent:
			writeMPop(x.W, x.Args[i], listPop(x.DB, x.Args[i], left, count))
			return
		}
	}
	x.W.NullArray()
}

func multiLMPop(x *command.Coord) {
	pos, left, count, e := parseMPop(x.Args, 1, parseEnd)
	if e != "" {
		x.W.Error(e)
		return
	}
	t, parts := x.LockSplit(pos, true)
	defer t.Finish(nil)
	states := make([]listState, len(x.Args))
	t.RunAll(func(s *shard.Shard) {
		for _, i := range parts[s.ID] {
			states[i] = listStateOf(s.DBs[x.DB], x.Args[i])
		}
	})
	for _, i := range pos {
		switch states[i] {
		case listWrongType:
			x.W.Error(command.ErrWrongType)
			return
		case listPresent:
			key := x.Args[i]
			var out [][]byte
			t.Run(x.ShardOf(key), func(s *shard.Shard) { out = listPop(s.DBs[x.DB], key, left, count) })
			writeMPop(x.W, key, out)
			return
		}
	}
	x.W.NullArray()
}
