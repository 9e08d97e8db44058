package client

import (
	"testing"
	"time"
)

// The gate driven step by step through EXEC's element-wise gating: a SKIP
// inside EXEC mutes the command after EXEC, OFF mutes the elements after
// it but not the header written before.
func TestGateExec(t *testing.T) {
	var g Gate
	exec := []Cmd{{Reply: "off"}, {}}
	got := string(g.Append(nil, []byte("*2\r\n+OK\r\n"), Cmd{Exec: exec}))
	if got != "*2\r\n" {
		t.Fatalf("OFF in EXEC: %q", got)
	}
	if got := string(g.Append(nil, []byte("+OK\r\n"), Cmd{Reply: "on"})); got != "+OK\r\n" {
		t.Fatalf("ON: %q", got)
	}
	exec = []Cmd{{Reply: "skip"}, {}}
	if got := string(g.Append(nil, []byte("*2\r\n$1\r\nx\r\n"), Cmd{Exec: exec})); got != "*2\r\n$1\r\nx\r\n" {
		t.Fatalf("SKIP in EXEC: %q", got)
	}
	if got := g.Append(nil, []byte("+PONG\r\n"), Cmd{}); len(got) != 0 || g.Active() {
		t.Fatalf("the command after EXEC: %q, active %v", got, g.Active())
	}
	g.Reply("off")
	if got := string(g.Append(nil, []byte(">3\r\n"), Cmd{Push: true})); got != ">3\r\n" {
		t.Fatalf("a push while OFF: %q", got)
	}
}

func TestListLine(t *testing.T) {
	f, e := ParseList([][]byte{[]byte("ID"), []byte("3"), []byte("x")})
	if e != "ERR Invalid client ID" {
		t.Fatalf("ID x: %+v %q", f, e)
	}
	if _, e := ParseList([][]byte{[]byte("TYPE"), []byte("master"), []byte("x")}); e != errSyntax {
		t.Fatalf("TYPE with 2 values: %q", e)
	}
	now := time.Now()
	i := Info{ID: 7, Multi: -1, Cmd: "client|list", Created: now, Flags: Flags{InMulti: true, Blocked: true, Subscribed: true}}
	if got := i.Flags.String(); got != "Pxb" {
		t.Fatalf("flags %q", got)
	}
	if i.Type() != Pubsub || !f.Match(&i, false, now) {
		t.Fatal("a subscribed client is pubsub")
	}
	line := string(i.Append(nil, now))
	if want := "id=7 addr= laddr= fd=0 name= age=0 idle=0 flags=Pxb db=0 sub=0 psub=0 ssub=0 multi=-1 "; line[:len(want)] != want {
		t.Fatalf("line %q", line)
	}
}
