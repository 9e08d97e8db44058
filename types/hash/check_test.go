package hash

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// check verifies the slot invariants: occupancy equals Len and every entry
// is reachable from its home without crossing an empty slot.
func (m *Map) check(t *testing.T) {
	t.Helper()
	occ := 0
	mask := len(m.slots) - 1
	for i, s := range m.slots {
		if s == 0 {
			continue
		}
		occ++
		for j := m.home(s, mask); j != i; j = (j + 1) & mask {
			if m.slots[j] == 0 {
				t.Fatalf("slot %d unreachable from home %d", i, m.home(s, mask))
			}
		}
		f, _, _ := m.entry(s)
		if m.find(f, hashOf(f)) != i {
			t.Fatalf("find(%q) != %d", f, i)
		}
	}
	if occ != m.n {
		t.Fatalf("occupancy %d, n %d", occ, m.n)
	}
}

func TestMapInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 3))
	m := &Map{}
	for op := 0; op < 200000; op++ {
		f := []byte(fmt.Sprintf("k%d", r.IntN(3000)))
		if r.IntN(2) == 0 {
			m.Set(f, randValue(r))
		} else {
			m.Delete(f)
		}
		if op%997 == 0 {
			m.check(t)
		}
	}
	m.check(t)
}
