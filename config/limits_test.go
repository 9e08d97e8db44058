package config

import "testing"

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
