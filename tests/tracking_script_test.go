package tests

import (
	"slices"
	"strings"
	"testing"
)

// TestTrackingScriptReads: Redis 7.0 tracks a script's keys for its caller
// (default mode) once a read-only command runs inside it: the caller then
// tracks every key the script declared (trackingRememberKeys takes the
// keys of the caller's command), and none when the script ran no read,
// EVAL_RO and FCALL_RO included (they count as scripts, not as reads).
// Inside EXEC each script counts alone. OPTIN counts CLIENT CACHING yes
// before EVAL for the whole script, OPTOUT's CLIENT CACHING no drops it;
// BCAST tracks no reads. dfly refuses a script's undeclared keys, so
// Redis's (untracked) reads of them have no counterpart.
func TestTrackingScriptReads(t *testing.T) {
	srv := StartServer(t)
	w := srv.Raw(t)
	cases := []struct {
		name   string
		opts   []string
		cmds   [][]string
		writes []string // the keys another client then writes
		want   []string // the keys the tracking client hears of
	}{
		{name: "declared-unread", cmds: [][]string{{"EVAL", "return 1", "2", "{s}a", "{s}b"}}, writes: []string{"{s}a", "{s}b"}},
		{name: "read", cmds: [][]string{{"EVAL", "return redis.call('hget', KEYS[2], 'f')", "2", "{s}a", "{s}b"}},
			writes: []string{"{s}a", "{s}b"}, want: []string{"{s}a", "{s}b"}},
		{name: "written", cmds: [][]string{{"EVAL", "return redis.call('set', KEYS[1], 'x')", "2", "{s}a", "{s}b"}}, writes: []string{"{s}a", "{s}b"}},
		{name: "written-and-read", cmds: [][]string{{"EVAL", "redis.call('set', KEYS[1], 'x'); return redis.call('exists', KEYS[1])", "2", "{s}a", "{s}b"}},
			writes: []string{"{s}a", "{s}b"}, want: []string{"{s}a", "{s}b"}},
		{name: "read-only", cmds: [][]string{{"EVAL_RO", "return 1", "1", "{s}a"}, {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "{s}b"}},
			writes: []string{"{s}a", "{s}b"}, want: []string{"{s}b"}},
		{name: "function", cmds: [][]string{{"FCALL", "trk_get", "2", "{s}a", "{s}b"}, {"FCALL", "trk_one", "1", "{s}c"}, {"FCALL_RO", "trk_one", "1", "{s}d"}},
			writes: []string{"{s}a", "{s}b", "{s}c", "{s}d"}, want: []string{"{s}a", "{s}b"}},
		{name: "optin", opts: []string{"OPTIN"}, cmds: [][]string{{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}a"},
			{"CLIENT", "CACHING", "YES"}, {"EVAL", "redis.call('get', KEYS[1]); return redis.call('get', KEYS[2])", "2", "{s}b", "{s}c"},
			{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}d"}},
			writes: []string{"{s}a", "{s}b", "{s}c", "{s}d"}, want: []string{"{s}b", "{s}c"}},
		{name: "optout", opts: []string{"OPTOUT"}, cmds: [][]string{{"CLIENT", "CACHING", "NO"}, {"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}a"},
			{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}b"}},
			writes: []string{"{s}a", "{s}b"}, want: []string{"{s}b"}},
		{name: "bcast", opts: []string{"BCAST", "PREFIX", "{s}b"}, cmds: [][]string{{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}a"}},
			writes: []string{"{s}a", "{s}b"}, want: []string{"{s}b"}},
		{name: "multi", cmds: [][]string{{"MULTI"}, {"EVAL", "return redis.call('get', KEYS[1])", "2", "{s}a", "{s}b"}, {"EVAL", "return 1", "1", "{s}c"}, {"EXEC"}},
			writes: []string{"{s}a", "{s}b", "{s}c"}, want: []string{"{s}a", "{s}b"}},
	}
	expectReply(t, w.Do("FUNCTION", "LOAD", "REPLACE", "#!lua name=trk\n"+
		"redis.register_function{function_name='trk_get', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n"+
		"redis.register_function{function_name='trk_one', callback=function(keys) return 1 end, flags={'no-writes'}}"), "\"trk\"")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectReply(t, w.Do("FLUSHALL"), "OK")
			a := resp3Tracking(t, srv, tc.opts...)
			defer a.Close()
			for _, cmd := range tc.cmds {
				if r := a.Do(cmd...); r.IsError() {
					t.Fatalf("%q: %s", cmd, r)
				}
			}
			for _, k := range tc.writes {
				expectReply(t, w.Do("SET", k, "v"), "OK")
			}
			a.Send("PING")
			var got []string
			for {
				r := a.MustRead()
				if r.Str == "PONG" {
					break
				}
				if len(r.Elems) != 2 || r.Elems[0].Str != "invalidate" {
					t.Fatalf("unexpected %s", r)
				}
				for _, k := range r.Elems[1].Elems {
					got = append(got, k.Str)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("invalidated %s, want %s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
		})
	}
}
