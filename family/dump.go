package family

// DUMP and RESTORE, with Redis's payload format and replies (and MIGRATE's
// table entry: migrate.go).

import (
	"errors"
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/types/num"
)

func init() { command.Register("server", dumpCommands) }

func dumpCommands() []*command.Command {
	return []*command.Command{
		{Name: "dump", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagReadonly, ACLCats: "keyspace", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdDump},
		{Name: "restore", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM, KeyFlags: "OW update", ACLCats: "keyspace dangerous", FirstKey: 1, LastKey: 1, Step: 1, Shard: cmdRestore, Rewrite: rewriteRestore},
		// RESTORE-ASKING is RESTORE that a cluster's MIGRATE sends.
		{Name: "restore-asking", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagAsking, KeyFlags: "OW update", ACLCats: "keyspace dangerous", FirstKey: 1, LastKey: 1, Step: 1,
			Shard: cmdRestore, Rewrite: rewriteRestore},
		{Name: "migrate", Tips: "nondeterministic_output", Arity: -6, Flags: command.FlagWrite | command.FlagNoScript, KeySpecs: "RW access delete @3; RW access delete incomplete kw:KEYS:-2 range:-1", ACLCats: "keyspace dangerous", FirstKey: 3, LastKey: 3, Step: 1,
			KeyPositions: migrateKeyPositions, Multi: cmdMigrate},
	}
}

func cmdDump(x *command.Exec) {
	_, v := x.DB.Find(x.Args[1])
	if v == nil {
		x.W.Null()
		return
	}
	payload, err := rdbvalue.Dump(v)
	if err != nil {
		x.W.Error("ERR " + err.Error())
		return
	}
	x.W.Bulk(payload)
}

// cmdRestore: RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f], checking in Redis's order (options, existence, TTL, payload).
func cmdRestore(x *command.Exec) {
	a := x.Args
	var replace, absTTL bool
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(a); j++ {
		more := len(a) - j - 1
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "replace":
			replace = true
		case opt == "absttl":
			absTTL = true
		case opt == "idletime" && more >= 1 && freq == -1:
			n, ok := num.ParseInt(a[j+1])
			if !ok {
				x.W.Error(command.ErrNotInt)
				return
			}
			if n < 0 {
				x.W.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = n
			j++
		case opt == "freq" && more >= 1 && idle == -1:
			n, ok := num.ParseInt(a[j+1])
			if !ok {
				x.W.Error(command.ErrNotInt)
				return
			}
			if n < 0 || n > 255 {
				x.W.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = n
			j++
		default:
			x.W.Error(command.ErrSyntax)
			return
		}
	}
	key := a[1]
	it, old := x.DB.Find(key)
	if old != nil && !replace {
		x.W.Error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := num.ParseInt(a[2])
	if !ok {
		x.W.Error(command.ErrNotInt)
		return
	}
	if ttl < 0 {
		x.W.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	v, err := rdbvalue.DecodeDump(a[3])
	if err != nil {
		if errors.Is(err, rdb.ErrDumpPayload) {
			x.W.Error("ERR DUMP payload version or checksum are wrong")
		} else {
			x.W.Error("ERR Bad data format")
		}
		return
	}
	if ttl != 0 && !absTTL {
		ttl += x.Now()
	}
	if ttl != 0 && x.ExpiredAt(ttl) { // issue 8: not on a replica
		// Already expired: the old key (if replaced) goes, nothing is added.
		if old != nil {
			x.DB.Delete(it)
			x.DB.Notify(notify.Generic, "del", key)
		}
		x.W.SimpleString("OK")
		return
	}
	if old != nil {
		x.DB.Notify(notify.New, "new", key) // Redis deletes and adds it
	}
	x.DB.Set(key, v, false)
	it, p := x.DB.FindNoTouch(key)
	if ttl != 0 {
		x.DB.SetExpire(it, ttl)
	}
	if freq >= 0 && x.S.LFU() {
		x.S.SetFreq(p, uint8(freq))
	} else if idle > 0 && !x.S.LFU() {
		if int64(p.Access) > idle {
			p.Access -= uint32(idle)
		} else {
			p.Access = 0
		}
	}
	x.DB.Notify(notify.Generic, "restore", key)
	x.W.SimpleString("OK")
}
