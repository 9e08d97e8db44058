package cluster

import (
	"strconv"
	"strings"

	"github.com/dfly/dfly/resp"
)

// Redis Cluster's gossip-era subcommands. A dfly node learns its topology
// from DFLYCLUSTER CONFIG or the etcd document (dfly cluster ...), never
// from its peers, so the ones that would change slots, epochs or peers by
// hand answer an error that says where the topology comes from; the ones
// that read it answer from the topology as Redis does (REPLICAS, SLAVES,
// COUNT-FAILURE-REPORTS: no failure reports without gossip), and
// SAVECONFIG and BUMPEPOCH have nothing to do.
func (r *replies) admin(w *resp.Writer, sub string, args [][]byte) {
	switch sub {
	case "replicas", "slaves", "count-failure-reports":
		id := string(args[2])
		var found *Group
		replica := false
		for _, g := range r.groups() {
			if g.Master.ID == id {
				found = &g
				break
			}
			for _, n := range g.Replicas {
				if n.ID == id {
					found, replica = &g, true
				}
			}
			if found != nil {
				break
			}
		}
		switch {
		case found == nil:
			w.Error("ERR Unknown node " + id)
		case sub == "count-failure-reports":
			w.Int(0)
		case replica:
			w.Error("ERR The specified node is not a master")
		default:
			e := strconv.FormatUint(r.v.Topology.Epoch, 10)
			w.Array(len(found.Replicas))
			for _, n := range found.Replicas {
				w.BulkString(r.nodeLine(*found, n, true, e) + "\n")
			}
		}
	case "saveconfig":
		w.SimpleString("OK")
	case "bumpepoch":
		w.SimpleString("STILL " + strconv.FormatUint(r.v.Topology.Epoch, 10))
	default:
		w.Error("ERR CLUSTER " + strings.ToUpper(sub) + " is not supported: a dfly node takes its topology from " +
			"DFLYCLUSTER CONFIG or the etcd document (dfly cluster init|add-master|add-replica|assign)")
	}
}
