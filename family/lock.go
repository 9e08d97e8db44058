package family

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/lock"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

// Fenced locks (README "Locks"): each lock is a key of type lock in its
// shard holding a *lock.Lock, the state machine. Every change is journaled
// as LOCK.SYNC with the lock's whole hash form (absolute times), so a
// replica applies it as it is and never expires a lock itself.

func init() { command.Register("lock", lockCommands) }

func lockCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM | command.FlagFast
	k1 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	cmds := []*command.Command{
		{Name: "lock.acquire", Arity: -5, Flags: rw, KeySpecs: "RW update @1 keynum:0:1:1", KeyPositions: numKeysPositions(1),
			Shard: cmdLockAcquire, Multi: multiLockAcquire, Coordinate: func(_ command.Server, args [][]byte) bool { return acquireWaits(args) }},
		k1("lock.release", 3, command.FlagWrite|command.FlagFast, cmdLockRelease),
		k1("lock.renew", 4, rw, cmdLockRenew),
		k1("lock.check", 4, command.FlagReadonly|command.FlagFast, cmdLockCheck),
		k1("lock.info", 2, command.FlagReadonly, cmdLockInfo),
		k1("lock.sync", -2, command.FlagWrite|command.FlagDenyOOM, cmdLockSync),
		{Name: "fence", Arity: -5, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagNoScript, KeySpecs: "RO @1; RW update ?",
			KeyPositions: fenceKeys, Shard: cmdFence, Multi: func(x *command.Coord) { x.W.Error(errFenceShards) }},
	}
	for i, s := range []string{
		"LOCK.ACQUIRE numnames name [name ...] owner lease-ms [EXCLUSIVE|SHARED] [DELAY ms] [WAIT ms]: take every name or none; replies a sequencer (name, mode, generation) per name, sorted, or nil",
		"LOCK.RELEASE name owner: free the owner's grant at once (1), or 0 when it holds none",
		"LOCK.RENEW name owner lease-ms: extend the holder's lease; LOCKLOST once it ran out",
		"LOCK.CHECK name mode generation: 1 while the sequencer is current, else 0",
		"LOCK.INFO name: mode, generation, epoch, lock-delay left, holders and waiters",
		"LOCK.SYNC name field value ...: set a lock's whole state (how changes are journaled to replicas)",
		"FENCE name mode generation command [arg ...]: run the command only while the sequencer is current, atomically with the check",
	} {
		cmds[i].Summary = s
	}
	return cmds
}

const (
	errLease       = "ERR lease is not a positive integer of milliseconds"
	errFenceShards = "ERR FENCE: the lock and the command's keys must be on one shard (give them a common {hash tag})"
)

// acquireArgs is LOCK.ACQUIRE numnames name [name ...] owner lease-ms
// [EXCLUSIVE|SHARED] [DELAY ms] [WAIT ms].
type acquireArgs struct {
	names []int // argument positions, sorted by name, duplicates dropped
	req   lock.Request
	waits bool
	wait  time.Duration // 0 with waits: for ever
}

func parseMs(b []byte) (time.Duration, bool) {
	n, ok := num.ParseInt(b)
	if !ok || n < 0 || n > int64(1<<62)/int64(time.Millisecond) {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

func parseAcquire(args [][]byte) (acquireArgs, string) {
	var a acquireArgs
	n, ok := num.ParseInt(args[1])
	if !ok || n <= 0 {
		return a, "ERR numnames should be greater than 0"
	}
	if n > int64(len(args)-4) {
		return a, command.ErrSyntax
	}
	a.names = keyRange(2, 2+int(n), 1)
	byName := func(i, j int) int { return bytes.Compare(args[i], args[j]) }
	slices.SortFunc(a.names, byName)
	a.names = slices.CompactFunc(a.names, func(i, j int) bool { return byName(i, j) == 0 })
	rest := args[2+n:]
	a.req.Owner = string(rest[0])
	lease, ok := parseMs(rest[1])
	if !ok || lease == 0 {
		return a, errLease
	}
	a.req.Lease = lease
	for i := 2; i < len(rest); i++ {
		switch strings.ToLower(string(rest[i])) {
		case "exclusive":
			a.req.Mode = lock.Exclusive
		case "shared":
			a.req.Mode = lock.Shared
		case "delay", "wait":
			if i+1 >= len(rest) {
				return a, command.ErrSyntax
			}
			d, ok := parseMs(rest[i+1])
			if !ok {
				return a, "ERR " + strings.ToUpper(string(rest[i])) + " is not a non-negative integer of milliseconds"
			}
			if strings.EqualFold(string(rest[i]), "delay") {
				a.req.Delay = min(d, lock.MaxDelay)
			} else {
				a.waits, a.wait = true, d
			}
			i++
		default:
			return a, command.ErrSyntax
		}
	}
	return a, ""
}

// acquireWaits: the request has WAIT, so it runs on a coordinator.
func acquireWaits(args [][]byte) bool {
	n, ok := num.ParseInt(args[1])
	if !ok || n <= 0 || n > int64(len(args)-4) {
		return false
	}
	for _, a := range args[4+n:] {
		if strings.EqualFold(string(a), "wait") {
			return true
		}
	}
	return false
}

// lockAt is the lock at key: nil when absent; ok false for another type.
func lockAt(db *shard.DB, key []byte) (shard.Iterator, *lock.Lock, bool) {
	it, v, ok := db.FindType(key, shard.TypeLock)
	if !ok || v == nil {
		return it, nil, ok
	}
	return it, v.Obj().(*lock.Lock), true
}

// expire drops l's run-out leases, counting them.
func expire(l *lock.Lock, now time.Duration) {
	if l != nil {
		lock.Stats.Expiries.Add(uint64(l.Expire(now)))
	}
}

// canGrant asks the lock at key what a grant of r would do.
func canGrant(db *shard.DB, key []byte, r lock.Request, now time.Duration) (lock.Outcome, string) {
	_, l, ok := lockAt(db, key)
	if !ok {
		return lock.Busy, command.ErrWrongType
	}
	if l == nil {
		return lock.Granted, ""
	}
	expire(l, now)
	out, err := l.CanGrant(r, now)
	if err != nil {
		return out, "WRONGMODE " + err.Error()
	}
	return out, ""
}

// grant grants r on key (canGrant allowed it) and returns the sequencer's
// generation and the LOCK.SYNC that journals the change.
func grant(db *shard.DB, key []byte, r lock.Request, now time.Duration) (lock.Mode, lock.Generation, [][]byte) {
	it, l, _ := lockAt(db, key)
	if l == nil {
		l = &lock.Lock{}
		db.Insert(key, shard.ObjectValue(shard.TypeLock, l))
	} else {
		l = command.Mutable[*lock.Lock](db, it)
	}
	h, out, err := l.Grant(r, lock.Epoch(), now)
	if err != nil || (out != lock.Granted && out != lock.Renewed) {
		panic("lock: grant refused after canGrant allowed it")
	}
	if out == lock.Granted {
		lock.Stats.Grants.Add(1)
	} else {
		lock.Stats.Renewals.Add(1)
	}
	return l.Mode, h.Gen, syncArgs(key, l)
}

// syncArgs is LOCK.SYNC key field value ...: the lock's whole state.
func syncArgs(key []byte, l *lock.Lock) [][]byte {
	f := l.Fields(lock.Process.UnixMs)
	args := make([][]byte, 0, 2+2*len(f))
	args = append(args, []byte("LOCK.SYNC"), key)
	for _, kv := range f {
		args = append(args, []byte(kv[0]), []byte(kv[1]))
	}
	return args
}

func writeSequencer(w *resp.Writer, name []byte, m lock.Mode, g lock.Generation) {
	w.Array(3)
	w.Bulk(name)
	w.BulkString(m.String())
	w.Int(int64(g))
}

// cmdLockAcquire: every name on this shard, without waiting.
func cmdLockAcquire(x *command.Exec) {
	a, e := parseAcquire(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	now := lock.Process.Now()
	for _, i := range a.names {
		out, e := canGrant(x.DB, x.Args[i], a.req, now)
		if e != "" {
			x.W.Error(e)
			return
		}
		if out == lock.Delayed {
			lock.Stats.Delayed.Add(1)
		}
		if out != lock.Granted && out != lock.Renewed {
			x.W.NullArray()
			return
		}
	}
	x.W.Array(len(a.names))
	for _, i := range a.names {
		m, g, sync := grant(x.DB, x.Args[i], a.req, now)
		x.Propagate(sync...)
		writeSequencer(x.W, x.Args[i], m, g)
	}
}

var waiterIDs atomic.Uint64

// multiLockAcquire: names on several shards, or WAIT. All or nothing: every
// name is checked, in sorted order, with all of them locked; a request that
// must wait queues on the first name it cannot have (holding nothing) and
// tries again when that lock changes, its lease runs out or its lock-delay
// ends.
func multiLockAcquire(x *command.Coord) {
	a, e := parseAcquire(x.Args)
	if e != "" {
		x.W.Error(e)
		return
	}
	var deadline time.Time
	if a.waits && a.wait > 0 {
		deadline = time.Now().Add(a.wait)
	}
	a.req.Waiter = waiterIDs.Add(1)
	queuedAt := -1 // position of the name the request is queued on
	leave := func() {
		if queuedAt < 0 {
			return
		}
		t := x.LockKeys([]int{queuedAt}, true)
		t.Finish(func(s *shard.Shard) {
			if _, l, _ := lockAt(s.DBs[x.DB], x.Args[queuedAt]); l != nil && l.Dequeue(a.req.Waiter) {
				lock.Stats.Waiters.Add(-1)
			}
		})
		queuedAt = -1
	}
	for {
		t, parts := x.LockSplit(a.names, true)
		now := lock.Process.Now()
		outs := make([]lock.Outcome, len(x.Args))
		errs := make([]string, len(x.Args))
		t.RunAll(func(s *shard.Shard) {
			for _, i := range parts[s.ID] {
				outs[i], errs[i] = canGrant(s.DBs[x.DB], x.Args[i], a.req, now)
			}
		})
		blocked := -1
		for _, i := range a.names {
			if errs[i] != "" {
				t.Finish(nil)
				leave()
				x.W.Error(errs[i])
				return
			}
			if outs[i] != lock.Granted && outs[i] != lock.Renewed {
				blocked = i
				if outs[i] == lock.Delayed {
					lock.Stats.Delayed.Add(1)
				}
				break
			}
		}
		if blocked < 0 {
			modes := make([]lock.Mode, len(x.Args))
			gens := make([]lock.Generation, len(x.Args))
			syncs := make([][][]byte, len(x.Args))
			t.RunAll(func(s *shard.Shard) {
				for _, i := range parts[s.ID] {
					modes[i], gens[i], syncs[i] = grant(s.DBs[x.DB], x.Args[i], a.req, now)
				}
			})
			for _, i := range a.names {
				x.Propagate(syncs[i]...)
			}
			if queuedAt >= 0 {
				lock.Stats.Waiters.Add(-1) // Grant took it out of the queue
				queuedAt = -1
			}
			t.Finish(nil)
			x.W.Array(len(a.names))
			for _, i := range a.names {
				writeSequencer(x.W, x.Args[i], modes[i], gens[i])
			}
			return
		}
		if !a.waits || x.InTx || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			t.Finish(nil)
			leave()
			x.W.NullArray()
			return
		}
		if queuedAt != blocked {
			t.Finish(nil)
			leave() // holding nothing, it queues where it is blocked now
			t = x.LockKeys([]int{blocked}, true)
		}
		// Queue (if not already) and register the blocker in one locked
		// step, so no change slips in between.
		key := string(x.Args[blocked])
		var next time.Duration
		b := shard.NewBlocker(nil)
		b.Serve = func(s *shard.Shard, db *shard.DB, k string) bool {
			out, _ := canGrant(db, []byte(k), a.req, lock.Process.Now())
			return (out == lock.Granted || out == lock.Renewed) && b.Claim()
		}
		sid := x.ShardOf(x.Args[blocked])
		registered := false
		t.Run(sid, func(s *shard.Shard) {
			_, l, _ := lockAt(s.DBs[x.DB], x.Args[blocked])
			if l == nil {
				return // gone meanwhile: try again at once
			}
			registered = true
			if queuedAt != blocked {
				l.Enqueue(lock.Waiter{ID: a.req.Waiter, Owner: a.req.Owner, Mode: a.req.Mode})
				lock.Stats.Waiters.Add(1)
			}
			next = l.NextChange(now)
			s.Block(x.DB, key, b)
		})
		t.Finish(nil)
		if !registered {
			queuedAt = -1
			continue
		}
		queuedAt = blocked
		wake := deadline
		if next > 0 {
			if at := time.Now().Add(next - lock.Process.Now() + time.Millisecond); wake.IsZero() || at.Before(wake) {
				wake = at
			}
		}
		var timer <-chan time.Time
		var tm *time.Timer
		if !wake.IsZero() {
			tm = time.NewTimer(time.Until(wake))
			timer = tm.C
		}
		end := x.Run.Wait(b, timer)
		if tm != nil {
			tm.Stop()
		}
		if end != command.Served && !b.Cancel() {
			end = command.Served // served meanwhile
		}
		x.On(sid, func(s *shard.Shard) { s.Unblock(x.DB, key, b) })
		switch end {
		case command.Served, command.TimedOut:
			continue // try again; the deadline decides
		case command.UnblockedError:
			leave()
			x.W.Error(command.ErrUnblocked)
		default: // CLIENT UNBLOCK, or the client went away
			leave()
			x.W.NullArray()
		}
		return
	}
}

// cmdLockRelease: LOCK.RELEASE name owner → 1 released, 0 not held.
func cmdLockRelease(x *command.Exec) {
	it, l, ok := command.TypedValue[*lock.Lock](x, x.Args[1], shard.TypeLock)
	if !ok {
		return
	}
	now := lock.Process.Now()
	expire(l, now)
	if l == nil {
		x.W.Int(0)
		return
	}
	if _, held := l.Holding(string(x.Args[2])); !held {
		x.W.Int(0)
		return
	}
	l = command.Mutable[*lock.Lock](x.DB, it)
	if l.Release(string(x.Args[2]), now) == nil {
		lock.Stats.Releases.Add(1)
	}
	x.Propagate(syncArgs(x.Args[1], l)...)
	x.W.Int(1)
}

// cmdLockRenew: LOCK.RENEW name owner lease-ms → the sequencer, or
// LOCKLOST once the lease ran out: renewal never grants.
func cmdLockRenew(x *command.Exec) {
	lease, okLease := parseMs(x.Args[3])
	if !okLease || lease == 0 {
		x.W.Error(errLease)
		return
	}
	it, l, ok := command.TypedValue[*lock.Lock](x, x.Args[1], shard.TypeLock)
	if !ok {
		return
	}
	now := lock.Process.Now()
	expire(l, now)
	owner := string(x.Args[2])
	if l == nil {
		x.W.Error(lockLost(x.Args[1], owner))
		return
	}
	if _, held := l.Holding(owner); !held {
		x.W.Error(lockLost(x.Args[1], owner))
		return
	}
	l = command.Mutable[*lock.Lock](x.DB, it)
	h, _ := l.Renew(owner, lease, now)
	lock.Stats.Renewals.Add(1)
	x.Propagate(syncArgs(x.Args[1], l)...)
	writeSequencer(x.W, x.Args[1], l.Mode, h.Gen)
}

func lockLost(name []byte, owner string) string {
	return "LOCKLOST lock '" + string(name) + "' is not held by '" + owner + "' (released, or its lease ran out)"
}

// sequencerArgs reads name mode generation at args[0:3].
func sequencerArgs(args [][]byte) (lock.Sequencer, bool) {
	m, ok := lock.ParseMode(string(args[1]))
	g, err := strconv.ParseUint(string(args[2]), 10, 64)
	return lock.Sequencer{Name: string(args[0]), Mode: m, Gen: lock.Generation(g)}, ok && err == nil
}

const errSequencer = "ERR invalid sequencer: expected name, EXCLUSIVE or SHARED, and a generation"

// current reports whether the sequencer at args[1:4] is current, writing
// an error and reporting ok false when it cannot tell.
func current(x *command.Exec, args [][]byte) (cur, ok bool) {
	s, ok := sequencerArgs(args[1:4])
	if !ok {
		x.W.Error(errSequencer)
		return false, false
	}
	_, l, ok := command.TypedValue[*lock.Lock](x, args[1], shard.TypeLock)
	if !ok {
		return false, false
	}
	return l != nil && l.CurrentSequencer(s, lock.Process.Now()), true
}

// cmdLockCheck: LOCK.CHECK name mode generation → 1 current, 0 stale.
func cmdLockCheck(x *command.Exec) {
	if cur, ok := current(x, x.Args); ok {
		x.W.Int(map[bool]int64{false: 0, true: 1}[cur])
	}
}

// cmdLockInfo: LOCK.INFO name → the lock's state as field/value pairs,
// nil for no lock.
func cmdLockInfo(x *command.Exec) {
	_, l, ok := command.TypedValue[*lock.Lock](x, x.Args[1], shard.TypeLock)
	if !ok {
		return
	}
	if l == nil {
		x.W.NullArray()
		return
	}
	now := lock.Process.Now()
	c := l.Clone().(*lock.Lock) // reading changes nothing (a replica never expires)
	c.Expire(now)
	ms := func(d time.Duration) int64 { return max(d, 0).Milliseconds() }
	x.W.Map(7)
	x.W.BulkString("name")
	x.W.Bulk(x.Args[1])
	x.W.BulkString("mode")
	x.W.BulkString(c.Mode.String())
	x.W.BulkString("generation")
	x.W.Int(int64(c.Gen))
	x.W.BulkString("epoch")
	x.W.Int(int64(c.Gen.Epoch()))
	x.W.BulkString("delay-left-ms")
	x.W.Int(ms(c.DelayUntil - now))
	x.W.BulkString("holders")
	x.W.Array(len(c.Holders))
	for _, h := range c.Holders {
		x.W.Array(4)
		x.W.BulkString(h.Owner)
		x.W.Int(int64(h.Gen))
		x.W.Int(ms(h.Deadline - now))
		x.W.Int(h.Delay.Milliseconds())
	}
	x.W.BulkString("waiters")
	x.W.Array(len(l.Waiters))
	for _, w := range l.Waiters {
		x.W.Array(2)
		x.W.BulkString(w.Owner)
		x.W.BulkString(w.Mode.String())
	}
}

// cmdLockSync: LOCK.SYNC name field value ... sets a lock's whole state,
// as the master journals it; waiters queued here stay.
func cmdLockSync(x *command.Exec) {
	if len(x.Args)%2 != 0 {
		x.W.Error(command.WrongArity("lock.sync"))
		return
	}
	fields := map[string]string{}
	for i := 2; i < len(x.Args); i += 2 {
		fields[string(x.Args[i])] = string(x.Args[i+1])
	}
	get := func(f string) (string, bool) { v, ok := fields[f]; return v, ok }
	each := func(fn func(f, v string)) {
		for f, v := range fields {
			fn(f, v)
		}
	}
	nl, err := lock.FromFields(get, each, lock.Process.FromUnixMs)
	if err != nil {
		x.W.Error("ERR " + err.Error())
		return
	}
	lock.Observe(nl.Gen)
	it, l, ok := lockAt(x.DB, x.Args[1])
	if !ok {
		x.W.Error(command.ErrWrongType)
		return
	}
	if l != nil {
		nl.Waiters = command.Mutable[*lock.Lock](x.DB, it).Waiters
	}
	x.DB.Set(x.Args[1], shard.ObjectValue(shard.TypeLock, nl), false)
	x.W.SimpleString("OK")
}

// fenceTable is the command table FENCE reads its command's metadata and
// handler from (the server's is built alike).
var fenceTable = sync.OnceValue(command.NewTable)

// fenceKeys: the lock's name, then the fenced command's keys.
func fenceKeys(dst []int, args [][]byte) []int {
	dst = append(dst, 1)
	if len(args) < 5 {
		return dst
	}
	cmd := fenceTable().Lookup(args[4])
	if cmd == nil || !cmd.ArityOK(len(args)-4) {
		return dst
	}
	n := len(dst)
	dst = cmd.Keys(dst, args[4:])
	for i := n; i < len(dst); i++ {
		dst[i] += 4
	}
	return dst
}

// cmdFence: FENCE name mode generation command [arg ...] runs the command
// only while the sequencer is current, in the same step as the check.
func cmdFence(x *command.Exec) {
	inner := x.Args[4:]
	cmd := fenceTable().Lookup(inner[0])
	switch {
	case cmd == nil:
		x.W.Error("ERR FENCE: unknown command '" + string(inner[0]) + "'")
		return
	case cmd.Shard == nil || cmd.Flags&(command.FlagBlocking|command.FlagNoScript|command.FlagPubSub) != 0 || cmd.Name == "fence":
		x.W.Error("ERR FENCE: '" + cmd.Name + "' cannot be fenced (only key commands that run on one shard)")
		return
	case !cmd.ArityOK(len(inner)):
		x.W.Error(command.WrongArity(cmd.Name))
		return
	}
	cur, ok := current(x, x.Args)
	if !ok {
		return
	}
	if !cur {
		lock.Stats.FenceRejected.Add(1)
		x.W.Error("STALE sequencer " + string(x.Args[1]) + " " + strings.ToLower(string(x.Args[2])) + " " + string(x.Args[3]) + " is not current; nothing was run")
		return
	}
	x.Args = inner
	x.Run(cmd)
}
