package lock

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Process is the server's clock: monotonic, from the process's start. Lock
// deadlines are offsets on it; they become Unix milliseconds only where
// they leave the process (files, the journal, DUMP).
var Process = processClock{origin: time.Now()}

type processClock struct{ origin time.Time }

func (c processClock) Now() time.Duration { return time.Since(c.origin) }

// UnixMs is the wall-clock time of the offset d.
func (c processClock) UnixMs(d time.Duration) int64 { return c.origin.Add(d).UnixMilli() }

// FromUnixMs is the offset of a wall-clock time.
func (c processClock) FromUnixMs(ms int64) time.Duration { return time.UnixMilli(ms).Sub(c.origin) }

// MarkerField marks a hash that is a lock's representation (README
// "Locks"): files and DUMP payloads carry a lock as a hash of these
// fields, which redis-server loads as a plain hash and dfly as a lock.
const MarkerField = "__dfly_lock__"

// Clone is an independent copy (COPY); the waiters stay with the original.
func (l *Lock) Clone() any {
	c := *l
	c.Holders = slices.Clone(l.Holders)
	c.Waiters = nil
	return &c
}

// Encoding is what OBJECT ENCODING says of a lock.
func (l *Lock) Encoding() string { return "lock" }

// Len is the number of holders.
func (l *Lock) Len() int { return len(l.Holders) }

// Bytes approximates the lock's memory (MEMORY USAGE).
func (l *Lock) Bytes() int {
	n := 96
	for _, h := range l.Holders {
		n += 48 + len(h.Owner)
	}
	for _, w := range l.Waiters {
		n += 40 + len(w.Owner)
	}
	return n
}

// Fields is the lock's hash form, field and value pairs with times as Unix
// milliseconds (unixMs converts the clock's offsets): the marker, "gen",
// "mode", "delay_until", and per holder "holder:<owner>" =
// "<generation> <lease deadline> <lock-delay ms>". Waiters are not kept.
func (l *Lock) Fields(unixMs func(time.Duration) int64) [][2]string {
	f := [][2]string{{MarkerField, "1"}, {"gen", strconv.FormatUint(uint64(l.Gen), 10)}, {"mode", l.Mode.String()}}
	var du int64
	if l.DelayUntil > 0 {
		du = unixMs(l.DelayUntil)
	}
	f = append(f, [2]string{"delay_until", strconv.FormatInt(du, 10)})
	for _, h := range l.Holders {
		f = append(f, [2]string{"holder:" + h.Owner, fmt.Sprintf("%d %d %d", h.Gen, unixMs(h.Deadline), h.Delay.Milliseconds())})
	}
	return f
}

// FromFields rebuilds a lock from its hash form; fromUnixMs converts back.
func FromFields(get func(field string) (string, bool), each func(fn func(f, v string)), fromUnixMs func(int64) time.Duration) (*Lock, error) {
	bad := func(what string) (*Lock, error) { return nil, fmt.Errorf("lock: bad %s in a lock's hash form", what) }
	l := &Lock{}
	g, ok := get("gen")
	gen, err := strconv.ParseUint(g, 10, 64)
	if !ok || err != nil {
		return bad("gen")
	}
	l.Gen = Generation(gen)
	m, _ := get("mode")
	if l.Mode, ok = ParseMode(m); !ok {
		return bad("mode")
	}
	if s, ok := get("delay_until"); ok {
		du, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad("delay_until")
		}
		if du > 0 {
			l.DelayUntil = fromUnixMs(du)
		}
	}
	var ferr error
	each(func(f, v string) {
		owner, ok := strings.CutPrefix(f, "holder:")
		if !ok || ferr != nil {
			return
		}
		var g uint64
		var deadline, delay int64
		if _, err := fmt.Sscanf(v, "%d %d %d", &g, &deadline, &delay); err != nil || delay < 0 || Generation(g) > l.Gen {
			ferr = fmt.Errorf("lock: bad holder %q in a lock's hash form", owner)
			return
		}
		l.Holders = append(l.Holders, Holder{Owner: owner, Gen: Generation(g), Deadline: fromUnixMs(deadline), Delay: min(time.Duration(delay)*time.Millisecond, MaxDelay)})
	})
	if ferr != nil {
		return nil, ferr
	}
	if len(l.Holders) > 1 && l.Mode == Exclusive {
		return bad("mode (several exclusive holders)")
	}
	slices.SortFunc(l.Holders, func(a, b Holder) int { return strings.Compare(a.Owner, b.Owner) })
	return l, nil
}

// epoch is the server's epoch: the highest seen in any generation, raised
// by one on every promotion (Promote).
var epoch atomic.Uint32

// Epoch is the server's current epoch.
func Epoch() uint32 { return epoch.Load() }

// Observe raises the epoch to g's, so a loaded or replicated grant is never
// outranked by the epoch it came from.
func Observe(g Generation) {
	for {
		e := epoch.Load()
		if g.Epoch() <= e || epoch.CompareAndSwap(e, g.Epoch()) {
			return
		}
	}
}

// Promote starts a new epoch (REPLICAOF NO ONE, FAILOVER, takeover): every
// grant from now on outranks every grant of the earlier ones.
func Promote() uint32 { return epoch.Add(1) }

// Info writes INFO's "# Locks" fields.
func Info(field func(k string, v any)) {
	field("lock_epoch", Epoch())
	field("lock_grants", Stats.Grants.Load())
	field("lock_renewals", Stats.Renewals.Load())
	field("lock_releases", Stats.Releases.Load())
	field("lock_expiries", Stats.Expiries.Load())
	field("lock_delayed_acquisitions", Stats.Delayed.Load())
	field("lock_fenced_rejections", Stats.FenceRejected.Load())
	field("lock_waiters", Stats.Waiters.Load())
}
