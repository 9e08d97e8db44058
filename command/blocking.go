package command

import (
	"math"
	"time"

	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
	"github.com/dfly/dfly/types/num"
)

// Blocking commands run on a coordinator goroutine. With every key locked
// exclusively, Attempt tries to answer at once; if it cannot, one
// shard.Blocker is registered on each key's shard in the same locked step,
// so no change can slip in between the check and the registration. Then
// the goroutine waits (Runner.Wait) for a shard to serve the client
// (shard.serveReady runs the blocker's serve on the key's own goroutine
// right after the change), for the timeout, or for the client to
// disconnect — in which case every registration is removed and nothing is
// left behind.

// BlockSpec is what a blocking command waits on and how it answers.
type BlockSpec struct {
	Keys  []int // argument positions of the keys to wait on
	Extra []int // further keys to lock (BLMOVE's destination)
	// Timeout 0 waits forever.
	Timeout time.Duration
	// Attempt runs with all keys locked; it reports whether it answered.
	Attempt func(t *tx.Tx) bool
	// Serve is the Blocker's serve (see shard.Blocker). It sets *wrote when
	// it wrote the reply; a serve that only claims (a cross-shard move)
	// leaves it false and the command is attempted again.
	Serve func(s *shard.Shard, db *shard.DB, key string, claim func() bool, wrote *bool) bool
	// TimedOut writes the reply for an expired timeout.
	TimedOut func()
}

// WaitEnd is how a blocked client's wait ended (Runner.Wait).
type WaitEnd int

const (
	Served         WaitEnd = iota // the blocker's Done closed
	TimedOut                      // the deadline passed
	Unblocked                     // CLIENT UNBLOCK id [TIMEOUT]
	UnblockedError                // CLIENT UNBLOCK id ERROR
	Gone                          // the client disconnected
)

// ErrUnblocked is the reply of a command CLIENT UNBLOCK ... ERROR stopped.
const ErrUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// ParseTimeout reads a blocking command's timeout in seconds (fractions
// allowed) as Redis 7.0 does: a long double (so "inf" and "1e400" parse),
// times 1000, rounded up to whole milliseconds (ceill) and cast to an
// integer (x86-64: an infinity or an out-of-range product becomes the
// minimum int64, hence "timeout is negative"). So any positive timeout,
// however small (0.001, 1e-10), times out; 0 and a negative one above
// -0.001 (rounded up to 0) wait for ever, and so, in effect, does a
// timeout of centuries (Redis 7.0 has no upper bound).
func ParseTimeout(b []byte) (time.Duration, string) {
	x, ok := num.ParseLongDouble(b)
	if !ok {
		return 0, "ERR timeout is not a float or out of range"
	}
	ms := x.MulCeil(1000)
	if ms < 0 {
		return 0, "ERR timeout is negative"
	}
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64, "" // centuries: as good as for ever
	}
	return time.Duration(ms) * time.Millisecond, ""
}

// Block runs a blocking command as spec says.
func (x *Coord) Block(spec BlockSpec) {
	var deadline <-chan time.Time
	if spec.Timeout > 0 {
		timer := time.NewTimer(spec.Timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		t := x.Tx()
		for _, i := range spec.Keys {
			t.Add(x.ShardOf(x.Args[i]), x.DB, string(x.Args[i]), true)
		}
		for _, i := range spec.Extra {
			t.Add(x.ShardOf(x.Args[i]), x.DB, string(x.Args[i]), true)
		}
		t.Lock()
		if spec.Attempt(t) {
			t.Finish(nil)
			return
		}
		if x.InTx {
			// Inside MULTI/EXEC a blocking command times out at once.
			t.Finish(nil)
			spec.TimedOut()
			return
		}
		wrote := false
		var b *shard.Blocker
		b = shard.NewBlocker(func(s *shard.Shard, db *shard.DB, key string) bool {
			return spec.Serve(s, db, key, b.Claim, &wrote)
		})
		x.ForEachKeyShard(t, spec.Keys, func(s *shard.Shard, key string) { s.Block(x.DB, key, b) })
		t.Finish(nil)
		if end := x.Run.Wait(b, deadline); end != Served {
			if b.Cancel() {
				x.unblock(b, spec.Keys)
				switch end {
				case UnblockedError:
					x.W.Error(ErrUnblocked)
				case Unblocked, TimedOut:
					spec.TimedOut()
				}
				return
			}
			<-b.Done // served meanwhile
		}
		x.unblock(b, spec.Keys)
		if wrote {
			return
		}
	}
}

// ForEachKeyShard registers, within the transaction, fn for each distinct
// key on its shard.
func (x *Coord) ForEachKeyShard(t *tx.Tx, pos []int, fn func(s *shard.Shard, key string)) {
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
	shards := x.Srv().Shards()
	for _, i := range pos {
		k := string(x.Args[i])
		shards[x.ShardOf(x.Args[i])].Send(shard.Func(func(s *shard.Shard) { s.Unblock(x.DB, k, b) }))
	}
}
