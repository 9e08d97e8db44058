package evict

import "math/bits"

// Sketch is allkeys-tinylfu's memory of how often keys were asked for,
// the ones not in the dataset too (TinyLFU's count-min sketch, as
// Caffeine's FrequencySketch): four rows of 4-bit counters, a key's
// estimate the least of its four. Every 10 × width increments all
// counters halve, so the past fades. One per shard, owned by its
// goroutine: no per-key memory, Bytes() per shard (width/2 bytes a row).
type Sketch struct {
	rows  [4][]uint64 // 16 counters a word
	mask  uint64      // width - 1 (counters per row)
	added int         // increments since the last halving
	reset int         // increments between halvings
}

// Ensure sizes the sketch for n keys: width the power of two at or
// above 2n (at least 1024 counters a row). It only grows, keeping every
// estimate: a counter's index is the low bits of its hash, so the wider
// row repeats the old one.
func (s *Sketch) Ensure(n int) {
	width := uint64(1) << bits.Len64(uint64(max(2*n, 1024)-1))
	if width <= s.mask+1 && s.rows[0] != nil {
		return
	}
	for i := range s.rows {
		row := make([]uint64, width/16)
		for at := 0; len(s.rows[i]) > 0 && at < len(row); at += len(s.rows[i]) {
			copy(row[at:], s.rows[i])
		}
		s.rows[i] = row
	}
	s.mask, s.reset = width-1, int(10*width)
}

// Bytes is the sketch's memory.
func (s *Sketch) Bytes() int { return 4 * len(s.rows[0]) * 8 }

// slot is the word and shift of h's counter in row i.
func (s *Sketch) slot(h uint64, i int) (int, uint) {
	x := (h ^ seeds[i]) * 0x9E3779B97F4A7C15
	c := (x >> 20) & s.mask
	return int(c >> 4), uint(c&15) * 4
}

var seeds = [4]uint64{0x8C7E1F5A3B2D4960, 0x1F3D5B7990A2C4E6, 0xC3A5F1E7D9B26480, 0x5E8D2C4B6A19F073}

// Add counts one request of the key hashing to h.
func (s *Sketch) Add(h uint64) {
	if s.rows[0] == nil {
		return
	}
	for i := range s.rows {
		w, sh := s.slot(h, i)
		if (s.rows[i][w]>>sh)&15 < 15 {
			s.rows[i][w] += 1 << sh
		}
	}
	if s.added++; s.added >= s.reset {
		s.halve()
	}
}

// halve halves every counter (Caffeine's reset).
func (s *Sketch) halve() {
	for i := range s.rows {
		for j, w := range s.rows[i] {
			s.rows[i][j] = (w >> 1) & 0x7777777777777777
		}
	}
	s.added /= 2
}

// Estimate is how often the key hashing to h was asked for lately, 0..15.
func (s *Sketch) Estimate(h uint64) uint8 {
	if s.rows[0] == nil {
		return 0
	}
	est := uint64(15)
	for i := range s.rows {
		w, sh := s.slot(h, i)
		est = min(est, (s.rows[i][w]>>sh)&15)
	}
	return uint8(est)
}
