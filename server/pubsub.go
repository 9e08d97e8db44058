package server

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/resp"
)

// Pub/Sub is not keyspace data: no shard owns it. The registry maps
// channels and patterns to subscribed connections under one RWMutex
// (PUBLISH takes it shared). A message reaches a subscriber through
// gnet's AsyncWrite, which runs on the subscriber's own loop between
// whole replies, so a push never lands inside another reply.

// pubsubOutputLimit is the hard output-buffer limit of a subscriber
// (Redis's client-output-buffer-limit pubsub 32mb): past it the subscriber
// is disconnected rather than allowed to grow memory without bound.
const pubsubOutputLimit = 32 << 20

type pubsub struct {
	mu       sync.RWMutex
	channels map[string]map[*Conn]struct{}
	patterns map[string]map[*Conn]struct{}
}

func newPubsub() *pubsub {
	return &pubsub{channels: map[string]map[*Conn]struct{}{}, patterns: map[string]map[*Conn]struct{}{}}
}

// subState is a connection's own view of its subscriptions, owned by its loop.
type subState struct {
	channels map[string]struct{}
	patterns map[string]struct{}
	// queued counts bytes handed to AsyncWrite and not yet written.
	queued atomic.Int64
}

func (c *Conn) subscriptions() int {
	return len(c.sub.channels) + len(c.sub.patterns)
}

func pubsubCommands() []*Command {
	f := FlagPubSub | FlagNoScript | FlagLoading | FlagStale
	return []*Command{
		{Name: "subscribe", Arity: -2, Flags: f, Local: func(c *Conn, a [][]byte, w *resp.Writer) { c.subscribe(a[1:], false, w) }},
		{Name: "psubscribe", Arity: -2, Flags: f, Local: func(c *Conn, a [][]byte, w *resp.Writer) { c.subscribe(a[1:], true, w) }},
		{Name: "unsubscribe", Arity: -1, Flags: f, Local: func(c *Conn, a [][]byte, w *resp.Writer) { c.unsubscribe(a[1:], false, w) }},
		{Name: "punsubscribe", Arity: -1, Flags: f, Local: func(c *Conn, a [][]byte, w *resp.Writer) { c.unsubscribe(a[1:], true, w) }},
		{Name: "publish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast, Local: func(c *Conn, a [][]byte, w *resp.Writer) {
			w.Int(int64(c.srv.pubsub.publish(a[1], a[2])))
			c.srv.master.propagate(a) // replicas' subscribers get it too, as in Redis
		}},
		{Name: "pubsub", Arity: -2, Flags: FlagPubSub | FlagLoading | FlagStale, Local: cmdPubsub},
	}
}

func init() { typeFamilies = append(typeFamilies, pubsubCommands) }

// subReply writes one (un)subscribe confirmation: a push in RESP3, an
// array in RESP2.
func subReply(w *resp.Writer, kind string, name []byte, count int) {
	w.Push(3)
	w.BulkString(kind)
	if name == nil {
		w.Null()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(count))
}

func (c *Conn) subscribe(names [][]byte, pattern bool, w *resp.Writer) {
	ps := c.srv.pubsub
	kind := "subscribe"
	own, reg := &c.sub.channels, ps.channels
	if pattern {
		kind, own, reg = "psubscribe", &c.sub.patterns, ps.patterns
	}
	if *own == nil {
		*own = map[string]struct{}{}
	}
	ps.mu.Lock()
	for _, n := range names {
		name := string(n)
		if _, ok := (*own)[name]; !ok {
			(*own)[name] = struct{}{}
			set := reg[name]
			if set == nil {
				set = map[*Conn]struct{}{}
				reg[name] = set
			}
			set[c] = struct{}{}
		}
		subReply(w, kind, n, c.subscriptions())
	}
	ps.mu.Unlock()
}

func (c *Conn) unsubscribe(names [][]byte, pattern bool, w *resp.Writer) {
	ps := c.srv.pubsub
	kind := "unsubscribe"
	own, reg := c.sub.channels, ps.channels
	if pattern {
		kind, own, reg = "punsubscribe", c.sub.patterns, ps.patterns
	}
	if len(names) == 0 {
		for name := range own {
			names = append(names, []byte(name))
		}
		sort.Slice(names, func(i, j int) bool { return string(names[i]) < string(names[j]) })
		if len(names) == 0 {
			if w != nil {
				subReply(w, kind, nil, c.subscriptions())
			}
			return
		}
	}
	ps.mu.Lock()
	for _, n := range names {
		name := string(n)
		if _, ok := own[name]; ok {
			delete(own, name)
			if set := reg[name]; set != nil {
				delete(set, c)
				if len(set) == 0 {
					delete(reg, name)
				}
			}
		}
		if w != nil {
			subReply(w, kind, n, c.subscriptions())
		}
	}
	ps.mu.Unlock()
}

// dropSubscriptions forgets every subscription of c (close, RESET).
func (c *Conn) dropSubscriptions() {
	if c.subscriptions() == 0 {
		return
	}
	c.unsubscribe(nil, false, nil)
	c.unsubscribe(nil, true, nil)
}

// message is one publication, encoded at most once per protocol.
type message struct {
	channel, payload []byte
	resp2, resp3     map[string][]byte // by pattern ("" for a channel match)
}

func (m *message) encode(proto int, pattern string) []byte {
	cache := &m.resp2
	if proto == 3 {
		cache = &m.resp3
	}
	if *cache == nil {
		*cache = map[string][]byte{}
	}
	if b, ok := (*cache)[pattern]; ok {
		return b
	}
	w := resp.Writer{Proto: proto}
	if pattern == "" {
		w.Push(3)
		w.BulkString("message")
	} else {
		w.Push(4)
		w.BulkString("pmessage")
		w.BulkString(pattern)
	}
	w.Bulk(m.channel)
	w.Bulk(m.payload)
	(*cache)[pattern] = w.Buf
	return w.Buf
}

// publish delivers payload to the channel's subscribers and to those of
// matching patterns, and returns how many deliveries it made.
func (ps *pubsub) publish(channel, payload []byte) int {
	m := &message{channel: channel, payload: payload}
	n := 0
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for c := range ps.channels[string(channel)] {
		c.deliver(m.encode(c.protoAtomic(), ""))
		n++
	}
	for pat, set := range ps.patterns {
		if !glob.MatchString(pat, string(channel), false) {
			continue
		}
		for c := range set {
			c.deliver(m.encode(c.protoAtomic(), pat))
			n++
		}
	}
	return n
}

// deliver queues a message for the subscriber, disconnecting it when its
// unsent output passes the limit.
func (c *Conn) deliver(msg []byte) {
	if c.closed.Load() {
		return
	}
	size := int64(len(msg))
	if c.sub.queued.Add(size) > pubsubOutputLimit {
		c.srv.log.Warnf("closing client %d: pubsub output over %d bytes", c.ID, pubsubOutputLimit)
		_ = c.gc.Close()
		return
	}
	_ = c.gc.AsyncWrite(msg, func(gc gnet.Conn, err error) error {
		c.sub.queued.Add(-size)
		if err == nil && gc.OutboundBuffered() > pubsubOutputLimit {
			c.srv.log.Warnf("closing client %d: pubsub output over %d bytes", c.ID, pubsubOutputLimit)
			return gc.Close()
		}
		return nil
	})
}

var pubsubArities = map[string]int{"channels": -2, "numsub": -2, "numpat": 2, "help": 2, "shardchannels": -2, "shardnumsub": -2}

func cmdPubsub(c *Conn, a [][]byte, w *resp.Writer) {
	ps := c.srv.pubsub
	sub := subcommand(w, a, "pubsub", pubsubArities)
	if sub == "" {
		return
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	switch {
	case sub == "channels" && len(a) <= 3:
		var out []string
		for ch := range ps.channels {
			if len(a) == 2 || glob.MatchString(string(a[2]), ch, false) {
				out = append(out, ch)
			}
		}
		sort.Strings(out)
		w.Array(len(out))
		for _, ch := range out {
			w.BulkString(ch)
		}
	case sub == "numsub":
		w.Array(2 * (len(a) - 2))
		for _, ch := range a[2:] {
			w.Bulk(ch)
			w.Int(int64(len(ps.channels[string(ch)])))
		}
	case sub == "shardchannels" && len(a) <= 3:
		w.Array(0) // shard channels exist only in a cluster, as in Redis
	case sub == "shardnumsub":
		w.Array(2 * (len(a) - 2))
		for _, ch := range a[2:] {
			w.Bulk(ch)
			w.Int(0)
		}
	case sub == "numpat" && len(a) == 2:
		w.Int(int64(len(ps.patterns)))
	case sub == "help":
		w.Array(1)
		w.SimpleString("PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are: CHANNELS [<pattern>], NUMSUB [<channel> ...], NUMPAT, HELP")
	default: // PUBSUB CHANNELS with two patterns
		subcommandSyntaxErr(w, a, "pubsub")
	}
}

// subscribedAllowed are the commands a RESP2 connection may send while
// subscribed.
var subscribedAllowed = map[string]bool{"subscribe": true, "psubscribe": true, "unsubscribe": true,
	"punsubscribe": true, "ping": true, "quit": true, "reset": true, "ssubscribe": true, "sunsubscribe": true}
