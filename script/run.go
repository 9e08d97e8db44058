package script

import (
	"bytes"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// InlineBudget bounds how long a run inline on a shard's event loop
// (budgeted: see VM.Begin) may go without writing: past it the run is
// stopped, having changed nothing, and the script runs on a coordinator
// from then on (MarkCoordinated).
const InlineBudget = 100 * time.Millisecond

// Run is one running script, as SCRIPT KILL and the inline budget see it.
// Each interpreter owns one and reuses it run after run.
type Run struct {
	eng    *Engine
	cancel context.CancelFunc
	// mu orders a kill against the script's first write: a script is
	// either killed before it writes or never. It also guards the fields
	// the budget timer reads: start, active, budgeted, id and the timer.
	mu     sync.Mutex
	start  time.Time
	active bool
	id     []byte // the running script's SHA or function's ID (its bytes may be a request's)
	fn     *Function
	cmd    [][]byte // the command running it (a request's)
	wrote  bool
	killed atomic.Bool
	// demoted: an inline run overran its budget before writing; it was
	// stopped and will run again on a coordinator.
	demoted atomic.Bool
	// budgeted: the run is inline and bounded by InlineBudget. budget
	// fires at most once per budget period while runs follow each other
	// (see overBudget), so a run pays no timer operation unless none is
	// pending; pending: it will fire.
	budgeted bool
	budget   *time.Timer
	pending  bool
}

// begin starts a run of id (of function fn, when not nil) for command
// cmd.
func (r *Run) begin(id []byte, fn *Function, cmd [][]byte, budgeted bool) {
	r.killed.Store(false)
	r.demoted.Store(false)
	r.mu.Lock()
	r.start, r.active, r.id, r.wrote, r.budgeted = time.Now(), true, id, false, budgeted
	r.fn, r.cmd = fn, cmd
	if budgeted && !r.pending {
		r.pending = true
		if r.budget == nil {
			r.budget = time.AfterFunc(InlineBudget, r.overBudget)
		} else {
			r.budget.Reset(InlineBudget)
		}
	}
	r.mu.Unlock()
}

// end closes the run; the budget timer then finds it inactive.
func (r *Run) end() {
	r.mu.Lock()
	r.active, r.id, r.fn, r.cmd = false, nil, nil, nil
	r.mu.Unlock()
}

// overBudget is the budget timer's callback: an inline run that has not
// written within InlineBudget of its start is stopped, having changed
// nothing, and its script runs on a coordinator from then on. The timer
// may have been set for an earlier run: it then fires again at the
// current run's deadline, or stays idle when no budgeted run is active.
func (r *Run) overBudget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = false
	if !r.active || !r.budgeted || r.wrote {
		return
	}
	if left := InlineBudget - time.Since(r.start); left > 0 {
		r.pending = true
		r.budget.Reset(left)
		return
	}
	r.eng.MarkCoordinated(r.id)
	r.demoted.Store(true)
	r.killed.Store(true)
	r.cancel()
}

// Demote stops an inline run that has not written, to run it again on a
// coordinator, as the budget does: for a command that would otherwise
// block the shard's goroutine (SORT meeting offloaded pattern values).
// false when the run is not inline or has written: the command must then
// go on inline.
func (r *Run) Demote() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active || !r.budgeted || r.wrote || r.killed.Load() {
		return r.demoted.Load()
	}
	r.demoted.Store(true)
	r.killed.Store(true)
	r.cancel()
	return true
}

// Demoted reports whether the run was stopped to run again on a
// coordinator: its reply is to be dropped.
func (r *Run) Demoted() bool { return r.demoted.Load() }

// Wrote reports whether the run has written (BeginWrite).
func (r *Run) Wrote() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wrote
}

// BeginWrite records that the script is about to write; false when it has
// been killed and must stop instead.
func (r *Run) BeginWrite() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed.Load() {
		return false
	}
	r.wrote = true
	return true
}

// Kill stops the busy scripts (functions: FUNCTION KILL) that have not
// written: the error reply for SCRIPT KILL (FUNCTION KILL), "" for OK.
func (e *Engine) Kill(functions bool) string {
	limit := e.host.BusyThreshold()
	e.runMu.Lock()
	defer e.runMu.Unlock()
	busy, killed, other := 0, 0, 0
	for r := range e.running {
		r.mu.Lock()
		if time.Since(r.start) < limit || r.killed.Load() {
			r.mu.Unlock()
			continue
		}
		if (r.fn != nil) != functions {
			other++
			r.mu.Unlock()
			continue
		}
		busy++
		if !r.wrote {
			r.killed.Store(true)
			r.cancel()
			killed++
		}
		r.mu.Unlock()
	}
	switch {
	case killed > 0:
		e.log.Warnf("Lua script killed by user with SCRIPT KILL.")
		return ""
	case busy > 0:
		return errUnkillable
	case other > 0 && functions:
		return errBusyScript
	case other > 0:
		return errBusyFunction
	}
	return errNotBusy
}

// OldestStart is when the oldest running script started, in unix ms
// (math.MaxInt64 when none runs): the clock its calls see.
func (e *Engine) OldestStart() int64 {
	oldest := int64(math.MaxInt64)
	if e.nrunning.Load() == 0 {
		return oldest
	}
	e.runMu.Lock()
	defer e.runMu.Unlock()
	for r := range e.running {
		r.mu.Lock()
		if r.active {
			oldest = min(oldest, r.start.UnixMilli())
		}
		r.mu.Unlock()
	}
	return oldest
}

// Busy is the reply to a command while a script has run past the
// busy-reply-threshold (Host.BusyThreshold), as Redis answers every
// command but a few (command.Command.AllowsBusy) then; "" when none has.
// With no script running it costs one atomic load.
func (e *Engine) Busy() string {
	if e.nrunning.Load() == 0 {
		return ""
	}
	limit := e.host.BusyThreshold()
	e.runMu.Lock()
	defer e.runMu.Unlock()
	for r := range e.running {
		r.mu.Lock()
		busy, fn := r.active && !r.killed.Load() && time.Since(r.start) >= limit, r.fn != nil
		r.mu.Unlock()
		switch {
		case busy && fn:
			return errBusyFunction
		case busy:
			return errBusyScript
		}
	}
	return ""
}

// runningFunction names the function running longest, with its command
// and how long it has run.
func (e *Engine) runningFunction() (string, [][]byte, int64) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	var best *Run
	for r := range e.running {
		r.mu.Lock()
		if r.active && r.fn != nil && (best == nil || r.start.Before(best.start)) {
			best = r
		}
		r.mu.Unlock()
	}
	if best == nil {
		return "", nil, 0
	}
	best.mu.Lock()
	defer best.mu.Unlock()
	if !best.active || best.fn == nil {
		return "", nil, 0
	}
	cmd := make([][]byte, len(best.cmd)) // the request's buffers are the run's only while it runs
	for i, a := range best.cmd {
		cmd[i] = bytes.Clone(a)
	}
	return best.fn.Name, cmd, time.Since(best.start).Milliseconds()
}
