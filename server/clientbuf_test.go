package server

import (
	"testing"

	"github.com/dfly/dfly/config"
)

// The soft limit closes a client that stays at or over it for more than
// its seconds, counted in whole seconds from when it was first seen
// reached; going under restarts the count. The hard limit closes at once.
func TestOutputLimiter(t *testing.T) {
	cfg := config.Default()
	if err := cfg.SetClientOutputBufferLimit("normal 100 10 2"); err != nil {
		t.Fatal(err)
	}
	var o outputLimiter
	for _, step := range []struct {
		pending, now int64
		want         bool
	}{
		{5, 1000, false},  // under both
		{10, 1000, false}, // soft reached: the count starts
		{50, 1002, false}, // 2 s: not more than 2
		{9, 1002, false},  // under again: the count stops
		{10, 1003, false}, // reached anew at 1003
		{10, 1005, false},
		{10, 1006, true}, // 3 s over
		{100, 1006, true},
	} {
		if got := o.exceededAt(cfg, config.ClassNormal, step.pending, step.now); got != step.want {
			t.Fatalf("pending %d at %d: %v, want %v", step.pending, step.now, got, step.want)
		}
	}
	var h outputLimiter
	if !h.exceededAt(cfg, config.ClassNormal, 100, 1000) || h.exceededAt(cfg, config.ClassPubsub, 100, 1000) {
		t.Error("hard limit: reached at 100 for normal; pubsub's 32 MB is not")
	}
	if err := cfg.SetClientOutputBufferLimit("normal 0 0 0"); err != nil {
		t.Fatal(err)
	}
	if h.exceededAt(cfg, config.ClassNormal, 1<<40, 1<<40) {
		t.Error("0 0 0 limits nothing")
	}
}
