package replpos

import (
	"slices"
	"testing"
)

func TestFieldsRoundTrip(t *testing.T) {
	for _, p := range []Position{
		{},
		{ReplID: "abc", Offset: 42},
		{FlowID: "def", LSNs: []uint64{0, 7, 9}},
		{ReplID: "abc", Offset: 1, FlowID: "abc", LSNs: []uint64{3}},
	} {
		var got Position
		for _, f := range p.Fields() {
			if !got.SetField(f[0], f[1]) {
				t.Fatalf("%+v: field %q not taken back", p, f[0])
			}
		}
		got.Valid()
		if got.ReplID != p.ReplID || got.Offset != p.Offset || got.FlowID != p.FlowID || !slices.Equal(got.LSNs, p.LSNs) {
			t.Errorf("round trip of %+v gave %+v", p, got)
		}
	}
}

// A history whose fields are malformed or incomplete is dropped, never
// half kept: a wrong position would skip or repeat writes.
func TestBadFieldsDropTheirHistory(t *testing.T) {
	for _, tc := range []struct {
		fields     [][2]string
		repl, flow bool
	}{
		{[][2]string{{FieldReplID, "a"}}, false, false}, // no offset
		{[][2]string{{FieldReplID, "a"}, {FieldReplOffset, "x"}}, false, false},
		{[][2]string{{FieldReplID, "a"}, {FieldReplOffset, "-1"}}, false, false},
		{[][2]string{{FieldFlowID, "b"}}, false, false}, // no LSNs
		{[][2]string{{FieldFlowID, "b"}, {FieldFlowLSNs, "1,x"}}, false, false},
		{[][2]string{{FieldFlowID, "b"}, {FieldFlowLSNs, "1,2"}, {FieldReplID, "a"}, {FieldReplOffset, "5"}}, true, true},
	} {
		var p Position
		for _, f := range tc.fields {
			p.SetField(f[0], f[1])
		}
		p.Valid()
		if (p.ReplID != "") != tc.repl || (p.FlowID != "") != tc.flow {
			t.Errorf("%v: got %+v", tc.fields, p)
		}
	}
	var p Position
	if p.SetField("used-mem", "1") {
		t.Error("used-mem taken as a position field")
	}
}
