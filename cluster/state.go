package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/types/num"
)

// Mode is --cluster_mode.
type Mode uint8

const (
	Off      Mode = iota // not a cluster node: CLUSTER refused, as Redis with cluster-enabled no
	Emulated             // one node owning every slot
	Yes                  // a node of a topology from DFLYCLUSTER CONFIG or etcd
)

// ParseMode reads --cluster_mode's value.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "no":
		return Off, nil
	case "emulated":
		return Emulated, nil
	case "yes":
		return Yes, nil
	}
	return Off, fmt.Errorf("cluster_mode must be emulated or yes, not %q", s)
}

// SlotState is what a slot is doing on its way between owners; every slot
// is Stable until live migration (issue 45) adds Migrating and Importing.
type SlotState uint8

const Stable SlotState = 0

// View is a node's reading of one topology: who owns each slot, the state
// of each slot, and where the node itself stands. Immutable once built.
type View struct {
	Topology *Topology
	owner    [Slots]int16 // index of the owning group, -1 for none
	state    [Slots]SlotState
	// Group is the index of the node's own group (-1: not in the
	// topology); Master whether it masters it.
	Group  int
	Master bool
	// assigned: slots with an owner.
	assigned int
}

func newView(t *Topology, self string) *View {
	v := &View{Topology: t, Group: -1}
	for i := range v.owner {
		v.owner[i] = -1
	}
	for gi, g := range t.Groups {
		for _, r := range g.SlotRanges {
			for s := r.Start; s <= r.End; s++ {
				v.owner[s] = int16(gi)
				v.assigned++
			}
		}
		if g.Master.ID == self {
			v.Group, v.Master = gi, true
		}
		for _, r := range g.Replicas {
			if r.ID == self {
				v.Group = gi
			}
		}
	}
	return v
}

// Owner is the group serving slot, nil when no group does.
func (v *View) Owner(slot int) *Group {
	if g := v.owner[slot]; g >= 0 {
		return &v.Topology.Groups[g]
	}
	return nil
}

// SlotState is slot's state in this view.
func (v *View) SlotState(slot int) SlotState { return v.state[slot] }

// MasterOf is the master this node follows, when the view makes it a
// replica.
func (v *View) MasterOf() (Node, bool) {
	if v.Group < 0 || v.Master {
		return Node{}, false
	}
	return v.Topology.Groups[v.Group].Master, true
}

// State is a node's cluster state: its mode, its id and the current view.
// Commands read it with one atomic load; Apply replaces the view.
type State struct {
	Mode Mode
	ID   string
	// AnnounceIP and Port name this node in emulated mode's replies
	// (AnnounceIP empty: the address the client connected to).
	AnnounceIP string
	Port       int
	// OnChange is called, serialized, after each view is published: the
	// server follows a new master or stops following.
	OnChange func(v *View)
	// Source says where topologies come from and whether it is reachable
	// now (INFO's cluster section): set by the etcd watcher.
	Source Source

	mu   sync.Mutex
	view atomic.Pointer[View]
}

// Source is the state of the topology's source, for INFO.
type Source struct {
	Name      atomic.Pointer[string] // "config", "etcd"; nil: none yet
	Connected atomic.Bool
}

// New is the state of a node in mode; id "" draws a random one. In
// emulated mode the node owns every slot from the start.
func New(mode Mode, id, announceIP string, port int) *State {
	if id == "" {
		var b [20]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	s := &State{Mode: mode, ID: id, AnnounceIP: announceIP, Port: port}
	if mode == Emulated {
		t := &Topology{Epoch: 1, Groups: []Group{{SlotRanges: []SlotRange{{0, Slots - 1}},
			Master: Node{ID: id, IP: announceIP, Port: port}}}}
		s.view.Store(newView(t, id))
	}
	return s
}

// View is the current view, nil before the first topology (mode Yes).
func (s *State) View() *View { return s.view.Load() }

// Epoch is the current topology's epoch, 0 before any.
func (s *State) Epoch() uint64 {
	if v := s.view.Load(); v != nil {
		return v.Topology.Epoch
	}
	return 0
}

// Apply makes t the topology if its epoch is above the current one; a t
// without an epoch (0: Dragonfly's bare array) takes the next. It returns
// an error for a stale epoch or outside mode Yes.
func (s *State) Apply(t *Topology) error {
	if s.Mode != Yes {
		return ErrDisabled
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.Epoch()
	if t.Epoch == 0 {
		t = t.Clone()
		t.Epoch = cur + 1
	} else if t.Epoch <= cur {
		return fmt.Errorf("%w: epoch %d is not above the current %d", ErrStale, t.Epoch, cur)
	}
	v := newView(t, s.ID)
	s.view.Store(v)
	if s.OnChange != nil {
		s.OnChange(v)
	}
	return nil
}

// Errors of Apply.
var (
	ErrDisabled = fmt.Errorf("Cluster is disabled. Use --cluster_mode=yes to enable.")
	ErrStale    = fmt.Errorf("cluster: stale topology")
)

// Route is the slot a request's keys hash to, gathered command by command
// (a command's keys; EXEC's queued commands together).
type Route struct {
	Slot   int
	Keys   bool // some key was added
	Cross  bool // keys of several slots
	Writes bool // a command that is not read-only
	// Forbid: a command reaching another database, refused as Redis
	// Cluster refuses it (after CROSSSLOT and MOVED).
	Forbid string
}

// AddKey adds a key's slot.
func (r *Route) AddKey(key []byte) {
	s := KeySlot(key)
	switch {
	case !r.Keys:
		r.Slot, r.Keys = s, true
	case s != r.Slot:
		r.Cross = true
	}
}

// Add adds the keys of cmd called with args; pos is scratch for their
// positions, returned for reuse.
func (r *Route) Add(cmd *command.Command, args [][]byte, pos []int) []int {
	if otherDB[cmd.Name] {
		r.Forbid = forbidden(cmd.Name, args)
	}
	pos = cmd.Keys(pos[:0], args)
	if len(pos) == 0 {
		return pos
	}
	r.Writes = r.Writes || cmd.Flags&command.FlagReadonly == 0
	for _, i := range pos {
		r.AddKey(args[i])
	}
	return pos
}

// Error texts, as Redis Cluster's.
const (
	ErrCrossSlot   = "CROSSSLOT Keys in request don't hash to the same slot"
	ErrNotServed   = "CLUSTERDOWN Hash slot not served"
	ErrNoCluster   = "ERR This instance has cluster support disabled"
	errInvalidSlot = "ERR Invalid slot"
)

// Refusal is the error a request routed by r gets on this node, "" when
// the node serves it: CROSSSLOT, MOVED to the slot's master, or
// CLUSTERDOWN for a slot nobody serves. A replica serves reads of its
// group's slots to a connection that sent READONLY.
func (s *State) Refusal(r *Route, readOnly bool) string {
	if !r.Keys {
		return r.Forbid
	}
	if r.Cross {
		return ErrCrossSlot
	}
	if s.Mode != Yes {
		return r.Forbid
	}
	v := s.view.Load()
	if v == nil || v.owner[r.Slot] < 0 {
		return ErrNotServed
	}
	g := int(v.owner[r.Slot])
	if g == v.Group && (v.Master || readOnly && !r.Writes) {
		return r.Forbid
	}
	return "MOVED " + strconv.Itoa(r.Slot) + " " + v.Topology.Groups[g].Master.Addr()
}

// Checks reports whether a command with n keys needs Refusal: every keyed
// command in mode Yes, only multi-key ones (CROSSSLOT) when emulated.
func (s *State) Checks(n int) bool {
	return s != nil && (s.Mode == Yes && n > 0 || s.Mode == Emulated && n > 1)
}

// Skips reports whether cmd needs no check: in emulated mode, a command
// with at most one key position cannot cross slots.
func (s *State) Skips(cmd *command.Command) bool {
	return s.Mode == Emulated && cmd.KeyPositions == nil && cmd.FirstKey == cmd.LastKey && cmd.Name != "exec" && !otherDB[cmd.Name]
}

// otherDB are the commands that can reach a database other than 0.
var otherDB = map[string]bool{"move": true, "swapdb": true, "copy": true}

// forbidden is Redis Cluster's error for command name with args when it
// would reach another database, "" otherwise (COPY ... DB 0).
func forbidden(name string, args [][]byte) string {
	switch name {
	case "move":
		return "ERR MOVE is not allowed in cluster mode"
	case "swapdb":
		return "ERR SWAPDB is not allowed in cluster mode"
	}
	for i := 3; i+1 < len(args); i++ {
		if strings.EqualFold(string(args[i]), "db") {
			if n, ok := num.ParseInt(args[i+1]); !ok || n != 0 {
				return "ERR Copying to another database is not allowed in cluster mode"
			}
		}
	}
	return ""
}

// Info writes INFO's cluster section: cluster_enabled as Redis, then dfly's
// mode, the topology's epoch and its source (config, etcd) and whether
// that source is reachable now (a node cut off from etcd keeps serving its
// last topology and says so here).
func (s *State) Info(field func(k string, v any)) {
	if s.Mode == Off {
		field("cluster_enabled", 0)
		return
	}
	field("cluster_enabled", 1)
	field("cluster_mode", map[Mode]string{Emulated: "emulated", Yes: "yes"}[s.Mode])
	field("cluster_node_id", s.ID)
	field("cluster_epoch", s.Epoch())
	src, connected := "none", 1
	if p := s.Source.Name.Load(); p != nil {
		src = *p
	}
	if src == "etcd" && !s.Source.Connected.Load() {
		connected = 0
	}
	field("cluster_source", src)
	field("cluster_source_connected", connected)
}
