package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Decoder reads RDB files (versions 1 to MaxVersion), DUMP payloads and
// fragments, reporting to a Handler. It holds its buffers between uses:
// Reset it to read another input.
type Decoder struct {
	r       reader
	h       Handler
	version int

	key, str, field, blob, lzfIn []byte
	num1, num2                   []byte
	arena                        []byte
	spans                        []span
	fields, master               [][]byte

	cur struct {
		key   []byte
		t     Type
		hint  int
		meta  Meta
		begun bool
	}
	emptySkipped int
}

type span struct {
	s, e  int
	arena bool
}

// NewDecoder returns a Decoder reading r through its own buffer.
func NewDecoder(r io.Reader) *Decoder {
	d := &Decoder{num1: make([]byte, 0, 24), num2: make([]byte, 0, 24)}
	d.r.init(r)
	return d
}

// Reset makes d read r from its start, keeping d's buffers.
func (d *Decoder) Reset(r io.Reader) {
	d.r.init(r)
	d.version = 0
	d.emptySkipped = 0
}

// ResetBytes makes d read b, in place: no copy into d's buffer. b must not
// change until the decoding ends.
func (d *Decoder) ResetBytes(b []byte) {
	d.r.initBytes(b)
	d.version = 0
	d.emptySkipped = 0
}

// Version is the RDB version of the file read by Decode.
func (d *Decoder) Version() int { return d.version }

// Offset is the number of input bytes consumed.
func (d *Decoder) Offset() int64 { return d.r.offset() }

// EmptyKeysSkipped counts empty collections dropped (Redis skips them
// too).
func (d *Decoder) EmptyKeysSkipped() int { return d.emptySkipped }

// Decode reads a whole RDB file: header, records, EOF and checksum
// (verified unless the file stores 0, meaning checksums were disabled).
// It returns nil only when all of it was read and delivered.
func (d *Decoder) Decode(h Handler) error {
	d.h = h
	if err := d.header(); err != nil {
		return d.wrap(err)
	}
	return d.wrap(d.records(false))
}

// DecodeFragment reads RDB records without header, EOF or checksum up to
// the end of the input, which must fall between records: the payload of
// reassembled tagged chunks. RDB version MaxVersion encodings are
// accepted.
func (d *Decoder) DecodeFragment(h Handler) error {
	d.h = h
	d.version = MaxVersion
	return d.wrap(d.records(true))
}

func (d *Decoder) header() error {
	b, err := d.r.next(9)
	if err != nil {
		return err
	}
	if !bytes.Equal(b[:5], []byte("REDIS")) {
		return d.corrupt(0, "not an RDB file (no REDIS signature)")
	}
	v := 0
	for _, c := range b[5:] {
		if c < '0' || c > '9' {
			return d.corrupt(5, "bad RDB version %q", b[5:])
		}
		v = v*10 + int(c-'0')
	}
	if v < 1 || v > MaxVersion {
		return &Error{Offset: 5, Msg: fmt.Sprintf("RDB version %d not supported (this reader knows 1 to %d)", v, MaxVersion), Err: ErrVersion}
	}
	d.version = v
	return nil
}

func (d *Decoder) corrupt(off int64, format string, args ...any) error {
	return &Error{Offset: off, Msg: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

// wrap gives err an offset when it has none.
func (d *Decoder) wrap(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, ErrTruncated) {
		return &Error{Offset: d.r.offset(), Msg: "unexpected end of input (truncated file?)", Err: ErrTruncated}
	}
	return &Error{Offset: d.r.offset(), Msg: err.Error(), Err: err}
}

func (d *Decoder) records(fragment bool) error {
	var meta Meta
	for {
		if fragment && d.r.atEOF() {
			if meta != (Meta{}) {
				return d.corrupt(d.r.offset(), "fragment ends after key metadata")
			}
			return nil
		}
		off := d.r.offset()
		op, err := d.r.readByte()
		if err != nil {
			return err
		}
		switch op {
		case opEOF:
			if fragment {
				return d.corrupt(off, "EOF opcode inside a fragment")
			}
			return d.trailer()
		case opSelectDB:
			n, err := d.length()
			if err != nil {
				return err
			}
			if err := d.h.SelectDB(n); err != nil {
				return err
			}
		case opResizeDB:
			keys, err := d.length()
			if err != nil {
				return err
			}
			expires, err := d.length()
			if err != nil {
				return err
			}
			if err := d.h.ResizeDB(keys, expires); err != nil {
				return err
			}
		case opAux:
			k, err := d.readString(&d.key)
			if err != nil {
				return err
			}
			v, err := d.readString(&d.str)
			if err != nil {
				return err
			}
			if err := d.h.AUX(k, v); err != nil {
				return err
			}
		case opExpireTime:
			s, err := d.r.uint32LE()
			if err != nil {
				return err
			}
			meta.ExpireAt = max(int64(int32(s))*1000, 1)
		case opExpireTimeMs:
			ms, err := d.r.uint64LE()
			if err != nil {
				return err
			}
			meta.ExpireAt = max(int64(ms), 1)
		case opIdle:
			n, err := d.length()
			if err != nil {
				return err
			}
			meta.Idle, meta.HasIdle = n, true
		case opFreq:
			b, err := d.r.readByte()
			if err != nil {
				return err
			}
			meta.Freq, meta.HasFreq = b, true
		case opFunction2:
			code, err := d.readString(&d.str)
			if err != nil {
				return err
			}
			if err := d.h.Function(code); err != nil {
				return err
			}
		case opFunctionPreGA:
			return d.corrupt(off, "pre-release function format not supported")
		case opModuleAux:
			return &Error{Offset: off, Msg: "unsupported module type: module aux data", Err: ErrModuleType}
		default:
			if !isValueType(op) {
				return d.corrupt(off, "unknown record type %d", op)
			}
			key, err := d.readString(&d.key)
			if err != nil {
				return err
			}
			if err := d.value(op, off, key, meta); err != nil {
				return err
			}
			meta = Meta{}
			d.trimBuffers()
		}
	}
}

func (d *Decoder) trailer() error {
	if d.version < 5 {
		return nil
	}
	sum := d.r.checksum()
	off := d.r.offset()
	stored, err := d.r.uint64LE()
	if err != nil {
		return err
	}
	if stored != 0 && stored != sum {
		return &Error{Offset: off, Msg: fmt.Sprintf("checksum mismatch: file has %016x, content is %016x", stored, sum), Err: ErrChecksum}
	}
	return nil
}

func isValueType(t byte) bool {
	return t <= typeModule2 || t >= typeHashZipmap && t <= typeStreamListpacks3
}

// trimBuffers drops buffers a huge value grew, so one big key does not
// pin its size for the rest of the load.
func (d *Decoder) trimBuffers() {
	const keep = 4 << 20
	if cap(d.str) > keep {
		d.str = nil
	}
	if cap(d.field) > keep {
		d.field = nil
	}
	if cap(d.blob) > keep {
		d.blob = nil
	}
	if cap(d.lzfIn) > keep {
		d.lzfIn = nil
	}
	if cap(d.arena) > keep {
		d.arena = nil
	}
}

// length reads a plain length.
func (d *Decoder) length() (uint64, error) {
	off := d.r.offset()
	n, enc, err := d.r.length()
	if err != nil {
		if err == errBadLength {
			return 0, d.corrupt(off, "bad length prefix")
		}
		return 0, err
	}
	if enc {
		return 0, d.corrupt(off, "string encoding where a length belongs")
	}
	return n, nil
}

// readString reads a string of any encoding into *buf (kept for reuse)
// and returns it. d.lzf and d.dataOff tell where its bytes came from.
func (d *Decoder) readString(buf *[]byte) ([]byte, error) {
	b, _, _, err := d.readStringAt(buf)
	return b, err
}

// readStringAt is readString that also reports the input offset of the
// string's bytes and whether they were LZF compressed (blob errors then
// cannot name an input offset inside them).
func (d *Decoder) readStringAt(buf *[]byte) (s []byte, dataOff int64, lzf bool, err error) {
	off := d.r.offset()
	n, enc, err := d.r.length()
	if err != nil {
		if err == errBadLength {
			return nil, off, false, d.corrupt(off, "bad length prefix")
		}
		return nil, off, false, err
	}
	dataOff = d.r.offset()
	if !enc {
		if b, ok := d.r.inPlace(n); ok {
			return b, dataOff, false, nil
		}
		b, err := d.r.appendN((*buf)[:0], n)
		*buf = b
		return b, dataOff, false, err
	}
	var v int64
	switch n {
	case encInt8:
		b, err := d.r.readByte()
		if err != nil {
			return nil, dataOff, false, err
		}
		v = int64(int8(b))
	case encInt16:
		b, err := d.r.next(2)
		if err != nil {
			return nil, dataOff, false, err
		}
		v = int64(int16(binary.LittleEndian.Uint16(b)))
	case encInt32:
		u, err := d.r.uint32LE()
		if err != nil {
			return nil, dataOff, false, err
		}
		v = int64(int32(u))
	case encLZF:
		clen, err := d.length()
		if err != nil {
			return nil, dataOff, true, err
		}
		ulen, err := d.length()
		if err != nil {
			return nil, dataOff, true, err
		}
		if ulen > clen*lzfMaxRatio || clen > math.MaxInt64/lzfMaxRatio {
			return nil, dataOff, true, d.corrupt(off, "LZF string claims %d bytes from %d compressed, more than LZF can expand to", ulen, clen)
		}
		dataOff = d.r.offset()
		// The compressed bytes are used up before the next read, so
		// they are decompressed from the read buffer when they fit.
		var in []byte
		if clen <= readBufSize && d.r.need(int(clen)) == nil {
			in, _ = d.r.next(int(clen))
		} else {
			in, err = d.r.appendN(d.lzfIn[:0], clen)
			d.lzfIn = in
			if err != nil {
				return nil, dataOff, true, err
			}
		}
		out := *buf
		if uint64(cap(out)) < ulen {
			out = make([]byte, ulen)
		}
		out = out[:ulen]
		*buf = out
		if err := lzfDecompress(in, out); err != nil {
			return nil, dataOff, true, d.corrupt(off, "%v", err)
		}
		return out, dataOff, true, nil
	default:
		return nil, dataOff, false, d.corrupt(off, "unknown string encoding %d", n)
	}
	*buf = strconv.AppendInt((*buf)[:0], v, 10)
	return *buf, dataOff, false, nil
}

// blobError converts an error from a blob walker to an input offset.
func (d *Decoder) blobError(err error, dataOff int64, lzf bool) error {
	var be *blobError
	if !errors.As(err, &be) {
		return err
	}
	if lzf {
		return d.corrupt(dataOff, "%s (at byte %d of the decompressed blob)", be.msg, be.pos)
	}
	return d.corrupt(dataOff+int64(be.pos), "%s", be.msg)
}

// begin reports the current collection once its first element exists.
func (d *Decoder) begin() error {
	if d.cur.begun {
		return nil
	}
	d.cur.begun = true
	return d.h.Begin(d.cur.key, d.cur.t, d.cur.hint, d.cur.meta)
}

func (d *Decoder) end() error {
	if !d.cur.begun {
		d.emptySkipped++
		return nil
	}
	return d.h.End()
}

func hint(n uint64) int { return int(min(n, MaxSizeHint)) }

// value reads the value of type t for key and reports it.
func (d *Decoder) value(t byte, off int64, key []byte, meta Meta) error {
	d.cur.key, d.cur.meta, d.cur.begun, d.cur.hint = key, meta, false, 0
	switch t {
	case typeString:
		v, err := d.readString(&d.str)
		if err != nil {
			return err
		}
		return d.h.String(key, v, meta)
	case typeList, typeSet:
		d.cur.t = TypeList
		emit := d.h.ListElement
		if t == typeSet {
			d.cur.t, emit = TypeSet, d.h.SetMember
		}
		n, err := d.length()
		if err != nil {
			return err
		}
		d.cur.hint = hint(n)
		for range n {
			v, err := d.readString(&d.str)
			if err != nil {
				return err
			}
			if err := d.begin(); err != nil {
				return err
			}
			if err := emit(v); err != nil {
				return err
			}
		}
		return d.end()
	case typeZSet, typeZSet2:
		d.cur.t = TypeZSet
		n, err := d.length()
		if err != nil {
			return err
		}
		d.cur.hint = hint(n)
		for range n {
			m, err := d.readString(&d.field)
			if err != nil {
				return err
			}
			soff := d.r.offset()
			var score float64
			if t == typeZSet2 {
				score, err = d.r.float64LE()
			} else {
				score, err = d.doubleV1()
			}
			if err != nil {
				return err
			}
			if math.IsNaN(score) {
				return d.corrupt(soff, "zset score is NaN")
			}
			if err := d.begin(); err != nil {
				return err
			}
			if err := d.h.ZSetMember(m, score); err != nil {
				return err
			}
		}
		return d.end()
	case typeHash:
		d.cur.t = TypeHash
		n, err := d.length()
		if err != nil {
			return err
		}
		d.cur.hint = hint(n)
		for range n {
			f, err := d.readString(&d.field)
			if err != nil {
				return err
			}
			v, err := d.readString(&d.str)
			if err != nil {
				return err
			}
			if err := d.begin(); err != nil {
				return err
			}
			if err := d.h.HashField(f, v); err != nil {
				return err
			}
		}
		return d.end()
	case typeListZiplist:
		d.cur.t = TypeList
		return d.blobValue(true, d.h.ListElement)
	case typeListQuicklist, typeListQuicklist2:
		return d.quicklist(t)
	case typeSetIntset:
		d.cur.t = TypeSet
		blob, dataOff, lzf, err := d.readStringAt(&d.blob)
		if err != nil {
			return err
		}
		if len(blob) >= 8 {
			d.cur.hint = hint(uint64(binary.LittleEndian.Uint32(blob[4:])))
		}
		err = intsetIterate(blob, d.num1, func(m []byte) error {
			if err := d.begin(); err != nil {
				return err
			}
			return d.h.SetMember(m)
		})
		if err != nil {
			return d.blobError(err, dataOff, lzf)
		}
		return d.end()
	case typeSetListpack:
		d.cur.t = TypeSet
		return d.blobValue(false, d.h.SetMember)
	case typeZSetZiplist, typeZSetListpack:
		d.cur.t = TypeZSet
		return d.pairs(t == typeZSetZiplist, func(m []byte, s entry, sOff int) error {
			score := float64(s.num)
			if !s.isInt {
				var err error
				score, err = strconv.ParseFloat(string(s.str), 64)
				if err != nil || math.IsNaN(score) {
					return blobErr(sOff, "bad zset score")
				}
			}
			return d.h.ZSetMember(m, score)
		})
	case typeHashZiplist, typeHashListpack:
		d.cur.t = TypeHash
		return d.pairs(t == typeHashZiplist, func(f []byte, v entry, _ int) error {
			return d.h.HashField(f, v.bytes(d.num2))
		})
	case typeHashZipmap:
		d.cur.t = TypeHash
		blob, dataOff, lzf, err := d.readStringAt(&d.blob)
		if err != nil {
			return err
		}
		if len(blob) > 0 && blob[0] < 254 {
			d.cur.hint = int(blob[0])
		}
		err = zipmapIterate(blob, func(f, v []byte) error {
			if err := d.begin(); err != nil {
				return err
			}
			return d.h.HashField(f, v)
		})
		if err != nil {
			return d.blobError(err, dataOff, lzf)
		}
		return d.end()
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return d.stream(t)
	case typeModulePreGA, typeModule2:
		id, err := d.length()
		if err != nil {
			return err
		}
		return &Error{Offset: off, Msg: fmt.Sprintf("unsupported module type %q", moduleName(id)), Err: ErrModuleType}
	}
	return d.corrupt(off, "unknown value type %d", t)
}

type walker func([]byte, func(entry) error) error

// walkerFor returns the entry walker of ziplists (zl) or listpacks.
func walkerFor(zl bool) walker {
	if zl {
		return zlIterate
	}
	return lpIterate
}

// blobValue reports each entry of one ziplist (zl) or listpack.
func (d *Decoder) blobValue(zl bool, emit func([]byte) error) error {
	blob, dataOff, lzf, err := d.readStringAt(&d.blob)
	if err != nil {
		return err
	}
	d.cur.hint = blobCount(blob, zl)
	err = walkerFor(zl)(blob, func(e entry) error {
		if err := d.begin(); err != nil {
			return err
		}
		return emit(e.bytes(d.num1))
	})
	if err != nil {
		return d.blobError(err, dataOff, lzf)
	}
	return d.end()
}

// blobCount is the element count a ziplist or listpack header claims.
func blobCount(blob []byte, zl bool) int {
	var n int
	if zl {
		if len(blob) >= zlHeaderSize {
			n = int(binary.LittleEndian.Uint16(blob[8:]))
		}
	} else if len(blob) >= lpHeaderSize {
		n = int(binary.LittleEndian.Uint16(blob[4:]))
	}
	if n == 0xFFFF {
		return 0
	}
	return n
}

// pairs reports a ziplist or listpack of alternating first/second
// entries (zset member/score, hash field/value).
func (d *Decoder) pairs(zl bool, emit func(first []byte, second entry, secondPos int) error) error {
	blob, dataOff, lzf, err := d.readStringAt(&d.blob)
	if err != nil {
		return err
	}
	d.cur.hint = blobCount(blob, zl) / 2
	var first entry
	odd := false
	err = walkerFor(zl)(blob, func(e entry) error {
		if odd = !odd; odd {
			first = e
			return nil
		}
		if err := d.begin(); err != nil {
			return err
		}
		return emit(first.bytes(d.num1), e, 0)
	})
	if err == nil && odd {
		err = blobErr(0, "odd number of entries in a paired blob")
	}
	if err != nil {
		return d.blobError(err, dataOff, lzf)
	}
	return d.end()
}

// quicklist reads a list of ziplist nodes (type 14) or of plain and
// listpack nodes (type 18).
func (d *Decoder) quicklist(t byte) error {
	d.cur.t = TypeList
	nodes, err := d.length()
	if err != nil {
		return err
	}
	emit := func(e entry) error {
		if err := d.begin(); err != nil {
			return err
		}
		return d.h.ListElement(e.bytes(d.num1))
	}
	for range nodes {
		container := uint64(quicklistPacked)
		if t == typeListQuicklist2 {
			off := d.r.offset()
			if container, err = d.length(); err != nil {
				return err
			}
			if container != quicklistPlain && container != quicklistPacked {
				return d.corrupt(off, "bad quicklist node container %d", container)
			}
		}
		off := d.r.offset()
		blob, dataOff, lzf, err := d.readStringAt(&d.blob)
		if err != nil {
			return err
		}
		if len(blob) == 0 {
			return d.corrupt(off, "empty quicklist node")
		}
		if container == quicklistPlain {
			if err := emit(entry{str: blob}); err != nil {
				return err
			}
			continue
		}
		if err := walkerFor(t == typeListQuicklist)(blob, emit); err != nil {
			return d.blobError(err, dataOff, lzf)
		}
	}
	return d.end()
}

// doubleV1 reads a zset score as RDB < 8 wrote it: a length byte (253
// NaN, 254 +inf, 255 -inf) and that many ASCII bytes.
func (d *Decoder) doubleV1() (float64, error) {
	off := d.r.offset()
	n, err := d.r.readByte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	b, err := d.r.next(int(n))
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, d.corrupt(off, "bad zset score %q", b)
	}
	return f, nil
}

func moduleName(id uint64) string {
	const cset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var name [9]byte
	id >>= 10
	for j := 8; j >= 0; j-- {
		name[j] = cset[id&63]
		id >>= 6
	}
	return string(name[:])
}
