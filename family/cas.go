package family

import (
	"bytes"
	"encoding/hex"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/shard"
)

// Redis 8.4's compare-and-set family: SET's IFEQ, IFNE, IFDEQ and IFDNE
// conditions, DELEX (a DEL under one of them) and DIGEST (a string's XXH3
// 64-bit hash as 16 hex digits, what IFDEQ and IFDNE compare).

func init() { command.Register("string", casCommands) }

func casCommands() []*command.Command {
	return []*command.Command{
		{Name: "delex", Arity: -2, Flags: command.FlagWrite | command.FlagFast, KeyFlags: "RW delete variable_flags",
			FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdDelex, Rewrite: rewriteDelex},
		{Name: "digest", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, KeyFlags: "RO access",
			FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdDigest},
	}
}

// casCond is one of the four conditions, or none.
type casCond uint8

const (
	casNone casCond = iota
	casIfEq
	casIfNe
	casIfDEq
	casIfDNe
)

// casCondOf recognizes a condition's token (upper case).
func casCondOf(opt string) casCond {
	switch opt {
	case "IFEQ":
		return casIfEq
	case "IFNE":
		return casIfNe
	case "IFDEQ":
		return casIfDEq
	case "IFDNE":
		return casIfDNe
	}
	return casNone
}

// errDigestLength is Redis 8.4's reply to an IFDEQ/IFDNE digest that is
// not 16 characters long (its only check: other characters just do not
// match).
const errDigestLength = "ERR must be exactly 16 hexadecimal characters"

// holds evaluates the condition against the key's string value, old (nil
// when the key does not exist). A missing key equals nothing: IFEQ and
// IFDEQ fail and IFNE and IFDNE hold, with the digest unchecked, as Redis.
// errText is set for a digest of the wrong length.
func (c casCond) holds(arg, old []byte, exists bool) (ok bool, errText string) {
	if !exists {
		return c == casIfNe || c == casIfDNe, ""
	}
	switch c {
	case casIfEq:
		return bytes.Equal(old, arg), ""
	case casIfNe:
		return !bytes.Equal(old, arg), ""
	case casIfDEq, casIfDNe:
		if len(arg) != 16 {
			return false, errDigestLength
		}
		var d [16]byte
		eq := bytes.EqualFold(appendDigest(d[:0], old), arg)
		return eq == (c == casIfDEq), ""
	}
	return true, ""
}

// appendDigest appends DIGEST's form of b: XXH3-64, 16 lower-case hex
// digits with leading zeros.
func appendDigest(dst, b []byte) []byte {
	h := xxh3.Hash(b)
	var be [8]byte
	for i := 7; i >= 0; i-- {
		be[i] = byte(h)
		h >>= 8
	}
	return hex.AppendEncode(dst, be[:])
}

func cmdDigest(x *command.Exec) {
	_, v, ok := strValue(x, x.Args[1])
	if !ok {
		return
	}
	if v == nil {
		x.W.Null()
		return
	}
	var d [16]byte
	x.W.Bulk(appendDigest(d[:0], v.Str()))
}

// cmdDelex is DELEX key [IFEQ v | IFNE v | IFDEQ d | IFDNE d]: 1 when it
// deleted the key, 0 when the key is missing or the condition failed. In
// Redis's order: the argument count, the key (a missing one is 0 whatever
// follows), its type, the condition's token, the digest's length.
func cmdDelex(x *command.Exec) {
	if len(x.Args) != 2 && len(x.Args) != 4 {
		x.W.Error(command.WrongArity("delex"))
		return
	}
	key := x.Args[1]
	it, v := x.DB.Find(key)
	if v == nil {
		x.W.Int(0)
		return
	}
	if len(x.Args) == 4 {
		if v.Type != shard.TypeString {
			x.W.Error(command.ErrWrongType)
			return
		}
		c := casCondOf(strings.ToUpper(string(x.Args[2])))
		if c == casNone {
			x.W.Error(command.ErrSyntax)
			return
		}
		ok, e := c.holds(x.Args[3], v.Str(), true)
		if e != "" {
			x.W.Error(e)
			return
		}
		if !ok {
			x.W.Int(0)
			return
		}
	}
	x.DB.Delete(it)
	x.DB.Notify(notify.Generic, "del", key)
	x.W.Int(1)
}

// rewriteDelex journals a DELEX that deleted as DEL key, as Redis
// propagates it.
func rewriteDelex(x *command.Exec, _ []byte, rec func(...[]byte)) {
	rec([]byte("DEL"), x.Args[1])
}
