package evict

import "math/rand/v2"

// A key's access stamp (shard.Value.Access) under an LFU policy, as
// Redis's 24-bit lru field: the minutes clock (16 bits, wrapping) of its
// last decrement above a logarithmic access counter (8 bits).
const lfuInit = 5 // LFU_INIT_VAL: a new key is not the first to go

// Minutes is the LFU clock at unix time ms: minutes, 16 bits, wrapping.
func Minutes(ms int64) uint32 { return uint32(ms/60000) & 0xFFFF }

// LFUNew is a new key's stamp.
func LFUNew(ms int64) uint32 { return Minutes(ms)<<8 | lfuInit }

// LFUStamp is a stamp with counter freq (RESTORE ... FREQ).
func LFUStamp(ms int64, freq uint8) uint32 { return Minutes(ms)<<8 | uint32(freq) }

// Counter is the stamp's counter decayed by one per decay minutes passed
// (LFUDecrAndReturn): what OBJECT FREQ shows.
func Counter(stamp uint32, ms int64, decay int64) uint8 {
	ldt := (stamp >> 8) & 0xFFFF
	counter := stamp & 0xFF
	if decay <= 0 {
		return uint8(counter)
	}
	now := Minutes(ms)
	elapsed := now - ldt
	if now < ldt {
		elapsed = 0xFFFF - ldt + now
	}
	periods := int64(elapsed) / decay
	if periods >= int64(counter) {
		return 0
	}
	return uint8(int64(counter) - periods)
}

// Touch is the stamp after an access: decayed, then incremented with
// probability 1/((counter-5)*factor+1) (LFULogIncr), stamped now.
func Touch(stamp uint32, ms int64, s *Settings) uint32 {
	c := Counter(stamp, ms, s.DecayTime.Load())
	if c < 255 {
		base := float64(c) - lfuInit
		if base < 0 {
			base = 0
		}
		if rand.Float64() < 1/(base*float64(s.LogFactor.Load())+1) {
			c++
		}
	}
	return Minutes(ms)<<8 | uint32(c)
}
