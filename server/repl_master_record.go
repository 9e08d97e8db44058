package server

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
	"github.com/dfly/dfly/types/stream"
)

// Recording writes in the shards' journals (docs/DESIGN.md §6, package journal).
//
// Every command that runs on a shard goes through Exec.run; while the
// shard's journal is inactive that is one atomic load and the command.
// While it records, a command that wrote (the shard's write counter moved,
// expiries aside) is journaled after it applied: as sent, or in the
// deterministic form Redis 7 propagates (rewriters below, from the key's
// state and the reply after the command), or as the commands it gave to
// Propagate. Expiries are journaled as DEL by the shard (shard.DB.deleteExpired).
//
// Transactions: the steps of a multi-shard transaction (package tx) record
// into the transaction's per-shard parts, which are committed when it
// releases its locks; a coordinator command (MSET over shards, RENAME,
// FLUSHALL ...) journals its own command through tx.Recorder at that
// commit. A single-shard EXEC or script is one part of its shard. Scripts
// are replicated by effects: their redis.call writes, never EVAL itself.

// effectsOnly are commands journaled by their effects, not themselves.
var effectsOnly = map[string]bool{"eval": true, "evalsha": true, "exec": true, "fcall": true}

// notJournaled write commands change nothing a replica should repeat, or
// journal themselves (FUNCTION: changeFunctions).
var notJournaled = map[string]bool{"debug": true, "function": true}

// Propagate makes the journal record args instead of the command as sent;
// called several times, it records each in order. For commands whose
// arguments do not determine their effect.
func (x *Exec) Propagate(args ...[]byte) {
	if x.S.Journal.Active() {
		x.prop = append(x.prop, args)
	}
}

// Propagate is Exec.Propagate for coordinator commands. It always keeps
// args: whether they are journaled is decided at the commit
// (JournalCommit), by the journals of the shards the transaction holds.
// No one shard's journal can answer here: a replication session starts the
// journals shard by shard as it releases its hold of every shard, so a
// command locking the destination's shard right after its start found
// shard 0's journal still off, kept nothing, and was journaled as sent (a
// SORT ... BY ... STORE re-run by the replica against keys it did not have
// yet: TestCoordPropagateJournalStartsShardByShard).
func (x *Coord) Propagate(args ...[]byte) {
	x.prop = append(x.prop, args)
}

// run runs cmd on the shard, journaling its write when the journal records.
func (x *Exec) run(cmd *Command) {
	defer x.Srv.recoverCommand(cmd.Name, x.W, len(x.W.Buf))
	if cmd.Flags&FlagQuiet != 0 {
		x.S.Quiet(true)
		defer x.S.Quiet(false)
	}
	if !x.S.Journal.Active() {
		cmd.Shard(x)
		return
	}
	x.runRecorded(cmd)
}

func (x *Exec) runRecorded(cmd *Command) {
	s := x.S
	j := s.Journal
	if effectsOnly[cmd.Name] {
		if j.InPart() {
			cmd.Shard(x)
			return
		}
		// A script confined to this shard: its writes are one transaction.
		p := journal.NewPart(nil)
		prev := j.Enter(p)
		func() {
			defer j.Leave(prev) // also when the script panics (recoverCommand)
			cmd.Shard(x)
		}()
		if p.Len() > 0 {
			j.Commit(p, tx.NewID(), []uint16{uint16(s.ID)})
		}
		return
	}
	before := s.Stats.Writes - s.Stats.ExpiredKeys
	replyStart := len(x.W.Buf)
	x.prop = x.prop[:0]
	cmd.Shard(x)
	if s.Stats.Writes-s.Stats.ExpiredKeys == before || notJournaled[cmd.Name] {
		x.prop = x.prop[:0]
		return
	}
	db := x.DB.Index
	if len(x.prop) > 0 {
		for _, a := range x.prop {
			j.Record(db, a)
		}
		x.prop = x.prop[:0]
		return
	}
	if cmd.Name == "set" && len(x.Args) == 3 {
		// SET key value leaves the key without a TTL: its rewrite is
		// itself, recorded without the rewriter's closure and argument
		// slice (two allocations a write while a replica follows).
		j.Record(db, x.Args)
		return
	}
	if rw := rewriters[cmd.Name]; rw != nil {
		rw(x, x.W.Buf[replyStart:], func(args ...[]byte) { j.Record(db, args) })
		return
	}
	j.Record(db, x.Args)
}

// runPart runs fn (commands of a single-shard transaction) as one journal
// part of shard s when its journal records.
func runPart(s *shard.Shard, fn func()) {
	j := s.Journal
	if !j.Active() || j.InPart() {
		fn()
		return
	}
	p := journal.NewPart(nil)
	prev := j.Enter(p)
	fn()
	j.Leave(prev)
	if p.Len() > 0 {
		j.Commit(p, tx.NewID(), []uint16{uint16(s.ID)})
	}
}

// JournalCommit journals a coordinator command at its transaction's commit
// (tx.Recorder).
func (x *Coord) JournalCommit(t *tx.Tx, wrote bool) {
	prop := x.prop
	x.prop = nil
	if !wrote || notJournaled[x.cmd.Name] {
		return
	}
	if len(prop) > 0 {
		for _, a := range prop {
			t.Record(x.DB, a)
		}
		return
	}
	t.Record(x.DB, rewriteArgs(x.cmd.Name, x.Args))
}

// recordServed journals a write a blocked client's serve made on shard s
// (outside any transaction).
func recordServed(s *shard.Shard, db int, args ...[]byte) {
	if j := s.Journal; j.Active() {
		j.Record(db, args)
	}
}

// rewriteArgs is the argument-only part of the rewriting, for coordinator
// commands.
func rewriteArgs(name string, args [][]byte) [][]byte {
	if name == "xreadgroup" {
		return stripBlock(args)
	}
	return args
}

// stripBlock drops XREADGROUP's BLOCK ms: a replica must not block.
func stripBlock(args [][]byte) [][]byte {
	for i := 1; i+1 < len(args); i++ {
		if strings.EqualFold(string(args[i]), "streams") {
			break
		}
		if strings.EqualFold(string(args[i]), "block") {
			out := append([][]byte{}, args[:i]...)
			return append(out, args[i+2:]...)
		}
	}
	return args
}

// blockingEquivalent is the non-blocking command a blocking pop that
// served key amounts to (BLPOP → LPOP key, BLMPOP → LMPOP 1 key ...).
func blockingEquivalent(args [][]byte, key []byte) [][]byte {
	name := strings.ToLower(string(args[0]))
	switch name {
	case "blpop", "brpop", "bzpopmin", "bzpopmax":
		return [][]byte{[]byte(name[1:]), key}
	case "blmpop", "bzmpop":
		// B?MPOP timeout numkeys key... WHERE [COUNT n]
		n, err := strconv.Atoi(string(args[2]))
		if err != nil || 3+n > len(args) {
			return nil
		}
		out := [][]byte{[]byte(name[1:]), []byte("1"), key}
		return append(out, args[3+n:]...)
	}
	return nil
}

type rewriter func(x *Exec, reply []byte, record func(args ...[]byte))

// rewriters make a command deterministic from its effect: relative TTLs
// become absolute, random or computed results become the values chosen.
var rewriters = map[string]rewriter{
	"set":            rewriteSetTTL,
	"setex":          rewriteSetTTL,
	"psetex":         rewriteSetTTL,
	"expire":         rewriteExpire,
	"pexpire":        rewriteExpire,
	"expireat":       rewriteExpire,
	"pexpireat":      rewriteExpire,
	"getex":          rewriteExpire,
	"restore":        rewriteRestore,
	"restore-asking": rewriteRestore,
	"incrbyfloat":    rewriteIncrByFloat,
	"hincrbyfloat":   rewriteHIncrByFloat,
	"spop":           rewriteSPop,
	"xadd":           rewriteXAdd,
	"xtrim":          rewriteXTrim,
	"xreadgroup":     func(x *Exec, _ []byte, rec func(...[]byte)) { rec(stripBlock(x.Args)...) },
}

// expireOf is key's absolute expiry in unix ms (0: none), and whether the
// key exists.
func expireOf(x *Exec, key []byte) (int64, bool) {
	it := x.DB.Table.Find(string(key))
	if !it.Valid() {
		return 0, false
	}
	at, _ := x.DB.ExpireAt(it)
	return at, true
}

func ms(at int64) []byte { return strconv.AppendInt(nil, at, 10) }

// SET/SETEX/PSETEX → SET key value [PXAT at].
func rewriteSetTTL(x *Exec, _ []byte, rec func(...[]byte)) {
	key := x.Args[1]
	val := x.Args[2]
	if !bytes.EqualFold(x.Args[0], []byte("set")) { // SETEX, PSETEX: key ttl value
		val = x.Args[3]
	}
	at, ok := expireOf(x, key)
	if !ok {
		rec(x.Args...) // not expected: the write left no key
		return
	}
	if at == 0 {
		rec([]byte("SET"), key, val)
		return
	}
	rec([]byte("SET"), key, val, []byte("PXAT"), ms(at))
}

// EXPIRE family and GETEX → PEXPIREAT key at, PERSIST key or DEL key.
func rewriteExpire(x *Exec, _ []byte, rec func(...[]byte)) {
	key := x.Args[1]
	at, ok := expireOf(x, key)
	switch {
	case !ok:
		rec([]byte("DEL"), key)
	case at == 0:
		rec([]byte("PERSIST"), key)
	default:
		rec([]byte("PEXPIREAT"), key, ms(at))
	}
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] ... → absolute TTL.
func rewriteRestore(x *Exec, _ []byte, rec func(...[]byte)) {
	at, ok := expireOf(x, x.Args[1])
	if !ok {
		rec(x.Args...)
		return
	}
	out := [][]byte{x.Args[0], x.Args[1], []byte("0"), x.Args[3]}
	for _, a := range x.Args[4:] {
		if !strings.EqualFold(string(a), "absttl") {
			out = append(out, a)
		}
	}
	if at != 0 {
		out[2] = ms(at)
		out = append(out, []byte("ABSTTL"))
	}
	// IDLETIME/FREQ take a value: keep pairs intact (ABSTTL has none).
	rec(out...)
}

// bulkReply reads a bulk string reply (RESP2 or RESP3).
func bulkReply(b []byte) ([]byte, bool) {
	if len(b) < 4 || b[0] != '$' {
		return nil, false
	}
	i := bytes.IndexByte(b, '\r')
	n, err := strconv.Atoi(string(b[1:i]))
	if err != nil || n < 0 || i+2+n > len(b) {
		return nil, false
	}
	return b[i+2 : i+2+n], true
}

// INCRBYFLOAT → SET key result KEEPTTL.
func rewriteIncrByFloat(x *Exec, reply []byte, rec func(...[]byte)) {
	v, ok := bulkReply(reply)
	if !ok {
		rec(x.Args...)
		return
	}
	rec([]byte("SET"), x.Args[1], v, []byte("KEEPTTL"))
}

// HINCRBYFLOAT → HSET key field result.
func rewriteHIncrByFloat(x *Exec, reply []byte, rec func(...[]byte)) {
	v, ok := bulkReply(reply)
	if !ok {
		rec(x.Args...)
		return
	}
	rec([]byte("HSET"), x.Args[1], x.Args[2], v)
}

// SPOP → SREM key popped... (the reply names them).
func rewriteSPop(x *Exec, reply []byte, rec func(...[]byte)) {
	out := [][]byte{[]byte("SREM"), x.Args[1]}
	if v, ok := bulkReply(reply); ok {
		rec(append(out, v)...)
		return
	}
	if len(reply) == 0 || (reply[0] != '*' && reply[0] != '~') {
		rec(x.Args...)
		return
	}
	i := bytes.IndexByte(reply, '\n') + 1
	for i > 0 && i < len(reply) {
		v, ok := bulkReply(reply[i:])
		if !ok {
			break
		}
		out = append(out, v)
		i += bytes.Index(reply[i:], []byte("\r\n")) + 2 + len(v) + 2
	}
	rec(out...)
}

// streamTrimArgs copies XADD/XTRIM's options from position i of args to
// out. Approximate trimming ("~", which removes whole nodes only) becomes
// exact trimming to what it left: MAXLEN = <length now>, MINID = <first
// ID now>, as Redis rewrites it; LIMIT goes with it. It returns out and
// the position after the options.
func streamTrimArgs(x *Exec, args [][]byte, i int, out [][]byte) ([][]byte, int) {
	for i < len(args) {
		a := strings.ToLower(string(args[i]))
		switch a {
		case "nomkstream":
			out = append(out, args[i])
			i++
		case "maxlen", "minid":
			out = append(out, args[i])
			i++
			approx := false
			if i < len(args) && (string(args[i]) == "~" || string(args[i]) == "=") {
				approx = string(args[i]) == "~"
				i++
			}
			if i >= len(args) {
				return out, i
			}
			threshold := args[i]
			i++
			if approx {
				st := streamOf(x, args[1])
				switch {
				case st == nil:
				case a == "maxlen":
					threshold = strconv.AppendInt(nil, int64(st.Len()), 10)
				case st.Len() > 0:
					threshold = []byte(st.FirstID().String())
				}
				out = append(out, []byte("="))
			}
			out = append(out, threshold)
		case "limit":
			if i+1 < len(args) && !approxGiven(args) {
				out = append(out, args[i], args[i+1])
			}
			i += 2
		default:
			return out, i
		}
	}
	return out, i
}

func approxGiven(args [][]byte) bool {
	for _, a := range args {
		if string(a) == "~" {
			return true
		}
	}
	return false
}

func streamOf(x *Exec, key []byte) *stream.Stream {
	_, v, ok := x.DB.FindType(key, shard.TypeStream)
	if !ok || v == nil {
		return nil
	}
	st, _ := v.Obj().(*stream.Stream)
	return st
}

// XADD key [opts] *|id ... → XADD key [exact opts] <id added> ...
func rewriteXAdd(x *Exec, reply []byte, rec func(...[]byte)) {
	id, ok := bulkReply(reply)
	if !ok {
		rec(x.Args...)
		return
	}
	out, i := streamTrimArgs(x, x.Args, 2, [][]byte{x.Args[0], x.Args[1]})
	if i >= len(x.Args) {
		rec(x.Args...)
		return
	}
	out = append(out, id)
	rec(append(out, x.Args[i+1:]...)...)
}

func rewriteXTrim(x *Exec, _ []byte, rec func(...[]byte)) {
	out, _ := streamTrimArgs(x, x.Args, 2, [][]byte{x.Args[0], x.Args[1]})
	rec(out...)
}

// nonBlockingMove is BLMOVE's LMOVE and BRPOPLPUSH's RPOPLPUSH.
func nonBlockingMove(args [][]byte) [][]byte {
	if strings.EqualFold(string(args[0]), "brpoplpush") {
		return [][]byte{[]byte("RPOPLPUSH"), args[1], args[2]}
	}
	return [][]byte{[]byte("LMOVE"), args[1], args[2], args[3], args[4]}
}

// xreadGroupServed is the non-blocking XREADGROUP that a blocked one
// served on stream i amounts to: its options without BLOCK, then that
// stream alone with its ID.
func xreadGroupServed(args [][]byte, keys, n, i int) [][]byte {
	out := stripBlock(args[:keys])
	out = append(out[:len(out):len(out)], args[keys+i])
	if keys+n+i < len(args) {
		out = append(out, args[keys+n+i])
	}
	return out
}
