package family

import (
	"github.com/dfly/dfly/command"

	"time"

	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
	"github.com/dfly/dfly/types/num"
	"github.com/dfly/dfly/types/stream"
)

// xreadBlocks reports whether XREAD/XREADGROUP arguments carry BLOCK.
func xreadBlocks(_ command.Server, args [][]byte) bool {
	end := xreadStreamsArg(args)
	for i := 1; i < end && i < len(args); i++ {
		if isWord(args[i], "block") && i+1 < end {
			_, ok := num.ParseInt(args[i+1])
			return ok
		}
	}
	return false
}

// xreadBlock is XREAD/XREADGROUP with BLOCK: it serves at once what is
// there; otherwise it waits, through the blocking machinery, until an
// entry arrives on one of the streams (served on that stream's shard), the
// timeout passes (null reply) or the client leaves. "$" is resolved once,
// at the first attempt, as Redis does.
func xreadBlock(x *command.Coord, r *xreadRequest) {
	pos := xreadKeyPositions(nil, x.Args)
	resolved := false
	x.Block(command.BlockSpec{
		Keys:    pos,
		Timeout: time.Duration(r.block) * time.Millisecond,
		Attempt: func(t *tx.Tx) bool {
			states := make([]xreadKeyState, r.n)
			byShard := map[int][]int{}
			for _, p := range pos {
				sid := x.ShardOf(x.Args[p])
				byShard[sid] = append(byShard[sid], p)
			}
			for sid, ps := range byShard {
				t.Run(sid, func(s *shard.Shard) {
					for _, p := range ps {
						states[p-r.keys] = xreadState(s.DBs[x.DB], x.Args[p], r.group)
					}
				})
			}
			if !resolved {
				if e := r.resolve(x.Args, states); e != "" {
					x.W.Error(e)
					return true
				}
				resolved = true
			}
			results := make([]xreadResult, r.n)
			for sid, ps := range byShard {
				t.Run(sid, func(s *shard.Shard) {
					for _, p := range ps {
						xreadServe(s.DBs[x.DB], x.Args, r, p-r.keys, s.Now(), true, &results[p-r.keys])
					}
				})
			}
			return writeXRead(x.W, x.Args, r, results)
		},
		Serve: func(s *shard.Shard, db *shard.DB, key string, claim func() bool, wrote *bool) bool {
			for i := 0; i < r.n; i++ {
				if string(x.Args[r.keys+i]) != key {
					continue
				}
				if e := xreadGroupGone(db, x.Args[r.keys+i], r); e != "" {
					if !claim() {
						return false
					}
					x.W.Error(e)
					*wrote = true
					return true
				}
				if !xreadReady(db, x.Args, r, i) {
					continue
				}
				if !claim() {
					return false
				}
				results := make([]xreadResult, r.n)
				xreadServe(db, x.Args, r, i, s.Now(), true, &results[i])
				if r.group != nil {
					command.RecordServed(s, db.Index, xreadGroupServed(x.Args, r.keys, r.n, i)...)
				}
				*wrote = writeXRead(x.W, x.Args, r, results)
				return true
			}
			return false
		},
		TimedOut: func() { x.W.NullArray() },
	})
}

// xreadGroupGone is the error that ends an XREADGROUP's wait on key when
// what it waits on went away, as Redis 7.0 answers: the stream (deleted,
// expired, or replaced by another type) or the group (XGROUP DESTROY); ""
// otherwise, and always for XREAD, which goes on waiting.
func xreadGroupGone(db *shard.DB, key []byte, r *xreadRequest) string {
	if r.group == nil {
		return ""
	}
	_, v := db.FindMeta(key)
	if v == nil || v.Type != shard.TypeStream {
		return "UNBLOCKED the stream key no longer exists"
	}
	if v.Obj().(*stream.Stream).Group(r.group) == nil {
		return "NOGROUP the consumer group this client was blocked on no longer exists"
	}
	return ""
}
