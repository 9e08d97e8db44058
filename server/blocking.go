package server

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
	"github.com/dfly/dfly/types/num"
)

// Blocking commands run on a coordinator goroutine. With every key locked
// exclusively, attempt tries to answer at once; if it cannot, one
// shard.Blocker is registered on each key's shard in the same locked step,
// so no change can slip in between the check and the registration. Then
// the goroutine waits for a shard to serve the client (shard.serveReady
// runs the blocker's serve on the key's own goroutine right after the
// change), for the timeout, or for the client to disconnect — in which
// case every registration is removed and nothing is left behind.

type blockSpec struct {
	keys  []int // argument positions of the keys to wait on
	extra []int // further keys to lock (BLMOVE's destination)
	// timeout 0 waits forever.
	timeout time.Duration
	// attempt runs with all keys locked; it reports whether it answered.
	attempt func(t *tx.Tx) bool
	// serve is the Blocker's serve (see shard.Blocker). It sets *wrote when
	// it wrote the reply; a serve that only claims (a cross-shard move)
	// leaves it false and the command is attempted again.
	serve func(s *shard.Shard, db *shard.DB, key string, claim func() bool, wrote *bool) bool
	// timedOut writes the reply for an expired timeout.
	timedOut func()
}

// parseTimeout reads a blocking command's timeout in seconds (fractions
// allowed) as Redis 7.0 does: a long double (so "inf" and "1e400" parse),
// times 1000, truncated to whole milliseconds by a C cast (x86-64: an
// infinity or an out-of-range product becomes the minimum int64, hence
// "timeout is negative"); 0 (also -0.0001) waits for ever, and so, in
// effect, does a timeout of centuries (Redis 7.0 has no upper bound).
func parseTimeout(b []byte) (time.Duration, string) {
	x, ok := num.ParseLongDouble(b)
	if !ok {
		return 0, "ERR timeout is not a float or out of range"
	}
	ms := x.MulTrunc(1000)
	if ms < 0 {
		return 0, "ERR timeout is negative"
	}
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64, "" // centuries: as good as for ever
	}
	return time.Duration(ms) * time.Millisecond, ""
}

func (x *Coord) block(spec blockSpec) {
	defer func() {
		if x.blocked {
			x.Srv.blockedClients.Add(-1)
		}
	}()
	var deadline <-chan time.Time
	if spec.timeout > 0 {
		timer := time.NewTimer(spec.timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		t := x.Tx()
		for _, i := range spec.keys {
			t.Add(x.ShardOf(x.Args[i]), x.DB, string(x.Args[i]), true)
		}
		for _, i := range spec.extra {
			t.Add(x.ShardOf(x.Args[i]), x.DB, string(x.Args[i]), true)
		}
		t.Lock()
		if spec.attempt(t) {
			t.Finish(nil)
			return
		}
		if x.inTx {
			// Inside MULTI/EXEC a blocking command times out at once.
			t.Finish(nil)
			spec.timedOut()
			return
		}
		wrote := false
		var b *shard.Blocker
		b = shard.NewBlocker(func(s *shard.Shard, db *shard.DB, key string) bool {
			return spec.serve(s, db, key, b.Claim, &wrote)
		})
		x.forEachKeyShard(t, spec.keys, func(s *shard.Shard, key string) { s.Block(x.DB, key, b) })
		t.Finish(nil)
		if !x.blocked {
			x.blocked = true
			x.Srv.blockedClients.Add(1)
		}
		x.Conn.startWaiting()
		select {
		case asError := <-x.Conn.unblock: // CLIENT UNBLOCK
			x.Conn.waiting.Store(false)
			if b.Cancel() {
				x.unblock(b, spec.keys)
				if asError {
					x.W.Error(errUnblocked)
				} else {
					spec.timedOut()
				}
				return
			}
			<-b.Done
		case <-b.Done:
			x.Conn.waiting.Store(false)
		case <-deadline:
			x.Conn.waiting.Store(false)
			if b.Cancel() {
				x.unblock(b, spec.keys)
				spec.timedOut()
				return
			}
			<-b.Done
		case <-x.Conn.gone:
			x.Conn.waiting.Store(false)
			if b.Cancel() {
				x.unblock(b, spec.keys)
				return
			}
			<-b.Done
		}
		x.unblock(b, spec.keys)
		if wrote {
			return
		}
	}
}

// errUnblocked is the reply of a command CLIENT UNBLOCK ... ERROR stopped.
const errUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// startWaiting marks c as waiting in a blocking command, after dropping
// an UNBLOCK meant for an earlier one.
func (c *Conn) startWaiting() {
	select {
	case <-c.unblock:
	default:
	}
	c.waiting.Store(true)
}

// clientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when client id was
// waiting in a blocking command, which then answers as if it timed out
// (or with an UNBLOCKED error), 0 otherwise.
func clientUnblock(c *Conn, a [][]byte, w *resp.Writer) {
	id, err := strconv.ParseInt(string(a[2]), 10, 64)
	if err != nil {
		w.Error(errNotInt)
		return
	}
	asError := false
	if len(a) == 4 {
		switch strings.ToLower(string(a[3])) {
		case "timeout":
		case "error":
			asError = true
		default:
			w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	} else if len(a) > 4 {
		subcommandSyntaxErr(w, a, "client")
		return
	}
	t := c.srv.connByID(id)
	if t == nil || !t.waiting.Load() {
		w.Int(0)
		return
	}
	select {
	case t.unblock <- asError:
	default: // one is pending already
	}
	w.Int(1)
}

// forEachKeyShard registers, within the transaction, fn for each distinct
// key on its shard.
func (x *Coord) forEachKeyShard(t *tx.Tx, pos []int, fn func(s *shard.Shard, key string)) {
	seen := map[string]bool{}
	for _, i := range pos {
		k := string(x.Args[i])
		if seen[k] {
			continue
		}
		seen[k] = true
		t.Run(x.ShardOf(x.Args[i]), func(s *shard.Shard) { fn(s, k) })
	}
}

// unblock removes b from every key's queue; the shards do it when they get
// to it, the client does not wait.
func (x *Coord) unblock(b *shard.Blocker, pos []int) {
	for _, i := range pos {
		k := string(x.Args[i])
		x.Srv.shards[x.ShardOf(x.Args[i])].Send(shard.Func(func(s *shard.Shard) { s.Unblock(x.DB, k, b) }))
	}
}
