package client

import "sort"

// Client eviction (maxmemory-clients, Redis 7.0): when the memory of
// every client (its query buffer, arguments, MULTI queue, output) adds up
// to the limit or more, the clients using the most are closed until it is
// under, the server's own data untouched. A client that said CLIENT
// NO-EVICT on is exempt, though its memory counts in the total: past the
// limit with only exempt clients left, nothing more happens.

// Usage is one client's memory as client eviction sees it.
type Usage struct {
	Mem    int64
	Exempt bool // CLIENT NO-EVICT on
}

// Evictees are the indexes of the clients in us to close, largest first,
// for their total to fall under limit (Redis evicts while total >=
// limit, largest memory bucket first).
func Evictees(us []Usage, limit int64) []int {
	var total int64
	var order []int
	for i, u := range us {
		total += u.Mem
		if !u.Exempt {
			order = append(order, i)
		}
	}
	if limit <= 0 || total < limit {
		return nil
	}
	sort.SliceStable(order, func(a, b int) bool { return us[order[a]].Mem > us[order[b]].Mem })
	n := 0
	for ; n < len(order) && total >= limit; n++ {
		total -= us[order[n]].Mem
	}
	return order[:n]
}
