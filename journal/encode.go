package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Binary form of an entry (the payload of an rdb.OpJournal chunk):
//
//	[op u8] [lsn uvarint] [db uvarint]
//	OpCommand: [nargs uvarint] ([len uvarint] [bytes])...
//	OpMulti:   [txid uvarint] [seq uvarint] then the args as above
//	OpExec:    [txid uvarint] [nshards uvarint] ([shard uvarint])...
//
// Decode checks every length against the input, so corrupt or truncated
// input is an error, never a panic or a huge allocation.

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("journal: corrupt entry")

// Limits a decoded entry must respect.
const (
	MaxArgs   = 1 << 20
	MaxShards = 1 << 16
	MaxDB     = 1 << 16
)

// EncodedSize is the length of e's binary form.
func (e *Entry) EncodedSize() int {
	n := 1 + uvarintLen(e.LSN) + uvarintLen(uint64(e.DB))
	switch e.Op {
	case OpExec:
		n += uvarintLen(e.TxID) + uvarintLen(uint64(len(e.Shards)))
		for _, s := range e.Shards {
			n += uvarintLen(uint64(s))
		}
		return n
	case OpMulti:
		n += uvarintLen(e.TxID) + uvarintLen(uint64(e.Seq))
	}
	n += uvarintLen(uint64(len(e.Args)))
	for _, a := range e.Args {
		n += uvarintLen(uint64(len(a))) + len(a)
	}
	return n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// Encode appends e's binary form to dst.
func (e *Entry) Encode(dst []byte) []byte {
	dst = append(dst, byte(e.Op))
	dst = binary.AppendUvarint(dst, e.LSN)
	dst = binary.AppendUvarint(dst, uint64(e.DB))
	switch e.Op {
	case OpExec:
		dst = binary.AppendUvarint(dst, e.TxID)
		dst = binary.AppendUvarint(dst, uint64(len(e.Shards)))
		for _, s := range e.Shards {
			dst = binary.AppendUvarint(dst, uint64(s))
		}
		return dst
	case OpMulti:
		dst = binary.AppendUvarint(dst, e.TxID)
		dst = binary.AppendUvarint(dst, uint64(e.Seq))
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.Args)))
	for _, a := range e.Args {
		dst = binary.AppendUvarint(dst, uint64(len(a)))
		dst = append(dst, a...)
	}
	return dst
}

type decoder struct {
	b   []byte
	off int
}

func (d *decoder) fail(what string) error {
	return fmt.Errorf("%w: offset %d: %s", ErrCorrupt, d.off, what)
}

func (d *decoder) uvarint(what string, limit uint64) (uint64, error) {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, d.fail("bad or truncated " + what)
	}
	if v > limit {
		return 0, d.fail(fmt.Sprintf("%s %d exceeds %d", what, v, limit))
	}
	d.off += n
	return v, nil
}

// Decode reads one entry from the start of b and returns it with the
// number of bytes it took. The entry's Args alias b (see Clone).
func Decode(b []byte) (Entry, int, error) {
	d := decoder{b: b}
	var e Entry
	if len(b) == 0 {
		return e, 0, d.fail("empty input")
	}
	e.Op = Op(b[0])
	d.off = 1
	if e.Op < OpCommand || e.Op > OpExec {
		return Entry{}, 0, fmt.Errorf("%w: offset 0: unknown op %d", ErrCorrupt, b[0])
	}
	var err error
	if e.LSN, err = d.uvarint("lsn", 1<<63); err != nil {
		return Entry{}, 0, err
	}
	db, err := d.uvarint("db", MaxDB)
	if err != nil {
		return Entry{}, 0, err
	}
	e.DB = int(db)
	if e.Op != OpCommand {
		if e.TxID, err = d.uvarint("txid", 1<<63); err != nil {
			return Entry{}, 0, err
		}
	}
	if e.Op == OpExec {
		n, err := d.uvarint("shard count", MaxShards)
		if err != nil {
			return Entry{}, 0, err
		}
		if n > uint64(len(b)-d.off) {
			return Entry{}, 0, d.fail("shard count exceeds the input")
		}
		e.Shards = make([]uint16, n)
		for i := range e.Shards {
			s, err := d.uvarint("shard", MaxShards-1)
			if err != nil {
				return Entry{}, 0, err
			}
			e.Shards[i] = uint16(s)
		}
		return e, d.off, nil
	}
	if e.Op == OpMulti {
		seq, err := d.uvarint("seq", 1<<32-1)
		if err != nil {
			return Entry{}, 0, err
		}
		e.Seq = uint32(seq)
	}
	n, err := d.uvarint("arg count", MaxArgs)
	if err != nil {
		return Entry{}, 0, err
	}
	if n > uint64(len(b)-d.off) {
		return Entry{}, 0, d.fail("arg count exceeds the input")
	}
	e.Args = make([][]byte, n)
	for i := range e.Args {
		l, err := d.uvarint("arg length", uint64(len(b)-d.off))
		if err != nil {
			return Entry{}, 0, err
		}
		if l > uint64(len(b)-d.off) {
			return Entry{}, 0, d.fail("arg exceeds the input")
		}
		e.Args[i] = b[d.off : d.off+int(l) : d.off+int(l)]
		d.off += int(l)
	}
	return e, d.off, nil
}

// Clone is a copy of e that owns its memory.
func (e Entry) Clone() Entry {
	e.Args = cloneArgs(e.Args)
	if e.Shards != nil {
		e.Shards = append([]uint16(nil), e.Shards...)
	}
	return e
}
