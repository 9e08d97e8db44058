package tests

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// etcdServer is a one-member etcd in a temporary directory.
type etcdServer struct {
	t        *testing.T
	bin, dir string
	client   string // host:port
	args     []string
	cmd      *exec.Cmd
}

func startEtcd(t *testing.T) *etcdServer {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (Debian package etcd-server): the cluster's etcd tests need it")
	}
	e := &etcdServer{t: t, bin: bin, dir: t.TempDir()}
	cp, pp := freePort(t), freePort(t)
	e.client = "127.0.0.1:" + strconv.Itoa(cp)
	peer := "http://127.0.0.1:" + strconv.Itoa(pp)
	e.args = []string{"--name", "default", "--data-dir", filepath.Join(e.dir, "data"),
		"--listen-client-urls", "http://" + e.client, "--advertise-client-urls", "http://" + e.client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default=" + peer}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *etcdServer) start() {
	e.t.Helper()
	e.cmd = exec.Command(e.bin, e.args...)
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := e.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", e.client, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("etcd did not listen within 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *etcdServer) stop() {
	if e.cmd != nil {
		e.cmd.Process.Kill()
		e.cmd.Wait()
		e.cmd = nil
	}
}

// admin runs "dfly cluster --etcd ... --name name args..." and returns its output.
func (e *etcdServer) admin(name string, args ...string) string {
	e.t.Helper()
	out, err := exec.Command(dflyPath, append([]string{"cluster", "--etcd", e.client, "--name", name}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("dfly cluster %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// etcdNode is a dfly cluster node following etcd, restartable on its port
// and directory.
type etcdNode struct {
	*Server
	id, dir string
	args    []string
}

func startEtcdNode(t *testing.T, e *etcdServer, name, id string) *etcdNode {
	t.Helper()
	n := &etcdNode{id: id, dir: t.TempDir()}
	n.args = []string{"--cluster_mode", "yes", "--cluster_node_id", id, "--cluster_etcd", e.client, "--cluster_name", name,
		"--dir", n.dir, "--bind", "127.0.0.1", "--shards", "2"}
	n.start(t, freePort(t))
	return n
}

func (n *etcdNode) start(t *testing.T, port int) {
	t.Helper()
	s, err := launch(t, dflyPath, append([]string{"--port", strconv.Itoa(port)}, n.args...), port)
	if err != nil {
		t.Fatal(err)
	}
	n.Server = s
}

// info is a field of INFO cluster.
func (n *etcdNode) info(t *testing.T, field string) string {
	for _, l := range strings.Split(n.Raw(t).Do("INFO", "cluster").Str, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// waitInfo waits until every node's INFO cluster field is want.
func waitInfo(t *testing.T, nodes []*etcdNode, field, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range nodes {
		for n.info(t, field) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s is %q, want %q", n.id, field, n.info(t, field), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// startRedisDebug is a standalone redis-server that answers DEBUG DIGEST.
func startRedisDebug(t *testing.T) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (it is the reference)")
	}
	port := freePort(t)
	s, err := launch(t, path, []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--enable-debug-command", "yes", "--dir", t.TempDir()}, port)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClusterEtcd: three nodes following a topology in a real etcd, edited
// by "dfly cluster": a ClusterClient's keys over all slots end on their
// owners and the nodes' digests XOR to a single redis-server's fed the same
// commands; a stale client is sent to the owner in one hop; an edit
// re-routes clients; a node killed -9 and restarted comes back with its
// data and the topology changed while it was down; with etcd stopped the
// nodes keep serving (and say so in INFO), and after its restart they pick
// up the next change.
func TestClusterEtcd(t *testing.T) {
	needTime(t, 60*time.Second)
	if IsRedis() {
		t.Skip("dfly's topology in etcd")
	}
	e := startEtcd(t)
	const name = "t1"
	var nodes []*etcdNode
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes = append(nodes, startEtcdNode(t, e, name, id))
	}
	e.admin(name, "init")
	for _, n := range nodes {
		e.admin(name, "add-master", n.id, "127.0.0.1", strconv.Itoa(n.Port))
	}
	e.admin(name, "assign", "n1", "0", "5460")
	e.admin(name, "assign", "n2", "5461", "10922")
	if out := e.admin(name, "assign", "n3", "10923", "16383"); out != "epoch 7\n" {
		t.Fatalf("the seventh edit: %q", out)
	}
	waitInfo(t, nodes, "cluster_epoch", "7")
	waitInfo(t, nodes, "cluster_source_connected", "1")
	if got := e.admin(name, "nodes"); got != fmt.Sprintf("n1 %s\nn2 %s\nn3 %s\n", nodes[0].Addr, nodes[1].Addr, nodes[2].Addr) {
		t.Errorf("dfly cluster nodes: %q", got)
	}

	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[1].Addr}})
	t.Cleanup(func() { cc.Close() })
	ref := startRedisDebug(t).Client(t, 2)
	const keys = 600
	for _, c := range []redis.Cmdable{cc, ref} {
		pipe := c.Pipeline()
		for i := range keys {
			k := "k" + strconv.Itoa(i)
			switch i % 4 {
			case 0:
				pipe.Set(ctx, k, i, 0)
			case 1:
				pipe.RPush(ctx, k, "a", i)
			case 2:
				pipe.HSet(ctx, k, "f", i, "g", "x")
			case 3:
				pipe.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "m"})
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipeline: %v", err)
		}
	}
	owner := func(slot int) *etcdNode { return nodes[min(slot/5461, 2)] }
	var sum [20]byte
	for _, n := range nodes {
		c := n.Raw(t)
		for _, k := range c.Do("KEYS", "*").Elems {
			if o := owner(keySlot(k.Str)); o != n {
				t.Errorf("%s (slot %d) on %s, owner %s", k.Str, keySlot(k.Str), n.id, o.id)
			}
		}
		d, _ := hex.DecodeString(c.Do("DEBUG", "DIGEST").Str)
		for i := range min(len(d), 20) {
			sum[i] ^= d[i]
		}
	}
	if want, err := ref.Do(ctx, "DEBUG", "DIGEST").Text(); err != nil || hex.EncodeToString(sum[:]) != want {
		got := hex.EncodeToString(sum[:])
		t.Errorf("the nodes' digests XOR to %s, a redis-server fed the same commands has %s (%v)", got, want, err)
	}

	// A stale client, one hop: n1 sends k2's slot to its owner.
	slot := keySlot("k2")
	o := owner(slot)
	stale := nodes[0]
	if o == stale {
		stale = nodes[1]
	}
	if got := stale.Raw(t).Do("HGET", "k2", "f").String(); got != fmt.Sprintf("(error) MOVED %d %s", slot, o.Addr) {
		t.Errorf("stale HGET: %s", got)
	}
	if got := o.Raw(t).Do("HGET", "k2", "f").String(); got != `"2"` {
		t.Errorf("HGET on the owner: %s", got)
	}

	// An edit re-routes: slots 0-99 go to n2; a new key there lands on n2.
	e.admin(name, "assign", "n2", "0", "99")
	waitInfo(t, nodes, "cluster_epoch", "8")
	newKey := "new0"
	for i := 0; keySlot(newKey) >= 100; i++ {
		newKey = "new" + strconv.Itoa(i)
	}
	if err := cc.Set(ctx, newKey, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s after the edit: %v", newKey, err)
	}
	if got := nodes[1].Raw(t).Do("GET", newKey).String(); got != `"v"` {
		t.Errorf("%s (slot %d) on n2: %s", newKey, keySlot(newKey), got)
	}

	// n3 saves, is killed -9, the topology changes meanwhile (slots
	// 100-199 to n2), and n3 restarts on its port and directory.
	n3 := nodes[2]
	n3keys := n3.Raw(t).Do("DBSIZE").Int
	if got := n3.Raw(t).Do("SAVE").String(); got != "OK" {
		t.Fatalf("SAVE: %s", got)
	}
	n3.Kill()
	e.admin(name, "assign", "n2", "100", "199")
	waitInfo(t, nodes[:2], "cluster_epoch", "9")
	n3.start(t, n3.Port)
	waitInfo(t, nodes, "cluster_epoch", "9")
	if got := n3.Raw(t).Do("DBSIZE").Int; got != n3keys {
		t.Errorf("n3 restarted with %d keys, had %d", got, n3keys)
	}
	if got := e.admin(name, "nodes"); !strings.Contains(got, "n3 "+n3.Addr) {
		t.Errorf("n3 is not registered again: %q", got)
	}

	// etcd stops: the nodes keep serving and say they cannot reach it;
	// it restarts: they pick up the next change.
	e.stop()
	waitInfo(t, nodes, "cluster_source_connected", "0")
	if v, err := cc.Get(ctx, "k0").Result(); err != nil || v != "0" {
		t.Errorf("GET k0 with etcd down: %q %v", v, err)
	}
	e.start()
	e.admin(name, "assign", "n1", "0", "99")
	waitInfo(t, nodes, "cluster_epoch", "10")
	waitInfo(t, nodes, "cluster_source_connected", "1")
	if got := nodes[1].Raw(t).Do("GET", newKey).String(); got != fmt.Sprintf("(error) MOVED %d %s", keySlot(newKey), nodes[0].Addr) {
		t.Errorf("after etcd's restart, %s on n2: %s", newKey, got)
	}
}
