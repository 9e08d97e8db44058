package command

import (
	"bytes"
	"sort"
	"sync"
	"sync/atomic"
)

// ErrorStats counts the error replies clients got, by their code (the
// first word: ERR, WRONGTYPE, NOPERM ...), for INFO errorstats and
// total_error_replies. Any goroutine counts; the mutex is held for one
// map update or one copy.
type ErrorStats struct {
	total  atomic.Uint64
	mu     sync.Mutex
	counts map[string]uint64
}

// Count counts the error reply b ('-' and its text) by its first word.
func (e *ErrorStats) Count(b []byte) {
	code := "ERR"
	b = b[1:min(len(b), 33)]
	if i := bytes.IndexByte(b, ' '); i > 0 {
		code = string(b[:i])
	}
	e.total.Add(1)
	e.mu.Lock()
	if e.counts == nil {
		e.counts = map[string]uint64{}
	}
	e.counts[code]++
	e.mu.Unlock()
}

// Total is the error replies counted.
func (e *ErrorStats) Total() uint64 { return e.total.Load() }

// Each calls fn for every code in order.
func (e *ErrorStats) Each(fn func(code string, n uint64)) {
	e.mu.Lock()
	codes := make([]string, 0, len(e.counts))
	for c := range e.counts {
		codes = append(codes, c)
	}
	counts := make(map[string]uint64, len(e.counts))
	for c, n := range e.counts {
		counts[c] = n
	}
	e.mu.Unlock()
	sort.Strings(codes)
	for _, c := range codes {
		fn(c, counts[c])
	}
}

// Reset forgets every count (CONFIG RESETSTAT).
func (e *ErrorStats) Reset() {
	e.total.Store(0)
	e.mu.Lock()
	e.counts = nil
	e.mu.Unlock()
}
