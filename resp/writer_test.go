package resp

import (
	"math"
	"testing"
)

func TestWriter(t *testing.T) {
	for _, c := range []struct {
		name         string
		write        func(w *Writer)
		resp2, resp3 string
	}{
		{"simple", func(w *Writer) { w.SimpleString("OK") }, "+OK\r\n", "+OK\r\n"},
		{"simple newlines", func(w *Writer) { w.SimpleString("a\r\nb") }, "+a  b\r\n", "+a  b\r\n"},
		{"error", func(w *Writer) { w.Error("ERR syntax error") }, "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
		{"error dash", func(w *Writer) { w.Error("-WRONGTYPE x") }, "-WRONGTYPE x\r\n", "-WRONGTYPE x\r\n"},
		{"error newlines", func(w *Writer) { w.Error("ERR a\nb\rc") }, "-ERR a b c\r\n", "-ERR a b c\r\n"},
		{"int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
		{"int min", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"bulk empty", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk string", func(w *Writer) { w.BulkString("hello") }, "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.Array(12) }, "*12\r\n", "*12\r\n"},
		{"map", func(w *Writer) { w.Map(3) }, "*6\r\n", "%3\r\n"},
		{"set", func(w *Writer) { w.Set(2) }, "*2\r\n", "~2\r\n"},
		{"push", func(w *Writer) { w.Push(3) }, "*3\r\n", ">3\r\n"},
		{"bool true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"bool false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", []byte("hi\n")) }, "$3\r\nhi\n\r\n", "=7\r\ntxt:hi\n\r\n"},
		{"verbatim bad format", func(w *Writer) { w.Verbatim("markdown", []byte("x")) }, "$1\r\nx\r\n", "=5\r\ntxt:x\r\n"},
		{"big number", func(w *Writer) { w.BigNumber("-12345678901234567890") }, "$21\r\n-12345678901234567890\r\n", "(-12345678901234567890\r\n"},
		{"sequence", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Null() }, "*2\r\n$1\r\nk\r\n$-1\r\n", "%1\r\n$1\r\nk\r\n_\r\n"},
	} {
		for proto, want := range map[int]string{2: c.resp2, 3: c.resp3, 0: c.resp2} {
			w := Writer{Proto: proto}
			c.write(&w)
			if string(w.Buf) != want {
				t.Errorf("%s RESP%d: got %q, want %q", c.name, proto, w.Buf, want)
			}
			if w.Len() != len(want) {
				t.Errorf("%s: Len %d", c.name, w.Len())
			}
			w.Reset()
			if w.Len() != 0 {
				t.Errorf("%s: Reset left %d bytes", c.name, w.Len())
			}
		}
	}
}

// The expected texts are redis-server 7.0.15's ZSCORE replies for these
// scores, in RESP2 and RESP3.
func TestWriterDouble(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{1.5, "1.5"},
		{0.1, "0.10000000000000001"},
		{1e100, "1e+100"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{3, "3"},
		{0, "0"},
		{1e16, "10000000000000000"},
		{1e17, "1e+17"},
		{123456789012345678, "1.2345678901234568e+17"},
		{0.0001, "0.0001"},
		{0.00001, "1.0000000000000001e-05"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{5e-324, "4.9406564584124654e-324"},
		{2.5e-5, "2.5000000000000001e-05"},
		{100, "100"},
		{-1.25, "-1.25"},
		{math.Copysign(0, -1), "-0"}, // C's %.17g; Redis stores -0 scores as 0
		{math.NaN(), "nan"},
	} {
		w2 := Writer{Proto: 2}
		w2.Double(c.f)
		w3 := Writer{Proto: 3}
		w3.Double(c.f)
		var bulk Writer
		bulk.BulkString(c.want)
		if string(w2.Buf) != string(bulk.Buf) {
			t.Errorf("RESP2 %v: got %q, want %q", c.f, w2.Buf, bulk.Buf)
		}
		if string(w3.Buf) != ","+c.want+"\r\n" {
			t.Errorf("RESP3 %v: got %q, want %q", c.f, w3.Buf, ","+c.want+"\r\n")
		}
	}
}

func TestWriterNoAllocs(t *testing.T) {
	for _, proto := range []int{2, 3} {
		w := Writer{Buf: make([]byte, 0, 4096), Proto: proto}
		b := []byte("value")
		allocs := testing.AllocsPerRun(100, func() {
			w.Reset()
			w.SimpleString("OK")
			w.Error("ERR x")
			w.Int(12345)
			w.Bulk(b)
			w.BulkString("s")
			w.Null()
			w.NullArray()
			w.Array(3)
			w.Map(2)
			w.Set(2)
			w.Push(2)
			w.Double(0.1)
			w.Double(math.Inf(-1))
			w.Bool(true)
			w.Verbatim("txt", b)
			w.BigNumber("123")
		})
		if allocs != 0 {
			t.Errorf("RESP%d: %v allocations", proto, allocs)
		}
	}
}

func BenchmarkWriterBulk(b *testing.B) {
	w := Writer{Buf: make([]byte, 0, 4096)}
	v := []byte("value")
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		w.Bulk(v)
	}
}
