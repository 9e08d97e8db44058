package server

import "testing"

// The soft limit closes a client that stays at or over it for more than
// its seconds, counted in whole seconds from when it was first seen
// reached; going under restarts the count. The hard limit closes at once.
func TestOutputLimiter(t *testing.T) {
	cfg := DefaultConfig()
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
		if got := o.exceededAt(cfg, classNormal, step.pending, step.now); got != step.want {
			t.Fatalf("pending %d at %d: %v, want %v", step.pending, step.now, got, step.want)
		}
	}
	var h outputLimiter
	if !h.exceededAt(cfg, classNormal, 100, 1000) || h.exceededAt(cfg, classPubsub, 100, 1000) {
		t.Error("hard limit: reached at 100 for normal; pubsub's 32 MB is not")
	}
	if err := cfg.SetClientOutputBufferLimit("normal 0 0 0"); err != nil {
		t.Fatal(err)
	}
	if h.exceededAt(cfg, classNormal, 1<<40, 1<<40) {
		t.Error("0 0 0 limits nothing")
	}
}

// memtoull takes what Redis 7.0 takes (checked with CONFIG SET
// client-output-buffer-limit against redis-server 7.0.15: "kb" alone is 0).
func TestMemtoull(t *testing.T) {
	for in, want := range map[string]uint64{
		"": 0, "0": 0, "01": 1, "1b": 1, "1B": 1, "1k": 1000, "1K": 1000, "1kb": 1024, "1KB": 1024,
		"2m": 2e6, "2mb": 2 << 20, "3g": 3e9, "3gb": 3 << 30,
		"kb": 0, "18446744073709551615": 1<<64 - 1, "18446744073709551616": 1<<64 - 1, "99999999999999999999999": 1<<64 - 1,
	} {
		if got, ok := memtoull(in); !ok || got != want {
			t.Errorf("memtoull(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"-0", "+1", "1.5", "1e3", "0x10", "1tb", "1 ", " 1", "1kbb"} {
		if got, ok := memtoull(in); ok {
			t.Errorf("memtoull(%q) = %d, want an error", in, got)
		}
	}
}
