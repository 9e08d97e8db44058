package command

import (
	"bytes"
	"slices"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// KeySplit is a SplitsByKey command (MGET) cut into one part per shard of
// its keys, so that a transaction holding every lock runs each part inside
// the one step it runs on that shard (server's EXEC: execParallel), not
// in a coordinator step of its own; Merge puts the parts' replies together
// as the whole command's.
type KeySplit struct {
	owner   []int      // owner[i]: the shard of the i-th key
	args    [][][]byte // by shard: the command's name then that shard's keys
	replies []resp.Writer
}

// SplitByKey cuts args, a SplitsByKey command's, by the shards of its
// keys, at positions pos, replies in protocol proto; nil if it has none.
func SplitByKey(s Server, args [][]byte, pos []int, proto int) *KeySplit {
	if len(pos) == 0 {
		return nil
	}
	n := len(s.Shards())
	k := &KeySplit{owner: make([]int, len(pos)), args: make([][][]byte, n), replies: make([]resp.Writer, n)}
	for i, p := range pos {
		sid := s.ShardOf(args[p])
		k.owner[i] = sid
		if k.args[sid] == nil {
			k.args[sid] = append(make([][]byte, 0, len(pos)/n+2), args[0])
		}
		k.args[sid] = append(k.args[sid], args[p])
	}
	for i := range k.replies {
		k.replies[i].Proto = proto
	}
	return k
}

// Part is shard sid's part of the command, its arguments and where its
// reply goes; args nil: none of the keys is on sid.
func (k *KeySplit) Part(sid int) (args [][]byte, w *resp.Writer) {
	return k.args[sid], &k.replies[sid]
}

// Merge writes the command's reply to w: an array of the parts' elements
// in the order of the keys, or the first part's error.
func (k *KeySplit) Merge(w *resp.Writer) {
	next := make([]int, len(k.replies)) // by shard: where its next element starts
	for sid, r := range k.replies {
		if k.args[sid] == nil {
			continue
		}
		if b := r.Buf; len(b) == 0 || b[0] != '*' {
			w.Buf = append(w.Buf, b...) // an error: the command's reply
			return
		}
		next[sid] = bytes.IndexByte(r.Buf, '\n') + 1
	}
	start, size := len(w.Buf), 16
	for _, r := range k.replies {
		size += len(r.Buf)
	}
	w.Buf = slices.Grow(w.Buf, size)
	w.Array(len(k.owner))
	for _, sid := range k.owner {
		b := k.replies[sid].Buf[next[sid]:]
		n := resp.ReplyEnd(b)
		if n < 0 {
			w.Buf = w.Buf[:start]
			w.Error("ERR internal: a shard's part of the reply is incomplete")
			return
		}
		w.Buf = append(w.Buf, b[:n]...)
		next[sid] += n
	}
}

// RunByKey runs a SplitsByKey command on a coordinator: run, its Shard
// handler, on each shard owning some of the keys at pos, with only those,
// all of them locked shared, and the replies merged into x.W. A shard's
// handler writes its values straight into its reply, no copy of each.
func (x *Coord) RunByKey(pos []int, run func(e *Exec)) {
	srv := x.Run.Server()
	k := SplitByKey(srv, x.Args, pos, x.W.Proto)
	t := x.Tx()
	for sid, args := range k.args {
		for _, key := range args[min(1, len(args)):] {
			t.AddBytes(sid, x.DB, key, false)
		}
	}
	t.Lock()
	t.Finish(func(s *shard.Shard) {
		if args, w := k.Part(s.ID); args != nil {
			run(&Exec{S: s, DB: s.DBs[x.DB], Args: args, W: w, Srv: srv})
		}
	})
	k.Merge(x.W)
}
