package tests

import "testing"

// PFDEBUG GETREG answers the 16384 registers, turning a sparse value dense
// first (as Redis does), and the count is unchanged by it.
func TestPFDebugGetReg(t *testing.T) {
	c := StartServer(t).Raw(t)
	if r := c.Do("PFADD", "h", "a", "b", "c"); r.Int != 1 {
		t.Fatalf("PFADD: %s", r.String())
	}
	r := c.Do("PFDEBUG", "GETREG", "h")
	if len(r.Elems) != 16384 {
		t.Fatalf("GETREG: %d registers", len(r.Elems))
	}
	set := 0
	for _, e := range r.Elems {
		if e.Kind != KindInt || e.Int < 0 || e.Int > 63 {
			t.Fatalf("GETREG: register %s", e.String())
		}
		if e.Int > 0 {
			set++
		}
	}
	if set < 1 || set > 3 {
		t.Fatalf("GETREG: %d registers set by 3 elements", set)
	}
	if r := c.Do("PFDEBUG", "ENCODING", "h"); r.Str != "dense" {
		t.Fatalf("after GETREG: %s", r.String())
	}
	if r := c.Do("PFCOUNT", "h"); r.Int != 3 {
		t.Fatalf("PFCOUNT after GETREG: %s", r.String())
	}
}
