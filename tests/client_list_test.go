package tests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientFields parses CLIENT LIST's lines into field maps, with each
// line's keys in order under "".
func clientFields(t *testing.T, text string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		m := map[string]string{}
		var keys []string
		for _, f := range strings.Split(line, " ") {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				t.Fatalf("field %q in %q", f, line)
			}
			m[k] = v
			keys = append(keys, k)
		}
		m[""] = strings.Join(keys, " ")
		out = append(out, m)
	}
	return out
}

// CLIENT LIST's fields for connections in known states, as Redis 7.0
// shows them: in MULTI with 2 queued, subscribed to 2 channels and a
// pattern, blocked in BLPOP, named, after a pipeline, and the caller;
// TYPE and ID filters. Against redis-server too.
func TestClientListFields(t *testing.T) {
	srv := StartServer(t)
	inMulti, subbed, blocked, named, piped, me := srv.Raw(t), srv.Raw(t), srv.Raw(t), srv.Raw(t), srv.Raw(t), srv.Raw(t)
	ids := map[string]string{}
	for name, c := range map[string]*RawConn{"inmulti": inMulti, "subbed": subbed, "blocked": blocked, "named": named, "piped": piped, "me": me} {
		ids[name] = fmt.Sprint(c.Do("CLIENT", "ID").Int)
	}
	mustOK(t, named.Do("CLIENT", "SETNAME", "foo"), "SETNAME")
	mustOK(t, inMulti.Do("MULTI"), "MULTI")
	inMulti.Do("SET", "a", "1")
	inMulti.Do("GET", "a")
	subbed.Do("SUBSCRIBE", "c1", "c2")
	subbed.MustRead()
	subbed.Do("PSUBSCRIBE", "p*")
	piped.Write(EncodeCommand("SET", "x", "y") + EncodeCommand("INCR", "n") + EncodeCommand("GET", "x"))
	for i := 0; i < 3; i++ {
		piped.MustRead()
	}
	blocked.Send("BLPOP", "nolist", "0")

	var byID map[string]map[string]string
	for deadline := time.Now().Add(10 * time.Second); ; {
		byID = map[string]map[string]string{}
		for _, m := range clientFields(t, me.Do("CLIENT", "LIST").Str) {
			byID[m["id"]] = m
		}
		if byID[ids["blocked"]]["flags"] == "b" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	const keys = "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp"
	for name, id := range ids {
		m := byID[id]
		if m == nil {
			t.Fatalf("%s (id %s) not listed", name, id)
		}
		if !strings.HasPrefix(m[""], keys) {
			t.Errorf("%s: fields %q, want Redis's %q", name, m[""], keys)
		}
		if fd, _ := strconv.Atoi(m["fd"]); fd <= 0 {
			t.Errorf("%s: fd=%s", name, m["fd"])
		}
		if rbs, _ := strconv.Atoi(m["rbs"]); rbs < 1024 {
			t.Errorf("%s: rbs=%s", name, m["rbs"])
		}
	}
	for _, tc := range []struct {
		who   string
		field string
		want  string
	}{
		{"inmulti", "flags", "x"}, {"inmulti", "multi", "2"}, {"inmulti", "cmd", "get"},
		{"subbed", "flags", "P"}, {"subbed", "sub", "2"}, {"subbed", "psub", "1"}, {"subbed", "ssub", "0"},
		{"subbed", "cmd", "psubscribe"}, {"subbed", "multi", "-1"},
		{"blocked", "flags", "b"}, {"blocked", "cmd", "blpop"}, {"blocked", "argv-mem", "12"},
		{"named", "name", "foo"}, {"named", "cmd", "client|setname"}, {"named", "flags", "N"},
		{"piped", "cmd", "get"}, {"piped", "flags", "N"}, {"piped", "argv-mem", "0"}, {"piped", "omem", "0"},
		{"me", "cmd", "client|list"}, {"me", "argv-mem", "10"}, {"me", "events", "r"}, {"me", "redir", "-1"},
		{"me", "resp", "2"}, {"me", "user", "default"}, {"me", "db", "0"},
	} {
		if got := byID[ids[tc.who]][tc.field]; got != tc.want {
			t.Errorf("%s: %s=%s, want %s", tc.who, tc.field, got, tc.want)
		}
	}
	if m := byID[ids["inmulti"]]; m["multi-mem"] == "0" {
		t.Errorf("inmulti: multi-mem=0 with 2 queued commands")
	}

	listed := func(args ...string) []string {
		var out []string
		for _, m := range clientFields(t, me.Do(append([]string{"CLIENT", "LIST"}, args...)...).Str) {
			out = append(out, m["id"])
		}
		return out
	}
	if got := listed("TYPE", "pubsub"); !slices.Equal(got, []string{ids["subbed"]}) {
		t.Errorf("TYPE pubsub: %v", got)
	}
	for _, typ := range []string{"master", "replica", "slave"} {
		if got := listed("TYPE", typ); len(got) != 0 {
			t.Errorf("TYPE %s: %v", typ, got)
		}
	}
	if got := listed("TYPE", "normal"); len(got) != 5 || slices.Contains(got, ids["subbed"]) {
		t.Errorf("TYPE normal: %v", got)
	}
	if got := listed("ID", ids["piped"], "999999", ids["named"], ids["piped"]); !slices.Equal(got, []string{ids["piped"], ids["named"], ids["piped"]}) {
		t.Errorf("ID piped 999999 named piped: %v", got)
	}
	m := clientFields(t, me.Do("CLIENT", "INFO").Str)[0]
	if m["id"] != ids["me"] || m["cmd"] != "client|info" || m["argv-mem"] != "10" {
		t.Errorf("CLIENT INFO: %v", m)
	}
	for _, tc := range []struct{ args, want string }{
		{"ID x", "(error) ERR Invalid client ID"},
		{"ID", "(error) ERR syntax error"},
		{"TYPE foo", "(error) ERR Unknown client type 'foo'"},
		{"TYPE normal ID 1", "(error) ERR syntax error"},
		{"FOO", "(error) ERR syntax error"},
	} {
		expectReply(t, me.Do(append([]string{"CLIENT", "LIST"}, strings.Fields(tc.args)...)...), tc.want)
	}
}
