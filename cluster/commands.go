package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/dash"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

// Host is what CLUSTER and DFLYCLUSTER see of the server, through their
// coordinator (command.Coord.Run): the node's state, and the address the
// client connected to (emulated mode names the node by it).
type Host interface {
	Cluster() *State
	LocalIP() string
}

// Conn is what READONLY and READWRITE see of the connection.
type Conn interface {
	Cluster() *State
	SetReadOnly(on bool)
}

// subcommands describe CLUSTER's subcommands: arity, flags, ACL categories.
var subcommands = []command.SubcommandInfo{
	{Name: "countkeysinslot", Arity: 3, Flags: command.FlagStale},
	{Name: "getkeysinslot", Tips: "nondeterministic_output", Arity: 4, Flags: command.FlagStale},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "info", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagStale},
	{Name: "keyslot", Arity: 3, Flags: command.FlagStale},
	{Name: "links", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagStale},
	{Name: "myid", Arity: 2, Flags: command.FlagStale},
	{Name: "myshardid", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagStale},
	{Name: "nodes", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagStale},
	{Name: "shards", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagStale},
	{Name: "slots", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagStale},
	// Redis's gossip-era subcommands (admin.go).
	{Name: "replicas", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagAdmin | command.FlagStale, ACLCats: "admin dangerous"},
	{Name: "slaves", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagAdmin | command.FlagStale, ACLCats: "admin dangerous"},
	{Name: "count-failure-reports", Tips: "nondeterministic_output", Arity: 3, Flags: command.FlagAdmin | command.FlagStale, ACLCats: "admin dangerous"},
	{Name: "saveconfig", Arity: 2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "bumpepoch", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "addslots", Arity: -3, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "addslotsrange", Arity: -4, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "delslots", Arity: -3, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "delslotsrange", Arity: -4, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "flushslots", Arity: 2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "setslot", Arity: -4, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "meet", Arity: -4, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "forget", Arity: 3, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "replicate", Arity: 3, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "failover", Arity: -2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
	{Name: "reset", Arity: -2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoScript, ACLCats: "admin dangerous"},
	{Name: "set-config-epoch", Arity: 3, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading, ACLCats: "admin dangerous"},
}

var dflySubcommands = []command.SubcommandInfo{
	{Name: "config", Arity: 3, Flags: command.FlagAdmin, ACLCats: "admin dangerous"},
	{Name: "myid", Arity: 2, Flags: command.FlagAdmin, ACLCats: "admin dangerous"},
}

func commands() []*command.Command {
	return []*command.Command{
		{Name: "cluster", Arity: -2, Flags: command.FlagLoading | command.FlagStale, Subcommands: subcommands, ACLCats: "dangerous", Multi: cmdCluster},
		{Name: "readonly", Arity: 1, Flags: command.FlagLoading | command.FlagStale | command.FlagFast, ACLCats: "connection", Local: readOnly(true)},
		{Name: "readwrite", Arity: 1, Flags: command.FlagLoading | command.FlagStale | command.FlagFast, ACLCats: "connection", Local: readOnly(false)},
		{Name: "asking", Arity: 1, Flags: command.FlagFast, ACLCats: "connection", Local: readOnly(false)},
		{Name: "dflycluster", Arity: -2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Subcommands: dflySubcommands, Multi: cmdDflyCluster},
	}
}

func init() { command.Register("cluster", commands) }

// readOnly is READONLY (on), READWRITE and ASKING (which has nothing to do
// before migration: OK in cluster mode, as Redis).
func readOnly(on bool) func(c command.Client, args [][]byte, w *resp.Writer) {
	return func(c command.Client, args [][]byte, w *resp.Writer) {
		cc, ok := c.(Conn)
		if !ok || cc.Cluster() == nil || cc.Cluster().Mode == Off {
			w.Error(ErrNoCluster)
			return
		}
		if strings.EqualFold(string(args[0]), "asking") {
			w.SimpleString("OK")
			return
		}
		cc.SetReadOnly(on)
		w.SimpleString("OK")
	}
}

func hostOf(x *command.Coord) (Host, *State) {
	h, ok := x.Run.(Host)
	if !ok || h.Cluster() == nil {
		return nil, nil
	}
	return h, h.Cluster()
}

func cmdCluster(x *command.Coord) {
	h, st := hostOf(x)
	if st == nil || st.Mode == Off {
		x.W.Error(ErrNoCluster)
		return
	}
	w := x.W
	sub := command.Subcommand(w, x.Args, "cluster", subcommands)
	if sub == "" {
		return
	}
	r := replies{st: st, v: st.displayView(), ip: h.LocalIP()}
	switch sub {
	case "info":
		w.Verbatim("txt", []byte(r.info()))
	case "slots":
		r.slots(w)
	case "shards":
		r.shards(w)
	case "nodes":
		w.Verbatim("txt", []byte(r.nodes()))
	case "myid":
		w.BulkString(st.ID)
	case "myshardid":
		w.BulkString(r.shardID(r.myGroup()))
	case "links":
		w.Array(0)
	case "keyslot":
		w.Int(int64(KeySlot(x.Args[2])))
	case "countkeysinslot":
		slot, ok := num.ParseInt(x.Args[2])
		if !ok {
			w.Error(command.ErrNotInt)
			return
		}
		if slot < 0 || slot >= Slots {
			w.Error(errInvalidSlot)
			return
		}
		w.Int(int64(len(keysInSlot(x, int(slot), -1))))
	case "getkeysinslot":
		slot, ok1 := num.ParseInt(x.Args[2])
		n, ok2 := num.ParseInt(x.Args[3])
		if !ok1 || !ok2 {
			w.Error(command.ErrNotInt)
			return
		}
		if slot < 0 || slot >= Slots || n < 0 {
			w.Error("ERR Invalid slot or number of keys")
			return
		}
		keys := keysInSlot(x, int(slot), int(n))
		w.Array(len(keys))
		for _, k := range keys {
			w.BulkString(k)
		}
	case "help":
		command.WriteHelp(w, help)
	default:
		r.admin(w, sub, x.Args)
	}
}

var help = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"LINKS",
	"    Return information about all network links between this node and its peers (none: dfly nodes do not gossip).",
	"MYID",
	"    Return the node id.",
	"MYSHARDID",
	"    Return the node's shard id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port@bus-port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"HELP",
	"    Print this help.",
}

// keysInSlot scans database 0 of every shard for the live keys of slot, at
// most limit of them (-1: all). A scan, not an index: it costs the writes
// nothing. Each shard scans scanStep buckets per message, as SCAN does, so
// a big keyspace never holds a shard for long (1M keys: 0.16-0.6 s in
// all on a loaded 2-core host).
func keysInSlot(x *command.Coord, slot, limit int) []string {
	n := x.NumShards()
	res := make([][]string, n)
	cursors := make([]uint64, n)
	done := make([]bool, n)
	for left := n; left > 0; {
		x.OnEach(func(s *shard.Shard) {
			if done[s.ID] {
				return
			}
			db, now, cur := s.DBs[0], s.Now(), cursors[s.ID]
			for i := 0; i < scanStep && !done[s.ID]; i++ {
				cur = db.Table.Traverse(cur, func(it dash.Iterator) {
					k := db.Table.Key(it)
					if limit >= 0 && len(res[s.ID]) >= limit || KeySlot([]byte(k)) != slot {
						return
					}
					if at, ok := db.ExpireAt(it); ok && at <= now {
						return
					}
					res[s.ID] = append(res[s.ID], strings.Clone(k))
				})
				done[s.ID] = cur == 0 || limit >= 0 && len(res[s.ID]) >= limit
			}
			cursors[s.ID] = cur
		})
		left = 0
		for _, d := range done {
			if !d {
				left++
			}
		}
	}
	var out []string
	for _, r := range res {
		out = append(out, r...)
	}
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// scanStep is the buckets a shard scans per message for keysInSlot.
const scanStep = 1024

func cmdDflyCluster(x *command.Coord) {
	_, st := hostOf(x)
	w := x.W
	if st == nil || st.Mode != Yes {
		w.Error("ERR " + ErrDisabled.Error())
		return
	}
	switch command.Subcommand(w, x.Args, "dflycluster", dflySubcommands) {
	case "config":
		t, err := Parse(x.Args[2])
		if err == nil {
			err = st.Apply(t)
		}
		if err != nil {
			w.Error("ERR " + strings.TrimPrefix(err.Error(), "cluster: "))
			return
		}
		st.Source.Name.Store(&sourceConfig)
		w.SimpleString("OK")
	case "myid":
		w.BulkString(st.ID)
	}
}

var sourceConfig = "config"

// displayView is the view the replies describe: the current one, or an
// empty topology before the first.
func (s *State) displayView() *View {
	if v := s.view.Load(); v != nil {
		return v
	}
	return newView(&Topology{}, s.ID)
}

// replies build CLUSTER's replies from one view.
type replies struct {
	st *State
	v  *View
	ip string // the node's address when the topology leaves it empty (emulated)
}

func (r *replies) addr(n Node) string {
	if n.IP == "" {
		return r.ip
	}
	return n.IP
}

// groups are the view's groups, plus this node as a master of nothing
// when the topology does not list it.
func (r *replies) groups() []Group {
	gs := r.v.Topology.Groups
	if r.v.Group < 0 {
		gs = append(slices.Clone(gs), Group{Master: Node{ID: r.st.ID, IP: r.st.AnnounceIP, Port: r.st.Port}})
	}
	return gs
}

func (r *replies) myGroup() int {
	if r.v.Group >= 0 {
		return r.v.Group
	}
	return len(r.v.Topology.Groups)
}

// shardID is a stable 40-hex id of group g, from its master's id.
func (r *replies) shardID(g int) string {
	sum := sha1.Sum([]byte("shard:" + r.groups()[g].Master.ID))
	return hex.EncodeToString(sum[:])
}

func (r *replies) info() string {
	state := "ok"
	if r.v.assigned < Slots {
		state = "fail"
	}
	nodes, size := 0, 0
	for _, g := range r.groups() {
		nodes += 1 + len(g.Replicas)
		if len(g.SlotRanges) > 0 {
			size++
		}
	}
	e := strconv.FormatUint(r.v.Topology.Epoch, 10)
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(r.v.assigned)},
		{"cluster_slots_ok", strconv.Itoa(r.v.assigned)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", strconv.Itoa(nodes)},
		{"cluster_size", strconv.Itoa(size)},
		{"cluster_current_epoch", e},
		{"cluster_my_epoch", e},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	return b.String()
}

// ranges are the slot ranges of every group, by first slot.
type ownedRange struct {
	SlotRange
	g int
}

func (r *replies) ranges() []ownedRange {
	var out []ownedRange
	for gi, g := range r.v.Topology.Groups {
		for _, sr := range g.SlotRanges {
			out = append(out, ownedRange{sr, gi})
		}
	}
	slices.SortFunc(out, func(a, b ownedRange) int { return a.Start - b.Start })
	return out
}

func (r *replies) slots(w *resp.Writer) {
	rs := r.ranges()
	w.Array(len(rs))
	for _, sr := range rs {
		g := r.v.Topology.Groups[sr.g]
		w.Array(3 + len(g.Replicas))
		w.Int(int64(sr.Start))
		w.Int(int64(sr.End))
		for _, n := range append([]Node{g.Master}, g.Replicas...) {
			w.Array(4)
			w.BulkString(r.addr(n))
			w.Int(int64(n.Port))
			w.BulkString(n.ID)
			w.Map(0)
		}
	}
}

func (r *replies) shards(w *resp.Writer) {
	gs := r.groups()
	w.Array(len(gs))
	for _, g := range gs {
		w.Map(2)
		w.BulkString("slots")
		w.Array(2 * len(g.SlotRanges))
		for _, sr := range g.SlotRanges {
			w.Int(int64(sr.Start))
			w.Int(int64(sr.End))
		}
		w.BulkString("nodes")
		w.Array(1 + len(g.Replicas))
		for i, n := range append([]Node{g.Master}, g.Replicas...) {
			role := "master"
			if i > 0 {
				role = "replica"
			}
			w.Map(7)
			w.BulkString("id")
			w.BulkString(n.ID)
			w.BulkString("port")
			w.Int(int64(n.Port))
			w.BulkString("ip")
			w.BulkString(r.addr(n))
			w.BulkString("endpoint")
			w.BulkString(r.addr(n))
			w.BulkString("role")
			w.BulkString(role)
			w.BulkString("replication-offset")
			w.Int(0)
			w.BulkString("health")
			w.BulkString("online")
		}
	}
}

// nodeLine is a node's line of CLUSTER NODES up to its slots: id,
// address, flags, master, pings, pongs, epoch e, link state.
func (r *replies) nodeLine(g Group, n Node, replica bool, e string) string {
	flags, master := "master", "-"
	if replica {
		flags, master = "slave", g.Master.ID
	}
	if n.ID == r.st.ID {
		flags = "myself," + flags
	}
	bus := n.Port + 10000
	if bus > 65535 {
		bus = 0
	}
	return n.ID + " " + r.addr(n) + ":" + strconv.Itoa(n.Port) + "@" + strconv.Itoa(bus) + " " + flags + " " + master + " 0 0 " + e + " connected"
}

func (r *replies) nodes() string {
	var b strings.Builder
	e := strconv.FormatUint(r.v.Topology.Epoch, 10)
	for _, g := range r.groups() {
		for i, n := range append([]Node{g.Master}, g.Replicas...) {
			b.WriteString(r.nodeLine(g, n, i > 0, e))
			if i == 0 {
				for _, sr := range g.SlotRanges {
					if sr.Start == sr.End {
						b.WriteString(" " + strconv.Itoa(sr.Start))
					} else {
						b.WriteString(" " + strconv.Itoa(sr.Start) + "-" + strconv.Itoa(sr.End))
					}
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
