// Package etcd keeps a cluster's topology in etcd: the document (dfly's
// JSON, with its epoch) under /dfly/<name>/topology, and a registry of
// live nodes, /dfly/<name>/nodes/<id> → host:port, each under its node's
// lease, so a node that dies leaves the registry but not the slot map.
//
// Watch runs a node's side: it applies every newer document to the node's
// cluster.State (the same path as DFLYCLUSTER CONFIG), keeps its
// registration alive, and records in State.Source whether etcd answers.
// Cut off from etcd, the node keeps serving its last topology; when etcd
// answers again it reads the document and so picks up what changed
// meanwhile. Edit is the admin's side (dfly cluster ...): a
// read-modify-write of the document, the epoch one higher, committed only
// if nobody wrote in between.
//
// It never touches the server: it reaches the node only through
// cluster.State (Apply, Source), so what etcd says enters by the same
// path as DFLYCLUSTER CONFIG, and a stale document is refused there.
package etcd
