package main

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestThreadFlags: --proactor_threads sets the event loops and, unless
// --shards is given, the shards (Dragonfly's semantics); --shards alone
// leaves the loops at GOMAXPROCS.
func TestThreadFlags(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		args          []string
		shards, loops int
	}{
		{nil, procs, procs},
		{[]string{"--proactor_threads", "3"}, 3, 3},
		{[]string{"--proactor_threads", "1"}, 1, 1},
		{[]string{"--shards", "5"}, 5, procs},
		{[]string{"--proactor_threads", "2", "--shards", "4"}, 4, 2},
		{[]string{"--shards", "4", "--proactor_threads", "2"}, 4, 2},
	} {
		cfg, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if cfg.Shards != tc.shards || cfg.Loops != tc.loops {
			t.Errorf("%v: shards %d loops %d, want %d %d", tc.args, cfg.Shards, cfg.Loops, tc.shards, tc.loops)
		}
	}
	for _, args := range [][]string{{"--proactor_threads", "0"}, {"--shards", "0"}, {"--proactor_threads", "2000"}} {
		_, err := parseFlags(args, io.Discard)
		if err == nil {
			t.Errorf("%v: accepted", args)
		} else if !strings.Contains(err.Error(), args[0]) { // the error names the flag given
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestReplTimeoutFlag: --repl_timeout takes whole seconds, at least 1 (0
// would make a master drop every dfly replica at once).
func TestReplTimeoutFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"--repl_timeout", "5"}, io.Discard)
	if err != nil || cfg.ReplTimeout != 5 {
		t.Fatalf("--repl_timeout 5: %v, %v", cfg, err)
	}
	if cfg, _ := parseFlags(nil, io.Discard); cfg.ReplTimeout != 60 {
		t.Fatalf("default repl timeout %d, want 60", cfg.ReplTimeout)
	}
	for _, v := range []string{"0", "-3", "1.5", "x"} {
		if _, err := parseFlags([]string{"--repl_timeout", v}, io.Discard); err == nil || !strings.Contains(err.Error(), "repl_timeout") {
			t.Errorf("--repl_timeout %s: %v", v, err)
		}
	}
}
