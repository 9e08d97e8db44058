package acl

import (
	"strings"
	"testing"

	"github.com/dfly/dfly/command"
)

func table() *command.Table {
	t := &command.Table{ByName: map[string]*command.Command{}}
	t.Add("string",
		&command.Command{Name: "get", Arity: 2, Flags: command.FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Cats: command.CategoryBit("read") | command.CategoryBit("string")},
		&command.Command{Name: "set", Arity: -3, Flags: command.FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Cats: command.CategoryBit("write") | command.CategoryBit("string")})
	t.Add("pubsub", &command.Command{Name: "publish", Arity: 3, Cats: command.CategoryBit("pubsub")})
	return t
}

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestSetUserCheckDescribe(t *testing.T) {
	tb := table()
	users := New(tb, "")
	if err := users.SetUser(tb, "u", args("on >pw +@read %R~r* ~rw* &news.*")); err != nil {
		t.Fatal(err)
	}
	r := users.Lookup("u").Rules()
	if got, want := r.Describe(), "user u on #"+hashPassword("pw")+" %R~r* ~rw* resetchannels &news.* -@all +@read"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
	for _, c := range []struct{ call, reason, object string }{
		{"get r1", "", ""},
		{"get rw1", "", ""},
		{"get x", DeniedKey, "x"},
		{"set rw1 v", DeniedCommand, "set"},
		{"publish news.a m", DeniedCommand, "publish"},
	} {
		a := args(c.call)
		reason, object := r.Check(tb.ByName[string(a[0])], a)
		if reason != c.reason || object != c.object {
			t.Errorf("Check(%s) = %q %q, want %q %q", c.call, reason, object, c.reason, c.object)
		}
	}
	if users.Authenticate([]byte("u"), []byte("bad")) != nil || users.Authenticate([]byte("u"), []byte("pw")) == nil {
		t.Fatal("Authenticate does not judge the password")
	}
	if err := users.SetUser(tb, "u", args("+@write ~x* (sel)")); err == nil || users.Lookup("u").Rules() != r {
		t.Fatalf("a failed SETUSER changed the user (err %v)", err)
	}
	if !users.Default().Rules().Unrestricted() || !users.Open() {
		t.Fatal("the default user starts unrestricted, without a password")
	}
}

func TestParseFile(t *testing.T) {
	users, err := parseFile(table(), "f.acl", "user a on nopass ~* &* +@all\n# note\n\nuser b off -@all\n")
	if err != nil {
		t.Fatal(err)
	}
	if users["default"] == nil || !users["a"].Unrestricted() || users["b"].Describe() != "user b off resetchannels -@all" {
		t.Fatalf("users %v", users)
	}
	if _, err := parseFile(table(), "f.acl", "user a\nuser a\n"); err == nil {
		t.Fatal("a duplicate user loads")
	}
}
