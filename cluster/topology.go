package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Node is one server of the cluster.
type Node struct {
	ID   string `json:"id"`
	IP   string `json:"ip"`
	Port int    `json:"port"`
}

// Addr is the node's host:port as MOVED names it.
func (n Node) Addr() string { return fmt.Sprintf("%s:%d", n.IP, n.Port) }

// SlotRange is the slots Start..End, both included.
type SlotRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Group is a shard group: the master serving its slot ranges and the
// replicas following it. Migrations are kept as given, for issue 45.
type Group struct {
	SlotRanges []SlotRange       `json:"slot_ranges"`
	Master     Node              `json:"master"`
	Replicas   []Node            `json:"replicas"`
	Migrations []json.RawMessage `json:"migrations,omitempty"`
}

// Topology is the cluster's document: its shard groups under an epoch
// that only rises.
type Topology struct {
	Epoch  uint64  `json:"epoch"`
	Groups []Group `json:"shards"`
}

// Parse reads a topology in Dragonfly's DFLYCLUSTER CONFIG shape (a JSON
// array of groups, Epoch 0: no epoch given) or dfly's ({"epoch": n,
// "shards": [...]}), and validates it.
func Parse(data []byte) (*Topology, error) {
	t := &Topology{}
	var err error
	if b := bytes.TrimSpace(data); len(b) > 0 && b[0] == '[' {
		err = json.Unmarshal(b, &t.Groups)
	} else {
		err = json.Unmarshal(b, t)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: config: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// JSON is the document as etcd keeps it (dfly's shape, with the epoch).
func (t *Topology) JSON() []byte {
	b, _ := json.Marshal(t)
	return b
}

// Validate checks that slot ranges are within 0..16383 and do not overlap
// and that every node has an id, an address and a port, each id once.
func (t *Topology) Validate() error {
	var owned [Slots]bool
	ids := map[string]bool{}
	node := func(n Node) error {
		if n.ID == "" || n.IP == "" || n.Port <= 0 || n.Port > 65535 {
			return fmt.Errorf("cluster: config: node %q needs an id, an ip and a port 1..65535", n.ID)
		}
		if ids[n.ID] {
			return fmt.Errorf("cluster: config: node id %q appears twice", n.ID)
		}
		ids[n.ID] = true
		return nil
	}
	for _, g := range t.Groups {
		if err := node(g.Master); err != nil {
			return err
		}
		for _, r := range g.Replicas {
			if err := node(r); err != nil {
				return err
			}
		}
		for _, r := range g.SlotRanges {
			if r.Start < 0 || r.End >= Slots || r.Start > r.End {
				return fmt.Errorf("cluster: config: invalid slot range %d-%d", r.Start, r.End)
			}
			for s := r.Start; s <= r.End; s++ {
				if owned[s] {
					return fmt.Errorf("cluster: config: slot %d is assigned twice", s)
				}
				owned[s] = true
			}
		}
	}
	return nil
}

// Clone is a deep copy of t, for editing (the admin commands).
func (t *Topology) Clone() *Topology {
	c := &Topology{Epoch: t.Epoch}
	for _, g := range t.Groups {
		g.SlotRanges = slices.Clone(g.SlotRanges)
		g.Replicas = slices.Clone(g.Replicas)
		c.Groups = append(c.Groups, g)
	}
	return c
}

// ErrUnknownNode: an edit names a node the topology does not hold.
var ErrUnknownNode = errors.New("cluster: no such node")

// AddMaster adds a group mastered by n, serving no slots yet.
func (t *Topology) AddMaster(n Node) error {
	t.Groups = append(t.Groups, Group{Master: n})
	return t.Validate()
}

// AddReplica adds n as a replica of the group mastered by masterID.
func (t *Topology) AddReplica(masterID string, n Node) error {
	for i := range t.Groups {
		if t.Groups[i].Master.ID == masterID {
			t.Groups[i].Replicas = append(t.Groups[i].Replicas, n)
			return t.Validate()
		}
	}
	return fmt.Errorf("%w: %q", ErrUnknownNode, masterID)
}

// Assign gives slots start..end to the group mastered by masterID, taking
// them from whichever group served them.
func (t *Topology) Assign(masterID string, start, end int) error {
	if start < 0 || end >= Slots || start > end {
		return fmt.Errorf("cluster: invalid slot range %d-%d", start, end)
	}
	to := -1
	for i := range t.Groups {
		if t.Groups[i].Master.ID == masterID {
			to = i
		}
	}
	if to < 0 {
		return fmt.Errorf("%w: %q", ErrUnknownNode, masterID)
	}
	for i := range t.Groups {
		g := &t.Groups[i]
		var kept []SlotRange
		for _, r := range g.SlotRanges {
			if r.End < start || r.Start > end {
				kept = append(kept, r)
				continue
			}
			if r.Start < start {
				kept = append(kept, SlotRange{r.Start, start - 1})
			}
			if r.End > end {
				kept = append(kept, SlotRange{end + 1, r.End})
			}
		}
		g.SlotRanges = kept
	}
	g := &t.Groups[to]
	g.SlotRanges = append(g.SlotRanges, SlotRange{start, end})
	slices.SortFunc(g.SlotRanges, func(a, b SlotRange) int { return a.Start - b.Start })
	// Merge adjacent ranges.
	merged := g.SlotRanges[:1]
	for _, r := range g.SlotRanges[1:] {
		if last := &merged[len(merged)-1]; last.End+1 == r.Start {
			last.End = r.End
		} else {
			merged = append(merged, r)
		}
	}
	g.SlotRanges = merged
	return t.Validate()
}
