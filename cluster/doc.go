// Package cluster is dfly's Redis Cluster mode without the server: which
// slot a key hashes to (CRC16 of the key or its {hash tag}), the topology
// (shard groups: a master, its replicas, their slot ranges, under an epoch
// that only rises), the node's view of it (slot → owning group, per-slot
// state, its own role), the check a command passes before it runs
// (-MOVED, -CROSSSLOT, -CLUSTERDOWN) and the replies of CLUSTER's
// subcommands and DFLYCLUSTER (commands.go).
//
// Sources of a topology: --cluster_mode=emulated builds one group, this
// node owning every slot; --cluster_mode=yes takes it from DFLYCLUSTER
// CONFIG <json> (Dragonfly's JSON shape, or {"epoch": n, "shards": [...]})
// or from etcd (package cluster/etcd keeps the document there and watches
// it). Either way it enters through State.Apply, the one path.
//
// What it never does: import the server, run on a shard, or gossip. The
// server asks State per command (Route, Refusal); what it must do when the
// node's role changes (follow a master, stop following) it learns from
// State.OnChange.
//
// Invariants:
//   - A view is immutable once published (State.view, an atomic pointer):
//     a command checks against one topology, never half of two.
//   - Apply takes only an epoch above the current one (a bare Dragonfly
//     array, which carries none, counts as the next epoch), so a stale
//     document never replaces a newer one, whatever order sources deliver.
//   - Every slot has exactly one owning group or none (Validate refuses
//     overlapping ranges); SlotState is per slot so that live migration
//     (issue 45) can mark slots Migrating/Importing under a new epoch.
package cluster
