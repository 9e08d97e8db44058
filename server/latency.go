package server

import (
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/latency"
	"github.com/dfly/dfly/resp"
)

// latencyCheck records a command of us microseconds when the monitor is
// on and it reached the threshold (called by slowCheck).
func (s *Server) latencyCheck(us int64) {
	s.latency.AddOver("command", us/1000, s.cfg.LatencyThreshold.Load())
}

// trackLatency adds a call of cmd with args that took ns to recorder i's
// histograms when latency-tracking is on. Recorders: one per shard (its
// id), one per loop, one the coordinators share (loopRecorder).
func (s *Server) trackLatency(i int, cmd *command.Command, args [][]byte, ns int64) {
	if ns <= 0 || !s.cfg.LatencyTracking.Load() {
		return
	}
	if cmd = cmd.Called(args); cmd != nil {
		s.tracker.Recorder(i).Record(cmd, ns)
	}
}

// runTimed runs a command of EXEC or of a script on shard x.S's goroutine
// and counts its time in commandstats and its latency histogram, as Redis
// 7.0 counts the commands a transaction or a script runs.
func runTimed(x *command.Exec, cmd *command.Command, run func(*command.Exec, *command.Command)) {
	s := srvOf(x)
	if !s.cfg.Timing() {
		run(x, cmd)
		return
	}
	start := nanotime()
	run(x, cmd)
	ns := nanotime() - start
	cmd.Nsec.Add(uint64(ns))
	s.trackLatency(x.S.ID, cmd, x.Args, ns)
}

// loopRecorder is loop's recorder; the coordinators' for -1 (or a loop
// not yet known).
func (s *Server) loopRecorder(loop int) int {
	if loop < 0 || loop >= s.cfg.Loops {
		return len(s.shards) + s.cfg.Loops
	}
	return len(s.shards) + loop
}

func cmdLatency(c *Conn, a [][]byte, w *resp.Writer) {
	c.srv.latency.Reply(w, a, c.srv.cfg.LatencyThreshold.Load(), func(w *resp.Writer, names [][]byte) {
		latency.WriteHistogram(w, c.srv.table, c.srv.tracker.Merged(), names)
	})
}

func (i *infoWriter) infoLatencystats() {
	if i.srv.cfg.LatencyTracking.Load() {
		latency.WritePercentiles(&i.b, i.srv.tracker.Merged(), i.srv.cfg.Percentiles())
	}
}

// expireCycle is a shard's active-expiry step of d: the expire-cycle
// event's sample when the monitor is on and d reached the threshold.
func (s *Server) expireCycle(d time.Duration) {
	s.latency.AddOver("expire-cycle", d.Milliseconds(), s.cfg.LatencyThreshold.Load())
}
