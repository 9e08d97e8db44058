package family

import (
	"github.com/dfly/dfly/command"

	"time"

	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

func init() { command.Register("list", listBlockingCommands) }

func listBlockingCommands() []*command.Command {
	f := command.FlagWrite | command.FlagBlocking | command.FlagNoScript
	return []*command.Command{
		{Name: "blpop", Arity: -3, Flags: f, KeyFlags: "RW access delete", FirstKey: 1, LastKey: -2, Step: 1, Multi: func(x *command.Coord) { cmdBPop(x, true) }},
		{Name: "brpop", Arity: -3, Flags: f, KeyFlags: "RW access delete", FirstKey: 1, LastKey: -2, Step: 1, Multi: func(x *command.Coord) { cmdBPop(x, false) }},
		{Name: "blmove", Arity: 6, Flags: f | command.FlagDenyOOM, KeySpecs: "RW access delete @1; RW insert @2", FirstKey: 1, LastKey: 2, Step: 1, Multi: cmdBLMove},
		{Name: "brpoplpush", Arity: 4, Flags: f | command.FlagDenyOOM, KeySpecs: "RW access delete @1; RW insert @2", FirstKey: 1, LastKey: 2, Step: 1, Multi: cmdBRPopLPush},
		// Redis 7.0 lets scripts call BLMPOP and BZMPOP (they do not wait
		// there), not the older blocking commands.
		{Name: "blmpop", Arity: -5, Flags: command.FlagWrite | command.FlagBlocking, KeySpecs: "RW access delete @2 keynum:0:1:1", KeyPositions: numKeysPositions(2), Multi: cmdBLMPop},
	}
}

// keyStates reads state(db, key) of each key at pos under t's locks.
func keyStates(x *command.Coord, t *tx.Tx, pos []int, state func(db *shard.DB, key []byte) listState) []listState {
	states := make([]listState, len(x.Args))
	byShard := map[int][]int{}
	for _, i := range pos {
		sid := x.ShardOf(x.Args[i])
		byShard[sid] = append(byShard[sid], i)
	}
	for sid, ps := range byShard {
		t.Run(sid, func(s *shard.Shard) {
			for _, i := range ps {
				states[i] = state(s.DBs[x.DB], x.Args[i])
			}
		})
	}
	return states
}

func listStates(x *command.Coord, t *tx.Tx, pos []int) []listState {
	return keyStates(x, t, pos, listStateOf)
}

// bpopFirst serves the pop-style blocking commands (BLPOP, BRPOP, BLMPOP,
// BZPOPMIN, BZPOPMAX, BZMPOP): the first key in argument order that holds
// data answers, WRONGTYPE for a key of another type met before it. pop
// runs on the key's shard, takes the data and writes the reply.
func bpopFirst(x *command.Coord, timeout time.Duration, pos []int, state func(db *shard.DB, key []byte) listState,
	pop func(db *shard.DB, key []byte), timedOut func()) {
	x.Block(command.BlockSpec{
		Keys:    pos,
		Timeout: timeout,
		Attempt: func(t *tx.Tx) bool {
			states := keyStates(x, t, pos, state)
			for _, i := range pos {
				switch states[i] {
				case listWrongType:
					x.W.Error(command.ErrWrongType)
					return true
				case listPresent:
					x.Propagate(blockingEquivalent(x.Args, x.Args[i])...)
					t.Run(x.ShardOf(x.Args[i]), func(s *shard.Shard) { pop(s.DBs[x.DB], x.Args[i]) })
					return true
				}
			}
			return false
		},
		Serve: func(s *shard.Shard, db *shard.DB, key string, claim func() bool, wrote *bool) bool {
			if state(db, []byte(key)) != listPresent || !claim() {
				return false
			}
			pop(db, []byte(key))
			command.RecordServed(s, db.Index, blockingEquivalent(x.Args, []byte(key))...)
			*wrote = true
			return true
		},
		TimedOut: timedOut,
	})
}

// bpop is bpopFirst for lists.
func bpop(x *command.Coord, timeout time.Duration, pos []int, left bool, count int, reply func(key []byte, vals [][]byte), timedOut func()) {
	bpopFirst(x, timeout, pos, listStateOf, func(db *shard.DB, key []byte) {
		reply(key, listPop(db, key, left, count))
	}, timedOut)
}

func cmdBPop(x *command.Coord, left bool) {
	timeout, e := command.ParseTimeout(x.Args[len(x.Args)-1])
	if e != "" {
		x.W.Error(e)
		return
	}
	pos := keyRange(1, len(x.Args)-1, 1)
	bpop(x, timeout, pos, left, 1, func(key []byte, vals [][]byte) {
		x.W.Array(2)
		x.W.Bulk(key)
		x.W.Bulk(vals[0])
	}, func() { x.W.NullArray() })
}

func cmdBLMPop(x *command.Coord) {
	timeout, e := command.ParseTimeout(x.Args[1])
	if e != "" {
		x.W.Error(e)
		return
	}
	pos, left, count, e := parseMPop(x.Args, 2, parseEnd)
	if e != "" {
		x.W.Error(e)
		return
	}
	bpop(x, timeout, pos, left, count, func(key []byte, vals [][]byte) { writeMPop(x.W, key, vals) }, func() { x.W.NullArray() })
}

func cmdBRPopLPush(x *command.Coord) {
	timeout, e := command.ParseTimeout(x.Args[3])
	if e != "" {
		x.W.Error(e)
		return
	}
	blmove(x, timeout, false, true)
}

func cmdBLMove(x *command.Coord) {
	fromLeft, toLeft, ok := lmoveArgs(x.Args)
	if !ok {
		x.W.Error(command.ErrSyntax)
		return
	}
	timeout, e := command.ParseTimeout(x.Args[5])
	if e != "" {
		x.W.Error(e)
		return
	}
	blmove(x, timeout, fromLeft, toLeft)
}

// blmove pops from args[1] and pushes onto args[2]. When both keys share a
// shard the woken client is served right there; otherwise the serving
// shard only claims it and the move is retried as a locked transaction.
func blmove(x *command.Coord, timeout time.Duration, fromLeft, toLeft bool) {
	src, dst := x.Args[1], x.Args[2]
	ss, ds := x.ShardOf(src), x.ShardOf(dst)
	x.Block(command.BlockSpec{
		Keys:    []int{1},
		Extra:   []int{2},
		Timeout: timeout,
		Attempt: func(t *tx.Tx) bool {
			states := listStates(x, t, []int{1, 2})
			switch {
			case states[1] == listWrongType:
				x.W.Error(command.ErrWrongType)
				return true
			case states[1] == listMissing:
				return false
			case states[2] == listWrongType:
				x.W.Error(command.ErrWrongType)
				return true
			}
			x.Propagate(nonBlockingMove(x.Args)...)
			var out [][]byte
			if ss == ds {
				// listMove: a one-element list rotated onto itself keeps
				// its key and TTL, as in Redis (found by the differential
				// test).
				t.Run(ss, func(s *shard.Shard) { out = [][]byte{listMove(s.DBs[x.DB], src, dst, fromLeft, toLeft)} })
			} else {
				var emptied bool
				t.Run(ss, func(s *shard.Shard) { out, emptied = listPopQuiet(s.DBs[x.DB], src, fromLeft, 1) })
				t.Run(ds, func(s *shard.Shard) {
					listPush(s.DBs[x.DB], dst, toLeft, false, out[0])
					popped(s.DBs[x.DB], src, fromLeft, emptied)
				})
			}
			x.W.Bulk(out[0])
			return true
		},
		Serve: func(s *shard.Shard, db *shard.DB, key string, claim func() bool, wrote *bool) bool {
			if listStateOf(db, src) != listPresent {
				return false
			}
			if ss != ds {
				return claim() // the coordinator retries the move under locks
			}
			if listStateOf(db, dst) == listWrongType {
				if !claim() {
					return false
				}
				x.W.Error(command.ErrWrongType)
				*wrote = true
				return true
			}
			if !claim() {
				return false
			}
			if !s.Idle() {
				// Served on wake, outside any lock step: a snapshot
				// writes both keys' baselines before the move's entry.
				s.Capture([]shard.KeyLock{{DB: db.Index, Key: string(src)}, {DB: db.Index, Key: string(dst)}})
			}
			x.W.Bulk(listMove(db, src, dst, fromLeft, toLeft))
			command.RecordServed(s, db.Index, nonBlockingMove(x.Args)...)
			*wrote = true
			return true
		},
		TimedOut: func() { x.W.Null() },
	})
}
