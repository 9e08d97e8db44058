package server

import (
	"github.com/dfly/dfly/resp"
)

// latencyCheck records a command of us microseconds when the monitor is
// on and it reached the threshold (called by slowCheck).
func (s *Server) latencyCheck(us int64) {
	if thr := s.cfg.LatencyThreshold.Load(); thr > 0 && us >= thr*1000 {
		s.latency.Add("command", us/1000)
	}
}

func cmdLatency(c *Conn, a [][]byte, w *resp.Writer) {
	c.srv.latency.Reply(w, a, c.srv.cfg.LatencyThreshold.Load())
}
