package family

import (
	"github.com/dfly/dfly/command"

	"github.com/dfly/dfly/shard"
)

func init() { command.Register("sortedset", zsetBlockingCommands) }

func zsetBlockingCommands() []*command.Command {
	f := command.FlagWrite | command.FlagBlocking | command.FlagNoScript | command.FlagFast
	return []*command.Command{
		{Name: "bzpopmin", Arity: -3, Flags: f, KeyFlags: "RW access delete", FirstKey: 1, LastKey: -2, Step: 1, Multi: func(x *command.Coord) { cmdBZPop(x, false) }},
		{Name: "bzpopmax", Arity: -3, Flags: f, KeyFlags: "RW access delete", FirstKey: 1, LastKey: -2, Step: 1, Multi: func(x *command.Coord) { cmdBZPop(x, true) }},
		{Name: "bzmpop", Arity: -5, Flags: command.FlagWrite | command.FlagBlocking, KeySpecs: "RW access delete @2 keynum:0:1:1", KeyPositions: zsetNumKeys(2, false), Multi: cmdBZMPop},
	}
}

func zsetStateOf(db *shard.DB, key []byte) listState {
	_, v := db.Find(key)
	switch {
	case v == nil:
		return listMissing
	case v.Type != shard.TypeZSet:
		return listWrongType
	}
	return listPresent
}

func cmdBZPop(x *command.Coord, max bool) {
	timeout, e := command.ParseTimeout(x.Args[len(x.Args)-1])
	if e != "" {
		x.W.Error(e)
		return
	}
	bpopFirst(x, timeout, keyRange(1, len(x.Args)-1, 1), zsetStateOf, func(db *shard.DB, key []byte) {
		items := zsetPop(db, key, max, 1)
		x.W.Array(3)
		x.W.Bulk(key)
		x.W.BulkString(items[0].Member)
		x.W.Double(items[0].Score)
	}, func() { x.W.NullArray() })
}

func cmdBZMPop(x *command.Coord) {
	timeout, e := command.ParseTimeout(x.Args[1])
	if e != "" {
		x.W.Error(e)
		return
	}
	pos, max, count, e := parseZMPop(x.Args[1:])
	if e != "" {
		x.W.Error(e)
		return
	}
	for i := range pos {
		pos[i]++ // parseZMPop numbered from args[1]
	}
	bpopFirst(x, timeout, pos, zsetStateOf, func(db *shard.DB, key []byte) {
		writeZMPop(x.W, key, zsetPop(db, key, max, count))
	}, func() { x.W.NullArray() })
}
