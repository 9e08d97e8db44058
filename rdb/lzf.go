package rdb

import "errors"

// LZF as liblzf writes it (Redis compresses strings longer than 20 bytes
// with it). A control byte < 32 starts a run of ctrl+1 literals; otherwise
// its top 3 bits are a match length - 2 (7 means one more length byte
// follows) and its low 5 bits with the next byte a back offset - 1.

const (
	lzfMaxOff = 1 << 13
	lzfMaxRef = 1<<8 + 1<<3 // longest match: 7 + 255 + 2
	lzfMaxLit = 1 << 5
	// lzfMaxRatio bounds how much n input bytes can expand: a 3-byte
	// back reference yields at most 264 bytes.
	lzfMaxRatio = 89
)

var (
	errLZFCorrupt = errors.New("corrupt LZF data")
	errLZFLength  = errors.New("LZF data does not decompress to its declared length")
)

// lzfDecompress decompresses in into out, which must be exactly the
// declared uncompressed length.
func lzfDecompress(in, out []byte) error {
	ip, op := 0, 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 32 {
			n := ctrl + 1
			if ip+n > len(in) {
				return errLZFCorrupt
			}
			if op+n > len(out) {
				return errLZFLength
			}
			copy(out[op:], in[ip:ip+n])
			ip += n
			op += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if ip >= len(in) {
				return errLZFCorrupt
			}
			n += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return errLZFCorrupt
		}
		ref := op - (ctrl&0x1f)<<8 - 1 - int(in[ip])
		ip++
		n += 2
		if ref < 0 {
			return errLZFCorrupt
		}
		if op+n > len(out) {
			return errLZFLength
		}
		if ref+n <= op {
			copy(out[op:op+n], out[ref:ref+n])
			op += n
			continue
		}
		// An overlapping match repeats the op-ref bytes before op. Each
		// copy doubles the repeated stretch, so a run of zeros (offset 1)
		// takes a handful of copies, not one step per byte.
		end := op + n
		if ref == op-1 && out[ref] == 0 {
			clear(out[op:end])
			op = end
			continue
		}
		for op < end {
			op += copy(out[op:end], out[ref:op])
		}
	}
	if op != len(out) {
		return errLZFLength
	}
	return nil
}

// lzfCompressor holds the match table between calls.
type lzfCompressor struct {
	table []uint32 // position+1 of the last 3-byte prefix with this hash
}

// compress appends the LZF form of in to dst if it is at most limit bytes,
// and reports whether it was. Any valid LZF stream works for Redis; this
// one is greedy with a single-entry hash table, like liblzf's fast mode.
func (c *lzfCompressor) compress(dst, in []byte, limit int) ([]byte, bool) {
	hlog := 8
	for hlog < 14 && 1<<hlog < len(in) {
		hlog++
	}
	if cap(c.table) < 1<<hlog {
		c.table = make([]uint32, 1<<14)
	}
	table := c.table[:1<<hlog]
	clear(table)
	shift := 32 - hlog
	start := len(dst)
	max := start + limit
	lit := 0
	ctrl := len(dst)
	dst = append(dst, 0)
	n := len(in)
	ip := 0
	for ip+2 < n {
		v := uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])
		h := (v * 2654435761) >> shift
		ref := int(table[h]) - 1
		table[h] = uint32(ip + 1)
		if ref >= 0 && ip-ref-1 < lzfMaxOff && in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			off := ip - ref - 1
			maxLen := min(n-ip, lzfMaxRef)
			l := 3
			for l < maxLen && in[ref+l] == in[ip+l] {
				l++
			}
			if lit > 0 {
				dst[ctrl] = byte(lit - 1)
			} else {
				dst = dst[:len(dst)-1]
			}
			if len(dst)+4 > max {
				return dst[:start], false
			}
			if enc := l - 2; enc < 7 {
				dst = append(dst, byte(enc<<5|off>>8), byte(off))
			} else {
				dst = append(dst, byte(7<<5|off>>8), byte(enc-7), byte(off))
			}
			ip += l
			ctrl = len(dst)
			dst = append(dst, 0)
			lit = 0
			continue
		}
		if len(dst)+2 > max {
			return dst[:start], false
		}
		dst = append(dst, in[ip])
		ip++
		if lit++; lit == lzfMaxLit {
			dst[ctrl] = lzfMaxLit - 1
			ctrl = len(dst)
			dst = append(dst, 0)
			lit = 0
		}
	}
	for ; ip < n; ip++ {
		if len(dst)+2 > max {
			return dst[:start], false
		}
		dst = append(dst, in[ip])
		if lit++; lit == lzfMaxLit {
			dst[ctrl] = lzfMaxLit - 1
			ctrl = len(dst)
			dst = append(dst, 0)
			lit = 0
		}
	}
	if lit > 0 {
		dst[ctrl] = byte(lit - 1)
	} else {
		dst = dst[:len(dst)-1]
	}
	if len(dst)-start > limit {
		return dst[:start], false
	}
	return dst, true
}
