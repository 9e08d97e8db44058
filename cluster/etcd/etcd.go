package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/dfly/dfly/cluster"
)

// Keys of cluster name.
func DocKey(name string) string      { return "/dfly/" + name + "/topology" }
func NodesPrefix(name string) string { return "/dfly/" + name + "/nodes/" }

// Connect opens a client of endpoints ("host:port,host:port"); it does not
// wait for etcd to answer.
func Connect(endpoints string) (*clientv3.Client, error) {
	var eps []string
	for _, e := range strings.Split(endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second, Logger: zap.NewNop()})
}

// Period is how often a watcher checks etcd when no event comes, and how
// long it waits for an answer.
const Period = time.Second

// leaseTTL is a registration's life without keep-alives, in seconds.
const leaseTTL = 5

// Watch follows cluster name's document in etcd for st until ctx ends,
// registering self. logf reports what changes.
func Watch(ctx context.Context, cli *clientv3.Client, name string, st *cluster.State, self cluster.Node, logf func(string, ...any)) {
	src := "etcd"
	st.Source.Name.Store(&src)
	w := &watcher{cli: cli, name: name, st: st, self: self, logf: logf}
	tick := time.NewTicker(Period)
	defer tick.Stop()
	for {
		w.round(ctx)
		select {
		case <-ctx.Done():
			return
		case resp, ok := <-w.events:
			if !ok || resp.Err() != nil {
				w.events = nil
				continue
			}
			for _, ev := range resp.Events {
				if ev.Kv != nil && ev.Type == clientv3.EventTypePut {
					w.apply(ev.Kv.Value)
				}
			}
		case <-tick.C:
		}
	}
}

type watcher struct {
	cli    *clientv3.Client
	name   string
	st     *cluster.State
	self   cluster.Node
	logf   func(string, ...any)
	events clientv3.WatchChan
	cancel context.CancelFunc
	lease  clientv3.LeaseID
	alive  <-chan *clientv3.LeaseKeepAliveResponse
}

// round reads the document (a catch-up after any outage), renews the
// registration when its lease is gone, and (re)starts the watch.
func (w *watcher) round(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, Period)
	defer cancel()
	resp, err := w.cli.Get(c, DocKey(w.name))
	if err != nil {
		if w.st.Source.Connected.Swap(false) {
			w.logf("Cluster: etcd unreachable (%v): serving topology epoch %d", err, w.st.Epoch())
		}
		return
	}
	if !w.st.Source.Connected.Swap(true) {
		w.logf("Cluster: etcd reachable, topology epoch %d", w.st.Epoch())
	}
	if len(resp.Kvs) > 0 {
		w.apply(resp.Kvs[0].Value)
	}
	w.register(c)
	if w.events == nil {
		if w.cancel != nil {
			w.cancel()
		}
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		w.cancel = wcancel
		w.events = w.cli.Watch(wctx, DocKey(w.name), clientv3.WithRev(resp.Header.Revision+1))
	}
}

// register puts the node's key under a lease kept alive; a lapsed lease
// (etcd was away longer than its TTL) is granted again.
func (w *watcher) register(ctx context.Context) {
	if w.alive != nil {
		select {
		case _, ok := <-w.alive:
			if ok {
				for len(w.alive) > 0 {
					<-w.alive
				}
				return
			}
			w.alive = nil
		default:
			return
		}
	}
	g, err := w.cli.Grant(ctx, leaseTTL)
	if err != nil {
		return
	}
	if _, err := w.cli.Put(ctx, NodesPrefix(w.name)+w.self.ID, w.self.Addr(), clientv3.WithLease(g.ID)); err != nil {
		return
	}
	alive, err := w.cli.KeepAlive(context.Background(), g.ID)
	if err != nil {
		return
	}
	w.lease, w.alive = g.ID, alive
}

func (w *watcher) apply(doc []byte) {
	t, err := cluster.Parse(doc)
	if err != nil {
		w.logf("Cluster: etcd's topology is invalid: %v", err)
		return
	}
	if t.Epoch <= w.st.Epoch() {
		return
	}
	if err := w.st.Apply(t); err != nil && !errors.Is(err, cluster.ErrStale) {
		w.logf("Cluster: topology epoch %d not applied: %v", t.Epoch, err)
		return
	}
	w.logf("Cluster: topology epoch %d applied from etcd", t.Epoch)
}

// Edit changes cluster name's document by fn (nil: a new, empty one when
// there is none) with the epoch one higher, committed only if the document
// did not change meanwhile (retried then). It returns what it wrote.
func Edit(ctx context.Context, cli *clientv3.Client, name string, fn func(*cluster.Topology) error) (*cluster.Topology, error) {
	for attempt := 0; attempt < 10; attempt++ {
		resp, err := cli.Get(ctx, DocKey(name))
		if err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		t := &cluster.Topology{}
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
			if t, err = cluster.Parse(resp.Kvs[0].Value); err != nil {
				return nil, err
			}
		}
		if err := fn(t); err != nil {
			return nil, err
		}
		t.Epoch++
		cmp := clientv3.Compare(clientv3.ModRevision(DocKey(name)), "=", rev)
		put := clientv3.OpPut(DocKey(name), string(t.JSON()))
		tr, err := cli.Txn(ctx).If(cmp).Then(put).Commit()
		if err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		if tr.Succeeded {
			return t, nil
		}
	}
	return nil, errors.New("etcd: the document kept changing; try again")
}

// Nodes is the registry: node id → host:port of every node alive.
func Nodes(ctx context.Context, cli *clientv3.Client, name string) (map[string]string, error) {
	resp, err := cli.Get(ctx, NodesPrefix(name), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), NodesPrefix(name))] = string(kv.Value)
	}
	return out, nil
}
