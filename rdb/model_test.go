package rdb

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// value is an in-memory model of one key, for tests.
type value struct {
	Type   Type
	Meta   Meta
	Str    string
	List   []string
	Set    map[string]bool
	Hash   map[string]string
	ZSet   map[string]float64
	Stream *streamValue
}

type streamValue struct {
	Entries []streamEntry
	Meta    StreamMeta
	Groups  []groupValue
}

type streamEntry struct {
	ID StreamID
	FV []string
}

type groupValue struct {
	Name        string
	LastID      StreamID
	EntriesRead int64
	Pending     []StreamPending
	Consumers   []consumerValue
}

type consumerValue struct {
	Name             string
	SeenTime, Active int64
	Pending          []StreamID
}

// dataset maps "db:key" to values.
type dataset map[string]*value

func dbKey(db uint64, key string) string { return fmt.Sprintf("%d:%s", db, key) }

// collector is a Handler that builds a dataset and checks call order.
type collector struct {
	t         testing.TB
	db        uint64
	data      dataset
	aux       map[string]string
	functions []string
	resized   [][2]uint64
	cur       *value
	curKey    string
	group     *groupValue
	consumer  *consumerValue
}

func newCollector(t testing.TB) *collector {
	return &collector{t: t, data: dataset{}, aux: map[string]string{}}
}

func (c *collector) AUX(key, val []byte) error {
	c.aux[string(key)] = string(val)
	return nil
}
func (c *collector) SelectDB(db uint64) error { c.db = db; return nil }
func (c *collector) ResizeDB(keys, expires uint64) error {
	c.resized = append(c.resized, [2]uint64{keys, expires})
	return nil
}
func (c *collector) Function(code []byte) error {
	c.functions = append(c.functions, string(code))
	return nil
}

func (c *collector) put(key []byte, v *value) error {
	k := dbKey(c.db, string(key))
	if _, ok := c.data[k]; ok {
		return fmt.Errorf("duplicate key %q", k)
	}
	c.data[k] = v
	return nil
}

func (c *collector) String(key, val []byte, m Meta) error {
	if c.cur != nil {
		return fmt.Errorf("String inside a collection")
	}
	return c.put(key, &value{Type: TypeString, Meta: m, Str: string(val)})
}

func (c *collector) Begin(key []byte, t Type, sizeHint int, m Meta) error {
	if c.cur != nil {
		return fmt.Errorf("Begin inside a collection")
	}
	if sizeHint < 0 || sizeHint > MaxSizeHint {
		return fmt.Errorf("bad size hint %d", sizeHint)
	}
	v := &value{Type: t, Meta: m}
	switch t {
	case TypeSet:
		v.Set = map[string]bool{}
	case TypeHash:
		v.Hash = map[string]string{}
	case TypeZSet:
		v.ZSet = map[string]float64{}
	case TypeStream:
		v.Stream = &streamValue{}
	}
	c.cur = v
	c.group, c.consumer = nil, nil
	return c.put(key, v)
}

func (c *collector) need(t Type) error {
	if c.cur == nil || c.cur.Type != t {
		return fmt.Errorf("%v element outside a %v", t, t)
	}
	return nil
}

func (c *collector) ListElement(val []byte) error {
	if err := c.need(TypeList); err != nil {
		return err
	}
	c.cur.List = append(c.cur.List, string(val))
	return nil
}
func (c *collector) SetMember(m []byte) error {
	if err := c.need(TypeSet); err != nil {
		return err
	}
	if c.cur.Set[string(m)] {
		return fmt.Errorf("duplicate set member %q", m)
	}
	c.cur.Set[string(m)] = true
	return nil
}
func (c *collector) HashField(f, v []byte) error {
	if err := c.need(TypeHash); err != nil {
		return err
	}
	if _, ok := c.cur.Hash[string(f)]; ok {
		return fmt.Errorf("duplicate hash field %q", f)
	}
	c.cur.Hash[string(f)] = string(v)
	return nil
}
func (c *collector) ZSetMember(m []byte, s float64) error {
	if err := c.need(TypeZSet); err != nil {
		return err
	}
	if _, ok := c.cur.ZSet[string(m)]; ok {
		return fmt.Errorf("duplicate zset member %q", m)
	}
	c.cur.ZSet[string(m)] = s
	return nil
}
func (c *collector) StreamEntry(id StreamID, fv [][]byte) error {
	if err := c.need(TypeStream); err != nil {
		return err
	}
	e := streamEntry{ID: id}
	for _, b := range fv {
		e.FV = append(e.FV, string(b))
	}
	c.cur.Stream.Entries = append(c.cur.Stream.Entries, e)
	return nil
}
func (c *collector) StreamMeta(m StreamMeta) error {
	if err := c.need(TypeStream); err != nil {
		return err
	}
	c.cur.Stream.Meta = m
	return nil
}
func (c *collector) StreamGroup(g StreamGroup) error {
	if err := c.need(TypeStream); err != nil {
		return err
	}
	s := c.cur.Stream
	s.Groups = append(s.Groups, groupValue{Name: string(g.Name), LastID: g.LastID, EntriesRead: g.EntriesRead})
	c.group = &s.Groups[len(s.Groups)-1]
	c.consumer = nil
	return nil
}
func (c *collector) StreamPending(p StreamPending) error {
	if c.group == nil {
		return fmt.Errorf("pending outside a group")
	}
	c.group.Pending = append(c.group.Pending, p)
	return nil
}
func (c *collector) StreamConsumer(cv StreamConsumer) error {
	if c.group == nil {
		return fmt.Errorf("consumer outside a group")
	}
	c.group.Consumers = append(c.group.Consumers, consumerValue{Name: string(cv.Name), SeenTime: cv.SeenTime, Active: cv.ActiveTime})
	c.consumer = &c.group.Consumers[len(c.group.Consumers)-1]
	return nil
}
func (c *collector) StreamConsumerPending(id StreamID) error {
	if c.consumer == nil {
		return fmt.Errorf("consumer pending outside a consumer")
	}
	c.consumer.Pending = append(c.consumer.Pending, id)
	return nil
}
func (c *collector) End() error {
	if c.cur == nil {
		return fmt.Errorf("End outside a collection")
	}
	c.cur = nil
	return nil
}

// encodeValue writes v under key with e.
func encodeValue(e *Encoder, key string, v *value) {
	k := []byte(key)
	switch v.Type {
	case TypeString:
		e.String(k, []byte(v.Str), v.Meta)
		return
	case TypeList:
		e.BeginList(k, len(v.List), v.Meta)
		for _, s := range v.List {
			e.ListElement([]byte(s))
		}
	case TypeSet:
		e.BeginSet(k, len(v.Set), v.Meta)
		for _, s := range slices.Sorted(maps.Keys(v.Set)) {
			e.SetMember([]byte(s))
		}
	case TypeHash:
		e.BeginHash(k, len(v.Hash), v.Meta)
		for _, f := range slices.Sorted(maps.Keys(v.Hash)) {
			e.HashField([]byte(f), []byte(v.Hash[f]))
		}
	case TypeZSet:
		e.BeginZSet(k, len(v.ZSet), v.Meta)
		for _, m := range slices.Sorted(maps.Keys(v.ZSet)) {
			e.ZSetMember([]byte(m), v.ZSet[m])
		}
	case TypeStream:
		s := v.Stream
		e.BeginStream(k, len(s.Entries), v.Meta)
		for _, en := range s.Entries {
			fv := make([][]byte, len(en.FV))
			for i, x := range en.FV {
				fv[i] = []byte(x)
			}
			e.StreamEntry(en.ID, fv)
		}
		m := s.Meta
		m.Groups = uint64(len(s.Groups))
		e.StreamMeta(m)
		for _, g := range s.Groups {
			e.StreamGroup(StreamGroup{Name: []byte(g.Name), LastID: g.LastID, EntriesRead: g.EntriesRead, Pending: uint64(len(g.Pending))})
			for _, p := range g.Pending {
				e.StreamPending(p)
			}
			e.StreamConsumers(uint64(len(g.Consumers)))
			for _, c := range g.Consumers {
				e.StreamConsumer(StreamConsumer{Name: []byte(c.Name), SeenTime: c.SeenTime, ActiveTime: c.Active, Pending: uint64(len(c.Pending))})
				for _, id := range c.Pending {
					e.StreamConsumerPending(id)
				}
			}
		}
	}
	e.End()
}

// encodeDataset writes a whole RDB file of ds.
func encodeDataset(e *Encoder, ds dataset) error {
	e.WriteHeader()
	e.StandardAUX("7.0.15", 1<<20)
	byDB := map[uint64][]string{}
	for k := range ds {
		var db uint64
		fmt.Sscanf(k, "%d:", &db)
		byDB[db] = append(byDB[db], k)
	}
	for _, db := range slices.Sorted(maps.Keys(byDB)) {
		keys := byDB[db]
		sort.Strings(keys)
		e.SelectDB(db)
		expires := 0
		for _, k := range keys {
			if ds[k].Meta.ExpireAt != 0 {
				expires++
			}
		}
		e.ResizeDB(uint64(len(keys)), uint64(expires))
		for _, k := range keys {
			encodeValue(e, k[strings.IndexByte(k, ':')+1:], ds[k])
		}
	}
	return e.WriteEOF()
}

// diffDatasets describes the first differences between want and got.
func diffDatasets(want, got dataset) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		if !ok {
			out = append(out, fmt.Sprintf("missing %s", k))
			continue
		}
		if d := diffValue(want[k], g); d != "" {
			out = append(out, fmt.Sprintf("%s: %s", k, d))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("unexpected %s", k))
		}
	}
	if len(out) > 10 {
		out = append(out[:10], "...")
	}
	return strings.Join(out, "\n")
}

func diffValue(w, g *value) string {
	if w.Type != g.Type {
		return fmt.Sprintf("type %v, got %v", w.Type, g.Type)
	}
	if w.Meta != g.Meta {
		return fmt.Sprintf("meta %+v, got %+v", w.Meta, g.Meta)
	}
	eqF := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	switch w.Type {
	case TypeString:
		if w.Str != g.Str {
			return fmt.Sprintf("string %q, got %q", trunc(w.Str), trunc(g.Str))
		}
	case TypeList:
		if !slices.Equal(w.List, g.List) {
			return fmt.Sprintf("list of %d, got %d elements", len(w.List), len(g.List))
		}
	case TypeSet:
		if !maps.Equal(w.Set, g.Set) {
			return fmt.Sprintf("set of %d, got %d", len(w.Set), len(g.Set))
		}
	case TypeHash:
		if !maps.Equal(w.Hash, g.Hash) {
			return fmt.Sprintf("hash of %d, got %d", len(w.Hash), len(g.Hash))
		}
	case TypeZSet:
		if !maps.EqualFunc(w.ZSet, g.ZSet, eqF) {
			return fmt.Sprintf("zset %v, got %v", w.ZSet, g.ZSet)
		}
	case TypeStream:
		ws, gs := w.Stream, g.Stream
		if len(ws.Entries) != len(gs.Entries) {
			return fmt.Sprintf("stream of %d entries, got %d", len(ws.Entries), len(gs.Entries))
		}
		for i := range ws.Entries {
			if !reflect.DeepEqual(ws.Entries[i], gs.Entries[i]) {
				return fmt.Sprintf("stream entry %d: %+v, got %+v", i, ws.Entries[i], gs.Entries[i])
			}
		}
		if ws.Meta != gs.Meta {
			return fmt.Sprintf("stream meta %+v, got %+v", ws.Meta, gs.Meta)
		}
		if !reflect.DeepEqual(ws.Groups, gs.Groups) {
			return fmt.Sprintf("stream groups\n want %+v\n got  %+v", ws.Groups, gs.Groups)
		}
	}
	return ""
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
