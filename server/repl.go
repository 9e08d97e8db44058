package server

import "github.com/dfly/dfly/resp"

// Replication glue (docs/DESIGN.md §6). The master side (package master:
// journal streaming, the backlog, dfly flows; its commands in
// cmd_master.go) and the replica side (package replica: the links,
// applying a master's stream, what a replica reports; REPLICAOF in
// repl_replica.go) meet here: INFO replication, ROLE and HELLO ask the
// replica side first and fall back to the master side.

// replicationInfo writes the fields of INFO's Replication section.
func (s *Server) replicationInfo(field func(k string, v any)) {
	if st, host, port, ok := s.replicaStatus(); ok {
		st.Info(host, port, s.runID, field)
		return
	}
	s.master.Info(field, s.failoverStateName())
}

// roleName is "master" or "replica", as Redis 7's HELLO reports it (ROLE
// and INFO say "slave").
func (s *Server) roleName() string {
	if s.isReplica() {
		return "replica"
	}
	return "master"
}

// writeRole answers ROLE.
func (s *Server) writeRole(w *resp.Writer) {
	if st, host, port, ok := s.replicaStatus(); ok {
		st.Role(host, port, w)
		return
	}
	s.master.Role(w)
}
