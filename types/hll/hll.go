package hll

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/dfly/dfly/types/num"
)

const (
	p          = 14
	q          = 64 - p
	Registers  = 1 << p
	regBits    = 6
	regMax     = 1<<regBits - 1
	HeaderSize = 16
	// DenseSize is the byte length of a dense value.
	DenseSize = HeaderSize + (Registers*regBits+7)/8

	encDense  = 0
	encSparse = 1

	sparseValMax   = 32
	sparseValLen   = 4
	sparseZeroLen  = 64
	sparseXZeroMax = 16384

	alphaInf = 0.721347520444481703680 // 0.5/ln(2)
)

// SparseMaxBytes is hll-sparse-max-bytes: the largest sparse value, header
// included, before promotion to dense.
var SparseMaxBytes = 3000

// Errors, with Redis's reply text.
const (
	ErrWrongType num.Error = "WRONGTYPE Key is not a valid HyperLogLog string value."
	ErrInvalid   num.Error = "INVALIDOBJ Corrupted HLL object detected"
)

// New is an empty HLL: sparse, one XZERO covering every register, cached
// cardinality 0.
func New() []byte {
	b := make([]byte, HeaderSize+2, HeaderSize+64)
	copy(b, "HYLL")
	b[4] = encSparse
	setXZero(b[HeaderSize:], Registers)
	return b
}

// Valid reports whether b is a HyperLogLog value (isHLLObjectOrReply).
func Valid(b []byte) bool {
	if len(b) < HeaderSize || string(b[:4]) != "HYLL" || b[4] > encSparse {
		return false
	}
	return b[4] != encDense || len(b) == DenseSize
}

// IsDense reports whether the valid value b uses the dense encoding.
func IsDense(b []byte) bool { return b[4] == encDense }

func invalidateCache(b []byte) { b[15] |= 1 << 7 }

// CacheValid reports whether the valid value b holds a fresh cached
// cardinality, so that Count will not write to b.
func CacheValid(b []byte) bool { return b[15]&(1<<7) == 0 }

// MurmurHash64A is Redis's endian-neutral MurmurHash2, 64-bit version.
func MurmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(key)) * m)
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// patLen hashes ele into its register index and the length of the
// "000..1" pattern above the index bits.
func patLen(ele []byte) (index int, count uint8) {
	hash := MurmurHash64A(ele, 0xadc83b19)
	index = int(hash & (Registers - 1))
	hash >>= p
	hash |= 1 << q
	return index, uint8(bits.TrailingZeros64(hash) + 1)
}

func denseGet(regs []byte, i int) uint8 {
	byteIdx := i * regBits / 8
	fb := uint(i * regBits & 7)
	b0 := uint(regs[byteIdx])
	var b1 uint
	if byteIdx+1 < len(regs) {
		b1 = uint(regs[byteIdx+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & regMax)
}

func denseSet(regs []byte, i int, val uint8) {
	byteIdx := i * regBits / 8
	fb := uint(i * regBits & 7)
	v := uint(val)
	regs[byteIdx] &^= byte(regMax << fb)
	regs[byteIdx] |= byte(v << fb)
	if byteIdx+1 < len(regs) {
		regs[byteIdx+1] &^= byte(regMax >> (8 - fb))
		regs[byteIdx+1] |= byte(v >> (8 - fb))
	}
}

// denseUpdate raises register i to count; it reports whether it changed.
func denseUpdate(regs []byte, i int, count uint8) bool {
	if count > denseGet(regs, i) {
		denseSet(regs, i, count)
		return true
	}
	return false
}

func isZero(op byte) bool   { return op&0xc0 == 0 }
func isXZero(op byte) bool  { return op&0xc0 == 0x40 }
func isVal(op byte) bool    { return op&0x80 != 0 }
func zeroLen(op byte) int   { return int(op&0x3f) + 1 }
func xzeroLen(b []byte) int { return (int(b[0]&0x3f)<<8 | int(b[1])) + 1 }
func valValue(op byte) int  { return int(op>>2&0x1f) + 1 }
func valLen(op byte) int    { return int(op&0x3) + 1 }

func valOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | 0x80 }
func zeroOp(n int) byte     { return byte(n - 1) }
func setXZero(b []byte, n int) {
	n--
	b[0] = byte(n>>8) | 0x40
	b[1] = byte(n & 0xff)
}

// toDense converts a sparse value to dense, keeping the header (magic,
// unused bytes and cached cardinality) as hllSparseToDense does.
func toDense(b []byte) ([]byte, error) {
	if b[4] == encDense {
		return b, nil
	}
	d := make([]byte, DenseSize)
	copy(d, b[:HeaderSize])
	d[4] = encDense
	regs := d[HeaderSize:]
	idx := 0
	for s := b[HeaderSize:]; len(s) > 0; {
		switch op := s[0]; {
		case isZero(op):
			idx += zeroLen(op)
			s = s[1:]
		case isXZero(op):
			if len(s) < 2 {
				return nil, ErrInvalid
			}
			idx += xzeroLen(s)
			s = s[2:]
		default:
			n, v := valLen(op), valValue(op)
			if idx+n > Registers {
				return nil, ErrInvalid
			}
			for ; n > 0; n-- {
				denseSet(regs, idx, uint8(v))
				idx++
			}
			s = s[1:]
		}
	}
	if idx != Registers {
		return nil, ErrInvalid
	}
	return d, nil
}

// sparseSet raises register index to count in the sparse value b,
// promoting it to dense when needed (hllSparseSet). It returns the value
// (possibly reallocated) and whether a register changed.
func sparseSet(b []byte, index int, count uint8) ([]byte, bool, error) {
	if count > sparseValMax {
		return promote(b, index, count)
	}
	sparse := HeaderSize
	end := len(b)
	pos, first, span := sparse, 0, 0
	prev := -1
	for pos < end {
		oplen := 1
		op := b[pos]
		switch {
		case isZero(op):
			span = zeroLen(op)
		case isVal(op):
			span = valLen(op)
		default:
			if pos+1 >= end {
				return b, false, ErrInvalid
			}
			span = xzeroLen(b[pos:])
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = pos
		pos += oplen
		first += span
	}
	if span == 0 || pos >= end {
		return b, false, ErrInvalid
	}
	op := b[pos]
	var runlen int
	var zero, xzero, val bool
	switch {
	case isZero(op):
		zero, runlen = true, zeroLen(op)
	case isXZero(op):
		if pos+1 >= end {
			return b, false, ErrInvalid
		}
		xzero, runlen = true, xzeroLen(b[pos:])
	default:
		val, runlen = true, valLen(op)
	}
	var next int = -1
	if xzero {
		next = pos + 2
	} else {
		next = pos + 1
	}
	if next >= end {
		next = -1
	}

	updatedInPlace := false
	if val {
		if valValue(op) >= int(count) {
			return b, false, nil
		}
		if runlen == 1 {
			b[pos] = valOp(int(count), 1)
			updatedInPlace = true
		}
	}
	if !updatedInPlace && zero && runlen == 1 {
		b[pos] = valOp(int(count), 1)
		updatedInPlace = true
	}
	if !updatedInPlace {
		var seq [5]byte
		n := 0
		last := first + span - 1
		if zero || xzero {
			if index != first {
				l := index - first
				if l > sparseZeroLen {
					setXZero(seq[n:], l)
					n += 2
				} else {
					seq[n] = zeroOp(l)
					n++
				}
			}
			seq[n] = valOp(int(count), 1)
			n++
			if index != last {
				l := last - index
				if l > sparseZeroLen {
					setXZero(seq[n:], l)
					n += 2
				} else {
					seq[n] = zeroOp(l)
					n++
				}
			}
		} else {
			cur := valValue(op)
			if index != first {
				seq[n] = valOp(cur, index-first)
				n++
			}
			seq[n] = valOp(int(count), 1)
			n++
			if index != last {
				seq[n] = valOp(cur, last-index)
				n++
			}
		}
		oldlen := 1
		if xzero {
			oldlen = 2
		}
		delta := n - oldlen
		if delta > 0 && len(b)+delta > SparseMaxBytes {
			return promote(b, index, count)
		}
		if delta > 0 {
			b = append(b, make([]byte, delta)...)
		}
		if delta != 0 && next >= 0 {
			copy(b[next+delta:], b[next:end])
		}
		b = b[:end+delta]
		copy(b[pos:], seq[:n])
		end += delta
	}

	// Merge adjacent VAL opcodes with equal values, scanning up to five
	// opcodes from the previous one.
	s := sparse
	if prev >= 0 {
		s = prev
	}
	for scan := 5; s < end && scan > 0; scan-- {
		switch {
		case isXZero(b[s]):
			s += 2
			continue
		case isZero(b[s]):
			s++
			continue
		}
		if s+1 < end && isVal(b[s+1]) {
			v1, v2 := valValue(b[s]), valValue(b[s+1])
			if v1 == v2 {
				l := valLen(b[s]) + valLen(b[s+1])
				if l <= sparseValLen {
					b[s+1] = valOp(v1, l)
					copy(b[s:], b[s+1:end])
					end--
					b = b[:end]
					continue // try the merged opcode with the next one
				}
			}
		}
		s++
	}
	invalidateCache(b)
	return b, true, nil
}

func promote(b []byte, index int, count uint8) ([]byte, bool, error) {
	d, err := toDense(b)
	if err != nil {
		return b, false, err
	}
	denseUpdate(d[HeaderSize:], index, count)
	return d, true, nil
}

// WouldAdd reports whether Add(b, elems) would change a register of the
// valid value b. A malformed sparse encoding reports true, so Add finds
// the error.
func WouldAdd(b []byte, elems [][]byte) bool {
	for _, e := range elems {
		index, count := patLen(e)
		switch b[4] {
		case encDense:
			if denseGet(b[HeaderSize:], index) < count {
				return true
			}
		case encSparse:
			if v, ok := sparseGet(b[HeaderSize:], index); !ok || v < count {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// sparseGet is register index of the sparse registers ops; ok=false when
// they end before it.
func sparseGet(ops []byte, index int) (uint8, bool) {
	for i, at := 0, 0; i < len(ops); {
		op := ops[i]
		var n int
		var v uint8
		switch {
		case isZero(op):
			n, i = zeroLen(op), i+1
		case isXZero(op):
			if i+1 >= len(ops) {
				return 0, false
			}
			n, i = xzeroLen(ops[i:]), i+2
		default:
			n, v, i = valLen(op), uint8(valValue(op)), i+1
		}
		if index < at+n {
			return v, true
		}
		at += n
	}
	return 0, false
}

// Add adds the elements to the valid value b (PFADD). It returns the value,
// which may have been reallocated or promoted, and whether any register
// changed; the cached cardinality is invalidated then.
func Add(b []byte, elems [][]byte) ([]byte, bool, error) {
	updated := false
	for _, e := range elems {
		index, count := patLen(e)
		var ch bool
		switch b[4] {
		case encDense:
			ch = denseUpdate(b[HeaderSize:], index, count)
		case encSparse:
			var err error
			b, ch, err = sparseSet(b, index, count)
			if err != nil {
				return b, updated, err
			}
		default:
			return b, updated, ErrInvalid
		}
		updated = updated || ch
	}
	if updated {
		invalidateCache(b)
	}
	return b, updated, nil
}

// RawRegisters is a raw register array, one byte per register: the union of
// several HLLs (PFCOUNT with many keys, PFMERGE).
type RawRegisters [Registers]uint8

// Merge raises r to the registers of the valid value b (hllMerge).
func (r *RawRegisters) Merge(b []byte) error {
	if b[4] == encDense {
		regs := b[HeaderSize:]
		for i := range r {
			if v := denseGet(regs, i); v > r[i] {
				r[i] = v
			}
		}
		return nil
	}
	i := 0
	for s := b[HeaderSize:]; len(s) > 0; {
		switch op := s[0]; {
		case isZero(op):
			i += zeroLen(op)
			s = s[1:]
		case isXZero(op):
			if len(s) < 2 {
				return ErrInvalid
			}
			i += xzeroLen(s)
			s = s[2:]
		default:
			n, v := valLen(op), uint8(valValue(op))
			if i+n > Registers {
				return ErrInvalid
			}
			for ; n > 0; n-- {
				r[i] = max(r[i], v)
				i++
			}
			s = s[1:]
		}
	}
	if i != Registers {
		return ErrInvalid
	}
	return nil
}

// Count is the estimated cardinality of the union in r.
func (r *RawRegisters) Count() uint64 {
	var histo [64]int
	for _, v := range r {
		histo[v]++
	}
	return estimate(&histo)
}

// Count is the cardinality of the valid value b (PFCOUNT with one key): the
// cached one when fresh, otherwise computed and cached in b's header, in
// which case changed is true.
func Count(b []byte) (card uint64, changed bool, err error) {
	if b[15]&0x80 == 0 {
		return binary.LittleEndian.Uint64(b[8:16]), false, nil
	}
	var histo [64]int
	if b[4] == encDense {
		regs := b[HeaderSize:]
		for i := 0; i < Registers; i++ {
			histo[denseGet(regs, i)]++
		}
	} else {
		idx := 0
		for s := b[HeaderSize:]; len(s) > 0; {
			switch op := s[0]; {
			case isZero(op):
				n := zeroLen(op)
				idx += n
				histo[0] += n
				s = s[1:]
			case isXZero(op):
				if len(s) < 2 {
					return 0, false, ErrInvalid
				}
				n := xzeroLen(s)
				idx += n
				histo[0] += n
				s = s[2:]
			default:
				n := valLen(op)
				idx += n
				histo[valValue(op)] += n
				s = s[1:]
			}
		}
		if idx != Registers {
			return 0, false, ErrInvalid
		}
	}
	card = estimate(&histo)
	binary.LittleEndian.PutUint64(b[8:16], card)
	return card, true, nil
}

// estimate is hllCount's estimator over a register histogram (Otmar Ertl,
// "New cardinality estimation algorithms for HyperLogLog sketches").
// Explicit float64 conversions keep the compiler from fusing multiply-adds,
// which would change the last bits of the result.
func estimate(histo *[64]int) uint64 {
	m := float64(Registers)
	z := m * tau((m-float64(histo[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(histo[0])/m))
	return uint64(math.Round(float64(alphaInf*m*m) / z))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += float64(x * y)
		y += y
		if zPrime == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if zPrime == z {
			return z / 3
		}
	}
}

// Store writes the union r into the destination value dst (nil: the key is
// absent), as PFMERGE does: dst becomes dense first when dense is set (some
// input was dense), then every non-zero register is raised in order. The
// cached cardinality is invalidated.
func Store(dst []byte, r *RawRegisters, dense bool) ([]byte, error) {
	if dst == nil {
		dst = New()
	}
	if dense {
		var err error
		if dst, err = toDense(dst); err != nil {
			return nil, err
		}
	}
	for i, v := range r {
		if v == 0 {
			continue
		}
		if dst[4] == encDense {
			denseUpdate(dst[HeaderSize:], i, v)
		} else {
			// Like Redis, a corrupted sparse destination is not reported
			// here: the sources, dst included, were merged without error.
			dst, _, _ = sparseSet(dst, i, v)
		}
	}
	invalidateCache(dst)
	return dst, nil
}

// ToDense returns b in the dense encoding: b itself when it is dense, else
// a new dense value with b's header (PFDEBUG TODENSE and GETREG).
func ToDense(b []byte) ([]byte, error) { return toDense(b) }

// DenseRegisters returns the register values of the dense value d.
func DenseRegisters(d []byte) []uint8 {
	regs := make([]uint8, Registers)
	for i := range regs {
		regs[i] = denseGet(d[HeaderSize:], i)
	}
	return regs
}

// DecodeSparse describes the opcodes of a sparse value as PFDEBUG DECODE
// does ("z:len" for ZERO, "Z:len" for XZERO, "v:value,len" for VAL, space
// separated); ok is false for a dense value.
func DecodeSparse(b []byte) (text string, ok bool) {
	if IsDense(b) {
		return "", false
	}
	var out []byte
	for s := b[HeaderSize:]; len(s) > 0; {
		switch op := s[0]; {
		case isZero(op):
			out = fmt.Appendf(out, "z:%d ", zeroLen(op))
			s = s[1:]
		case isXZero(op):
			if len(s) < 2 {
				s = s[1:] // a truncated opcode: Redis reads past it; stop here
				continue
			}
			out = fmt.Appendf(out, "Z:%d ", xzeroLen(s))
			s = s[2:]
		default:
			out = fmt.Appendf(out, "v:%d,%d ", valValue(op), valLen(op))
			s = s[1:]
		}
	}
	return strings.TrimRight(string(out), " "), true
}

// SelfTest adds the same elements to a sparse value and to a dense one and
// checks, every 1000 elements up to 20000, that both have the same
// registers and count, within 5% of the elements added (the estimator's
// standard error is 0.81%).
func SelfTest() error {
	sparse, dense := New(), New()
	var err error
	if dense, err = toDense(dense); err != nil {
		return err
	}
	var buf [16]byte
	for n := 1; n <= 20000; n++ {
		elem := [][]byte{binary.LittleEndian.AppendUint64(buf[:0], uint64(n)*0x9e3779b97f4a7c15)}
		if sparse, _, err = Add(sparse, elem); err != nil {
			return err
		}
		if dense, _, err = Add(dense, elem); err != nil {
			return err
		}
		if n%1000 != 0 {
			continue
		}
		s, err := toDense(sparse)
		if err != nil {
			return err
		}
		a, b := DenseRegisters(s), DenseRegisters(dense)
		for i := range a {
			if a[i] != b[i] {
				return fmt.Errorf("register %d after %d elements: sparse %d, dense %d", i, n, a[i], b[i])
			}
		}
		cs, _, err := Count(sparse)
		if err != nil {
			return err
		}
		cd, _, err := Count(dense)
		if err != nil {
			return err
		}
		if cs != cd || math.Abs(float64(cd)-float64(n)) > 0.05*float64(n) {
			return fmt.Errorf("count after %d elements: sparse %d, dense %d", n, cs, cd)
		}
	}
	return nil
}
