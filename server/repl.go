package server

import (
	"strconv"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// Replication glue (docs/DESIGN.md §6). The master side (package master:
// journal streaming, the backlog, dfly flows; its commands in
// cmd_master.go) and the replica side (package replica: the links,
// applying a master's stream, what a replica reports; REPLICAOF in
// repl_replica.go) meet here: INFO replication, ROLE and HELLO ask the
// replica side first and fall back to the master side.

// replicationInfo writes the fields of INFO's Replication section.
func (s *Server) replicationInfo(field func(k string, v any)) {
	if st, host, port, ok := s.replicaStatus(); ok {
		// What Sentinel reads to choose a replica to promote (0: never).
		prio, announced := s.cfg.Value("replica-priority"), 0
		if s.cfg.Value("replica-announced") == "yes" {
			announced = 1
		}
		st.Info(host, port, s.runID, func(k string, v any) {
			switch k {
			case "slave_priority":
				v = prio
			case "replica_announced":
				v = announced
			}
			field(k, v)
		})
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

// errNoReplicas is Redis's refusal of a write while a master has fewer
// good replicas than min-replicas-to-write.
const errNoReplicas = "NOREPLICAS Not enough good replicas to write."

// refreshGoodReplicas sets noReplicas, sampled with oom (oom.go): a master
// with min-replicas-to-write and min-replicas-max-lag set refuses writes
// (Conn.prepare; EXEC of writes aborts) while fewer of its replicas than
// the first acknowledged within the second's seconds, as Redis, so a master
// cut off from its replicas stops taking writes a split brain would lose.
func (s *Server) refreshGoodReplicas() {
	toWrite, _ := strconv.Atoi(s.cfg.Value("min-replicas-to-write"))
	maxLag, _ := strconv.Atoi(s.cfg.Value("min-replicas-max-lag"))
	s.noReplicas.Store(toWrite > 0 && maxLag > 0 && !s.isReplica() && s.master.GoodReplicas(int64(maxLag)) < toWrite)
}

// writes reports whether a queued command writes (EXEC is then refused
// without enough good replicas).
func (m *multiState) writes() bool {
	for _, q := range m.cmds {
		if q.cmd.Flags&command.FlagWrite != 0 {
			return true
		}
	}
	return false
}
