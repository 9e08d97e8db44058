package family

import (
	"github.com/dfly/dfly/command"

	"bytes"

	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/bitmap"
	"github.com/dfly/dfly/types/lcs"
)

func init() { command.Register("bitmap", bitCommands) }

func bitCommands() []*command.Command {
	k1 := func(c *command.Command) *command.Command { c.FirstKey, c.LastKey, c.Step = 1, 1, 1; return c }
	return []*command.Command{
		k1(&command.Command{Name: "setbit", Arity: 4, Flags: command.FlagWrite | command.FlagDenyOOM, Shard: cmdSetBit}),
		k1(&command.Command{Name: "getbit", Arity: 3, Flags: command.FlagReadonly | command.FlagFast, Shard: cmdGetBit}),
		k1(&command.Command{Name: "bitcount", Arity: -2, Flags: command.FlagReadonly, Shard: cmdBitCount}),
		k1(&command.Command{Name: "bitpos", Arity: -3, Flags: command.FlagReadonly, Shard: cmdBitPos}),
		k1(&command.Command{Name: "bitfield", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM, KeyFlags: "RW access update variable_flags", Shard: func(x *command.Exec) { cmdBitfield(x, false) }}),
		k1(&command.Command{Name: "bitfield_ro", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, Shard: func(x *command.Exec) { cmdBitfield(x, true) }}),
		{Name: "bitop", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM, KeySpecs: "OW update @2; RO access @3 range:-1", FirstKey: 2, LastKey: -1, Step: 1, Shard: cmdBitOp, Multi: multiBitOp},
		k1(&command.Command{Name: "getrange", Arity: 4, Flags: command.FlagReadonly, ACLCats: "-bitmap string", Shard: cmdGetRange}),
		k1(&command.Command{Name: "substr", Arity: 4, Flags: command.FlagReadonly, ACLCats: "-bitmap string", Shard: cmdGetRange}),
		k1(&command.Command{Name: "setrange", Arity: 4, Flags: command.FlagWrite | command.FlagDenyOOM, KeyFlags: "RW update", ACLCats: "-bitmap string", Shard: cmdSetRange}),
		{Name: "lcs", Arity: -3, Flags: command.FlagReadonly, ACLCats: "-bitmap string", FirstKey: 1, LastKey: 2, Step: 1, Shard: cmdLCS, Multi: multiLCS},
	}
}

func cmdSetBit(x *command.Exec) {
	off, err := bitmap.ParseOffset(x.Args[2])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	on, err := bitmap.ParseBit(x.Args[3])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		val, old := bitmap.SetBit(nil, off, on)
		x.DB.Insert(x.Args[1], rawString(val))
		x.DB.Notify(notify.String, "setbit", x.Args[1])
		x.W.Int(int64(old))
		return
	}
	if cur := v.Str(); off < uint64(len(cur))*8 && bitmap.Bit(cur, off) == boolInt(on) {
		// The bit is already so and the string long enough: no write, so
		// a WATCH of the key holds (Redis 7 signals only a change). Redis
		// still gives the key a raw string of its own.
		v.SetEncoding(shard.EncRaw)
		x.W.Int(int64(boolInt(on)))
		return
	}
	p := x.DB.Mutate(it) // before SetBit writes into the value's bytes
	var old int
	var newStr []byte
	newStr, old = bitmap.SetBit(p.Str(), off, on)
	p.SetStr(newStr)
	p.SetEncoding(shard.EncRaw)
	x.DB.Notify(notify.String, "setbit", x.Args[1])
	x.W.Int(int64(old))
}

func cmdGetBit(x *command.Exec) {
	off, err := bitmap.ParseOffset(x.Args[2])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(bitmap.Bit(v.Str(), off)))
}

func cmdBitCount(x *command.Exec) {
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.Int(0)
		return
	}
	span, err := bitmap.ParseCountSpan(x.Args[2:])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	x.W.Int(bitmap.Count(v.Str(), span))
}

func cmdBitPos(x *command.Exec) {
	bit, err := bitmap.ParsePosBit(x.Args[2])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		if bit == 1 {
			x.W.Int(-1)
		} else {
			x.W.Int(0)
		}
		return
	}
	span, err := bitmap.ParsePosSpan(x.Args[3:])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	x.W.Int(bitmap.Pos(v.Str(), bit, span))
}

func cmdBitfield(x *command.Exec, readOnly bool) {
	prog, err := bitmap.ParseBitfield(x.Args[2:], readOnly)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	if !prog.Writes() {
		defer x.S.ReadMisses(x.S.ReadMisses(true)) // a read, as Redis's: a miss is a keymiss
	}
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	var results []bitmap.Result
	switch {
	case !prog.Writes():
		var val []byte
		if v != nil {
			val = v.Str()
		}
		_, results = prog.Exec(val, nil)
	case v == nil:
		var val []byte
		val, results = prog.Exec(nil, nil)
		x.DB.Insert(x.Args[1], rawString(val))
		x.DB.Notify(notify.String, "setbit", x.Args[1])
	default:
		// Redis 7.0 signals the key changed (WATCH, tracking) only when
		// its bytes did: the string grew, or a SET or INCRBY (not refused
		// by OVERFLOW FAIL) wrote other bits than were there.
		var changed bool
		quietly(x.S, func() {
			old := append([]byte(nil), v.Str()...)
			p := x.DB.Mutate(it)
			var newStr []byte
			newStr, results = prog.Exec(p.Str(), nil)
			p.SetStr(newStr)
			p.SetEncoding(shard.EncRaw)
			changed = !bytes.Equal(old, newStr)
		})
		if changed {
			x.DB.Touch(x.Args[1])
			x.DB.Notify(notify.String, "setbit", x.Args[1])
		}
	}
	x.W.Array(len(results))
	for _, r := range results {
		if r.Nil {
			x.W.Null()
		} else {
			x.W.Int(r.Value)
		}
	}
}

// bitOpOn computes BITOP from source values and stores the result in dest.
func bitOpStore(db *shard.DB, dest []byte, op bitmap.Op, srcs [][]byte) int {
	res := bitmap.Apply(op, nil, srcs)
	if len(res) == 0 {
		if it, _ := db.Find(dest); it.Valid() {
			db.Delete(it)
			db.Notify(notify.Generic, "del", dest)
		}
		return 0
	}
	db.Set(dest, rawString(res), false)
	db.Notify(notify.String, "set", dest)
	return len(res)
}

// bitOpSources reads BITOP's source strings (copies) from db, for the
// positions given; ok=false when one holds another type.
func bitOpSources(db *shard.DB, args [][]byte, pos []int, srcs [][]byte) bool {
	defer db.Shard().ReadMisses(db.Shard().ReadMisses(true)) // reads (keymiss)
	for _, i := range pos {
		_, v := db.Find(args[i])
		if v == nil {
			continue
		}
		if v.Type != shard.TypeString {
			return false
		}
		srcs[i-3] = bytes.Clone(v.Str())
	}
	return true
}

func cmdBitOp(x *command.Exec) {
	op, err := bitmap.ParseOp(x.Args[1], len(x.Args)-3)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	srcs := make([][]byte, len(x.Args)-3)
	if !bitOpSources(x.DB, x.Args, keyRange(3, len(x.Args), 1), srcs) {
		x.W.Error(command.ErrWrongType)
		return
	}
	x.W.Int(int64(bitOpStore(x.DB, x.Args[2], op, srcs)))
}

func multiBitOp(x *command.Coord) {
	op, err := bitmap.ParseOp(x.Args[1], len(x.Args)-3)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	t := x.Tx()
	dest := x.Args[2]
	ds := x.ShardOf(dest)
	t.Add(ds, x.DB, string(dest), true)
	parts := make([][]int, x.NumShards())
	for i := 3; i < len(x.Args); i++ {
		sid := x.ShardOf(x.Args[i])
		parts[sid] = append(parts[sid], i)
		t.Add(sid, x.DB, string(x.Args[i]), false)
	}
	t.Lock()
	srcs := make([][]byte, len(x.Args)-3)
	bad := make([]bool, x.NumShards())
	t.RunAll(func(s *shard.Shard) {
		bad[s.ID] = !bitOpSources(s.DBs[x.DB], x.Args, parts[s.ID], srcs)
	})
	for _, b := range bad {
		if b {
			t.Finish(nil)
			x.W.Error(command.ErrWrongType)
			return
		}
	}
	var n int
	t.Run(ds, func(s *shard.Shard) { n = bitOpStore(s.DBs[x.DB], dest, op, srcs) })
	t.Finish(nil)
	x.W.Int(int64(n))
}

func cmdGetRange(x *command.Exec) {
	start, end, err := bitmap.ParseRange(x.Args[2], x.Args[3])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.BulkString("")
		return
	}
	x.W.Bulk(bitmap.Range(v.Str(), start, end))
}

func cmdSetRange(x *command.Exec) {
	off, err := bitmap.ParseSetRangeOffset(x.Args[2])
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	it, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	val := x.Args[3]
	if v == nil {
		if len(val) == 0 {
			x.W.Int(0)
			return
		}
		res, err := bitmap.SetRange(nil, off, val)
		if err != nil {
			command.ReplyErr(x.W, err)
			return
		}
		x.DB.Insert(x.Args[1], rawString(res))
		x.DB.Notify(notify.String, "setrange", x.Args[1])
		x.W.Int(int64(len(res)))
		return
	}
	if len(val) == 0 {
		x.W.Int(int64(len(v.Str())))
		return
	}
	if off > bitmap.MaxLen-int64(len(val)) {
		command.ReplyErr(x.W, bitmap.ErrTooLong)
		return
	}
	p := x.DB.Mutate(it)
	var newStr []byte
	newStr, _ = bitmap.SetRange(p.Str(), off, val)
	p.SetStr(newStr)
	p.SetEncoding(shard.EncRaw)
	x.DB.Notify(notify.String, "setrange", x.Args[1])
	x.W.Int(int64(len(p.Str())))
}

// quietly runs fn with the shard's key-change signals off (shard.Quiet),
// also when fn panics.
func quietly(s *shard.Shard, fn func()) {
	s.Quiet(true)
	defer s.Quiet(false)
	fn()
}

// rawString is a new string value a bit or HyperLogLog command built:
// OBJECT ENCODING raw whatever it holds, as in Redis.
func rawString(b []byte) shard.Value {
	v := shard.StringValue(b)
	v.SetEncoding(shard.EncRaw)
	return v
}

// lcsInput reads one LCS operand: nil for a missing key; ok=false for a
// non-string (LCS has its own error text for that).
func lcsInput(db *shard.DB, key []byte) ([]byte, bool) {
	_, v := db.Find(key)
	if v == nil {
		return nil, true
	}
	if v.Type != shard.TypeString {
		return nil, false
	}
	return v.Str(), true
}

func cmdLCS(x *command.Exec) {
	a, okA := lcsInput(x.DB, x.Args[1])
	b, okB := lcsInput(x.DB, x.Args[2])
	lcsReply(x.W, x.Args, a, b, okA && okB)
}

func multiLCS(x *command.Coord) {
	t, _ := x.LockSplit([]int{1, 2}, false)
	var a, b []byte
	okA, okB := true, true
	t.Finish(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		if x.ShardOf(x.Args[1]) == s.ID {
			a, okA = lcsInput(db, x.Args[1])
			a = bytes.Clone(a)
		}
		if x.ShardOf(x.Args[2]) == s.ID {
			b, okB = lcsInput(db, x.Args[2])
			b = bytes.Clone(b)
		}
	})
	lcsReply(x.W, x.Args, a, b, okA && okB)
}

func lcsReply(w *resp.Writer, args [][]byte, a, b []byte, typesOK bool) {
	if !typesOK {
		command.ReplyErr(w, lcs.ErrWrongType)
		return
	}
	o, err := lcs.ParseOptions(args[3:])
	if err != nil {
		command.ReplyErr(w, err)
		return
	}
	res, err := lcs.Compute(a, b, o)
	if err != nil {
		command.ReplyErr(w, err)
		return
	}
	switch {
	case o.Idx:
		w.Map(2)
		w.BulkString("matches")
		w.Array(len(res.Matches))
		for _, m := range res.Matches {
			if o.WithMatchLen {
				w.Array(3)
			} else {
				w.Array(2)
			}
			w.Array(2)
			w.Int(int64(m.A[0]))
			w.Int(int64(m.A[1]))
			w.Array(2)
			w.Int(int64(m.B[0]))
			w.Int(int64(m.B[1]))
			if o.WithMatchLen {
				w.Int(int64(m.Len))
			}
		}
		w.BulkString("len")
		w.Int(int64(res.Len))
	case o.Len:
		w.Int(int64(res.Len))
	default:
		w.Bulk(res.LCS)
	}
}
