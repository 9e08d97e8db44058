package server

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/resp"
)

// Pub/Sub is not keyspace data: no shard owns it. The registry maps
// channels and patterns to subscribed connections under one RWMutex
// (PUBLISH takes it shared). A message is queued on the subscriber (in
// order, before PUBLISH returns) and its loop woken; the loop writes the
// queue between whole replies, in the order Redis's output buffer would
// hold them: a message queued before a command of the subscriber was
// dispatched goes out before that command's reply (pending.msgMark), so
// a subscriber's UNSUBSCRIBE or PING reply never overtakes a message
// published before it sent them, and the messages queued after a
// SUBSCRIBE was dispatched follow its confirmation.

type pubsub struct {
	mu sync.RWMutex
	// reg[k] maps a channel (kind channels, shard channels) or pattern to
	// its subscribers.
	reg [subKinds]map[string]map[*Conn]struct{}
}

// subKind is what a subscription names: a channel (SUBSCRIBE), a pattern
// (PSUBSCRIBE) or a shard channel (SSUBSCRIBE, Redis 7's sharded Pub/Sub:
// without a cluster, a namespace of its own that only SPUBLISH reaches).
type subKind int

const (
	subChannel subKind = iota
	subPattern
	subShard
	subKinds
)

// subVerbs are each kind's (un)subscribe confirmation and message names.
var subVerbs = [subKinds]struct{ sub, unsub, message string }{
	{"subscribe", "unsubscribe", "message"},
	{"psubscribe", "punsubscribe", "pmessage"},
	{"ssubscribe", "sunsubscribe", "smessage"},
}

func newPubsub() *pubsub {
	ps := &pubsub{}
	for k := range ps.reg {
		ps.reg[k] = map[string]map[*Conn]struct{}{}
	}
	return ps
}

// subState is a connection's own view of its subscriptions, owned by its loop.
type subState struct {
	own [subKinds]map[string]struct{}
	// queued counts bytes of messages delivered and not yet written.
	queued atomic.Int64
	// msgs are the messages delivered and not yet taken by the loop
	// (drainMessages), under mu; enq counts every message delivered,
	// taken the ones the loop took (loop-owned); woken: a wake is on its
	// way (under mu).
	mu    sync.Mutex
	msgs  [][]byte
	enq   atomic.Uint64
	taken uint64
	woken bool
	// subscribed: the connection has subscriptions (its output class is
	// pubsub), for publishers on other goroutines.
	subscribed atomic.Bool
}

// subscriptions counts every subscription: a RESP2 connection with any is
// in subscribed mode.
func (c *Conn) subscriptions() int {
	return len(c.sub.own[subChannel]) + len(c.sub.own[subPattern]) + len(c.sub.own[subShard])
}

// subCount is the count a confirmation of kind k reports: shard channels
// are counted apart from channels and patterns, as Redis does.
func (c *Conn) subCount(k subKind) int {
	if k == subShard {
		return len(c.sub.own[subShard])
	}
	return len(c.sub.own[subChannel]) + len(c.sub.own[subPattern])
}

func pubsubCommands() []*command.Command {
	f := command.FlagPubSub | command.FlagNoScript | command.FlagLoading | command.FlagStale
	sub := func(k subKind) func(*Conn, [][]byte, *resp.Writer) {
		return func(c *Conn, a [][]byte, w *resp.Writer) { c.subscribe(a[1:], k, w) }
	}
	unsub := func(k subKind) func(*Conn, [][]byte, *resp.Writer) {
		return func(c *Conn, a [][]byte, w *resp.Writer) { c.unsubscribe(a[1:], k, w) }
	}
	publish := func(k subKind) func(*Conn, [][]byte, *resp.Writer) {
		return func(c *Conn, a [][]byte, w *resp.Writer) {
			w.Int(int64(c.srv.pubsub.publish(a[1], a[2], k)))
			c.srv.master.Propagate(a) // replicas' subscribers get it too, as in Redis
		}
	}
	pubFlags := command.FlagPubSub | command.FlagLoading | command.FlagStale | command.FlagFast
	return []*command.Command{
		{Name: "subscribe", Arity: -2, Flags: f, Local: viaConn(sub(subChannel))},
		{Name: "psubscribe", Arity: -2, Flags: f, Local: viaConn(sub(subPattern))},
		{Name: "ssubscribe", Arity: -2, Flags: f, KeySpecs: "not_key @1 range:-1", Local: viaConn(func(c *Conn, a [][]byte, w *resp.Writer) {
			if c.inExec {
				w.Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
				return
			}
			c.subscribe(a[1:], subShard, w)
		})},
		{Name: "unsubscribe", Arity: -1, Flags: f, Local: viaConn(unsub(subChannel))},
		{Name: "punsubscribe", Arity: -1, Flags: f, Local: viaConn(unsub(subPattern))},
		{Name: "sunsubscribe", Arity: -1, Flags: f, KeySpecs: "not_key @1 range:-1", Local: viaConn(unsub(subShard))},
		{Name: "publish", Arity: 3, Flags: pubFlags, Local: viaConn(publish(subChannel))},
		{Name: "spublish", Arity: 3, Flags: pubFlags, KeySpecs: "not_key @1", Local: viaConn(publish(subShard))},
		{Name: "pubsub", Arity: -2, Flags: command.FlagPubSub | command.FlagLoading | command.FlagStale, Subcommands: pubsubSubcommands, Local: viaConn(cmdPubsub)},
	}
}

func init() { command.Register("pubsub", pubsubCommands) }

// subReply writes one (un)subscribe confirmation: a push in RESP3, an
// array in RESP2.
func subReply(w *resp.Writer, verb string, name []byte, count int) {
	w.Push(3)
	w.BulkString(verb)
	if name == nil {
		w.Null()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(count))
}

func (c *Conn) subscribe(names [][]byte, k subKind, w *resp.Writer) {
	ps := c.srv.pubsub
	own, reg := &c.sub.own[k], ps.reg[k]
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
		subReply(w, subVerbs[k].sub, n, c.subCount(k))
	}
	ps.mu.Unlock()
	c.setInfo(func() { c.info.subs[k] = len(c.sub.own[k]) })
	c.sub.subscribed.Store(c.subscriptions() > 0)
}

func (c *Conn) unsubscribe(names [][]byte, k subKind, w *resp.Writer) {
	ps := c.srv.pubsub
	verb := subVerbs[k].unsub
	own, reg := c.sub.own[k], ps.reg[k]
	if len(names) == 0 {
		for name := range own {
			names = append(names, []byte(name))
		}
		sort.Slice(names, func(i, j int) bool { return string(names[i]) < string(names[j]) })
		if len(names) == 0 {
			if w != nil {
				subReply(w, verb, nil, c.subCount(k))
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
			subReply(w, verb, n, c.subCount(k))
		}
	}
	ps.mu.Unlock()
	c.setInfo(func() { c.info.subs[k] = len(c.sub.own[k]) })
	c.sub.subscribed.Store(c.subscriptions() > 0)
}

// dropSubscriptions forgets every subscription of c (close, RESET).
func (c *Conn) dropSubscriptions() {
	if c.subscriptions() == 0 {
		return
	}
	for k := range subKinds {
		c.unsubscribe(nil, k, nil)
	}
}

// message is one publication, encoded at most once per protocol.
type message struct {
	kind             subKind
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
		w.BulkString(subVerbs[m.kind].message)
	} else {
		w.Push(4)
		w.BulkString(subVerbs[subPattern].message)
		w.BulkString(pattern)
	}
	w.Bulk(m.channel)
	w.Bulk(m.payload)
	(*cache)[pattern] = w.Buf
	return w.Buf
}

// publish delivers payload to the subscribers of channel (kind
// subChannel: and to those of matching patterns; subShard: of the shard
// channel) and returns how many deliveries it made.
func (ps *pubsub) publish(channel, payload []byte, k subKind) int {
	m := &message{kind: k, channel: channel, payload: payload}
	n := 0
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for c := range ps.reg[k][string(channel)] {
		c.deliver(m.encode(c.protoAtomic(), ""))
		n++
	}
	if k != subChannel {
		return n
	}
	for pat, set := range ps.reg[subPattern] {
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

// deliver queues a message for a subscriber or monitor, which is closed
// when its unsent output breaks its class's client-output-buffer-limit
// (clientbuf.go): the hard limit at once, from the publisher's goroutine
// (the loop may be slow to take its queue), the soft one on its loop.
func (c *Conn) deliver(msg []byte) {
	if c.closed.Load() || c.outClosing.Load() {
		return
	}
	size := int64(len(msg))
	c.sub.queued.Add(size)
	if hard := c.srv.cfg.Limits.Out[c.class()].Hard.Load(); hard > 0 && uint64(c.pendingOutput()) >= hard {
		c.sub.queued.Add(-size)
		c.closeForOutput(true)
		return
	}
	c.sub.mu.Lock()
	c.sub.msgs = append(c.sub.msgs, msg)
	c.sub.enq.Add(1)
	wake := !c.sub.woken
	c.sub.woken = true
	c.sub.mu.Unlock()
	if wake {
		_ = c.gc.Wake(nil) // serve writes the queue (writeOut)
	}
}

// drainMessages moves the messages delivered, up to the upTo-th ever,
// to the output buffer; on the connection's loop.
func (c *Conn) drainMessages(upTo uint64) {
	if c.sub.taken >= upTo {
		return
	}
	c.sub.mu.Lock()
	n := min(int(upTo-c.sub.taken), len(c.sub.msgs))
	size := 0
	for _, m := range c.sub.msgs[:n] {
		c.out = append(c.out, m...)
		size += len(m)
	}
	clear(c.sub.msgs[:n])
	c.sub.msgs = c.sub.msgs[n:]
	if len(c.sub.msgs) == 0 {
		c.sub.msgs = nil
	}
	// The next message wakes the loop again, also when some stay queued:
	// those delivered after upTo was read found woken set and woke nobody.
	// Held ones (a reply must go first) go out with that reply; writeOut
	// takes the others before it returns.
	c.sub.woken = false
	c.sub.taken += uint64(n)
	c.sub.mu.Unlock()
	c.sub.queued.Add(-int64(size))
}

// pubsubSubcommands describe PUBSUB's subcommands: arity, flags, key specs, ACL categories.
var pubsubSubcommands = []command.SubcommandInfo{
	{Name: "channels", Arity: -2, Flags: command.FlagsLoadingStale | command.FlagPubSub, ACLCats: "pubsub"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "numpat", Arity: 2, Flags: command.FlagsLoadingStale | command.FlagPubSub, ACLCats: "pubsub"},
	{Name: "numsub", Arity: -2, Flags: command.FlagsLoadingStale | command.FlagPubSub, ACLCats: "pubsub"},
	{Name: "shardchannels", Arity: -2, Flags: command.FlagsLoadingStale | command.FlagPubSub, ACLCats: "pubsub"},
	{Name: "shardnumsub", Arity: -2, Flags: command.FlagsLoadingStale | command.FlagPubSub, ACLCats: "pubsub"},
}

func cmdPubsub(c *Conn, a [][]byte, w *resp.Writer) {
	ps := c.srv.pubsub
	sub := command.Subcommand(w, a, "pubsub", pubsubSubcommands)
	if sub == "" {
		return
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	switch {
	case (sub == "channels" || sub == "shardchannels") && len(a) <= 3:
		k := subChannel
		if sub == "shardchannels" {
			k = subShard
		}
		var out []string
		for ch := range ps.reg[k] {
			if len(a) == 2 || glob.MatchString(string(a[2]), ch, false) {
				out = append(out, ch)
			}
		}
		sort.Strings(out)
		w.Array(len(out))
		for _, ch := range out {
			w.BulkString(ch)
		}
	case sub == "numsub" || sub == "shardnumsub":
		k := subChannel
		if sub == "shardnumsub" {
			k = subShard
		}
		w.Array(2 * (len(a) - 2))
		for _, ch := range a[2:] {
			w.Bulk(ch)
			w.Int(int64(len(ps.reg[k][string(ch)])))
		}
	case sub == "numpat" && len(a) == 2:
		w.Int(int64(len(ps.reg[subPattern])))
	case sub == "help":
		command.WriteHelp(w, []string{
			"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CHANNELS [<pattern>]",
			"    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT",
			"    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]",
			"    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]",
			"    Return the number of subscribers for the specified shard level channel(s)",
			"HELP",
			"    Prints this help.",
		})
	default: // PUBSUB CHANNELS with two patterns
		command.SubcommandSyntaxErr(w, a, "pubsub")
	}
}

// subscribedAllowed are the commands a RESP2 connection may send while
// subscribed.
var subscribedAllowed = map[string]bool{"subscribe": true, "psubscribe": true, "unsubscribe": true,
	"punsubscribe": true, "ping": true, "quit": true, "reset": true, "ssubscribe": true, "sunsubscribe": true}

// counts returns the channels, patterns and shard channels subscribed to
// (INFO stats).
func (ps *pubsub) counts() (channels, patterns, shardChannels int) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.reg[subChannel]), len(ps.reg[subPattern]), len(ps.reg[subShard])
}
