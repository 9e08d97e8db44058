package config

import "testing"

// The table holds Redis 7.0's 192 parameters (CONFIG GET * of
// redis-server 7.0.15), each with a default its own type accepts.
func TestParamsTable(t *testing.T) {
	n := 0
	for i := range params {
		p := &params[i]
		if i < len(params)-len(extras) {
			n++
		}
		if p.kind == kindSpecial && p.check == nil && p.get == nil {
			t.Errorf("%s: special without a check", p.name)
		}
		if v, err := p.normalize(p.def); err != nil || v != p.def {
			if p.name != "replicaof" && p.name != "slaveof" && p.name != "bind" && p.get == nil {
				t.Errorf("%s: default %q normalizes to %q, %v", p.name, p.def, v, err)
			}
		}
	}
	if n != 192 {
		t.Fatalf("%d Redis parameters, want 192", n)
	}
}

// CONFIG SET of several parameters applies all or none.
func TestSetAtomic(t *testing.T) {
	c := Default()
	if e := c.Set([]string{"hz", "20", "timeout", "5"}); e != "" {
		t.Fatal(e)
	}
	e := c.Set([]string{"hz", "30", "set-max-intset-entries", "7", "timeout", "x"})
	want := "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
	if e != want {
		t.Fatalf("got %q", e)
	}
	got := c.Get([][]byte{[]byte("hz"), []byte("timeout"), []byte("set-max-intset-entries")})
	if len(got) != 6 || got[1] != "20" || got[3] != "5" || got[5] != "512" {
		t.Fatalf("after a failed SET: %q", got)
	}
}
