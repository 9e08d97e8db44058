package family

import (
	"github.com/dfly/dfly/command"

	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
	"github.com/dfly/dfly/types/set"
)

func init() { command.Register("set", setCommands) }

func setCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	k1 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	ro := command.FlagReadonly | command.FlagFast
	all := func(name string, arity int, flags command.Flags, op setOp, store bool) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: -1, Step: 1,
			Shard: func(x *command.Exec) { setAlgebraOne(x, op, store) }, Multi: func(x *command.Coord) { setAlgebraMulti(x, op, store) }}
	}
	return []*command.Command{
		withKeyFlags(k1("sadd", -3, rw|command.FlagFast, cmdSAdd), "RW insert"),
		withKeyFlags(k1("srem", -3, command.FlagWrite|command.FlagFast, cmdSRem), "RW delete"),
		withKeyFlags(k1("sismember", 3, ro, cmdSIsMember), "RO"),
		k1("smismember", -3, ro, cmdSMIsMember),
		withKeyFlags(k1("scard", 2, ro, cmdSCard), "RO"),
		withTips(k1("smembers", 2, command.FlagReadonly, cmdSMembers), "nondeterministic_output_order"),
		withTips(k1("srandmember", -2, command.FlagReadonly, cmdSRandMember), "nondeterministic_output"),
		withTips(rewritten(withKeyFlags(k1("spop", -2, command.FlagWrite|command.FlagFast, cmdSPop), "RW access delete"), rewriteSPop), "nondeterministic_output"),
		withTips(k1("sscan", -3, command.FlagReadonly, cmdSScan), "nondeterministic_output"),
		{Name: "smove", Arity: 4, Flags: command.FlagWrite | command.FlagFast, KeySpecs: "RW access delete @1; RW insert @2", FirstKey: 1, LastKey: 2, Step: 1, Shard: cmdSMove, Multi: multiSMove},
		withTips(all("sinter", -2, command.FlagReadonly, opInter, false), "nondeterministic_output_order"),
		withTips(all("sunion", -2, command.FlagReadonly, opUnion, false), "nondeterministic_output_order"),
		withTips(all("sdiff", -2, command.FlagReadonly, opDiff, false), "nondeterministic_output_order"),
		withKeySpecs(all("sinterstore", -3, rw, opInter, true), "RW update @1; RO access @2 range:-1"),
		withKeySpecs(all("sunionstore", -3, rw, opUnion, true), "OW update @1; RO access @2 range:-1"),
		withKeySpecs(all("sdiffstore", -3, rw, opDiff, true), "OW update @1; RO access @2 range:-1"),
		{Name: "sintercard", Arity: -3, Flags: command.FlagReadonly, KeySpecs: "RO access @1 keynum:0:1:1", KeyPositions: numKeysPositions(1), Shard: cmdSInterCard, Multi: multiSInterCard},
	}
}

// setValue finds key as a set, writing WRONGTYPE for another type; s is
// nil for a missing key.
func setValue(x *command.Exec, key []byte) (shard.Iterator, *set.Set, bool) {
	return command.TypedValue[*set.Set](x, key, shard.TypeSet)
}

func cmdSAdd(x *command.Exec) {
	it, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	switch {
	case s == nil:
		s = set.New()
		x.DB.Insert(x.Args[1], shard.ObjectValue(shard.TypeSet, s))
	case !slices.ContainsFunc(x.Args[2:], func(m []byte) bool { return !s.Contains(m) }):
		// Every member is in: no write, so a WATCH of the key holds
		// (Redis signals a change only when one was added).
		x.W.Int(0)
		return
	default:
		s = command.Mutable[*set.Set](x.DB, it)
	}
	n := 0
	for _, m := range x.Args[2:] {
		if s.Add(m) {
			n++
		}
	}
	if n > 0 {
		x.DB.Notify(notify.Set, "sadd", x.Args[1])
	}
	x.W.Int(int64(n))
}

func cmdSRem(x *command.Exec) {
	it, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil || !slices.ContainsFunc(x.Args[2:], s.Contains) {
		x.W.Int(0)
		return
	}
	s = command.Mutable[*set.Set](x.DB, it)
	n := 0
	for _, m := range x.Args[2:] {
		if s.Remove(m) {
			n++
		}
	}
	x.DB.Notify(notify.Set, "srem", x.Args[1])
	if s.Len() == 0 {
		x.DB.Delete(it)
		x.DB.Notify(notify.Generic, "del", x.Args[1])
	}
	x.W.Int(int64(n))
}

func cmdSIsMember(x *command.Exec) {
	_, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	if s != nil && s.Contains(x.Args[2]) {
		x.W.Int(1)
	} else {
		x.W.Int(0)
	}
}

func cmdSMIsMember(x *command.Exec) {
	_, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	x.W.Array(len(x.Args) - 2)
	for _, m := range x.Args[2:] {
		if s != nil && s.Contains(m) {
			x.W.Int(1)
		} else {
			x.W.Int(0)
		}
	}
}

func cmdSCard(x *command.Exec) {
	_, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(s.Len()))
}

// writeMembers replies with every member of s (nil: empty) as a set.
func writeMembers(w *resp.Writer, s *set.Set) {
	if s == nil {
		w.Set(0)
		return
	}
	w.Set(s.Len())
	s.Range(func(m []byte) bool { w.Bulk(m); return true })
}

func cmdSMembers(x *command.Exec) {
	_, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	writeMembers(x.W, s)
}

// setMembers copies out every member of s.
func setMembers(s *set.Set) [][]byte {
	out := make([][]byte, 0, s.Len())
	s.Range(func(m []byte) bool { out = append(out, bytes.Clone(m)); return true })
	return out
}

func cmdSRandMember(x *command.Exec) {
	if len(x.Args) > 3 {
		x.W.Error(command.ErrSyntax)
		return
	}
	if len(x.Args) == 2 {
		_, s, ok := setValue(x, x.Args[1])
		if !ok {
			return
		}
		if s == nil {
			x.W.Null()
			return
		}
		x.W.Bulk(s.Random(nil, rand.Uint64()))
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
	_, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil || n == 0 {
		x.W.Array(0)
		return
	}
	size := s.Len()
	var buf []byte
	switch {
	case n < 0:
		x.W.Array(int(-n))
		var members [][]byte
		if s.IsIntset() {
			members = setMembers(s)
		}
		for i := int64(0); i < -n; i++ {
			if members != nil {
				x.W.Bulk(members[rand.IntN(len(members))])
			} else {
				buf = s.Random(buf[:0], rand.Uint64())
				x.W.Bulk(buf)
			}
		}
	case n >= int64(size):
		x.W.Array(size)
		s.Range(func(m []byte) bool { x.W.Bulk(m); return true })
	default:
		count := int(n)
		x.W.Array(count)
		for _, m := range pickDistinct(s, count) {
			x.W.Bulk(m)
		}
	}
}

// pickDistinct returns count (< Len) distinct random members, copied.
func pickDistinct(s *set.Set, count int) [][]byte {
	if s.IsIntset() || count*3 > s.Len() {
		members := setMembers(s)
		for i := 0; i < count; i++ {
			j := i + rand.IntN(len(members)-i)
			members[i], members[j] = members[j], members[i]
		}
		return members[:count]
	}
	seen := make(map[string]struct{}, count)
	out := make([][]byte, 0, count)
	for len(out) < count {
		m := s.Random(nil, rand.Uint64())
		if _, dup := seen[string(m)]; dup {
			continue
		}
		seen[string(m)] = struct{}{}
		out = append(out, m)
	}
	return out
}

func cmdSPop(x *command.Exec) {
	if len(x.Args) > 3 {
		x.W.Error(command.ErrSyntax)
		return
	}
	if len(x.Args) == 2 {
		it, s, ok := setValue(x, x.Args[1])
		if !ok {
			return
		}
		if s == nil {
			x.W.Null()
			return
		}
		s = command.Mutable[*set.Set](x.DB, it)
		m := s.Pop(nil, rand.Uint64())
		x.DB.Notify(notify.Set, "spop", x.Args[1])
		if s.Len() == 0 {
			x.DB.Delete(it)
			x.DB.Notify(notify.Generic, "del", x.Args[1])
		}
		x.W.Bulk(m)
		return
	}
	n, ok := num.ParseInt(x.Args[2])
	if !ok || n < 0 {
		x.W.Error("ERR value is out of range, must be positive")
		return
	}
	it, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil || n == 0 {
		x.W.Set(0)
		return
	}
	if n >= int64(s.Len()) {
		writeMembers(x.W, s)
		x.DB.Delete(it)
		x.DB.Notify(notify.Set, "spop", x.Args[1])
		x.DB.Notify(notify.Generic, "del", x.Args[1])
		return
	}
	picked := pickDistinct(s, int(n))
	s = command.Mutable[*set.Set](x.DB, it)
	x.W.Set(len(picked))
	for _, m := range picked {
		s.Remove(m)
		x.W.Bulk(m)
	}
	x.DB.Notify(notify.Set, "spop", x.Args[1])
}

func cmdSScan(x *command.Exec) {
	o, ok := parseScan(x.W, x.Args[2:])
	if !ok {
		return
	}
	_, s, ok := setValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil {
		writeScan(x.W, 0, nil)
		return
	}
	var items [][]byte
	n := 0
	emit := func(m []byte) {
		n++
		if o.match == nil || glob.Match(o.match, m, false) {
			items = append(items, bytes.Clone(m))
		}
	}
	next := runScan(o, func(c uint64) uint64 { return s.Scan(c, emit) }, func() int { return n })
	writeScan(x.W, next, items)
}

// setStateOf classifies a key for SMOVE.
func setStateOf(db *shard.DB, key []byte) (exists, wrong bool) {
	_, v := db.Find(key)
	return v != nil, v != nil && v.Type != shard.TypeSet
}

// setAddTo adds member to the set at key, creating it.
func setAddTo(db *shard.DB, key, member []byte) {
	it, v := db.Find(key)
	if v == nil {
		s := set.New()
		s.Add(member)
		db.Insert(key, shard.ObjectValue(shard.TypeSet, s))
		db.Notify(notify.Set, "sadd", key)
		return
	}
	if command.Mutable[*set.Set](db, it).Add(member) {
		db.Notify(notify.Set, "sadd", key)
	}
}

// setRemoveFrom removes member from the set at key (deleting an emptied
// key) and reports whether it was there.
func setRemoveFrom(db *shard.DB, key, member []byte) bool {
	it, v := db.Find(key)
	if v == nil || !v.Obj().(*set.Set).Contains(member) {
		return false
	}
	s := command.Mutable[*set.Set](db, it)
	s.Remove(member)
	db.Notify(notify.Set, "srem", key)
	if s.Len() == 0 {
		db.Delete(it)
		db.Notify(notify.Generic, "del", key)
	}
	return true
}

func cmdSMove(x *command.Exec) {
	src, dst, m := x.Args[1], x.Args[2], x.Args[3]
	srcExists, srcWrong := setStateOf(x.DB, src)
	if !srcExists {
		x.W.Int(0)
		return
	}
	if _, dstWrong := setStateOf(x.DB, dst); srcWrong || dstWrong {
		x.W.Error(command.ErrWrongType)
		return
	}
	if bytes.Equal(src, dst) {
		_, v := x.DB.Find(src)
		if v.Obj().(*set.Set).Contains(m) {
			x.W.Int(1)
		} else {
			x.W.Int(0)
		}
		return
	}
	if !setRemoveFrom(x.DB, src, m) {
		x.W.Int(0)
		return
	}
	setAddTo(x.DB, dst, m)
	x.W.Int(1)
}

// multiSMove moves a member between sets on two shards under both locks.
func multiSMove(x *command.Coord) {
	src, dst, m := x.Args[1], x.Args[2], x.Args[3]
	ss, ds := x.ShardOf(src), x.ShardOf(dst)
	t := x.Tx()
	t.Add(ss, x.DB, string(src), true)
	t.Add(ds, x.DB, string(dst), true)
	t.Lock()
	defer t.Finish(nil)
	var srcExists, srcWrong, dstWrong bool
	t.Run(ss, func(s *shard.Shard) { srcExists, srcWrong = setStateOf(s.DBs[x.DB], src) })
	if !srcExists {
		x.W.Int(0)
		return
	}
	t.Run(ds, func(s *shard.Shard) { _, dstWrong = setStateOf(s.DBs[x.DB], dst) })
	if srcWrong || dstWrong {
		x.W.Error(command.ErrWrongType)
		return
	}
	removed := false
	t.Run(ss, func(s *shard.Shard) { removed = setRemoveFrom(s.DBs[x.DB], src, m) })
	if !removed {
		x.W.Int(0)
		return
	}
	t.Run(ds, func(s *shard.Shard) { setAddTo(s.DBs[x.DB], dst, m) })
	x.W.Int(1)
}

type setOp uint8

const (
	opInter setOp = iota
	opUnion
	opDiff
)

// setSources reads the sets at pos: nil for a missing key; wrong reports a
// key of another type.
func setSources(db *shard.DB, args [][]byte, pos []int, out []*set.Set, clone bool) (wrong bool) {
	defer db.Shard().ReadMisses(db.Shard().ReadMisses(true)) // reads, a STORE's too (keymiss)
	for _, i := range pos {
		_, v := db.Find(args[i])
		switch {
		case v == nil:
		case v.Type != shard.TypeSet:
			wrong = true
		case clone:
			out[i] = v.Obj().(*set.Set).Clone().(*set.Set)
		default:
			out[i] = v.Obj().(*set.Set)
		}
	}
	return wrong
}

// setAlgebra computes op over sets (nil = empty), as a new set; limit > 0
// stops an intersection once it has that many members (SINTERCARD).
func setAlgebra(op setOp, sets []*set.Set, limit int) *set.Set {
	res := set.New()
	switch op {
	case opInter:
		if slices.Contains(sets, nil) {
			return res
		}
		sorted := slices.Clone(sets)
		slices.SortStableFunc(sorted, func(a, b *set.Set) int { return a.Len() - b.Len() })
		sorted[0].Range(func(m []byte) bool {
			for _, o := range sorted[1:] {
				if !o.Contains(m) {
					return true
				}
			}
			res.Add(m)
			return limit <= 0 || res.Len() < limit
		})
	case opUnion:
		for _, s := range sets {
			if s != nil {
				s.Range(func(m []byte) bool { res.Add(m); return true })
			}
		}
	case opDiff:
		if sets[0] == nil {
			return res
		}
		sets[0].Range(func(m []byte) bool {
			for _, o := range sets[1:] {
				if o != nil && o.Contains(m) {
					return true
				}
			}
			res.Add(m)
			return true
		})
	}
	return res
}

// storeEvents are the STORE forms' events, by op.
var storeEvents = [...]string{opInter: "sinterstore", opUnion: "sunionstore", opDiff: "sdiffstore"}

// storeSet replaces key with s, or deletes it when s is empty.
func storeSet(db *shard.DB, key []byte, s *set.Set, op setOp) {
	if s.Len() == 0 {
		if it, _ := db.Find(key); it.Valid() {
			db.Delete(it)
			db.Notify(notify.Generic, "del", key)
		}
		return
	}
	db.Set(key, shard.ObjectValue(shard.TypeSet, s), false)
	db.Notify(notify.Set, storeEvents[op], key)
}

func setAlgebraOne(x *command.Exec, op setOp, store bool) {
	first := 1
	if store {
		first = 2
	}
	pos := keyRange(first, len(x.Args), 1)
	sets := make([]*set.Set, len(x.Args))
	if setSources(x.DB, x.Args, pos, sets, false) {
		x.W.Error(command.ErrWrongType)
		return
	}
	res := setAlgebra(op, sets[first:], 0)
	if store {
		storeSet(x.DB, x.Args[1], res, op)
		x.W.Int(int64(res.Len()))
		return
	}
	writeMembers(x.W, res)
}

// setAlgebraMulti copies the source sets under shared locks and, for the
// STORE forms, writes the destination under an exclusive lock, all in one
// transaction: no client sees a half-applied store.
func setAlgebraMulti(x *command.Coord, op setOp, store bool) {
	first := 1
	if store {
		first = 2
	}
	t := x.Tx()
	parts := make([][]int, x.NumShards())
	for i := first; i < len(x.Args); i++ {
		sid := x.ShardOf(x.Args[i])
		parts[sid] = append(parts[sid], i)
		t.Add(sid, x.DB, string(x.Args[i]), false)
	}
	dstShard := -1
	if store {
		dstShard = x.ShardOf(x.Args[1])
		t.Add(dstShard, x.DB, string(x.Args[1]), true)
	}
	t.Lock()
	sets := make([]*set.Set, len(x.Args))
	wrong := make([]bool, x.NumShards())
	t.RunAll(func(s *shard.Shard) {
		wrong[s.ID] = setSources(s.DBs[x.DB], x.Args, parts[s.ID], sets, true)
	})
	if slices.Contains(wrong, true) {
		t.Finish(nil)
		x.W.Error(command.ErrWrongType)
		return
	}
	res := setAlgebra(op, sets[first:], 0)
	if !store {
		t.Finish(nil)
		writeMembers(x.W, res)
		return
	}
	// Counted before: once stored and the locks gone, res is the key's
	// value, which its shard may change (an SPOP) while this replies.
	n := res.Len()
	t.Finish(func(s *shard.Shard) {
		if s.ID == dstShard {
			storeSet(s.DBs[x.DB], x.Args[1], res, op)
		}
	})
	x.W.Int(int64(n))
}

// parseInterCard parses "numkeys key... [LIMIT limit]".
func parseInterCard(args [][]byte) (pos []int, limit int, errText string) {
	n, ok := num.ParseInt(args[1])
	if !ok || n <= 0 {
		return nil, 0, "ERR numkeys should be greater than 0"
	}
	if n > int64(len(args)-2) {
		return nil, 0, "ERR Number of keys can't be greater than number of args"
	}
	pos = keyRange(2, 2+int(n), 1)
	for i := 2 + int(n); i < len(args); i += 2 {
		if !strings.EqualFold(string(args[i]), "limit") || i+1 >= len(args) {
			return nil, 0, command.ErrSyntax
		}
		l, ok := num.ParseInt(args[i+1])
		if !ok || l < 0 {
			return nil, 0, "ERR LIMIT can't be negative"
		}
		limit = int(min(l, math.MaxInt32))
	}
	return pos, limit, ""
}

func cmdSInterCard(x *command.Exec) {
	pos, limit, e := parseInterCard(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	sets := make([]*set.Set, len(x.Args))
	if setSources(x.DB, x.Args, pos, sets, false) {
		x.W.Error(command.ErrWrongType)
		return
	}
	x.W.Int(int64(setAlgebra(opInter, pick(sets, pos), limit).Len()))
}

func pick(sets []*set.Set, pos []int) []*set.Set {
	out := make([]*set.Set, len(pos))
	for j, i := range pos {
		out[j] = sets[i]
	}
	return out
}

func multiSInterCard(x *command.Coord) {
	pos, limit, e := parseInterCard(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	t, parts := x.LockSplit(pos, false)
	sets := make([]*set.Set, len(x.Args))
	wrong := make([]bool, x.NumShards())
	t.Finish(func(s *shard.Shard) {
		wrong[s.ID] = setSources(s.DBs[x.DB], x.Args, parts[s.ID], sets, true)
	})
	if slices.Contains(wrong, true) {
		x.W.Error(command.ErrWrongType)
		return
	}
	x.W.Int(int64(setAlgebra(opInter, pick(sets, pos), limit).Len()))
}
