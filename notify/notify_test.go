package notify

import "testing"

func TestParseString(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"", ""}, {"KEA", "AKE"}, {"Ex", "xE"}, {"g$lshzxetd", "A"}, {"Agn", "A"}, {"AnK", "AK"},
		{"mEK", "KEm"}, {"zhs$lg", "g$lshz"}, {"AAA", "A"}, {"nK", "nK"}, {"tdex", "xetd"},
	} {
		c, err := Parse(tc.in)
		if err != nil || c.String() != tc.out {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, c.String(), err, tc.out)
		}
	}
	for _, bad := range []string{"a", "KEAq", " ", "G"} {
		if _, err := Parse(bad); err != ErrClass {
			t.Errorf("Parse(%q) = %v, want ErrClass", bad, err)
		}
	}
}

func TestEmit(t *testing.T) {
	var got []string
	n := &Notifier{Publish: func(ch, msg []byte) { got = append(got, string(ch)+" "+string(msg)) }}
	n.Emit(String, "set", 0, []byte("k"))
	n.SetClasses(String | Keyevent)
	n.Emit(List, "lpush", 0, []byte("k"))
	n.Emit(String, "set", 3, []byte("k"))
	n.SetClasses(All | Keyspace | Keyevent)
	n.Emit(Expired, "expired", 12, []byte("a:b"))
	want := []string{"__keyevent@3__:set k", "__keyspace@12__:a:b expired", "__keyevent@12__:expired a:b"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	var nilN *Notifier
	nilN.Emit(String, "set", 0, nil)
}
