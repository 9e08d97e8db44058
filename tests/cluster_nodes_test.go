package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterNode is a dfly started with --cluster_mode yes and a fixed id.
type clusterNode struct {
	*Server
	id string
}

func startClusterNode(t *testing.T, id string, flags ...string) clusterNode {
	t.Helper()
	if IsRedis() {
		t.Skip("dfly's cluster topology (DFLYCLUSTER CONFIG, etcd): redis-server's cluster bus is another design")
	}
	return clusterNode{StartServer(t, append([]string{"--cluster_mode", "yes", "--cluster_node_id", id, "--shards", "2"}, flags...)...), id}
}

func (n clusterNode) node() map[string]any {
	return map[string]any{"id": n.id, "ip": "127.0.0.1", "port": n.Port}
}

// topologyJSON is a DFLYCLUSTER CONFIG document: masters[i] serves
// ranges[i] ("start-end ..."), replicas[i] follow it; epoch 0 writes
// Dragonfly's bare array.
func topologyJSON(epoch int, masters []clusterNode, ranges []string, replicas map[int][]clusterNode) string {
	var groups []map[string]any
	for i, m := range masters {
		var sr []map[string]int
		for _, r := range strings.Fields(ranges[i]) {
			a, b, _ := strings.Cut(r, "-")
			s, _ := strconv.Atoi(a)
			e, _ := strconv.Atoi(b)
			sr = append(sr, map[string]int{"start": s, "end": e})
		}
		reps := []map[string]any{}
		for _, r := range replicas[i] {
			reps = append(reps, r.node())
		}
		groups = append(groups, map[string]any{"slot_ranges": sr, "master": m.node(), "replicas": reps})
	}
	var doc any = groups
	if epoch > 0 {
		doc = map[string]any{"epoch": epoch, "shards": groups}
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// keySlot is CLUSTER KEYSLOT's answer, computed here.
func keySlot(key string) int {
	k := key
	if i := strings.IndexByte(k, '{'); i >= 0 {
		if j := strings.IndexByte(k[i+1:], '}'); j > 0 {
			k = k[i+1 : i+1+j]
		}
	}
	var crc uint16
	for _, b := range []byte(k) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// TestClusterConfigPush: three masters and a replica configured by
// DFLYCLUSTER CONFIG: a ClusterClient's keys land on their slots' owners,
// a stale client is sent to the owner in one hop (MOVED), the replica
// follows its master and serves its group's reads after READONLY, a newer
// epoch re-routes clients and an older one is refused.
func TestClusterConfigPush(t *testing.T) {
	ctx := context.Background()
	adminPort := strconv.Itoa(freePort(t))
	a, b, c := startClusterNode(t, "node-a"), startClusterNode(t, "node-b"), startClusterNode(t, "node-c", "--admin_port", adminPort)
	ar := startClusterNode(t, "node-ar")
	all := []clusterNode{a, b, c, ar}
	masters := []clusterNode{a, b, c}
	if got := a.Raw(t).Do("GET", "k").String(); got != "(error) CLUSTERDOWN Hash slot not served" {
		t.Fatalf("before a topology: %s", got)
	}
	doc := topologyJSON(0, masters, []string{"0-5460", "5461-10922", "10923-16383"}, map[int][]clusterNode{0: {ar}})
	for _, n := range all {
		if got := n.Raw(t).Do("DFLYCLUSTER", "CONFIG", doc).String(); got != "OK" {
			t.Fatalf("DFLYCLUSTER CONFIG on %s: %s", n.id, got)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{b.Addr}})
	t.Cleanup(func() { cc.Close() })
	const n = 300
	pipe := cc.Pipeline()
	for i := range n {
		pipe.Set(ctx, "key:"+strconv.Itoa(i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	owner := func(slot int) clusterNode { return masters[min(slot/5461, 2)] }
	total := 0
	for _, m := range masters {
		keys := m.Raw(t).Do("KEYS", "*")
		for _, k := range keys.Elems {
			if o := owner(keySlot(k.Str)); o.id != m.id {
				t.Errorf("%s (slot %d) on %s, owner %s", k.Str, keySlot(k.Str), m.id, o.id)
			}
		}
		total += len(keys.Elems)
	}
	if total != n {
		t.Errorf("%d keys on the masters, want %d", total, n)
	}
	// A stale client: one hop to the owner.
	key := "key:0"                         // slot 2592: node-a's
	for i := 0; keySlot(key) >= 100; i++ { // one of slots 0-99, which epoch 5 moves
		key = "key:" + strconv.Itoa(i)
	}
	slot := keySlot(key)
	o := owner(slot)
	for _, m := range masters {
		want := `"` + strings.TrimPrefix(key, "key:") + `"`
		if m.id != o.id {
			want = fmt.Sprintf("(error) MOVED %d %s", slot, o.Addr)
		}
		if got := m.Raw(t).Do("GET", key).String(); got != want {
			t.Errorf("GET %s on %s: %s, want %s", key, m.id, got, want)
		}
	}
	// The replica follows node-a and serves a's reads after READONLY.
	rc := ar.Raw(t)
	var aKey string
	for i := range n {
		if k := "key:" + strconv.Itoa(i); owner(keySlot(k)).id == "node-a" {
			aKey = k
			break
		}
	}
	moved := fmt.Sprintf("(error) MOVED %d %s", keySlot(aKey), a.Addr)
	if got := rc.Do("GET", aKey).String(); got != moved {
		t.Errorf("replica, READWRITE: %s, want %s", got, moved)
	}
	rc.Do("READONLY")
	deadline := time.Now().Add(10 * time.Second)
	for rc.Do("GET", aKey).Kind != KindBulk {
		if time.Now().After(deadline) {
			t.Fatalf("the replica never served %s: %s; INFO replication: %s", aKey, rc.Do("GET", aKey), rc.Do("INFO", "replication").Str)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// go-redis's ReadOnly ClusterClient reads a's slots from the replica.
	gets := func() string {
		for _, l := range strings.Split(rc.Do("INFO", "commandstats").Str, "\r\n") {
			if strings.HasPrefix(l, "cmdstat_get:") {
				return l
			}
		}
		return ""
	}
	before := gets()
	ro := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr}, ReadOnly: true})
	t.Cleanup(func() { ro.Close() })
	if v, err := ro.Get(ctx, aKey).Result(); err != nil || v != strings.TrimPrefix(aKey, "key:") {
		t.Errorf("ReadOnly client, GET %s: %q %v", aKey, v, err)
	}
	if after := gets(); after == before {
		t.Errorf("the ReadOnly client's GET did not reach the replica (%s)", after)
	}
	if got := rc.Do("SET", aKey, "x").String(); got != moved {
		t.Errorf("replica, READONLY, a write: %s, want %s", got, moved)
	}
	if got := rc.Do("GET", "key:7").String(); got != "(error) MOVED 15047 "+c.Addr { // node-c's
		t.Errorf("replica, another group's slot: %s", got)
	}
	// Epoch 5 gives a's slots 0-99 to b; epoch 4 is refused after it.
	doc5 := topologyJSON(5, masters, []string{"100-5460", "0-99 5461-10922", "10923-16383"}, map[int][]clusterNode{0: {ar}})
	adm := DialRaw(t, "127.0.0.1:"+adminPort)
	if got := adm.Do("DFLYCLUSTER", "CONFIG", doc5).String(); got != "OK" {
		t.Fatalf("on the admin port: %s", got)
	}
	for _, n := range []clusterNode{a, b, ar} {
		n.Raw(t).Do("DFLYCLUSTER", "CONFIG", doc5)
	}
	if got := a.Raw(t).Do("GET", key).String(); got != fmt.Sprintf("(error) MOVED %d %s", slot, b.Addr) {
		t.Errorf("after epoch 5, GET %s on a: %s", key, got)
	}
	doc4 := topologyJSON(4, masters, []string{"0-5460", "5461-10922", "10923-16383"}, nil)
	if got := a.Raw(t).Do("DFLYCLUSTER", "CONFIG", doc4).String(); !strings.Contains(got, "epoch 4 is not above the current 5") {
		t.Errorf("a stale epoch: %s", got)
	}
	if info := a.Raw(t).Do("INFO", "cluster").Str; !strings.Contains(info, "cluster_epoch:5\r\n") || !strings.Contains(info, "cluster_source:config\r\n") {
		t.Errorf("INFO cluster: %q", info)
	}
	// Only a user allowed to: DFLYCLUSTER is @admin.
	ac := a.Raw(t)
	ac.Do("ACL", "SETUSER", "app", "on", ">pw", "+@all", "-@admin", "~*")
	ac.Do("AUTH", "app", "pw")
	if got := ac.Do("DFLYCLUSTER", "CONFIG", doc5).String(); !strings.HasPrefix(got, "(error) NOPERM") {
		t.Errorf("DFLYCLUSTER as a non-admin user: %s", got)
	}
}
