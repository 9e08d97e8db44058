package offload

import "testing"

// TestOverBy: the heap is over its target by the larger of the live
// heap's excess over (1 - threshold) × max and the spans' excess over max.
func TestOverBy(t *testing.T) {
	for _, c := range []struct {
		max         int64
		threshold   float64
		live, inuse int64
		want        int64
	}{
		{1000, 0.5, 400, 600, -100}, // under both
		{1000, 0.5, 700, 800, 200},  // live over half
		{1000, 0.5, 400, 1300, 300}, // spans over max (holes)
		{1000, 0.2, 900, 1000, 100}, // live over 80%
	} {
		if got := overBy(c.max, c.threshold, c.live, c.inuse); got != c.want {
			t.Errorf("overBy(%d, %v, %d, %d) = %d, want %d", c.max, c.threshold, c.live, c.inuse, got, c.want)
		}
	}
}
