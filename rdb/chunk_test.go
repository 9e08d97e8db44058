package rdb

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestChunksInterleaved cuts the key entries of several producers into
// chunks, interleaves them with journal chunks, and reassembles them.
func TestChunksInterleaved(t *testing.T) {
	r := testRand(t)
	ds := randDataset(r, 40, true)
	type producer struct {
		id    uint32
		items [][]byte
	}
	var prods []*producer
	want := dataset{}
	i := 0
	for k, v := range ds {
		if i%5 == 0 {
			prods = append(prods, &producer{id: uint32(len(prods) + 1)})
		}
		p := prods[len(prods)-1]
		e := NewEncoder(nil)
		e.SelectDB(7)
		encodeValue(e, k, v)
		if err := e.Err(); err != nil {
			t.Fatal(err)
		}
		p.items = append(p.items, e.TakeBytes())
		want[dbKey(7, k)] = v
		i++
	}
	// Interleave: each round, a random producer emits its next chunk.
	var wire []byte
	type cursor struct {
		item, off int
	}
	cur := make([]cursor, len(prods))
	journal := 0
	for {
		var live []int
		for pi, p := range prods {
			if cur[pi].item < len(p.items) {
				live = append(live, pi)
			}
		}
		if len(live) == 0 {
			break
		}
		pi := live[r.IntN(len(live))]
		p, c := prods[pi], &cur[pi]
		item := p.items[c.item]
		n := min(1+r.IntN(5000), len(item)-c.off)
		op := OpChunk
		if c.off+n == len(item) {
			op = OpChunkEnd
		}
		wire = AppendChunk(wire, op, p.id, item[c.off:c.off+n])
		if c.off += n; op == OpChunkEnd {
			c.item, c.off = c.item+1, 0
		}
		if r.IntN(4) == 0 {
			wire = AppendChunk(wire, OpJournal, 99, []byte("journal entry"))
			journal++
		}
	}
	cr := NewChunkReader(bytes.NewReader(wire))
	c := newCollector(t)
	d := NewDecoder(nil)
	gotJournal := 0
	for {
		ch, err := cr.NextItem()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ch.Op {
		case OpJournal:
			gotJournal++
			if string(ch.Payload) != "journal entry" {
				t.Fatalf("journal payload %q", ch.Payload)
			}
		case OpChunkEnd:
			d.Reset(bytes.NewReader(ch.Payload))
			if err := d.DecodeFragment(c); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("op %x", ch.Op)
		}
	}
	if gotJournal != journal {
		t.Fatalf("%d journal chunks, want %d", gotJournal, journal)
	}
	if diff := diffDatasets(want, c.data); diff != "" {
		t.Fatal(diff)
	}
}

func TestChunkErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"truncated header", []byte{OpChunk, 1, 0}, ErrTruncated},
		{"truncated payload", AppendChunk(nil, OpChunkEnd, 1, []byte("abcdef"))[:12], ErrTruncated},
		{"bad opcode", AppendChunk(nil, 0x42, 1, nil), ErrCorrupt},
		{"huge length", []byte{OpChunk, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, ErrCorrupt},
		{"incomplete item", AppendChunk(nil, OpChunk, 1, []byte("ab")), ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := NewChunkReader(bytes.NewReader(tc.in))
			var err error
			for err == nil {
				_, err = cr.NextItem()
			}
			var e *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &e) {
				t.Fatalf("%v, want %v with an offset", err, tc.want)
			}
		})
	}
	cr := NewChunkReader(bytes.NewReader(AppendChunks(nil, 1, bytes.Repeat([]byte("x"), 100), 10)))
	cr.MaxPending = 50
	if _, err := cr.NextItem(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("pending limit: %v", err)
	}
}

func TestFragmentErrors(t *testing.T) {
	for _, in := range [][]byte{
		{opExpireTimeMs, 1, 2, 3, 4, 5, 6, 7, 8}, // metadata without its key
		{opEOF},                                  // EOF inside a fragment
		rec(byte(typeString), "k", "v")[:4],      // cut inside a key
	} {
		err := NewDecoder(bytes.NewReader(in)).DecodeFragment(NopHandler{})
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%q: %v", in, err)
		}
	}
}

func TestEncoderMisuse(t *testing.T) {
	for name, f := range map[string]func(e *Encoder){
		"too few": func(e *Encoder) { e.BeginSet([]byte("k"), 2, Meta{}); e.SetMember([]byte("a")) },
		"too many": func(e *Encoder) {
			e.BeginSet([]byte("k"), 1, Meta{})
			e.SetMember([]byte("a"))
			e.SetMember([]byte("b"))
		},
		"wrong element": func(e *Encoder) { e.BeginSet([]byte("k"), 1, Meta{}); e.HashField([]byte("a"), nil) },
		"empty":         func(e *Encoder) { e.BeginList([]byte("k"), 0, Meta{}) },
		"nested":        func(e *Encoder) { e.BeginSet([]byte("k"), 1, Meta{}); e.String([]byte("x"), nil, Meta{}) },
		"select inside": func(e *Encoder) { e.BeginSet([]byte("k"), 1, Meta{}); e.SelectDB(1) },
		"stream order": func(e *Encoder) {
			e.BeginStream([]byte("k"), 2, Meta{})
			e.StreamEntry(StreamID{2, 0}, nil)
			e.StreamEntry(StreamID{1, 0}, nil)
		},
		"stream no meta": func(e *Encoder) { e.BeginStream([]byte("k"), 0, Meta{}) },
		"stream length":  func(e *Encoder) { e.BeginStream([]byte("k"), 0, Meta{}); e.StreamMeta(StreamMeta{Length: 1}) },
		"group missing":  func(e *Encoder) { e.BeginStream([]byte("k"), 0, Meta{}); e.StreamMeta(StreamMeta{Groups: 1}) },
		"pending missing": func(e *Encoder) {
			e.BeginStream([]byte("k"), 0, Meta{})
			e.StreamMeta(StreamMeta{Groups: 1})
			e.StreamGroup(StreamGroup{Pending: 1})
			e.StreamConsumers(0)
		},
		"NaN score": func(e *Encoder) { e.BeginZSet([]byte("k"), 1, Meta{}); e.ZSetMember([]byte("a"), nan()) },
		"odd stream fields": func(e *Encoder) {
			e.BeginStream([]byte("k"), 1, Meta{})
			e.StreamEntry(StreamID{1, 0}, [][]byte{[]byte("f")})
		},
	} {
		e := NewEncoder(nil)
		f(e)
		if e.End() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := EncodeDump(func(e *Encoder) {}); err == nil {
		t.Error("empty dump accepted")
	}
	if _, err := EncodeDump(func(e *Encoder) { e.String(nil, nil, Meta{}); e.String(nil, nil, Meta{}) }); err == nil {
		t.Error("two values in a dump accepted")
	}
}

func nan() float64 { var z float64; return z / z }

// TestEncoderFlushes checks that an Encoder with a writer keeps its
// buffer bounded while a huge value streams through it.
func TestEncoderFlushes(t *testing.T) {
	w := &maxWrite{}
	e := NewEncoder(w)
	e.WriteHeader()
	const n = 200000
	e.BeginList([]byte("big"), n, Meta{})
	maxBuf := 0
	elem := bytes.Repeat([]byte("e"), 100)
	for range n {
		e.ListElement(elem)
		maxBuf = max(maxBuf, e.Len())
	}
	if err := e.End(); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteEOF(); err != nil {
		t.Fatal(err)
	}
	if maxBuf > FlushSize+ListNodeEntries*200 {
		t.Fatalf("buffer grew to %d", maxBuf)
	}
	c, err := decodeAll(t, w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.data["0:big"].List); got != n {
		t.Fatalf("%d elements", got)
	}
}

type maxWrite struct{ bytes.Buffer }

func TestStringInParts(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 100000)
	var out bytes.Buffer
	e := NewEncoder(&out)
	e.WriteHeader()
	e.BeginString([]byte("big"), len(big), Meta{ExpireAt: farFuture})
	for p := big; len(p) > 0; p = p[min(len(p), 3000):] {
		e.StringPart(p[:min(len(p), 3000)])
		if e.Len() > FlushSize+3000 {
			t.Fatalf("buffered %d bytes", e.Len())
		}
	}
	if err := e.End(); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteEOF(); err != nil {
		t.Fatal(err)
	}
	c, err := decodeAll(t, out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if v := c.data["0:big"]; v.Str != string(big) || v.Meta.ExpireAt != farFuture {
		t.Fatal("string differs")
	}
	e = NewEncoder(nil)
	e.BeginString([]byte("k"), 3, Meta{})
	e.StringPart([]byte("ab"))
	if e.End() == nil {
		t.Fatal("short string accepted")
	}
}

// Buffered counts what the reader took from its source but did not
// consume: a replica applies its batch of journal entries when it is 0
// and its source has nothing buffered either.
func TestChunkReaderBuffered(t *testing.T) {
	var in []byte
	for i := range 3 {
		in = AppendChunk(in, OpJournal, 1, []byte{byte(i), 'x'})
	}
	r := NewChunkReader(bytes.NewReader(in))
	if r.Buffered() != 0 {
		t.Fatalf("Buffered before reading: %d", r.Buffered())
	}
	per := len(in) / 3
	for i := range 3 {
		ch, err := r.NextItem()
		if err != nil || ch.Op != OpJournal || ch.Payload[0] != byte(i) {
			t.Fatalf("item %d: %+v %v", i, ch, err)
		}
		if want := per * (2 - i); r.Buffered() != want {
			t.Fatalf("after item %d: Buffered %d, want %d", i, r.Buffered(), want)
		}
	}
	// A source that delivers a byte per read: nothing is read ahead.
	r = NewChunkReader(iotest.OneByteReader(bytes.NewReader(in)))
	if _, err := r.NextItem(); err != nil || r.Buffered() != 0 {
		t.Fatalf("one byte per read: Buffered %d (%v)", r.Buffered(), err)
	}
}
