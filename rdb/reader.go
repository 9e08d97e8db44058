package rdb

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
)

const (
	readBufSize = 64 << 10
	// growStep is how much a long string's buffer grows ahead of the
	// bytes that actually arrived, so a lying length prefix costs at most
	// this much beyond the input.
	growStep = 1 << 20
)

// reader buffers the input, counts offsets and keeps the running CRC-64
// of the bytes consumed (not of the bytes buffered ahead).
type reader struct {
	src      io.Reader
	buf      []byte
	own      []byte // the reader's own buffer (buf, unless fixed)
	pos, end int
	base     int64 // input offset of buf[0]
	crc      uint64
	crcPos   int
	srcErr   error
	// fixed: buf is the whole input, the caller's, read in place and
	// never written; its bytes stay valid after they are consumed.
	fixed bool
	// noCRC: the input has no checksum to verify (a chunk stream): the
	// CRC-64, a pass over every byte, is not kept.
	noCRC bool
}

func (r *reader) init(src io.Reader) {
	if r.own == nil {
		r.own = make([]byte, readBufSize)
	}
	*r = reader{src: src, buf: r.own, own: r.own}
}

// initBytes makes the reader read b in place.
func (r *reader) initBytes(b []byte) {
	*r = reader{buf: b, end: len(b), own: r.own, srcErr: io.EOF, fixed: true}
}

// inPlace consumes the next n bytes and returns them where they lie in a
// fixed input; ok is false, and nothing is consumed, for a streamed input
// or when fewer than n bytes are left.
func (r *reader) inPlace(n uint64) (b []byte, ok bool) {
	if !r.fixed || n > uint64(r.end-r.pos) {
		return nil, false
	}
	b = r.buf[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return b, true
}

func (r *reader) offset() int64 { return r.base + int64(r.pos) }

// checksum returns the CRC-64 of all bytes consumed so far.
func (r *reader) checksum() uint64 {
	if !r.noCRC {
		r.crc = CRC64(r.crc, r.buf[r.crcPos:r.pos])
	}
	r.crcPos = r.pos
	return r.crc
}

// need makes n ≤ readBufSize unread bytes available (any n of a fixed
// input).
func (r *reader) need(n int) error {
	if r.end-r.pos >= n {
		return nil
	}
	if r.fixed {
		return ErrTruncated
	}
	if r.pos+n > len(r.buf) {
		r.checksum()
		copy(r.buf, r.buf[r.pos:r.end])
		r.base += int64(r.pos)
		r.end -= r.pos
		r.pos, r.crcPos = 0, 0
	}
	empty := 0
	for r.end-r.pos < n {
		if r.srcErr != nil {
			if r.srcErr == io.EOF {
				return ErrTruncated
			}
			return r.srcErr
		}
		m, err := r.src.Read(r.buf[r.end:])
		r.end += m
		if err != nil {
			r.srcErr = err
		} else if m == 0 {
			if empty++; empty > 100 {
				r.srcErr = io.ErrNoProgress
			}
		}
	}
	return nil
}

// atEOF reports whether the input has no more bytes.
func (r *reader) atEOF() bool {
	err := r.need(1)
	return errors.Is(err, ErrTruncated)
}

func (r *reader) readByte() (byte, error) {
	if err := r.need(1); err != nil {
		return 0, err
	}
	b := r.buf[r.pos]
	r.pos++
	return b, nil
}

// peek returns the next n ≤ readBufSize bytes without consuming them;
// they are valid until the next read.
func (r *reader) peek(n int) ([]byte, error) {
	if err := r.need(n); err != nil {
		return nil, err
	}
	return r.buf[r.pos : r.pos+n], nil
}

// next consumes n ≤ readBufSize bytes, valid until the next read.
func (r *reader) next(n int) ([]byte, error) {
	b, err := r.peek(n)
	r.pos += len(b)
	return b, err
}

// appendN appends the next n bytes to dst, growing dst only as bytes
// arrive.
func (r *reader) appendN(dst []byte, n uint64) ([]byte, error) {
	for n > 0 {
		chunk := int(min(n, readBufSize))
		if err := r.need(1); err != nil {
			return dst, err
		}
		chunk = min(chunk, r.end-r.pos)
		if cap(dst)-len(dst) < chunk {
			// At most double, at most growStep ahead of the bytes that
			// arrived, never beyond the claimed length.
			ahead := int(min(n, uint64(max(len(dst), growStep))))
			nd := make([]byte, len(dst), len(dst)+ahead)
			copy(nd, dst)
			dst = nd
		}
		dst = append(dst, r.buf[r.pos:r.pos+chunk]...)
		r.pos += chunk
		n -= uint64(chunk)
	}
	return dst, nil
}

func (r *reader) skip(n uint64) error {
	for n > 0 {
		if err := r.need(1); err != nil {
			return err
		}
		chunk := int(min(n, uint64(r.end-r.pos)))
		r.pos += chunk
		n -= uint64(chunk)
	}
	return nil
}

func (r *reader) uint32LE() (uint32, error) {
	b, err := r.next(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) uint64LE() (uint64, error) {
	b, err := r.next(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) float64LE() (float64, error) {
	u, err := r.uint64LE()
	return math.Float64frombits(u), err
}

// Length encoding: the top two bits of the first byte.
const (
	len6     = 0
	len14    = 1
	len32    = 0x80
	len64    = 0x81
	lenEnc   = 3
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// length reads a length; when the first byte marks a special string
// encoding, encoded is true and n is that encoding.
func (r *reader) length() (n uint64, encoded bool, err error) {
	b, err := r.readByte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case len6:
		return uint64(b & 0x3f), false, nil
	case len14:
		c, err := r.readByte()
		return uint64(b&0x3f)<<8 | uint64(c), false, err
	case lenEnc:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case len32:
		p, err := r.next(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case len64:
		p, err := r.next(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, errBadLength
}

var errBadLength = errors.New("bad length encoding")
