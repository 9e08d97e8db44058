package server

// The server as package metrics reads it (metrics.Source), from what each
// shard publishes on its tick (shard.Publish), never stopping one; and
// /metrics on the main port.

import (
	"net"
	"net/http"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/panjf2000/gnet/v2"

	"github.com/dfly/dfly/metrics"
	"github.com/dfly/dfly/shard"
)

type metricsSource Server

// publish is shard sh's Publish: INFO's part of it, for the scrapes.
func (s *Server) publish(sh *shard.Shard) {
	in := &shardInfo{}
	s.readShard(sh, in)
	s.published[sh.ID].Store(in)
}

// MetricsHandler serves /metrics (--metrics_port; the main port's HTTP).
func (s *Server) MetricsHandler() http.Handler { return s.metricsHTTP }

// serveHTTP hands a connection whose first bytes are an HTTP request to
// the metrics endpoint, as Dragonfly answers HTTP on its main port.
func (s *Server) serveHTTP(c *Conn, gc gnet.Conn) gnet.Action {
	head, _ := gc.Next(-1) // Serve copies it
	c.handoff = func(nc net.Conn) { s.httpConns.Serve(nc, head) }
	s.handoffConn(c)
	return gnet.Close
}

// shardsPublished are the shards' last published figures (zero before
// their first tick).
func (m *metricsSource) shardsPublished() []shardInfo {
	out := make([]shardInfo, len(m.shards))
	for id := range out {
		if in := m.published[id].Load(); in != nil {
			out[id] = *in
		} else {
			out[id] = shardInfo{keys: make([]int, m.cfg.Databases), expires: make([]int, m.cfg.Databases)}
		}
	}
	return out
}

func (m *metricsSource) Info(field func(string, any)) {
	s := (*Server)(m)
	i := &infoWriter{srv: s, uptime: time.Since(s.start), emit: field, shards: m.shardsPublished()}
	i.sum()
	for _, sec := range infoSections {
		if sec.name != "latencystats" {
			sec.write(i)
		}
	}
}

func (m *metricsSource) Shards() []metrics.Shard {
	out := make([]metrics.Shard, len(m.shards))
	for id, in := range m.shardsPublished() {
		out[id] = metrics.Shard{Keys: in.keys, UsedBytes: in.tableBytes + int64(in.packed.Used),
			Commands: in.stats.Commands, JournalLSN: in.lsn, JournalBacklogBytes: int64(in.backlog)}
	}
	return out
}

func (m *metricsSource) Flows() []metrics.Flow {
	var out []metrics.Flow
	for _, f := range m.master.Flows() {
		out = append(out, metrics.Flow{Replica: f.Replica, Shard: f.Shard, Synced: f.Synced, AckedLSN: f.AckedLSN,
			QueuedBytes: f.QueuedBytes, SentBytes: f.SentBytes})
	}
	return out
}

func (m *metricsSource) Latency() map[string]*hdrhistogram.Histogram {
	out := map[string]*hdrhistogram.Histogram{}
	for cmd, h := range m.tracker.Merged() {
		out[cmd.Name] = h
	}
	return out
}
