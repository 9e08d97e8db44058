package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer appends encoded replies to Buf. Proto is the connection's protocol
// version: 3 for RESP3, anything else means RESP2. The zero value is a RESP2
// writer with an empty buffer.
type Writer struct {
	Buf   []byte
	Proto int
	// StatsDone: the errors of the reply last written were counted in the
	// error statistics by its writer (a script's reply, with the errors
	// of the commands it called), and Failed tells whether its command
	// failed; the statistics' reader clears both.
	StatsDone, Failed bool
}

// Reset empties Buf, keeping its capacity.
func (w *Writer) Reset() { w.Buf = w.Buf[:0] }

// Len is the number of bytes buffered.
func (w *Writer) Len() int { return len(w.Buf) }

func (w *Writer) resp3() bool { return w.Proto == 3 }

// header appends an aggregate or length header such as "%2\r\n".
func (w *Writer) header(kind byte, n int64) {
	w.Buf = append(w.Buf, kind)
	w.Buf = strconv.AppendInt(w.Buf, n, 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

// SimpleString appends a status reply such as "+OK"; CR and LF in s become
// spaces.
func (w *Writer) SimpleString(s string) { w.Buf = redcon.AppendString(w.Buf, s) }

// Error appends an error reply. msg is the full text without the leading
// '-', code included: "ERR syntax error", "WRONGTYPE Operation against...".
// CR and LF become spaces, as Redis does.
func (w *Writer) Error(msg string) {
	if len(msg) > 0 && msg[0] == '-' {
		msg = msg[1:]
	}
	w.Buf = redcon.AppendError(w.Buf, msg)
}

// Int appends an integer reply.
func (w *Writer) Int(n int64) { w.Buf = redcon.AppendInt(w.Buf, n) }

// Bulk appends a bulk string.
func (w *Writer) Bulk(b []byte) { w.Buf = redcon.AppendBulk(w.Buf, b) }

// BulkString appends a bulk string.
func (w *Writer) BulkString(s string) { w.Buf = redcon.AppendBulkString(w.Buf, s) }

// Null appends a null: "$-1" in RESP2, "_" in RESP3.
func (w *Writer) Null() {
	if w.resp3() {
		w.Buf = append(w.Buf, '_', '\r', '\n')
		return
	}
	w.Buf = redcon.AppendNull(w.Buf)
}

// NullArray appends a null array: "*-1" in RESP2, "_" in RESP3.
func (w *Writer) NullArray() {
	if w.resp3() {
		w.Buf = append(w.Buf, '_', '\r', '\n')
		return
	}
	w.Buf = append(w.Buf, '*', '-', '1', '\r', '\n')
}

// Array starts an array of n elements.
func (w *Writer) Array(n int) { w.Buf = redcon.AppendArray(w.Buf, n) }

// Map starts a map of n key-value pairs; in RESP2 an array of 2n elements.
func (w *Writer) Map(n int) {
	if w.resp3() {
		w.header('%', int64(n))
		return
	}
	w.Buf = redcon.AppendArray(w.Buf, 2*n)
}

// Set starts a set of n elements; in RESP2 an array.
func (w *Writer) Set(n int) {
	if w.resp3() {
		w.header('~', int64(n))
		return
	}
	w.Buf = redcon.AppendArray(w.Buf, n)
}

// Push starts an out-of-band push message of n elements (pub/sub); in RESP2
// an array.
func (w *Writer) Push(n int) {
	if w.resp3() {
		w.header('>', int64(n))
		return
	}
	w.Buf = redcon.AppendArray(w.Buf, n)
}

// Double appends a floating point reply formatted like Redis 7.0's
// addReplyDouble: C's "%.17g" ("1.5", "0.10000000000000001", "1e+100"),
// "inf" and "-inf"; NaN as "nan". RESP3 sends a ',' double, RESP2 a bulk
// string.
func (w *Writer) Double(f float64) {
	var tmp [32]byte
	var num []byte
	switch {
	case math.IsInf(f, 1):
		num = append(tmp[:0], "inf"...)
	case math.IsInf(f, -1):
		num = append(tmp[:0], "-inf"...)
	case math.IsNaN(f):
		num = append(tmp[:0], "nan"...)
	default:
		// Go's 'g' with precision 17 matches C's %.17g: same exponent
		// threshold, trailing zeros dropped, exponent of at least two digits.
		num = strconv.AppendFloat(tmp[:0], f, 'g', 17, 64)
	}
	if w.resp3() {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, num...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Buf = redcon.AppendBulk(w.Buf, num)
}

// Bool appends a boolean: "#t"/"#f" in RESP3, the integers 1/0 in RESP2.
func (w *Writer) Bool(b bool) {
	switch {
	case w.resp3() && b:
		w.Buf = append(w.Buf, '#', 't', '\r', '\n')
	case w.resp3():
		w.Buf = append(w.Buf, '#', 'f', '\r', '\n')
	case b:
		w.Buf = append(w.Buf, ':', '1', '\r', '\n')
	default:
		w.Buf = append(w.Buf, ':', '0', '\r', '\n')
	}
}

// Verbatim appends a verbatim string: in RESP3 "=" with the three-byte
// format ("txt" or "mkd"; anything not three bytes long becomes "txt"), in
// RESP2 a plain bulk string of text.
func (w *Writer) Verbatim(format string, text []byte) {
	if !w.resp3() {
		w.Buf = redcon.AppendBulk(w.Buf, text)
		return
	}
	if len(format) != 3 {
		format = "txt"
	}
	w.header('=', int64(len(text)+4))
	w.Buf = append(w.Buf, format...)
	w.Buf = append(w.Buf, ':')
	w.Buf = append(w.Buf, text...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BigNumber appends an arbitrary-precision integer given in decimal: "(" in
// RESP3, a bulk string in RESP2.
func (w *Writer) BigNumber(n string) {
	if !w.resp3() {
		w.Buf = redcon.AppendBulkString(w.Buf, n)
		return
	}
	w.Buf = append(w.Buf, '(')
	w.Buf = append(w.Buf, n...)
	w.Buf = append(w.Buf, '\r', '\n')
}
