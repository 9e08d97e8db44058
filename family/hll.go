package family

import (
	"github.com/dfly/dfly/command"

	"strings"

	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/hll"
)

// HyperLogLog commands. Values are plain strings in Redis's HYLL layout
// (package hll), so GET/SET/DUMP see exactly what redis-server stores.

func init() { command.Register("hyperloglog", hllCommands) }

func hllCommands() []*command.Command {
	return []*command.Command{
		{Name: "pfadd", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagFast, KeyFlags: "RW insert", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdPFAdd},
		// PFCOUNT may rewrite the cached cardinality of a single key, as in
		// Redis ("readonly may-replicate").
		{Name: "pfcount", Arity: -2, Flags: command.FlagReadonly, KeyFlags: "RW access", FirstKey: 1, LastKey: -1, Step: 1, Shard: cmdPFCount, Multi: multiPFCount},
		{Name: "pfmerge", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM, KeySpecs: "RW access insert @1; RO access @2 range:-1", FirstKey: 1, LastKey: -1, Step: 1, Shard: cmdPFMerge, Multi: multiPFMerge},
		{Name: "pfdebug", Arity: 3, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagAdmin, KeyFlags: "RW access", FirstKey: 2, LastKey: 2, Step: 1, Shard: cmdPFDebug},
		{Name: "pfselftest", Arity: 1, Flags: command.FlagAdmin, Local: cmdPFSelfTest},
	}
}

// cmdPFDebug: PFDEBUG GETREG|DECODE|ENCODING|TODENSE key, with Redis
// 7.0's replies. GETREG and TODENSE turn a sparse value dense (a write,
// replicated as the command, as Redis propagates it).
func cmdPFDebug(x *command.Exec) {
	sub := strings.ToLower(string(x.Args[1]))
	it, v, e := hllOf(x.DB, x.Args[2])
	switch {
	case e != "":
		x.W.Error(e)
		return
	case v == nil:
		x.W.Error("ERR The specified key does not exist")
		return
	}
	toDense := func() bool {
		if hll.IsDense(v.Str()) {
			return true
		}
		d, err := hll.ToDense(v.Str())
		if err != nil {
			command.ReplyErr(x.W, err)
			return false
		}
		p := x.DB.Mutate(it)
		p.SetStr(d)
		p.SetEncoding(shard.EncRaw)
		v = p
		return true
	}
	switch sub {
	case "getreg":
		if !toDense() {
			return
		}
		regs := hll.DenseRegisters(v.Str())
		x.W.Array(len(regs))
		for _, r := range regs {
			x.W.Int(int64(r))
		}
	case "decode":
		text, ok := hll.DecodeSparse(v.Str())
		if !ok {
			x.W.Error("ERR HLL encoding is not sparse")
			return
		}
		x.W.BulkString(text)
	case "encoding":
		if hll.IsDense(v.Str()) {
			x.W.SimpleString("dense")
		} else {
			x.W.SimpleString("sparse")
		}
	case "todense":
		dense := hll.IsDense(v.Str())
		if !toDense() {
			return
		}
		if dense {
			x.W.Int(0)
		} else {
			x.W.Int(1)
		}
	default:
		x.W.Error("ERR Unknown PFDEBUG subcommand '" + string(x.Args[1]) + "'")
	}
}

// cmdPFSelfTest checks the HyperLogLog code as Redis's PFSELFTEST does in
// spirit: the same elements added to a sparse and to a dense value give
// the same registers and count at every step, within the estimator's
// error of the true count; OK, or the failure.
func cmdPFSelfTest(_ command.Client, _ [][]byte, w *resp.Writer) {
	if err := hll.SelfTest(); err != nil {
		w.Error("ERR TESTFAILED " + err.Error())
		return
	}
	w.SimpleString("OK")
}

// hllOf finds key as a HyperLogLog. It returns the error reply for a value
// of another type or a string that is not an HLL; v is nil when absent.
func hllOf(db *shard.DB, key []byte) (it shard.Iterator, v *shard.Value, errText string) {
	it, v = db.Find(key)
	switch {
	case v == nil:
		return it, nil, ""
	case v.Type != shard.TypeString:
		return it, nil, command.ErrWrongType
	case !hll.Valid(v.Str()):
		return it, nil, string(hll.ErrWrongType)
	}
	return it, v, ""
}

func cmdPFAdd(x *command.Exec) {
	key := x.Args[1]
	it, v, e := hllOf(x.DB, key)
	if e != "" {
		x.W.Error(e)
		return
	}
	if v == nil {
		b, _, err := hll.Add(hll.New(), x.Args[2:])
		if err != nil {
			command.ReplyErr(x.W, err)
			return
		}
		// Like Redis, a created key counts as an update: stale cache.
		b[15] |= 0x80
		x.DB.Insert(key, rawString(b))
		x.DB.Notify(notify.String, "pfadd", key)
		x.W.Int(1)
		return
	}
	if len(x.Args) == 2 || !hll.WouldAdd(v.Str(), x.Args[2:]) {
		// No register would grow: no write, so a WATCH of the key holds
		// (Redis signals only an update). Its string is raw all the same.
		v.SetEncoding(shard.EncRaw)
		x.W.Int(0)
		return
	}
	p := x.DB.Mutate(it)
	b, updated, err := hll.Add(p.Str(), x.Args[2:])
	p.SetStr(b)
	p.SetEncoding(shard.EncRaw)
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	if updated {
		x.DB.Notify(notify.String, "pfadd", key)
		x.W.Int(1)
	} else {
		x.W.Int(0)
	}
}

// pfUnion merges the HLLs at positions pos into r. It returns the first
// error (with its position) and whether any input was dense.
func pfUnion(db *shard.DB, args [][]byte, pos []int, r *hll.RawRegisters) (errAt int, errText string, dense bool) {
	defer db.Shard().ReadMisses(db.Shard().ReadMisses(true)) // reads, PFMERGE's destination too (keymiss)
	for _, i := range pos {
		_, v, e := hllOf(db, args[i])
		if e != "" {
			return i, e, dense
		}
		if v == nil {
			continue
		}
		dense = dense || hll.IsDense(v.Str())
		if err := r.Merge(v.Str()); err != nil {
			return i, string(hll.ErrInvalid), dense
		}
	}
	return 0, "", dense
}

func cmdPFCount(x *command.Exec) {
	if len(x.Args) > 2 {
		var r hll.RawRegisters
		if _, e, _ := pfUnion(x.DB, x.Args, keyRange(1, len(x.Args), 1), &r); e != "" {
			x.W.Error(e)
			return
		}
		x.W.Int(int64(r.Count()))
		return
	}
	it, v, e := hllOf(x.DB, x.Args[1])
	if e != "" {
		x.W.Error(e)
		return
	}
	if v == nil {
		x.W.Int(0)
		return
	}
	recompute := !hll.CacheValid(v.Str())
	if recompute {
		// Computing the count rewrites the cached cardinality; Redis
		// signals the key changed only once that succeeded.
		quietly(x.S, func() { v = x.DB.Mutate(it) })
	}
	v.SetEncoding(shard.EncRaw) // Redis unshares the string either way
	card, _, err := hll.Count(v.Str())
	if err != nil {
		command.ReplyErr(x.W, err)
		return
	}
	if recompute {
		x.DB.Touch(x.Args[1])
	}
	x.W.Int(int64(card))
}

// pfShards merges every shard's keys under the transaction's locks and
// returns the union, the first error in argument order and the dense flag.
func pfShards(x *command.Coord, t interface {
	RunAll(func(*shard.Shard))
}, parts [][]int) (*hll.RawRegisters, string, bool) {
	n := x.NumShards()
	regs := make([]*hll.RawRegisters, n)
	errAt := make([]int, n)
	errs := make([]string, n)
	dense := make([]bool, n)
	t.RunAll(func(s *shard.Shard) {
		if len(parts[s.ID]) == 0 {
			return
		}
		regs[s.ID] = new(hll.RawRegisters)
		errAt[s.ID], errs[s.ID], dense[s.ID] = pfUnion(s.DBs[x.DB], x.Args, parts[s.ID], regs[s.ID])
	})
	first, errText, anyDense := len(x.Args), "", false
	var union hll.RawRegisters
	for sid := range n {
		if errs[sid] != "" && errAt[sid] < first {
			first, errText = errAt[sid], errs[sid]
		}
		anyDense = anyDense || dense[sid]
		if r := regs[sid]; r != nil {
			for i, v := range r {
				union[i] = max(union[i], v)
			}
		}
	}
	return &union, errText, anyDense
}

func multiPFCount(x *command.Coord) {
	t, parts := x.LockSplit(keyRange(1, len(x.Args), 1), false)
	union, e, _ := pfShards(x, t, parts)
	t.Finish(nil)
	if e != "" {
		x.W.Error(e)
		return
	}
	x.W.Int(int64(union.Count()))
}

// pfStore writes the union into the destination key (PFMERGE's second half).
func pfStore(db *shard.DB, key []byte, r *hll.RawRegisters, dense bool) string {
	it, v, e := hllOf(db, key)
	if e != "" {
		return e
	}
	if v == nil {
		b, err := hll.Store(nil, r, dense)
		if err != nil {
			return string(hll.ErrInvalid)
		}
		db.Insert(key, rawString(b))
		db.Notify(notify.String, "pfadd", key)
		return ""
	}
	p := db.Mutate(it)
	b, err := hll.Store(p.Str(), r, dense)
	if err != nil {
		return string(hll.ErrInvalid)
	}
	p.SetStr(b)
	p.SetEncoding(shard.EncRaw)
	db.Notify(notify.String, "pfadd", key)
	return ""
}

func cmdPFMerge(x *command.Exec) {
	var r hll.RawRegisters
	_, e, dense := pfUnion(x.DB, x.Args, keyRange(1, len(x.Args), 1), &r)
	if e == "" {
		e = pfStore(x.DB, x.Args[1], &r, dense)
	}
	if e != "" {
		x.W.Error(e)
		return
	}
	x.W.SimpleString("OK")
}

// multiPFMerge reads the sources under shared locks and writes the
// destination under an exclusive one, in one transaction.
func multiPFMerge(x *command.Coord) {
	t := x.Tx()
	parts := make([][]int, x.NumShards())
	for i := 1; i < len(x.Args); i++ {
		sid := x.ShardOf(x.Args[i])
		parts[sid] = append(parts[sid], i)
		t.Add(sid, x.DB, string(x.Args[i]), i == 1)
	}
	t.Lock()
	union, e, dense := pfShards(x, t, parts)
	if e == "" {
		dst := x.Args[1]
		t.Run(x.ShardOf(dst), func(s *shard.Shard) { e = pfStore(s.DBs[x.DB], dst, union, dense) })
	}
	t.Finish(nil)
	if e != "" {
		x.W.Error(e)
		return
	}
	x.W.SimpleString("OK")
}
