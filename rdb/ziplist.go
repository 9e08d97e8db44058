package rdb

import (
	"encoding/binary"
	"strconv"
)

// Ziplist layout (Redis ziplist.c, RDB ≤ 9 values): zlbytes u32 LE,
// zltail u32 LE, zllen u16 LE (65535: count it), entries, 0xFF. An entry
// is prevlen (1 byte, or 0xFE + u32 LE), an encoding with its data.

const (
	zlHeaderSize = 10
	zlEnd        = 0xFF
)

// zlIterate calls fn for each entry of zl, validating as it goes.
func zlIterate(zl []byte, fn func(entry) error) error {
	if len(zl) < zlHeaderSize+1 {
		return blobErr(0, "ziplist shorter than its header")
	}
	if int(binary.LittleEndian.Uint32(zl)) != len(zl) {
		return blobErr(0, "ziplist header size does not match its blob")
	}
	if zl[len(zl)-1] != zlEnd {
		return blobErr(len(zl)-1, "ziplist lacks its terminator")
	}
	tail := int(binary.LittleEndian.Uint32(zl[4:]))
	declared := int(binary.LittleEndian.Uint16(zl[8:]))
	end := len(zl) - 1
	p, prev, prevLen, n := zlHeaderSize, -1, 0, 0
	for zl[p] != zlEnd {
		start := p
		// prevlen
		var pl int
		if zl[p] < 254 {
			pl = int(zl[p])
			p++
		} else if zl[p] == 254 {
			if p+5 > end {
				return blobErr(start, "ziplist entry overruns its blob")
			}
			pl = int(binary.LittleEndian.Uint32(zl[p+1:]))
			p += 5
		} else {
			return blobErr(start, "bad ziplist prevlen")
		}
		if pl != prevLen {
			return blobErr(start, "ziplist prevlen does not match the previous entry")
		}
		if p >= end {
			return blobErr(start, "ziplist entry overruns its blob")
		}
		enc := zl[p]
		var e entry
		var hdr, dataLen, width int
		switch {
		case enc>>6 == 0:
			hdr, dataLen = 1, int(enc&0x3f)
		case enc>>6 == 1:
			if p+2 > end {
				return blobErr(start, "ziplist entry overruns its blob")
			}
			hdr, dataLen = 2, int(enc&0x3f)<<8|int(zl[p+1])
		case enc>>6 == 2:
			if p+5 > end {
				return blobErr(start, "ziplist entry overruns its blob")
			}
			hdr, dataLen = 5, int(binary.BigEndian.Uint32(zl[p+1:]))
		case enc == 0xC0:
			width = 2
		case enc == 0xD0:
			width = 4
		case enc == 0xE0:
			width = 8
		case enc == 0xF0:
			width = 3
		case enc == 0xFE:
			width = 1
		case enc >= 0xF1 && enc <= 0xFD:
			hdr = 1
			e.isInt, e.num = true, int64(enc&0x0f)-1
		default:
			return blobErr(p, "invalid ziplist entry encoding")
		}
		if width > 0 {
			hdr = 1
			if p+1+width > end {
				return blobErr(start, "ziplist entry overruns its blob")
			}
			var u uint64
			for i := width; i >= 1; i-- {
				u = u<<8 | uint64(zl[p+i])
			}
			shift := 64 - 8*width
			e.isInt, e.num = true, int64(u<<shift)>>shift
			p += hdr + width
		} else if !e.isInt {
			if dataLen > end-p-hdr {
				return blobErr(start, "ziplist entry overruns its blob")
			}
			e.str = zl[p+hdr : p+hdr+dataLen]
			p += hdr + dataLen
		} else {
			p += hdr
		}
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		prev, prevLen = start, p-start
		n++
	}
	if p != end {
		return blobErr(p, "ziplist terminator before the end of its blob")
	}
	if prev >= 0 && tail != prev {
		return blobErr(4, "ziplist tail offset does not point at its last entry")
	}
	if declared != 0xFFFF && declared != n {
		return blobErr(8, "ziplist header count does not match its entries")
	}
	return nil
}

// zipmapIterate calls fn for each field and value of a zipmap (hashes
// from RDB ≤ 3): zmlen u8, then <len>field<len><free>value[free bytes],
// lengths 1 byte (< 254) or 0xFE + u32 LE, 0xFF at the end.
func zipmapIterate(zm []byte, fn func(field, val []byte) error) error {
	if len(zm) < 2 {
		return blobErr(0, "zipmap shorter than its header")
	}
	end := len(zm) - 1
	if zm[end] != 0xFF {
		return blobErr(end, "zipmap lacks its terminator")
	}
	readLen := func(p int) (int, int, error) {
		if zm[p] < 254 {
			return int(zm[p]), p + 1, nil
		}
		if zm[p] == 254 && p+5 <= end {
			return int(binary.LittleEndian.Uint32(zm[p+1:])), p + 5, nil
		}
		return 0, 0, blobErr(p, "bad zipmap length")
	}
	p, n := 1, 0
	for zm[p] != 0xFF {
		l, q, err := readLen(p)
		if err != nil {
			return err
		}
		if l > end-q {
			return blobErr(p, "zipmap entry overruns its blob")
		}
		field := zm[q : q+l]
		p = q + l
		if p >= end {
			return blobErr(p, "zipmap field without a value")
		}
		l, q, err = readLen(p)
		if err != nil {
			return err
		}
		if q >= end {
			return blobErr(p, "zipmap entry overruns its blob")
		}
		free := int(zm[q])
		q++
		if l > end-q || free > end-q-l {
			return blobErr(p, "zipmap entry overruns its blob")
		}
		if err := fn(field, zm[q:q+l]); err != nil {
			return err
		}
		p = q + l + free
		n++
	}
	if p != end {
		return blobErr(p, "zipmap terminator before the end of its blob")
	}
	if zm[0] < 254 && int(zm[0]) != n {
		return blobErr(0, "zipmap header count does not match its entries")
	}
	return nil
}

// intsetIterate calls fn with each member of an intset: encoding u32 LE
// (2, 4 or 8), length u32 LE, members LE, strictly ascending.
func intsetIterate(is []byte, scratch []byte, fn func([]byte) error) error {
	if len(is) < 8 {
		return blobErr(0, "intset shorter than its header")
	}
	width := int(binary.LittleEndian.Uint32(is))
	if width != 2 && width != 4 && width != 8 {
		return blobErr(0, "bad intset encoding")
	}
	n := uint64(binary.LittleEndian.Uint32(is[4:]))
	if n*uint64(width) != uint64(len(is)-8) {
		return blobErr(4, "intset length does not match its blob")
	}
	var last int64
	for i := range int(n) {
		p := 8 + i*width
		var v int64
		switch width {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(is[p:])))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(is[p:])))
		default:
			v = int64(binary.LittleEndian.Uint64(is[p:]))
		}
		if i > 0 && v <= last {
			return blobErr(p, "intset members out of order")
		}
		last = v
		if err := fn(strconv.AppendInt(scratch[:0], v, 10)); err != nil {
			return err
		}
	}
	return nil
}
