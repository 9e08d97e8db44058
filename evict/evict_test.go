package evict

import (
	"testing"
	"time"
)

func TestPolicyNames(t *testing.T) {
	for p := NoEviction; p <= VolatileTTL; p++ {
		q, err := ParsePolicy(p.String())
		if err != nil || q != p {
			t.Fatalf("%v: parsed %v, %v", p, q, err)
		}
	}
	if _, err := ParsePolicy("lru"); err == nil {
		t.Fatal("lru parsed")
	}
	if !VolatileLFU.LFU() || !AllKeysLFU.LFU() || AllKeysLRU.LFU() || !VolatileTTL.Volatile() || AllKeysRandom.Volatile() {
		t.Fatal("flags")
	}
}

func TestPoolKeepsTheBest(t *testing.T) {
	var p Pool
	for i := 0; i < 100; i++ {
		p.Offer(Candidate{Key: string(rune('a'+i%26)) + string(rune('0'+i/26)), Score: uint64((i * 37) % 100)})
	}
	p.Offer(Candidate{Key: "a0", Score: 1000}) // beats the worst, 84
	p.Offer(Candidate{Key: "a0", Score: 1000}) // a key already in: kept once
	if p.Len() != PoolSize {
		t.Fatalf("len %d", p.Len())
	}
	last := uint64(1 << 63)
	for p.Len() > 0 {
		c, _ := p.Pop()
		if c.Score > last {
			t.Fatalf("popped %d after %d", c.Score, last)
		}
		last = c.Score
	}
	if last != 85 { // a0 and the 15 best of 0..99
		t.Fatalf("worst kept %d", last)
	}
}

func TestLFU(t *testing.T) {
	s := NewSettings()
	s.LogFactor.Store(0)
	now := int64(1e12)
	st := LFUNew(now)
	if Counter(st, now, 1) != 5 {
		t.Fatal("new counter")
	}
	for i := 0; i < 300; i++ {
		st = Touch(st, now, s)
	}
	if Counter(st, now, 1) != 255 {
		t.Fatalf("saturates at 255: %d", Counter(st, now, 1))
	}
	if c := Counter(st, now+10*60000, 1); c != 245 {
		t.Fatalf("ten minutes decay ten: %d", c)
	}
	if c := Counter(st, now+10*60000, 0); c != 255 {
		t.Fatalf("decay 0 keeps it: %d", c)
	}
	wrap := LFUStamp(0xFFFF*60000, 10) // the minutes clock wraps
	if c := Counter(wrap, 0xFFFF*60000+3*60000, 1); c != 8 {
		t.Fatalf("across the wrap: %d", c)
	}
	s.LogFactor.Store(10)
	st = LFUStamp(now, 100)
	for i := 0; i < 100; i++ {
		st = Touch(st, now, s)
	}
	if c := Counter(st, now, 1); c > 102 { // p = 1/951 per access
		t.Fatalf("log factor: %d", c)
	}
}

func TestBudget(t *testing.T) {
	var b Budget
	if b.Over(90, 100, 1) != 0 || b.Over(150, 100, 1) != 50 {
		t.Fatal("over")
	}
	b.Freed(30)
	if b.Over(150, 100, 1) != 20 {
		t.Fatal("freed not subtracted before a collection")
	}
	if b.Over(150, 100, 2) != 50 {
		t.Fatal("a collection counts the garbage as gone")
	}
	if Share(1000, 4) != 16<<10 || Share(1<<30, 4) != 1<<28 {
		t.Fatal("share")
	}
	if TimeLimit(10) != 500*time.Microsecond || TimeLimit(0) != 0 || TimeLimit(100) < time.Hour {
		t.Fatal("time limit")
	}
}
