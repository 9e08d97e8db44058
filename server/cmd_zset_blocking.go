package server

import (
	"github.com/dfly/dfly/shard"
)

func init() { addFamily("sortedset", zsetBlockingCommands) }

func zsetBlockingCommands() []*Command {
	f := FlagWrite | FlagBlocking | FlagNoScript | FlagFast
	return []*Command{
		{Name: "bzpopmin", Arity: -3, Flags: f, FirstKey: 1, LastKey: -2, Step: 1, Multi: func(x *Coord) { cmdBZPop(x, false) }},
		{Name: "bzpopmax", Arity: -3, Flags: f, FirstKey: 1, LastKey: -2, Step: 1, Multi: func(x *Coord) { cmdBZPop(x, true) }},
		{Name: "bzmpop", Arity: -5, Flags: FlagWrite | FlagBlocking, KeyPositions: zsetNumKeys(2, false), Multi: cmdBZMPop},
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

func cmdBZPop(x *Coord, max bool) {
	timeout, e := parseTimeout(x.Args[len(x.Args)-1])
	if e != "" {
		x.W.Error(e)
		return
	}
	x.bpopFirst(timeout, keyRange(1, len(x.Args)-1, 1), zsetStateOf, func(db *shard.DB, key []byte) {
		items := zsetPop(db, key, max, 1)
		x.W.Array(3)
		x.W.Bulk(key)
		x.W.BulkString(items[0].Member)
		x.W.Double(items[0].Score)
	}, func() { x.W.NullArray() })
}

func cmdBZMPop(x *Coord) {
	timeout, e := parseTimeout(x.Args[1])
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
	x.bpopFirst(timeout, pos, zsetStateOf, func(db *shard.DB, key []byte) {
		writeZMPop(x.W, key, zsetPop(db, key, max, count))
	}, func() { x.W.NullArray() })
}
