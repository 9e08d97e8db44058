package tests

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startEmulated starts a node that owns every slot: dfly with
// --cluster_mode emulated, or redis-server in cluster mode given slots
// 0-16383 (CLUSTER ADDSLOTSRANGE) and waited for until its state is ok.
func startEmulated(t *testing.T) *Server {
	t.Helper()
	if !IsRedis() {
		return StartServer(t, "--cluster_mode", "emulated")
	}
	srv := StartServer(t, "--cluster-enabled", "yes")
	c := srv.Raw(t)
	if r := c.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); r.IsError() {
		t.Fatalf("ADDSLOTSRANGE: %v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Do("CLUSTER", "INFO").Str, "cluster_state:ok") {
		if time.Now().After(deadline) {
			t.Fatal("redis-server: cluster_state never ok")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv
}

// cmdReply is a command and its rendered reply.
type cmdReply struct {
	cmd  []string
	want string
}

// expectReplies sends each step's command on c in order and checks its reply.
func expectReplies(t *testing.T, c *RawConn, steps []cmdReply) {
	t.Helper()
	for _, s := range steps {
		if got := c.Do(s.cmd...).String(); got != s.want {
			t.Errorf("%s: %s, want %s", strings.Join(s.cmd, " "), got, s.want)
		}
	}
}

// TestClusterEmulatedReplies: a single node in cluster mode answers the
// CLUSTER subcommands and refuses what Redis Cluster refuses, with
// redis-server 7's texts (also run against it).
func TestClusterEmulatedReplies(t *testing.T) {
	t.Parallel()
	srv := startEmulated(t)
	c := srv.Raw(t)
	expectReplies(t, c, []cmdReply{
		{[]string{"CLUSTER", "KEYSLOT", "123456789"}, "(integer) 12739"},
		{[]string{"CLUSTER", "KEYSLOT", "{user1}.following"}, "(integer) 8106"},
		{[]string{"CLUSTER", "KEYSLOT"}, "(error) ERR wrong number of arguments for 'cluster|keyslot' command"},
		{[]string{"CLUSTER", "NOSUCH"}, "(error) ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP."},
		{[]string{"MSET", "a", "1", "b", "2"}, "(error) CROSSSLOT Keys in request don't hash to the same slot"},
		{[]string{"MSET", "{a}1", "1", "{a}2", "2", "a", "3"}, "OK"},
		{[]string{"MGET", "a", "{a}1", "b"}, "(error) CROSSSLOT Keys in request don't hash to the same slot"},
		{[]string{"EVAL", "return 1", "2", "a", "b"}, "(error) CROSSSLOT Keys in request don't hash to the same slot"},
		{[]string{"EVAL", "return redis.call('get', KEYS[1])", "1", "{a}2"}, `"2"`},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "15495"}, "(integer) 3"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "x"}, "(error) ERR value is not an integer or out of range"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, "(error) ERR Invalid slot"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "-1"}, "(error) ERR Invalid slot"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "15495", "-1"}, "(error) ERR Invalid slot or number of keys"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "16384", "1"}, "(error) ERR Invalid slot or number of keys"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1", "x"}, "(error) ERR value is not an integer or out of range"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "3300", "10"}, "(empty array)"},
		{[]string{"SELECT", "1"}, "(error) ERR SELECT is not allowed in cluster mode"},
		{[]string{"SELECT", "0"}, "OK"},
		{[]string{"READONLY"}, "OK"},
		{[]string{"READWRITE"}, "OK"},
		{[]string{"GET", "a"}, `"3"`},
		{[]string{"MOVE", "a", "1"}, "(error) ERR MOVE is not allowed in cluster mode"},
		{[]string{"SWAPDB", "0", "1"}, "(error) ERR SWAPDB is not allowed in cluster mode"},
		{[]string{"COPY", "a", "b", "DB", "1"}, "(error) CROSSSLOT Keys in request don't hash to the same slot"},
		{[]string{"COPY", "{a}1", "{a}3", "DB", "1"}, "(error) ERR Copying to another database is not allowed in cluster mode"},
		{[]string{"COPY", "{a}1", "{a}3", "DB", "0"}, "(integer) 1"},
	})
	// Counted over a keyspace scanned in many steps per shard.
	c.Do("DEBUG", "POPULATE", "100000")
	want := 0
	for i := range 100000 {
		if keySlot("key:"+strconv.Itoa(i)) == 100 {
			want++
		}
	}
	if got := c.Do("CLUSTER", "COUNTKEYSINSLOT", "100").Int; got != int64(want) {
		t.Errorf("COUNTKEYSINSLOT 100 after DEBUG POPULATE 100000: %d, want %d", got, want)
	}
	if got := c.Do("CLUSTER", "GETKEYSINSLOT", "100", "1000"); len(got.Elems) != want {
		t.Errorf("GETKEYSINSLOT 100 1000: %d keys, want %d", len(got.Elems), want)
	}
	keys := c.Do("CLUSTER", "GETKEYSINSLOT", "15495", "2")
	if len(keys.Elems) != 2 {
		t.Errorf("GETKEYSINSLOT 15495 2: %v", keys)
	}
	if got := c.Do("CONFIG", "GET", "cluster-enabled").String(); got != "(array)\n  \"cluster-enabled\"\n  \"yes\"" {
		t.Errorf("CONFIG GET cluster-enabled: %s", got)
	}
	if info := c.Do("INFO", "cluster").Str; !strings.Contains(info, "cluster_enabled:1\r\n") {
		t.Errorf("INFO cluster: %q", info)
	}
	if info := c.Do("CLUSTER", "INFO").Str; !strings.Contains(info, "cluster_state:ok\r\n") || !strings.Contains(info, "cluster_slots_assigned:16384\r\n") {
		t.Errorf("CLUSTER INFO: %q", info)
	}
	// A lone redis-server that met no other node does not know its address
	// (""); dfly names the one the client connected to.
	ip := "127.0.0.1"
	if IsRedis() {
		ip = ""
	}
	slots := c.Do("CLUSTER", "SLOTS")
	if len(slots.Elems) != 1 || len(slots.Elems[0].Elems) != 3 || slots.Elems[0].Elems[0].Int != 0 || slots.Elems[0].Elems[1].Int != 16383 ||
		slots.Elems[0].Elems[2].Elems[1].Int != int64(srv.Port) || slots.Elems[0].Elems[2].Elems[0].Str != ip {
		t.Errorf("CLUSTER SLOTS: %v", slots)
	}
	id := c.Do("CLUSTER", "MYID").Str
	nodes := c.Do("CLUSTER", "NODES").Str
	if !strings.HasPrefix(nodes, id+" "+ip+":"+strconv.Itoa(srv.Port)+"@") || !strings.Contains(nodes, " myself,master - ") || !strings.HasSuffix(nodes, " connected 0-16383\n") {
		t.Errorf("CLUSTER NODES: %q (id %s)", nodes, id)
	}
	shards := c.Do("CLUSTER", "SHARDS").String()
	for _, want := range []string{`"slots"`, "(integer) 16383", `"nodes"`, `"` + id + `"`, `"master"`, `"online"`} {
		if !strings.Contains(shards, want) {
			t.Errorf("CLUSTER SHARDS lacks %s:\n%s", want, shards)
		}
	}
}

// TestClusterEmulatedMulti: MULTI queues a command only when its keys
// share a slot, and EXEC refuses a transaction whose commands span slots
// (CROSSSLOT) and discards it, as Redis Cluster.
func TestClusterEmulatedMulti(t *testing.T) {
	t.Parallel()
	srv := startEmulated(t)
	c := srv.Raw(t)
	expectReplies(t, c, []cmdReply{
		{[]string{"MULTI"}, "OK"},
		{[]string{"SET", "{b}1", "x"}, "QUEUED"},
		{[]string{"SET", "{f}2", "y"}, "QUEUED"},
		{[]string{"EXEC"}, "(error) CROSSSLOT Keys in request don't hash to the same slot"},
		{[]string{"EXISTS", "{b}1"}, "(integer) 0"},
		{[]string{"MULTI"}, "OK"}, // the refused transaction is gone
		{[]string{"MSET", "{b}1", "x", "{f}1", "y"}, "(error) CROSSSLOT Keys in request don't hash to the same slot"},
		{[]string{"EXEC"}, "(error) EXECABORT Transaction discarded because of previous errors."},
		{[]string{"MULTI"}, "OK"},
		{[]string{"SET", "{b}1", "x"}, "QUEUED"},
		{[]string{"GET", "{b}2"}, "QUEUED"},
		{[]string{"EXEC"}, "(array)\n  OK\n  (nil)"},
	})
}

// TestClusterEmulatedGoRedis: go-redis's ClusterClient works unchanged
// against one node: pipelines, MULTI/EXEC and Lua over hash-tagged keys,
// Pub/Sub.
func TestClusterEmulatedGoRedis(t *testing.T) {
	t.Parallel()
	srv := startEmulated(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}, Protocol: proto})
		t.Cleanup(func() { c.Close() })
		p := fmt.Sprintf("p%d:", proto)
		pipe := c.Pipeline()
		for i := range 200 {
			pipe.Set(ctx, p+strconv.Itoa(i), i, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipeline: %v", err)
		}
		for i := range 200 {
			if v, err := c.Get(ctx, p+strconv.Itoa(i)).Int(); err != nil || v != i {
				t.Fatalf("GET %d: %d %v", i, v, err)
			}
		}
		tag := "{" + p + "user}"
		if _, err := c.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			tx.Set(ctx, tag+"a", 1, 0)
			tx.IncrBy(ctx, tag+"b", 5)
			tx.LPush(ctx, tag+"l", "x", "y")
			return nil
		}); err != nil {
			t.Fatalf("MULTI/EXEC: %v", err)
		}
		if _, err := c.MSet(ctx, tag+"c", 1, tag+"d", 2).Result(); err != nil {
			t.Fatalf("MSET with a hash tag: %v", err)
		}
		if err := c.MSet(ctx, p+"x", 1, p+"y", 2).Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
			t.Fatalf("MSET across slots: %v", err)
		}
		n, err := c.Eval(ctx, "return redis.call('incrby', KEYS[1], 1) + redis.call('incrby', KEYS[2], 1)", []string{tag + "a", tag + "b"}).Int()
		if err != nil || n != 2+6 {
			t.Fatalf("EVAL: %d %v", n, err)
		}
		sub := c.Subscribe(ctx, p+"news")
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Publish(ctx, p+"news", "hello").Err(); err != nil {
			t.Fatal(err)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil || msg.Payload != "hello" {
			t.Fatalf("Pub/Sub: %v %v", msg, err)
		}
		sub.Close()
		if err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.Ping(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClusterEmulatedRedisCli: redis-cli -c talks to the node.
func TestClusterEmulatedRedisCli(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed")
	}
	srv := startEmulated(t)
	port := strconv.Itoa(srv.Port)
	for _, args := range [][]string{{"set", "k1", "v"}, {"get", "k1"}, {"cluster", "keyslot", "k1"}} {
		out, err := exec.Command(cli, append([]string{"-c", "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli -c %v: %v %s", args, err, out)
		}
		want := map[string]string{"set": "OK", "get": "v", "cluster": "12706"}[args[0]]
		if strings.TrimSpace(string(out)) != want {
			t.Errorf("redis-cli -c %v: %q, want %q", args, out, want)
		}
	}
	out, err := exec.Command(cli, "--cluster", "check", "127.0.0.1:"+port).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered.") {
		t.Errorf("redis-cli --cluster check: %v\n%s", err, out)
	}
}

// TestClusterAdminSubcommands: Redis Cluster's subcommands that read the
// topology answer from it (REPLICAS, SLAVES, COUNT-FAILURE-REPORTS), as a
// one-node Redis Cluster does; SAVECONFIG has nothing to save.
func TestClusterAdminSubcommands(t *testing.T) {
	t.Parallel()
	srv := startEmulated(t)
	c := srv.Raw(t)
	id := c.Do("CLUSTER", "MYID").Str
	expectReplies(t, c, []cmdReply{
		{[]string{"CLUSTER", "REPLICAS", id}, "(empty array)"},
		{[]string{"CLUSTER", "SLAVES", id}, "(empty array)"},
		{[]string{"CLUSTER", "COUNT-FAILURE-REPORTS", id}, "(integer) 0"},
		{[]string{"CLUSTER", "REPLICAS", "nosuch"}, "(error) ERR Unknown node nosuch"},
		{[]string{"CLUSTER", "COUNT-FAILURE-REPORTS", "nosuch"}, "(error) ERR Unknown node nosuch"},
		{[]string{"CLUSTER", "SAVECONFIG"}, "OK"},
		{[]string{"CLUSTER", "REPLICAS"}, "(error) ERR wrong number of arguments for 'cluster|replicas' command"},
	})
}
