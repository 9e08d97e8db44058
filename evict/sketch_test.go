package evict

import (
	"math/rand/v2"
	"testing"
)

func TestSketch(t *testing.T) {
	var s Sketch
	s.Ensure(10000)
	if s.Bytes() != 4*32768/2 {
		t.Fatalf("Bytes %d for 10000 keys", s.Bytes())
	}
	hot, cold := uint64(42), uint64(4242)
	for i := 0; i < 10; i++ {
		s.Add(hot)
	}
	s.Add(cold)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		s.Add(rng.Uint64()) // noise: one request each
	}
	if h, c := s.Estimate(hot), s.Estimate(cold); h < 10 || c > 3 {
		t.Fatalf("estimates: hot %d (asked 10 times), cold %d (once)", h, c)
	}
	for i := 0; i < 10*32768; i++ { // a halving's worth
		s.Add(rng.Uint64())
	}
	if h := s.Estimate(hot); h >= 10 {
		t.Fatalf("hot %d after a halving", h)
	}
	for i := 0; i < 40; i++ {
		s.Add(hot)
	}
	if h := s.Estimate(hot); h != 15 {
		t.Fatalf("hot %d, want the 4-bit ceiling", h)
	}
	c := s.Estimate(cold)
	s.Ensure(100000) // wider: the estimates stay
	if h, c2 := s.Estimate(hot), s.Estimate(cold); h != 15 || c2 != c || s.Bytes() != 4*262144/2 {
		t.Fatalf("after growing: hot %d, cold %d (was %d), %d bytes", h, c2, c, s.Bytes())
	}
}
