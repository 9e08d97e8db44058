package zset

import "sort"

// entry is one member with its score.
type entry struct {
	member string
	score  float64
}

func less(a, b *entry) bool {
	return a.score < b.score || (a.score == b.score && a.member < b.member)
}

const (
	leafMax  = 64
	innerMax = 64
	leafMin  = leafMax / 4
	innerMin = innerMax / 4
)

// node is a B+tree node: a leaf holds entries, an inner node children with
// their lower bounds and their counts (inline, so rank arithmetic does not
// touch the children). count is the number of entries in the subtree.
type node struct {
	count   int
	entries []entry
	kids    []*node
	lows    []entry
	counts  []int
}

func newInner() *node {
	return &node{kids: make([]*node, 0, innerMax+1), lows: make([]entry, 0, innerMax+1), counts: make([]int, 0, innerMax+1)}
}

func (n *node) leaf() bool { return n.kids == nil }

// tree is an order-statistic B+tree of entries.
type tree struct {
	root *node
}

func newTree() *tree {
	return &tree{root: &node{entries: make([]entry, 0, leafMax)}}
}

func (t *tree) len() int { return t.root.count }

// child is the index of the kid of inner node n whose range holds e.
func (n *node) child(e *entry) int {
	// The first j ≥ 1 with e < lows[j], minus one.
	j := sort.Search(len(n.kids)-1, func(k int) bool { return less(e, &n.lows[k+1]) })
	return j
}

// countBelow is the number of entries for which pred holds; pred must hold
// for a prefix of the order (it is "entry < some bound").
func (t *tree) countBelow(pred func(e *entry) bool) int {
	n, rank := t.root, 0
	for !n.leaf() {
		// The last kid whose low satisfies pred holds the boundary; all
		// kids before it are entirely below.
		j := sort.Search(len(n.kids)-1, func(k int) bool { return !pred(&n.lows[k+1]) })
		for _, c := range n.counts[:j] {
			rank += c
		}
		n = n.kids[j]
	}
	return rank + sort.Search(len(n.entries), func(k int) bool { return !pred(&n.entries[k]) })
}

// at is the entry of rank r (0-based, ascending).
func (t *tree) at(r int) *entry {
	n := t.root
	for !n.leaf() {
		for i, c := range n.counts {
			if r < c {
				n = n.kids[i]
				break
			}
			r -= c
		}
	}
	return &n.entries[r]
}

// ascend calls fn on entries from rank from upwards until fn returns false.
func (n *node) ascend(from int, fn func(e *entry) bool) bool {
	if n.leaf() {
		for i := from; i < len(n.entries); i++ {
			if !fn(&n.entries[i]) {
				return false
			}
		}
		return true
	}
	for i, k := range n.kids {
		if from >= n.counts[i] {
			from -= n.counts[i]
			continue
		}
		if !k.ascend(from, fn) {
			return false
		}
		from = 0
	}
	return true
}

// descend calls fn on entries from rank from downwards until fn returns
// false.
func (n *node) descend(from int, fn func(e *entry) bool) bool {
	if n.leaf() {
		for i := from; i >= 0; i-- {
			if !fn(&n.entries[i]) {
				return false
			}
		}
		return true
	}
	// Find the kid holding rank from, then walk left.
	i, off := 0, 0
	for ; i < len(n.kids)-1 && from >= off+n.counts[i]; i++ {
		off += n.counts[i]
	}
	for ; i >= 0; i-- {
		if !n.kids[i].descend(from-off, fn) {
			return false
		}
		if i > 0 {
			off -= n.counts[i-1]
			from = off + n.counts[i-1] - 1
		}
	}
	return true
}

func (t *tree) insert(e entry) {
	right, low := t.root.insert(e)
	if right == nil {
		return
	}
	old := t.root
	var oldLow entry
	if !old.leaf() {
		oldLow = old.lows[0]
	}
	root := newInner()
	root.count = old.count + right.count
	root.kids = append(root.kids, old, right)
	root.lows = append(root.lows, oldLow, low)
	root.counts = append(root.counts, old.count, right.count)
	t.root = root
}

// insert adds e (absent) below n. When n splits it returns the new right
// sibling and its low bound.
func (n *node) insert(e entry) (*node, entry) {
	n.count++
	if n.leaf() {
		pos := sort.Search(len(n.entries), func(k int) bool { return less(&e, &n.entries[k]) })
		if len(n.entries) < leafMax {
			n.entries = append(n.entries, entry{})
			copy(n.entries[pos+1:], n.entries[pos:])
			n.entries[pos] = e
			return nil, entry{}
		}
		right := &node{entries: make([]entry, 0, leafMax)}
		if pos == len(n.entries) {
			// Appending at the end (ascending scores): keep this leaf full.
			right.entries = append(right.entries, e)
		} else {
			mid := leafMax / 2
			right.entries = append(right.entries, n.entries[mid:]...)
			clear(n.entries[mid:])
			n.entries = n.entries[:mid]
			target := n
			if pos > mid {
				target, pos = right, pos-mid
			}
			target.entries = append(target.entries, entry{})
			copy(target.entries[pos+1:], target.entries[pos:])
			target.entries[pos] = e
		}
		right.count = len(right.entries)
		n.count = len(n.entries)
		return right, right.entries[0]
	}
	i := n.child(&e)
	n.counts[i]++
	sib, low := n.kids[i].insert(e)
	if sib == nil {
		return nil, entry{}
	}
	n.counts[i] = n.kids[i].count
	n.kids = append(n.kids, nil)
	copy(n.kids[i+2:], n.kids[i+1:])
	n.kids[i+1] = sib
	n.lows = append(n.lows, entry{})
	copy(n.lows[i+2:], n.lows[i+1:])
	n.lows[i+1] = low
	n.counts = append(n.counts, 0)
	copy(n.counts[i+2:], n.counts[i+1:])
	n.counts[i+1] = sib.count
	if len(n.kids) <= innerMax {
		return nil, entry{}
	}
	mid := len(n.kids) / 2
	right := newInner()
	right.kids = append(right.kids, n.kids[mid:]...)
	right.lows = append(right.lows, n.lows[mid:]...)
	right.counts = append(right.counts, n.counts[mid:]...)
	clear(n.kids[mid:])
	clear(n.lows[mid:])
	n.kids, n.lows, n.counts = n.kids[:mid], n.lows[:mid], n.counts[:mid]
	n.count = sumCounts(n.counts)
	right.count = sumCounts(right.counts)
	return right, right.lows[0]
}

func sumCounts(counts []int) int {
	c := 0
	for _, k := range counts {
		c += k
	}
	return c
}

// remove deletes e, which must be present.
func (t *tree) remove(e *entry) {
	t.root.remove(e)
	for !t.root.leaf() && len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
	}
}

func (n *node) remove(e *entry) {
	n.count--
	if n.leaf() {
		pos := sort.Search(len(n.entries), func(k int) bool { return !less(&n.entries[k], e) })
		copy(n.entries[pos:], n.entries[pos+1:])
		n.entries[len(n.entries)-1] = entry{}
		n.entries = n.entries[:len(n.entries)-1]
		return
	}
	i := n.child(e)
	k := n.kids[i]
	n.counts[i]--
	k.remove(e)
	if k.leaf() && len(k.entries) >= leafMin || !k.leaf() && len(k.kids) >= innerMin {
		return
	}
	if len(n.kids) > 1 {
		if i == len(n.kids)-1 {
			i--
		}
		n.rebalance(i)
	}
}

// rebalance fixes an underfull kid among kids[i] and kids[i+1]: it merges
// them when they fit in one node, otherwise evens them out.
func (n *node) rebalance(i int) {
	l, r := n.kids[i], n.kids[i+1]
	if l.leaf() {
		total := len(l.entries) + len(r.entries)
		if total <= leafMax {
			l.entries = append(l.entries, r.entries...)
			l.count = len(l.entries)
			n.counts[i] = l.count
			n.dropKid(i + 1)
			return
		}
		want := total / 2
		if len(l.entries) < want {
			k := want - len(l.entries)
			l.entries = append(l.entries, r.entries[:k]...)
			copy(r.entries, r.entries[k:])
			clear(r.entries[len(r.entries)-k:])
			r.entries = r.entries[:len(r.entries)-k]
		} else {
			k := len(l.entries) - want
			r.entries = append(r.entries, make([]entry, k)...)
			copy(r.entries[k:], r.entries)
			copy(r.entries, l.entries[want:])
			clear(l.entries[want:])
			l.entries = l.entries[:want]
		}
		l.count, r.count = len(l.entries), len(r.entries)
		n.counts[i], n.counts[i+1] = l.count, r.count
		n.lows[i+1] = r.entries[0]
		return
	}
	total := len(l.kids) + len(r.kids)
	if total <= innerMax {
		l.kids = append(l.kids, r.kids...)
		l.lows = append(l.lows, r.lows...)
		l.counts = append(l.counts, r.counts...)
		l.count += r.count
		n.counts[i] = l.count
		n.dropKid(i + 1)
		return
	}
	want := total / 2
	if len(l.kids) < want {
		k := want - len(l.kids)
		l.kids = append(l.kids, r.kids[:k]...)
		l.lows = append(l.lows, r.lows[:k]...)
		l.counts = append(l.counts, r.counts[:k]...)
		copy(r.kids, r.kids[k:])
		copy(r.lows, r.lows[k:])
		copy(r.counts, r.counts[k:])
		clear(r.kids[len(r.kids)-k:])
		clear(r.lows[len(r.lows)-k:])
		r.kids, r.lows, r.counts = r.kids[:len(r.kids)-k], r.lows[:len(r.lows)-k], r.counts[:len(r.counts)-k]
	} else {
		k := len(l.kids) - want
		r.kids = append(r.kids, make([]*node, k)...)
		r.lows = append(r.lows, make([]entry, k)...)
		r.counts = append(r.counts, make([]int, k)...)
		copy(r.kids[k:], r.kids)
		copy(r.lows[k:], r.lows)
		copy(r.counts[k:], r.counts)
		copy(r.kids, l.kids[want:])
		copy(r.lows, l.lows[want:])
		copy(r.counts, l.counts[want:])
		clear(l.kids[want:])
		clear(l.lows[want:])
		l.kids, l.lows, l.counts = l.kids[:want], l.lows[:want], l.counts[:want]
	}
	l.count, r.count = sumCounts(l.counts), sumCounts(r.counts)
	n.counts[i], n.counts[i+1] = l.count, r.count
	n.lows[i+1] = r.lows[0]
}

func (n *node) dropKid(i int) {
	copy(n.kids[i:], n.kids[i+1:])
	n.kids[len(n.kids)-1] = nil
	n.kids = n.kids[:len(n.kids)-1]
	copy(n.lows[i:], n.lows[i+1:])
	n.lows[len(n.lows)-1] = entry{}
	n.lows = n.lows[:len(n.lows)-1]
	copy(n.counts[i:], n.counts[i+1:])
	n.counts = n.counts[:len(n.counts)-1]
}

// clone is a deep copy of the subtree (entries share member strings, which
// are immutable).
func (n *node) clone() *node {
	c := &node{count: n.count}
	if n.leaf() {
		c.entries = make([]entry, len(n.entries), leafMax)
		copy(c.entries, n.entries)
		return c
	}
	c.kids = make([]*node, len(n.kids), innerMax+1)
	c.lows = make([]entry, len(n.lows), innerMax+1)
	c.counts = make([]int, len(n.counts), innerMax+1)
	copy(c.lows, n.lows)
	copy(c.counts, n.counts)
	for i, k := range n.kids {
		c.kids[i] = k.clone()
	}
	return c
}
