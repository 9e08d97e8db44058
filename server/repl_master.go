package server

import "github.com/dfly/dfly/resp"

// Master side of replication (issue 8). Placeholder until the journal
// lands: a master with no replicas.

// masterInfo writes INFO replication's fields for a master.
func (s *Server) masterInfo(field func(k string, v any)) {
	field("role", "master")
	field("connected_slaves", 0)
	field("master_replid", s.runID)
	field("master_repl_offset", 0)
}

// masterRole answers ROLE on a master: "master", offset, replicas.
func (s *Server) masterRole(w *resp.Writer) {
	w.Array(3)
	w.BulkString("master")
	w.Int(0)
	w.Array(0)
}
