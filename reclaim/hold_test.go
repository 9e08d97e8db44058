package reclaim

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gcPercent reads the collector's percent.
func gcPercent() int {
	_, _, p, _ := gcState()
	return p
}

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocGarbage allocates n bytes that are garbage at once.
func allocGarbage(n int) {
	for ; n > 0; n -= 64 << 10 {
		sinkBuf = make([]byte, 64<<10)
	}
}

var sinkBuf []byte

// TestHoldCollections: garbage that would start cycles starts none while
// a hold is taken (it is within the room the hold adds), and does once it
// is released; holds nest, the last release restores the percent, a
// second release of one hold does nothing, a percent set meanwhile by
// someone else stays, and a collector that is off stays off.
func TestHoldCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC() // a small live heap: its goal is a few MB

	before := gcCycles()
	allocGarbage(24 << 20)
	if gcCycles() == before {
		t.Fatal("24 MB of garbage on a small heap started no cycle: the test shows nothing")
	}

	runtime.GC()
	release := HoldCollections()
	inner := HoldCollections()
	if p := gcPercent(); p <= 100 {
		t.Fatalf("percent %d during a hold, want above 100", p)
	}
	before = gcCycles()
	allocGarbage(24 << 20) // less than holdMinRoom
	if n := gcCycles() - before; n != 0 {
		t.Fatalf("%d cycles started during a hold", n)
	}
	inner()
	inner() // idempotent: the outer hold still counts
	if p := gcPercent(); p <= 100 {
		t.Fatalf("percent %d after an inner release, want the hold's", p)
	}
	release()
	if p := gcPercent(); p != 100 {
		t.Fatalf("percent %d after the last release, want 100", p)
	}
	allocGarbage(24 << 20)
	if gcCycles() == before {
		t.Fatal("no cycle after the release")
	}

	// A percent set during the hold is not overwritten by its release.
	release = HoldCollections()
	debug.SetGCPercent(150)
	release()
	if p := gcPercent(); p != 150 {
		t.Fatalf("percent %d, want the 150 set during the hold", p)
	}

	// A collector that is off stays off.
	debug.SetGCPercent(-1)
	release = HoldCollections()
	if p := gcPercent(); p != -1 {
		t.Fatalf("percent %d during a hold of a stopped collector", p)
	}
	release()
	if p := gcPercent(); p != -1 {
		t.Fatalf("percent %d after a hold of a stopped collector", p)
	}
}

func TestHeadroomPercent(t *testing.T) {
	h := Headroom{MinRoom: 64 << 20, Div: 16, MaxPercent: 200}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 200},        // nothing known yet
		{1 << 20, 200},  // 64 MiB of room would be 6400%: capped
		{32 << 20, 200}, // exactly the cap
		{100 << 20, 64}, // MinRoom: 64/100
		{512 << 20, 12}, // MinRoom, rounded down
		{1 << 30, 6},    // the cross-over: live/16 = MinRoom
		{16 << 30, 6},   // live/16
	} {
		if got := h.Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestRetuneYieldsToHolds: with a headroom set, retune sets the percent
// from the live heap; not while a hold is taken (the hold's release
// restores what the hold found), not when the collector is off, and not
// once the headroom is turned off.
func TestRetuneYieldsToHolds(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer SetHeadroom(Headroom{})
	h := Headroom{MinRoom: 64 << 20, Div: 16, MaxPercent: 200}
	SetHeadroom(h)

	retune(256 << 20)
	if p := gcPercent(); p != 25 {
		t.Fatalf("percent %d for 256 MiB live, want 25", p)
	}
	release := HoldCollections()
	held := gcPercent()
	retune(1 << 30)
	if p := gcPercent(); p != held {
		t.Fatalf("retune set %d during a hold (the hold's %d)", p, held)
	}
	release()
	if p := gcPercent(); p != 25 {
		t.Fatalf("percent %d after the hold, want the headroom's 25 back", p)
	}
	retune(1 << 30)
	if p := gcPercent(); p != 6 {
		t.Fatalf("percent %d for 1 GiB live, want 6", p)
	}

	debug.SetGCPercent(-1)
	retune(256 << 20)
	if p := gcPercent(); p != -1 {
		t.Fatalf("retune turned a stopped collector on (%d)", p)
	}
	debug.SetGCPercent(100)
	SetHeadroom(Headroom{})
	retune(256 << 20)
	if p := gcPercent(); p != 100 {
		t.Fatalf("retune set %d with the headroom off", p)
	}
}
