package rdb

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
)

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
	// table: for each hash of a 3-byte prefix, next+position of its last
	// occurrence. A call numbers its positions from next on, so entries
	// of earlier calls (below the call's base) are stale without clearing
	// the table for every value; it is cleared when the numbering wraps.
	table []uint32
	next  uint32
}

const (
	lzfHashLog = 13
	// lzfGiveUpEvery: how often (input bytes) compress checks whether the
	// output has saved anything yet.
	lzfGiveUpEvery = 512
)

// compress appends the LZF form of in to dst if it is at most limit bytes,
// and reports whether it was. Any valid LZF stream works for Redis; this
// one is greedy with a single-entry hash table, like liblzf's fast mode,
// and compares matches 8 bytes at a time.
func (c *lzfCompressor) compress(dst, in []byte, limit int) ([]byte, bool) {
	if c.table == nil {
		c.table = make([]uint32, 1<<lzfHashLog)
	}
	n := len(in)
	if c.next == 0 || uint64(c.next)+uint64(n) >= 1<<32 {
		clear(c.table)
		c.next = 1
	}
	base := int(c.next)
	c.next += uint32(n)
	table := c.table[:1<<lzfHashLog]
	start := len(dst)
	// Write into room for limit bytes plus a literal run's worst case;
	// op >= max is checked where output grows, before the next write.
	dst = slices.Grow(dst, limit+lzfMaxLit+8)
	out := dst[:cap(dst)]
	max := start + limit
	giveUp := limit < n
	op := start + 1 // out[ctrl] is the current literal run's control byte
	ctrl := start
	lit := 0
	ip := 0
	for ip+4 <= n {
		v := binary.LittleEndian.Uint32(in[ip:]) & 0xffffff
		h := (v * 2654435761) >> (32 - lzfHashLog)
		ref := int(table[h]) - base
		table[h] = uint32(base + ip)
		if ref >= 0 && ip-ref <= lzfMaxOff && binary.LittleEndian.Uint32(in[ref:])&0xffffff == v {
			off := ip - ref - 1
			maxLen := min(n-ip, lzfMaxRef)
			l := 3
			for l+8 <= maxLen {
				if x := binary.LittleEndian.Uint64(in[ip+l:]) ^ binary.LittleEndian.Uint64(in[ref+l:]); x != 0 {
					l += bits.TrailingZeros64(x) / 8
					goto matched
				}
				l += 8
			}
			for l < maxLen && in[ref+l] == in[ip+l] {
				l++
			}
		matched:
			if lit > 0 {
				out[ctrl] = byte(lit - 1)
			} else {
				op-- // no literals: drop the reserved control byte
			}
			if op+3 > max {
				return dst[:start], false
			}
			if enc := l - 2; enc < 7 {
				out[op], out[op+1] = byte(enc<<5|off>>8), byte(off)
				op += 2
			} else {
				out[op], out[op+1], out[op+2] = byte(7<<5|off>>8), byte(enc-7), byte(off)
				op += 3
			}
			ip += l
			ctrl, lit = op, 0
			op++
			continue
		}
		if op >= max {
			return dst[:start], false
		}
		out[op] = in[ip]
		op++
		ip++
		if lit++; lit == lzfMaxLit {
			out[ctrl] = lzfMaxLit - 1
			ctrl, lit = op, 0
			op++
			// A caller that needs the output shorter than the input, when
			// nothing is saved so far: give up (the value is stored as it
			// is) rather than hash the rest of it.
			if giveUp && ip&(lzfGiveUpEvery-1) < lzfMaxLit && ip >= lzfGiveUpEvery && op-start >= ip {
				return dst[:start], false
			}
		}
	}
	for ; ip < n; ip++ {
		if op >= max {
			return dst[:start], false
		}
		out[op] = in[ip]
		op++
		if lit++; lit == lzfMaxLit {
			out[ctrl] = lzfMaxLit - 1
			ctrl, lit = op, 0
			op++
		}
	}
	if lit > 0 {
		out[ctrl] = byte(lit - 1)
	} else {
		op--
	}
	if op-start > limit {
		return dst[:start], false
	}
	return out[:op], true
}
