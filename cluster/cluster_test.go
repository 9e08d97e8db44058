package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/dfly/dfly/command"
)

// Slots as redis-server 7.0.15 in cluster mode answers CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31C3 (the spec's test vector)", got)
	}
	for key, want := range map[string]int{
		"123456789": 12739, "a": 15495, "b": 3300, "c": 7365, "foo": 12182,
		"{a}1": 15495, "{}a": 10875, "{a}": 15495, "a{b}c{d}": 3300, "{{a}}": 10276,
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

const three = `[
 {"slot_ranges": [{"start": 0, "end": 5460}], "master": {"id": "a", "ip": "127.0.0.1", "port": 7001}, "replicas": [{"id": "ar", "ip": "127.0.0.1", "port": 7004}]},
 {"slot_ranges": [{"start": 5461, "end": 10922}], "master": {"id": "b", "ip": "127.0.0.1", "port": 7002}, "replicas": []},
 {"slot_ranges": [{"start": 10923, "end": 16383}], "master": {"id": "c", "ip": "127.0.0.1", "port": 7003}, "replicas": []}
]`

func TestParseShapes(t *testing.T) {
	top, err := Parse([]byte(three))
	if err != nil {
		t.Fatal(err)
	}
	if top.Epoch != 0 || len(top.Groups) != 3 || top.Groups[0].Replicas[0].ID != "ar" {
		t.Fatalf("parsed %+v", top)
	}
	top.Epoch = 7
	again, err := Parse(top.JSON())
	if err != nil || again.Epoch != 7 || len(again.Groups) != 3 {
		t.Fatalf("round trip: %+v, %v", again, err)
	}
	for _, bad := range []string{
		`[{"slot_ranges": [{"start": 0, "end": 16384}], "master": {"id": "a", "ip": "h", "port": 1}}]`,
		`[{"slot_ranges": [{"start": 5, "end": 1}], "master": {"id": "a", "ip": "h", "port": 1}}]`,
		`[{"slot_ranges": [{"start": 0, "end": 10}], "master": {"id": "a", "ip": "h", "port": 1}},
		  {"slot_ranges": [{"start": 10, "end": 20}], "master": {"id": "b", "ip": "h", "port": 2}}]`,
		`[{"slot_ranges": [], "master": {"id": "a", "ip": "h", "port": 1}, "replicas": [{"id": "a", "ip": "h", "port": 2}]}]`,
		`[{"slot_ranges": [], "master": {"id": "", "ip": "h", "port": 1}}]`,
		`{"epoch": 1, "shards": [`,
		`not json`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) accepted it", bad)
		}
	}
}

func route(keys ...string) *Route {
	r := &Route{}
	for _, k := range keys {
		r.AddKey([]byte(k))
	}
	return r
}

func TestRefusal(t *testing.T) {
	st := New(Yes, "b", "", 7002)
	if e := st.Refusal(route("a"), false); e != ErrNotServed {
		t.Fatalf("before a topology: %q", e)
	}
	top, _ := Parse([]byte(three))
	if err := st.Apply(top); err != nil {
		t.Fatal(err)
	}
	if st.Epoch() != 1 {
		t.Fatalf("a bare array takes the next epoch: %d", st.Epoch())
	}
	for _, c := range []struct {
		keys []string
		want string
	}{
		{[]string{"g"}, ""}, // 7233: b's
		{[]string{"a"}, "MOVED 15495 127.0.0.1:7003"},
		{[]string{"b"}, "MOVED 3300 127.0.0.1:7001"},
		{[]string{"{g}1", "{g}2"}, ""},
		{[]string{"g", "k"}, ErrCrossSlot},
		{nil, ""},
	} {
		if got := st.Refusal(route(c.keys...), false); got != c.want {
			t.Errorf("%v: %q, want %q", c.keys, got, c.want)
		}
	}
	// A replica serves its group's reads to a READONLY connection only.
	rep := New(Yes, "ar", "", 7004)
	_ = rep.Apply(top)
	r := route("b")
	if got := rep.Refusal(r, false); got != "MOVED 3300 127.0.0.1:7001" {
		t.Errorf("replica, READWRITE: %q", got)
	}
	if got := rep.Refusal(r, true); got != "" {
		t.Errorf("replica, READONLY read: %q", got)
	}
	r.Writes = true
	if got := rep.Refusal(r, true); got != "MOVED 3300 127.0.0.1:7001" {
		t.Errorf("replica, READONLY write: %q", got)
	}
	if m, ok := rep.View().MasterOf(); !ok || m.ID != "a" {
		t.Errorf("replica's master: %v %v", m, ok)
	}
	if got := rep.Refusal(route("a"), true); got != "MOVED 15495 127.0.0.1:7003" {
		t.Errorf("replica, another group's slot: %q", got)
	}
}

func TestEpochOnlyRises(t *testing.T) {
	st := New(Yes, "a", "", 7001)
	top, _ := Parse([]byte(three))
	top.Epoch = 5
	if err := st.Apply(top); err != nil {
		t.Fatal(err)
	}
	old := top.Clone()
	old.Epoch = 5
	if err := st.Apply(old); !errors.Is(err, ErrStale) {
		t.Fatalf("same epoch: %v", err)
	}
	old.Epoch = 4
	if err := st.Apply(old); !errors.Is(err, ErrStale) {
		t.Fatalf("older epoch: %v", err)
	}
	if err := New(Emulated, "", "", 1).Apply(top); !errors.Is(err, ErrDisabled) {
		t.Fatalf("emulated: %v", err)
	}
}

func TestEmulatedOwnsAll(t *testing.T) {
	st := New(Emulated, "", "", 6379)
	if len(st.ID) != 40 {
		t.Fatalf("id %q", st.ID)
	}
	if e := st.Refusal(route("a"), false); e != "" {
		t.Fatal(e)
	}
	if e := st.Refusal(route("a", "b"), false); e != ErrCrossSlot {
		t.Fatal(e)
	}
	r := replies{st: st, v: st.View(), ip: "10.0.0.1"}
	if n := r.nodes(); !strings.HasPrefix(n, st.ID+" 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-16383\n") {
		t.Fatalf("nodes: %q", n)
	}
	if !strings.Contains(r.info(), "cluster_state:ok\r\n") {
		t.Fatal(r.info())
	}
}

func TestAssign(t *testing.T) {
	top := &Topology{}
	for _, id := range []string{"a", "b"} {
		if err := top.AddMaster(Node{ID: id, IP: "h", Port: 1 + len(top.Groups)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := top.Assign("a", 0, Slots-1); err != nil {
		t.Fatal(err)
	}
	if err := top.Assign("b", 100, 199); err != nil {
		t.Fatal(err)
	}
	if err := top.Assign("a", 150, 199); err != nil {
		t.Fatal(err)
	}
	v := newView(top, "a")
	for slot, want := range map[int]string{0: "a", 99: "a", 100: "b", 149: "b", 150: "a", 16383: "a"} {
		if g := v.Owner(slot); g == nil || g.Master.ID != want {
			t.Errorf("slot %d: %v, want %s", slot, g, want)
		}
	}
	if got := top.Groups[0].SlotRanges; len(got) != 2 || got[0] != (SlotRange{0, 99}) || got[1] != (SlotRange{150, 16383}) {
		t.Errorf("a's ranges: %v", got)
	}
	if err := top.AddReplica("zz", Node{ID: "r", IP: "h", Port: 9}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("replica of nobody: %v", err)
	}
}

// The check of a command costs no allocation (it runs for every command
// in cluster mode), and stays well under a microsecond.
func TestRouteAllocates(t *testing.T) {
	st := New(Yes, "b", "", 7002)
	top, _ := Parse([]byte(three))
	_ = st.Apply(top)
	mset := &command.Command{Name: "mset", FirstKey: 1, LastKey: -1, Step: 2, Flags: command.FlagWrite}
	args := [][]byte{[]byte("mset"), []byte("{g}1"), []byte("v"), []byte("{g}2"), []byte("v")}
	var pos []int
	allocs := testing.AllocsPerRun(1000, func() {
		var r Route
		pos = r.Add(mset, args, pos)
		if e := st.Refusal(&r, false); e != "" {
			t.Fatal(e)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per check", allocs)
	}
}

func BenchmarkRoute(b *testing.B) {
	st := New(Yes, "b", "", 7002)
	top, _ := Parse([]byte(three))
	_ = st.Apply(top)
	get := &command.Command{Name: "get", FirstKey: 1, LastKey: 1, Step: 1, Flags: command.FlagReadonly}
	args := [][]byte{[]byte("get"), []byte("{g}:12345678")}
	var pos []int
	b.ReportAllocs()
	for range b.N {
		var r Route
		pos = r.Add(get, args, pos)
		_ = st.Refusal(&r, false)
	}
}
