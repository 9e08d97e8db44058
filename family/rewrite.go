package family

// How write commands are journaled when their arguments do not determine
// their effect (Command.Rewrite): in the deterministic form Redis 7
// propagates, from the key's state and the reply after the command.
// Relative TTLs become absolute, random or computed results become the
// values chosen; blocking commands become what they did.

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/stream"
)

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

// expireOf is key's absolute expiry in unix ms (0: none), and whether the
// key exists.
func expireOf(x *command.Exec, key []byte) (int64, bool) {
	it := x.DB.Table.Find(string(key))
	if !it.Valid() {
		return 0, false
	}
	at, _ := x.DB.ExpireAt(it)
	return at, true
}

func ms(at int64) []byte { return strconv.AppendInt(nil, at, 10) }

// SET/SETEX/PSETEX → SET key value [PXAT at].
func rewriteSetTTL(x *command.Exec, _ []byte, rec func(...[]byte)) {
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
func rewriteExpire(x *command.Exec, _ []byte, rec func(...[]byte)) {
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
func rewriteIncrByFloat(x *command.Exec, reply []byte, rec func(...[]byte)) {
	v, ok := bulkReply(reply)
	if !ok {
		rec(x.Args...)
		return
	}
	rec([]byte("SET"), x.Args[1], v, []byte("KEEPTTL"))
}

// HINCRBYFLOAT → HSET key field result.
func rewriteHIncrByFloat(x *command.Exec, reply []byte, rec func(...[]byte)) {
	v, ok := bulkReply(reply)
	if !ok {
		rec(x.Args...)
		return
	}
	rec([]byte("HSET"), x.Args[1], x.Args[2], v)
}

// SPOP → SREM key popped... (the reply names them).
func rewriteSPop(x *command.Exec, reply []byte, rec func(...[]byte)) {
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
func streamTrimArgs(x *command.Exec, args [][]byte, i int, out [][]byte) ([][]byte, int) {
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

func streamOf(x *command.Exec, key []byte) *stream.Stream {
	_, v, ok := x.DB.FindType(key, shard.TypeStream)
	if !ok || v == nil {
		return nil
	}
	st, _ := v.Obj().(*stream.Stream)
	return st
}

// XADD key [opts] *|id ... → XADD key [exact opts] <id added> ...
func rewriteXAdd(x *command.Exec, reply []byte, rec func(...[]byte)) {
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

func rewriteXTrim(x *command.Exec, _ []byte, rec func(...[]byte)) {
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

// XREADGROUP → the same without BLOCK: a replica must not block.
func rewriteXReadGroup(x *command.Exec, _ []byte, rec func(...[]byte)) { rec(stripBlock(x.Args)...) }

// rewritten is c journaled by rw (Command.Rewrite).
func rewritten(c *command.Command, rw func(x *command.Exec, reply []byte, rec func(...[]byte))) *command.Command {
	c.Rewrite = rw
	return c
}

// RESTORE journaled as RESTORE key ttl payload [REPLACE] [ABSTTL] ... → absolute TTL.
func rewriteRestore(x *command.Exec, _ []byte, rec func(...[]byte)) {
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
