package server

import "github.com/dfly/dfly/resp"

// Replica side of replication (issue 8). Placeholder: never a replica.

// isReplica reports whether this server replicates from a master.
func (s *Server) isReplica() bool { return false }

// replicaInfo writes INFO replication's fields when this server is a
// replica and reports whether it did.
func (s *Server) replicaInfo(field func(k string, v any)) bool { return false }

// replicaRole answers ROLE when this server is a replica.
func (s *Server) replicaRole(w *resp.Writer) bool { return false }
