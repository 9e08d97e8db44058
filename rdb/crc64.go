package rdb

import "encoding/binary"

// crcPoly is Redis's "Jones" CRC-64 polynomial (0xad93d23594c935a9) in
// reflected form. Redis runs it with init 0 and no final xor, which
// hash/crc64 cannot express (it inverts in and out), and hash/crc64 builds
// a 16 KiB slicing table per call for custom polynomials, so we keep our own.
const crcPoly = 0x95ac9329ac4bc9b5

var crcTable = func() *[8][256]uint64 {
	var t [8][256]uint64
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ crcPoly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return &t
}()

// CRC64 continues Redis's CRC-64 of the bytes before p (crc) over p; start
// with 0. It is the checksum of RDB files and of DUMP payloads.
func CRC64(crc uint64, p []byte) uint64 {
	t := crcTable
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][crc&0xff] ^ t[6][crc>>8&0xff] ^ t[5][crc>>16&0xff] ^ t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^ t[2][crc>>40&0xff] ^ t[1][crc>>48&0xff] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}
