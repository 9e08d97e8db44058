package snapshot

import (
	"testing"
	"time"

	"github.com/dfly/dfly/shard"
)

// TestStepBudget: a step takes stepBudget while the shard ran no command
// since the last one, else a quarter of the time the loop spent elsewhere
// since the last step, within [stepBudget/4, maxBusyStep]: a long round of
// client I/O earns the walk a longer step, so it keeps about a fifth of a
// busy loop however many clients a round serves.
func TestStepBudget(t *testing.T) {
	sh := shard.New(0, 1)
	sl := &Slice{}
	now := time.Now()
	floor := max(stepBudget/4, min(stepBudget, busyStepMin))
	busy := func(since time.Duration) time.Duration {
		sh.Stats.Commands++
		sl.stepEnd = now.Add(-since)
		return sl.budget(sh, now)
	}
	if got := sl.budget(sh, now); got != stepBudget {
		t.Errorf("idle shard: %v, want %v", got, stepBudget)
	}
	sh.Stats.Commands++
	if got := sl.budget(sh, now); got != floor {
		t.Errorf("first busy step: %v, want %v", got, floor)
	}
	for _, c := range []struct{ since, want time.Duration }{
		{10 * time.Microsecond, floor},
		{400 * time.Microsecond, 100 * time.Microsecond},
		{time.Millisecond, 250 * time.Microsecond},
		{2 * time.Millisecond, maxBusyStep},
		{time.Second, maxBusyStep},
	} {
		if got := busy(c.since); got != c.want {
			t.Errorf("busy, last step %v ago: %v, want %v", c.since, got, c.want)
		}
	}
	if got := sl.budget(sh, now); got != stepBudget {
		t.Errorf("no command since the last step: %v, want %v", got, stepBudget)
	}
}
