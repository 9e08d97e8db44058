package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/dfly/dfly/cluster"
	"github.com/dfly/dfly/cluster/etcd"
	"github.com/dfly/dfly/server"
)

// watchEtcd has a --cluster_mode=yes node follow its topology in etcd
// (--cluster_etcd, --cluster_name) and register itself there.
func watchEtcd(srv *server.Server, endpoints, name, announceIP string, port int, log *server.Logger) error {
	st := srv.Cluster()
	if st.Mode != cluster.Yes {
		return errors.New("--cluster_etcd needs --cluster_mode=yes")
	}
	cli, err := etcd.Connect(endpoints)
	if err != nil {
		return err
	}
	if announceIP == "" {
		announceIP = "127.0.0.1"
	}
	self := cluster.Node{ID: st.ID, IP: announceIP, Port: port}
	go etcd.Watch(context.Background(), cli, name, st, self, log.Noticef)
	return nil
}

const clusterUsage = `usage: dfly cluster [--etcd host:port,...] [--name NAME] COMMAND
Edits the topology document of cluster NAME in etcd (each edit raises its
epoch; every node watching it applies it):
  init                                   an empty topology (if there is none)
  add-master ID IP PORT                  a shard group mastered by node ID
  add-replica MASTER-ID ID IP PORT       node ID follows MASTER-ID's group
  assign MASTER-ID START END             slots START..END to MASTER-ID's group
  show                                   print the document
  nodes                                  the nodes alive (registered under a lease)
`

// runCluster is "dfly cluster ...": the admin's side of the topology in etcd.
func runCluster(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfly cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, clusterUsage) }
	endpoints := fs.String("etcd", "127.0.0.1:2379", "etcd endpoints, comma separated")
	name := fs.String("name", "dfly", "the cluster's name")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	a := fs.Args()
	if len(a) == 0 {
		fs.Usage()
		return 2
	}
	cli, err := etcd.Connect(*endpoints)
	if err != nil {
		fmt.Fprintf(stderr, "dfly cluster: %v\n", err)
		return 1
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			n = -1
		}
		return n
	}
	var edit func(t *cluster.Topology) error
	switch {
	case a[0] == "init" && len(a) == 1:
		edit = func(*cluster.Topology) error { return nil }
	case a[0] == "add-master" && len(a) == 4:
		edit = func(t *cluster.Topology) error { return t.AddMaster(cluster.Node{ID: a[1], IP: a[2], Port: num(a[3])}) }
	case a[0] == "add-replica" && len(a) == 5:
		edit = func(t *cluster.Topology) error {
			return t.AddReplica(a[1], cluster.Node{ID: a[2], IP: a[3], Port: num(a[4])})
		}
	case a[0] == "assign" && len(a) == 4:
		edit = func(t *cluster.Topology) error { return t.Assign(a[1], num(a[2]), num(a[3])) }
	case a[0] == "show" && len(a) == 1:
		resp, err := cli.Get(ctx, etcd.DocKey(*name))
		if err != nil {
			fmt.Fprintf(stderr, "dfly cluster: %v\n", err)
			return 1
		}
		for _, kv := range resp.Kvs {
			fmt.Fprintf(stdout, "%s\n", kv.Value)
		}
		return 0
	case a[0] == "nodes" && len(a) == 1:
		nodes, err := etcd.Nodes(ctx, cli, *name)
		if err != nil {
			fmt.Fprintf(stderr, "dfly cluster: %v\n", err)
			return 1
		}
		ids := make([]string, 0, len(nodes))
		for id := range nodes {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			fmt.Fprintf(stdout, "%s %s\n", id, nodes[id])
		}
		return 0
	default:
		fs.Usage()
		return 2
	}
	t, err := etcd.Edit(ctx, cli, *name, func(t *cluster.Topology) error {
		if a[0] == "init" && (t.Epoch > 0) {
			return errors.New("the cluster already has a topology")
		}
		return edit(t)
	})
	if err != nil {
		fmt.Fprintf(stderr, "dfly cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "epoch %d\n", t.Epoch)
	return 0
}
