package server

import (
	"bytes"
	"sort"
	"sync"
	"sync/atomic"
)

// errorStats counts the error replies clients got, by their code (the
// first word: ERR, WRONGTYPE, NOPERM ...), for INFO errorstats and
// total_error_replies; a command's own are its failed_calls, or its
// rejected_calls when it was refused before it ran. Only top-level
// replies count (Redis also counts those inside EXEC and scripts).
type errorStats struct {
	total  atomic.Uint64
	mu     sync.Mutex
	counts map[string]uint64
}

// countErrorReply counts the error reply b of cmd (nil: unknown).
func (s *Server) countErrorReply(cmd *Command, rejected bool, b []byte) {
	switch {
	case cmd == nil:
	case rejected:
		cmd.rejected.Add(1)
	default:
		cmd.failed.Add(1)
	}
	code := "ERR"
	b = b[1:min(len(b), 33)]
	if i := bytes.IndexByte(b, ' '); i > 0 {
		code = string(b[:i])
	}
	e := &s.errors
	e.total.Add(1)
	e.mu.Lock()
	if e.counts == nil {
		e.counts = map[string]uint64{}
	}
	e.counts[code]++
	e.mu.Unlock()
}

// each calls fn for every code in order.
func (e *errorStats) each(fn func(code string, n uint64)) {
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

func (e *errorStats) reset() {
	e.total.Store(0)
	e.mu.Lock()
	e.counts = nil
	e.mu.Unlock()
}
