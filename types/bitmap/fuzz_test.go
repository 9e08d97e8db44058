package bitmap

import (
	"bytes"
	"testing"
)

// FuzzParseBitfield feeds space-separated argument lists to ParseBitfield
// and runs what parses: nothing may panic, a read-only program must not
// change the value, and results come one per field.
func FuzzParseBitfield(f *testing.F) {
	for _, s := range []string{
		"get u8 0",
		"incrby i5 100 1 get u4 0",
		"overflow fail set u2 #3 9 overflow sat incrby i64 0 -9223372036854775808",
		"set u63 #1 -1 get i64 4294967288",
		"get U8 0",
		"overflow",
	} {
		f.Add([]byte(s), false, []byte("\xff\x00abc"))
	}
	f.Fuzz(func(t *testing.T, line []byte, readOnly bool, val []byte) {
		args := bytes.Fields(line)
		p, err := ParseBitfield(args, readOnly)
		if err != nil {
			return
		}
		if readOnly && p.Writes() {
			t.Fatal("read-only program writes")
		}
		if p.size > 1<<16 {
			return // a valid but huge write; not worth allocating here
		}
		orig := append([]byte(nil), val...)
		got, results := p.Exec(append([]byte(nil), val...), nil)
		if len(results) != len(p.Fields) {
			t.Fatalf("%d results for %d fields", len(results), len(p.Fields))
		}
		if !p.Writes() && !bytes.Equal(got, orig) {
			t.Fatal("read-only program changed the value")
		}
	})
}
