package rdb

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Listpack layout (Redis listpack.c): total bytes u32 LE, element count
// u16 LE (65535: count it), entries, 0xFF. An entry is an encoding with
// its data, then a backlen (1–5 bytes, read right to left) holding the
// size of encoding+data.

const (
	lpHeaderSize  = 6
	lpEOF         = 0xFF
	lpUnknownSize = 0xFFFF
	lpMaxBytes    = 1<<32 - 1
)

// listpack builds one listpack, byte for byte as Redis would.
type listpack struct {
	b     []byte
	count int
}

func (lp *listpack) reset() {
	lp.b = append(lp.b[:0], 0, 0, 0, 0, 0, 0)
	lp.count = 0
}

// appendString adds s, as an integer when s is one in canonical form
// (Redis's lpStringToInt64), else as a string.
func (lp *listpack) appendString(s []byte) {
	if v, ok := canonicalInt(s); ok {
		lp.appendInt(v)
		return
	}
	start := len(lp.b)
	n := len(s)
	switch {
	case n < 64:
		lp.b = append(lp.b, 0x80|byte(n))
	case n < 4096:
		lp.b = append(lp.b, 0xE0|byte(n>>8), byte(n))
	default:
		lp.b = append(lp.b, 0xF0, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	lp.b = append(lp.b, s...)
	lp.appendBacklen(len(lp.b) - start)
}

func (lp *listpack) appendInt(v int64) {
	start := len(lp.b)
	switch {
	case v >= 0 && v <= 127:
		lp.b = append(lp.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & (1<<13 - 1)
		lp.b = append(lp.b, 0xC0|byte(u>>8), byte(u))
	case v >= -32768 && v <= 32767:
		lp.b = append(lp.b, 0xF1, byte(v), byte(v>>8))
	case v >= -8388608 && v <= 8388607:
		lp.b = append(lp.b, 0xF2, byte(v), byte(v>>8), byte(v>>16))
	case v >= -2147483648 && v <= 2147483647:
		lp.b = append(lp.b, 0xF3, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	default:
		lp.b = append(lp.b, 0xF4)
		lp.b = binary.LittleEndian.AppendUint64(lp.b, uint64(v))
	}
	lp.appendBacklen(len(lp.b) - start)
}

func (lp *listpack) appendBacklen(l int) {
	switch {
	case l <= 127:
		lp.b = append(lp.b, byte(l))
	case l < 16383:
		lp.b = append(lp.b, byte(l>>7), byte(l&127)|128)
	case l < 2097151:
		lp.b = append(lp.b, byte(l>>14), byte(l>>7&127)|128, byte(l&127)|128)
	case l < 268435455:
		lp.b = append(lp.b, byte(l>>21), byte(l>>14&127)|128, byte(l>>7&127)|128, byte(l&127)|128)
	default:
		lp.b = append(lp.b, byte(l>>28), byte(l>>21&127)|128, byte(l>>14&127)|128, byte(l>>7&127)|128, byte(l&127)|128)
	}
	lp.count++
}

// finish writes the terminator and header and returns the listpack.
func (lp *listpack) finish() ([]byte, error) {
	lp.b = append(lp.b, lpEOF)
	if len(lp.b) > lpMaxBytes {
		return nil, errors.New("rdb: listpack node exceeds 4 GiB")
	}
	binary.LittleEndian.PutUint32(lp.b, uint32(len(lp.b)))
	c := lp.count
	if c >= lpUnknownSize {
		c = lpUnknownSize
	}
	binary.LittleEndian.PutUint16(lp.b[4:], uint16(c))
	return lp.b, nil
}

// canonicalInt parses s as Redis's string2ll/lpStringToInt64 do: only the
// canonical decimal form of an int64 counts ("12", not "012", "+1", "-0").
func canonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if s[0] == '0' {
		return 0, len(s) == 1
	}
	neg := s[0] == '-'
	d := s
	if neg {
		d = s[1:]
		if len(d) == 0 || d[0] == '0' {
			return 0, false
		}
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<64-1)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -1<<63 wraps to itself
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// entry is one decoded listpack or ziplist element: a string (str) or an
// integer (num, when isInt).
type entry struct {
	str   []byte
	off   int // where str starts in its blob
	num   int64
	isInt bool
}

// bytes returns the element as a string, formatting an integer into
// scratch.
func (e entry) bytes(scratch []byte) []byte {
	if e.isInt {
		return strconv.AppendInt(scratch[:0], e.num, 10)
	}
	return e.str
}

// blobError is a fault at byte pos of a blob; the decoder adds the
// blob's offset in the file.
type blobError struct {
	pos int
	msg string
}

func (e *blobError) Error() string { return e.msg }

func blobErr(pos int, msg string) error { return &blobError{pos, msg} }

// lpEntryAt decodes the entry at p of lp (p < len(lp)-1, lp[p] != EOF)
// and returns it with the position of the next entry. It checks that the
// entry and its backlen stay inside the blob, before the terminator.
func lpEntryAt(lp []byte, p int) (entry, int, error) {
	end := len(lp) - 1 // the terminator
	enc := lp[p]
	var e entry
	var hdr, dataLen int
	need := func(n int) bool { return p+n <= end }
	switch {
	case enc&0x80 == 0:
		e.isInt, e.num, hdr = true, int64(enc&0x7f), 1
	case enc&0xC0 == 0x80:
		hdr, dataLen = 1, int(enc&0x3f)
	case enc&0xE0 == 0xC0:
		if !need(2) {
			return e, 0, blobErr(p, "listpack entry overruns its blob")
		}
		u := int64(enc&0x1f)<<8 | int64(lp[p+1])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		e.isInt, e.num, hdr = true, u, 2
	case enc&0xF0 == 0xE0:
		if !need(2) {
			return e, 0, blobErr(p, "listpack entry overruns its blob")
		}
		hdr, dataLen = 2, int(enc&0x0f)<<8|int(lp[p+1])
	default:
		var width int
		switch enc {
		case 0xF0:
			if !need(5) {
				return e, 0, blobErr(p, "listpack entry overruns its blob")
			}
			hdr, dataLen = 5, int(binary.LittleEndian.Uint32(lp[p+1:]))
		case 0xF1:
			width = 2
		case 0xF2:
			width = 3
		case 0xF3:
			width = 4
		case 0xF4:
			width = 8
		default:
			return e, 0, blobErr(p, "invalid listpack entry encoding")
		}
		if width > 0 {
			if !need(1 + width) {
				return e, 0, blobErr(p, "listpack entry overruns its blob")
			}
			var u uint64
			for i := width; i >= 1; i-- {
				u = u<<8 | uint64(lp[p+i])
			}
			shift := 64 - 8*width
			e.isInt, e.num, hdr = true, int64(u<<shift)>>shift, 1+width
		}
	}
	size := hdr + dataLen
	if dataLen > end-p-hdr {
		return e, 0, blobErr(p, "listpack entry overruns its blob")
	}
	if !e.isInt {
		e.str, e.off = lp[p+hdr:p+size], p+hdr
	}
	bl := backlenSize(size)
	if p+size+bl > end {
		return e, 0, blobErr(p, "listpack entry overruns its blob")
	}
	// The backlen must decode, right to left, to the entry size.
	q := p + size + bl - 1
	var v, shift int
	for i := 0; ; i++ {
		v |= int(lp[q]&127) << shift
		if lp[q]&128 == 0 {
			break
		}
		if i == 4 || q == p+size {
			return e, 0, blobErr(q, "bad listpack backlen")
		}
		shift += 7
		q--
	}
	if v != size || q != p+size {
		return e, 0, blobErr(p+size, "listpack backlen does not match its entry")
	}
	return e, p + size + bl, nil
}

func backlenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpCheckHeader validates a listpack's header and terminator and returns
// its declared element count (lpUnknownSize when not recorded).
func lpCheckHeader(lp []byte) (int, error) {
	if len(lp) < lpHeaderSize+1 {
		return 0, blobErr(0, "listpack shorter than its header")
	}
	if int(binary.LittleEndian.Uint32(lp)) != len(lp) {
		return 0, blobErr(0, "listpack header size does not match its blob")
	}
	if lp[len(lp)-1] != lpEOF {
		return 0, blobErr(len(lp)-1, "listpack lacks its terminator")
	}
	return int(binary.LittleEndian.Uint16(lp[4:])), nil
}

// lpIterate calls fn for each entry of lp, validating as it goes (every
// entry in bounds, backlens consistent, the header count right). An error
// may come after fn saw a prefix; callers report it and drop the value.
func lpIterate(lp []byte, fn func(entry) error) error {
	declared, err := lpCheckHeader(lp)
	if err != nil {
		return err
	}
	n := 0
	p := lpHeaderSize
	for lp[p] != lpEOF {
		e, next, err := lpEntryAt(lp, p)
		if err != nil {
			return err
		}
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		p = next
		n++
	}
	if p != len(lp)-1 {
		return blobErr(p, "listpack terminator before the end of its blob")
	}
	if declared != lpUnknownSize && declared != n {
		return blobErr(4, "listpack header count does not match its entries")
	}
	return nil
}

// lpValidate checks every entry of lp and its declared count.
func lpValidate(lp []byte) error { return lpIterate(lp, nil) }

// lpCount returns the number of entries of a validated listpack.
func lpCount(lp []byte) int {
	if c := int(binary.LittleEndian.Uint16(lp[4:])); c != lpUnknownSize {
		return c
	}
	n := 0
	for p := lpHeaderSize; lp[p] != lpEOF; n++ {
		_, p, _ = lpEntryAt(lp, p)
	}
	return n
}
