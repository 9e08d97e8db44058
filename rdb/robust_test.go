package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// checkedHandler accepts anything in a valid order and allocates nothing.
type checkedHandler struct {
	NopHandler
	open bool
	err  error
}

func (h *checkedHandler) Begin(key []byte, t Type, sizeHint int, m Meta) error {
	if h.open {
		h.err = errors.New("nested Begin")
	}
	if sizeHint < 0 || sizeHint > MaxSizeHint {
		h.err = errors.New("bad size hint")
	}
	h.open = true
	return nil
}

func (h *checkedHandler) End() error {
	if !h.open {
		h.err = errors.New("End without Begin")
	}
	h.open = false
	return nil
}

// mustFailWithOffset checks that decoding b fails with an *Error.
func mustFailWithOffset(t *testing.T, b []byte, want error) *Error {
	t.Helper()
	err := NewDecoder(bytes.NewReader(b)).Decode(&checkedHandler{})
	if err == nil {
		t.Fatalf("decoding succeeded, want an error")
	}
	var e *Error
	if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), "rdb: offset ") {
		t.Fatalf("error %q (%T) does not name an offset", err, err)
	}
	if e.Offset < 0 || e.Offset > int64(len(b)) {
		t.Fatalf("offset %d outside the input of %d bytes", e.Offset, len(b))
	}
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("error %q is not %q", err, want)
	}
	return e
}

func redisFile(t testing.TB) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "redis-7.0.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTruncated(t *testing.T) {
	files := [][]byte{redisFile(t)}
	old, _ := oldFile(9)
	files = append(files, old)
	for _, b := range files {
		step := 1
		if len(b) > 20000 {
			step = 7
		}
		if raceEnabled { // the race detector slows decoding 20x
			step *= 13
		}
		for n := 0; n < len(b); n += step {
			mustFailWithOffset(t, b[:n], nil)
		}
	}
}

func TestChecksum(t *testing.T) {
	b := redisFile(t)
	bad := bytes.Clone(b)
	bad[len(bad)-3] ^= 0x10
	e := mustFailWithOffset(t, bad, ErrChecksum)
	if e.Offset != int64(len(b)-8) {
		t.Fatalf("checksum error at %d, want %d", e.Offset, len(b)-8)
	}
	// A flipped bit in the body: the checksum catches what parsing does not.
	for i := 9; i < len(b)-8; i += 97 {
		bad := bytes.Clone(b)
		bad[i] ^= 1 << (i % 8)
		mustFailWithOffset(t, bad, nil)
	}
	// 0 means checksums were disabled.
	zero := bytes.Clone(b)
	clear(zero[len(zero)-8:])
	if err := NewDecoder(bytes.NewReader(zero)).Decode(NopHandler{}); err != nil {
		t.Fatal(err)
	}
}

// TestBitFlipsNoChecksum flips bytes of files whose checksum is disabled:
// parsing alone must then reject or accept, never panic.
func TestBitFlipsNoChecksum(t *testing.T) {
	r := testRand(t)
	old, _ := oldFile(9)
	for _, b := range [][]byte{redisFile(t), old} {
		clear(b[len(b)-8:])
		rounds := 3000
		if raceEnabled {
			rounds = 200
		}
		for range rounds {
			bad := bytes.Clone(b)
			for range 1 + r.IntN(3) {
				bad[9+r.IntN(len(bad)-17)] = byte(r.Uint32())
			}
			h := &checkedHandler{}
			err := NewDecoder(bytes.NewReader(bad)).Decode(h)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error without offset: %v", err)
				}
			} else if h.err != nil || h.open {
				t.Fatalf("bad call order reported as success: %v", h.err)
			}
		}
	}
}

// file builds an RDB v10 file around records.
func file(records ...[]byte) []byte {
	b := []byte("REDIS0010")
	for _, r := range records {
		b = append(b, r...)
	}
	b = append(b, opEOF)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b))
}

func rec(parts ...any) []byte {
	e := NewEncoder(nil)
	for _, p := range parts {
		switch p := p.(type) {
		case byte:
			e.buf = append(e.buf, p)
		case int:
			e.appendLen(uint64(p))
		case uint64:
			e.appendLen(p)
		case string:
			e.appendBlob([]byte(p))
		case []byte:
			e.buf = append(e.buf, p...)
		}
	}
	return e.buf
}

func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestHostileInput(t *testing.T) {
	badLP := func(mutate func([]byte) []byte) string {
		var lp listpack
		lp.reset()
		lp.appendString([]byte("hello"))
		lp.appendInt(5)
		b, _ := lp.finish()
		return string(mutate(bytes.Clone(b)))
	}
	cases := []struct {
		name string
		in   []byte
		want error
		msg  string
	}{
		{"4GiB string", file(rec(byte(typeString), "k", []byte{0x80, 0xff, 0xff, 0xff, 0xff}, "abc")), ErrTruncated, "unexpected end"},
		{"2^63 string", file(rec(byte(typeString), "k", []byte{0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "abc")), ErrTruncated, ""},
		{"4G set members", file(rec(byte(typeSet), "k", uint64(1<<32), "a", "b")), ErrCorrupt, ""},
		{"huge LZF claim", file(rec(byte(typeString), "k", []byte{0xC3}, 4, uint64(1<<40), []byte{0, 'a', 0, 'b'})), ErrCorrupt, "LZF"},
		{"bad LZF", file(rec(byte(typeString), "k", []byte{0xC3}, 3, 10, []byte{0xE0, 0x10, 0x00})), ErrCorrupt, "LZF"},
		{"bad length byte", file(rec(byte(typeSet), "k", []byte{0x82})), ErrCorrupt, "length"},
		{"unknown type", file(rec(byte(8), "k")), ErrCorrupt, "unknown record type 8"},
		{"module type", file(rec(byte(typeModule2), "k", uint64(0x1234567890abcdef))), ErrModuleType, "unsupported module type"},
		{"module aux", file(rec(byte(opModuleAux), 1)), ErrModuleType, "unsupported module type"},
		{"version 12", []byte("REDIS0012\xff"), ErrVersion, "version 12"},
		{"not rdb", []byte("HELLO0010\xff"), ErrCorrupt, "signature"},
		{"lp total lies", file(rec(byte(typeSetListpack), "k", badLP(func(b []byte) []byte { b[0]++; return b }))), ErrCorrupt, "listpack header size"},
		{"lp count lies", file(rec(byte(typeSetListpack), "k", badLP(func(b []byte) []byte { b[4] = 7; return b }))), ErrCorrupt, "count"},
		{"lp entry overruns", file(rec(byte(typeSetListpack), "k", badLP(func(b []byte) []byte { b[6] = 0x80 | 60; return b }))), ErrCorrupt, "overruns its blob"},
		{"lp 32-bit len overruns", file(rec(byte(typeSetListpack), "k", badLP(func(b []byte) []byte {
			b = append(append(b[:6:6], 0xF0, 0xff, 0xff, 0xff, 0x7f), b[6:]...)
			binary.LittleEndian.PutUint32(b, uint32(len(b)))
			return b
		}))), ErrCorrupt, "overruns"},
		{"lp bad backlen", file(rec(byte(typeSetListpack), "k", badLP(func(b []byte) []byte { b[6+6] = 9; return b }))), ErrCorrupt, "backlen"},
		{"lp no terminator", file(rec(byte(typeSetListpack), "k", badLP(func(b []byte) []byte { b[len(b)-1] = 0; return b }))), ErrCorrupt, "terminator"},
		{"zl count lies", file(rec(byte(typeListZiplist), "k", string(func() []byte { b := buildZiplist("a", "b"); b[8] = 5; return b }()))), ErrCorrupt, "count"},
		{"zl prevlen lies", file(rec(byte(typeListZiplist), "k", string(func() []byte { b := buildZiplist("a", "b"); b[13] = 9; return b }()))), ErrCorrupt, "prevlen"},
		{"zl tail lies", file(rec(byte(typeListZiplist), "k", string(func() []byte { b := buildZiplist("a", "b"); b[4] = 0; return b }()))), ErrCorrupt, "tail"},
		{"zl string overruns", file(rec(byte(typeListZiplist), "k", string(func() []byte { b := buildZiplist("a", "b"); b[11] = 0x3f; return b }()))), ErrCorrupt, "overruns"},
		{"intset length lies", file(rec(byte(typeSetIntset), "k", string(func() []byte { b := buildIntset(2, 1, 2); b[4] = 200; return b }()))), ErrCorrupt, "intset"},
		{"intset unsorted", file(rec(byte(typeSetIntset), "k", string(buildIntset(2, 2, 1)))), ErrCorrupt, "order"},
		{"hash listpack odd", file(rec(byte(typeHashListpack), "k", badLP(func(b []byte) []byte {
			var lp listpack
			lp.reset()
			lp.appendString([]byte("f"))
			out, _ := lp.finish()
			return out
		}))), ErrCorrupt, "odd"},
		{"quicklist bad container", file(rec(byte(typeListQuicklist2), "k", 1, 7, "x")), ErrCorrupt, "container"},
		{"zset NaN", file(rec(byte(typeZSet), "k", 1, "m", []byte{253})), ErrCorrupt, "NaN"},
		{"stream bad node key", file(rec(byte(typeStreamListpacks2), "k", 1, "short", "x")), ErrCorrupt, "not 16"},
		{"function pre-GA", file(rec(byte(opFunctionPreGA), "x")), ErrCorrupt, "function"},
		{"fragment record", file([]byte{OpChunk, 0, 0, 0, 0, 0, 0, 0, 0}), ErrCorrupt, "unknown record type 208"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e *Error
			n := allocated(func() { e = mustFailWithOffset(t, tc.in, tc.want) })
			if tc.msg != "" && !strings.Contains(e.Error(), tc.msg) {
				t.Fatalf("error %q lacks %q", e, tc.msg)
			}
			if n > 8<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte input", n, len(tc.in))
			}
			t.Log(e)
		})
	}
}

// TestLyingLengthsBoundMemory feeds a long real input behind a lying
// length: memory grows with the bytes that arrive, not with the claim.
func TestLyingLengthsBoundMemory(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3<<20)
	in := file(rec(byte(typeString), "k", []byte{0x80, 0xf0, 0, 0, 0}, body))
	n := allocated(func() { mustFailWithOffset(t, in[:len(in)-9], ErrTruncated) })
	if n > 16<<20 {
		t.Fatalf("allocated %d bytes for %d bytes of input", n, len(in))
	}
}

func TestEmptyKeysSkipped(t *testing.T) {
	var lp listpack
	lp.reset()
	empty, _ := lp.finish()
	in := file(
		rec(byte(typeSet), "s", 0),
		rec(byte(typeListQuicklist2), "l", 1, quicklistPacked, string(empty)),
		rec(byte(typeString), "k", "v"),
	)
	c := newCollector(t)
	d := NewDecoder(bytes.NewReader(in))
	if err := d.Decode(c); err != nil {
		t.Fatal(err)
	}
	if len(c.data) != 1 || d.EmptyKeysSkipped() != 2 {
		t.Fatalf("keys %v, skipped %d", c.data, d.EmptyKeysSkipped())
	}
}

func TestHandlerErrorStops(t *testing.T) {
	in := file(rec(byte(typeString), "k", "v"), rec(byte(typeString), "k2", "v"))
	boom := errors.New("boom")
	err := NewDecoder(bytes.NewReader(in)).Decode(stringFails{boom})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("%v", err)
	}
}

type stringFails struct{ err error }

func (stringFails) AUX(key, val []byte) error                            { return nil }
func (stringFails) SelectDB(db uint64) error                             { return nil }
func (stringFails) ResizeDB(keys, expires uint64) error                  { return nil }
func (stringFails) Function(code []byte) error                           { return nil }
func (s stringFails) String(key, val []byte, m Meta) error               { return s.err }
func (stringFails) Begin(key []byte, t Type, sizeHint int, m Meta) error { return nil }
func (stringFails) ListElement(val []byte) error                         { return nil }
func (stringFails) SetMember(member []byte) error                        { return nil }
func (stringFails) HashField(field, val []byte) error                    { return nil }
func (stringFails) ZSetMember(member []byte, score float64) error        { return nil }
func (stringFails) StreamEntry(id StreamID, fv [][]byte) error           { return nil }
func (stringFails) StreamMeta(m StreamMeta) error                        { return nil }
func (stringFails) StreamGroup(g StreamGroup) error                      { return nil }
func (stringFails) StreamPending(p StreamPending) error                  { return nil }
func (stringFails) StreamConsumer(c StreamConsumer) error                { return nil }
func (stringFails) StreamConsumerPending(id StreamID) error              { return nil }
func (stringFails) End() error                                           { return nil }
