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
