package server

import (
	"net"
	"sync"

	"github.com/dfly/dfly/cluster"
)

// Cluster mode's wiring: package cluster holds the topology, the slot
// check and CLUSTER's replies; the server asks it per command
// (clusterRefusal) and becomes what each new view names it: a replica of
// its group's master, or a master again.
func (s *Server) setupCluster() {
	mode, _ := cluster.ParseMode(s.cfg.ClusterMode)
	s.cluster = cluster.New(mode, s.cfg.ClusterNodeID, s.cfg.ClusterAnnounceIP, s.cfg.Port)
	var mu sync.Mutex // one reconciliation at a time, each with the latest view
	s.cluster.OnChange = func(*cluster.View) {
		go func() {
			select {
			case <-s.ready:
			case <-s.done:
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if v := s.cluster.View(); !v.Master {
				if m, ok := v.MasterOf(); ok && s.replicaOf(m.IP, m.Port) {
					s.log.Noticef("Cluster epoch %d: replicating %s (%s)", v.Topology.Epoch, m.Addr(), m.ID)
				}
			} else if s.isReplica() {
				s.replicaNoOne("cluster topology names this node a master", nil)
			}
		}()
	}
}

// clusterRefusal is the cluster's error for p instead of running it
// (MOVED, CROSSSLOT, CLUSTERDOWN), "" to run it: for its keys, or for
// EXEC every queued command's together; an EXEC refused is discarded.
func (c *Conn) clusterRefusal(p *pending) string {
	st := c.srv.cluster
	if st.Mode == cluster.Off || st.Skips(p.cmd) {
		return ""
	}
	var r cluster.Route
	exec := p.cmd.Name == "exec" && c.multi != nil
	if exec {
		for _, q := range c.multi.cmds {
			c.keyPos = r.Add(q.cmd, q.args, c.keyPos)
		}
	} else {
		c.keyPos = r.Add(p.cmd, p.args, c.keyPos)
	}
	e := st.Refusal(&r, c.clusterRO)
	if e != "" && exec {
		c.multi = nil
		c.unwatch()
	}
	return e
}

// Cluster is the node's cluster state (cmd/dfly's etcd watcher applies to it).
func (s *Server) Cluster() *cluster.State { return s.cluster }

// Cluster and SetReadOnly (READONLY, READWRITE) are cluster.Conn's;
// Cluster and LocalIP cluster.Host's, for CLUSTER's replies.
func (c *Conn) Cluster() *cluster.State  { return c.srv.cluster }
func (c *Conn) SetReadOnly(on bool)      { c.clusterRO = on }
func (x *Coord) Cluster() *cluster.State { return x.Srv.cluster }
func (x *Coord) LocalIP() string {
	if x.Conn == nil {
		return ""
	}
	host, _, _ := net.SplitHostPort(x.Conn.info.laddr)
	return host
}
