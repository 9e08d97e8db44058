package cluster

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// crcTable is CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the
// checksum Redis Cluster hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 is the XMODEM CRC16 of b.
func CRC16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// KeySlot is the slot of key: CRC16 of its hash tag, modulo Slots.
func KeySlot(key []byte) int { return int(CRC16(HashTag(key)) & (Slots - 1)) }

// HashTag is the part of key between its first '{' and the next '}' when
// that part is non-empty, as in Redis Cluster; otherwise the whole key.
func HashTag(key []byte) []byte {
	for i, ch := range key {
		if ch == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						return key[i+1 : j]
					}
					return key
				}
			}
			return key
		}
	}
	return key
}
