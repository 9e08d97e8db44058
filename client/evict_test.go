package client

import (
	"slices"
	"testing"
)

func TestEvictees(t *testing.T) {
	us := []Usage{{Mem: 100}, {Mem: 5000, Exempt: true}, {Mem: 3000}, {Mem: 200}, {Mem: 2000}}
	for _, tc := range []struct {
		limit int64
		want  []int
	}{
		{0, nil},          // off
		{20000, nil},      // under
		{10300, []int{2}}, // 10300 >= 10300: the largest goes
		{7000, []int{2, 4}},
		{5000, []int{2, 4, 3, 0}}, // the exempt one keeps the total over: every other goes
	} {
		if got := Evictees(us, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d: %v, want %v", tc.limit, got, tc.want)
		}
	}
}
