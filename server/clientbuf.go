package server

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dfly/dfly/client"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/shard"
)

// Client buffer limits, Redis's client-output-buffer-limit and
// client-query-buffer-limit.
//
// Output: each client belongs to a class (normal; replica, Redis's
// "slave"; pubsub: a connection with subscriptions). A class has a hard
// limit, a soft limit and soft seconds (0 = none): a client whose unsent
// output reaches the hard limit, or stays at or over the soft limit for
// more than the soft seconds, is closed, with Redis's log line. As in
// Redis the limits are checked when output is added (a reply, a message)
// and, for a client over its soft limit, once a second (clientsCron), and
// a MONITOR connection counts as normal. The unsent output of a
// connection is what gnet has yet to write plus the Pub/Sub messages
// queued for its loop. A Redis-protocol replica counts its stream's queue
// against the replica class (package master: replicaConn.write, from the
// journal's goroutines, so without the once-a-second check); a dfly flow
// (master/flows.go) only against the hard limit, as it was when the flow
// started.
//
// Query: a client whose unparsed input plus the big bulk it is sending
// (resp.Parser.Receiving) passes client-query-buffer-limit is closed
// without a reply, with Redis's log line. Like Redis 7.0 it does not
// count the arguments of a command already parsed, nor MULTI's queue.

// outputLimiter applies a class's limits to one client's unsent output,
// from any goroutine.
type outputLimiter struct {
	softSince atomic.Int64 // unix seconds the soft limit was first seen reached; 0: not
}

// exceeded reports whether pending bytes of unsent output break the
// class's limits now: the hard limit reached, or the soft limit reached
// for more than its seconds (counted in whole seconds, as Redis).
func (o *outputLimiter) exceeded(cfg *config.Config, class config.ClientClass, pending int64) bool {
	return o.exceededAt(cfg, class, pending, time.Now().Unix())
}

// exceededAt is exceeded at now (unix seconds).
func (o *outputLimiter) exceededAt(cfg *config.Config, class config.ClientClass, pending, now int64) bool {
	l := &cfg.Limits.Out[class]
	n := uint64(max(pending, 0))
	if h := l.Hard.Load(); h > 0 && n >= h {
		return true
	}
	if s := l.Soft.Load(); s > 0 && n >= s {
		since := o.softSince.Load()
		if since == 0 {
			o.softSince.Store(now)
			return false
		}
		return now-since > l.Seconds.Load()
	}
	if o.softSince.Load() != 0 {
		o.softSince.Store(0)
	}
	return false
}

// startClientsCron starts clientsCron, once per server.
func (s *Server) startClientsCron() {
	s.clientsCronOnce.Do(func() { go s.clientsCron() })
}

// clientsCron closes, once a second, the clients that stay over their soft
// output limit without new output to check it (Redis's clientsCron does).
func (s *Server) clientsCron() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var soft []*Conn
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		soft = soft[:0]
		s.connsMu.Lock()
		for _, c := range s.conns {
			if c.obuf.softSince.Load() != 0 {
				soft = append(soft, c)
			}
		}
		s.connsMu.Unlock()
		for _, c := range soft {
			if !c.outClosing.Load() && c.obuf.exceeded(s.cfg, c.class(), c.pendingOutput()) {
				c.closeForOutput(false)
			}
		}
		clear(soft)
	}
}

// evictClients closes the clients using the most memory while all of
// them use maxmemory-clients or more (package client's Evictees), but
// those that said CLIENT NO-EVICT on, as Redis 7.0's client eviction.
func (s *Server) evictClients() {
	limit := s.cfg.ClientEvictionLimit()
	if limit == 0 {
		return
	}
	conns := s.clientList()
	us := make([]client.Usage, len(conns))
	for i, c := range conns {
		var inf client.Info
		c.bufferFields(&inf)
		c.info.Lock()
		us[i] = client.Usage{Mem: inf.TotMem, Exempt: c.info.noEvict}
		c.info.Unlock()
	}
	for _, i := range client.Evictees(us, limit) {
		if c := conns[i]; c.outClosing.CompareAndSwap(false, true) { // no reply after
			s.cfg.Limits.Evicted.Add(1)
			s.log.Noticef("Evicting client: %s", c.describe())
			_ = c.gc.Close()
		}
	}
}

// class is the connection's output class: pubsub while it has
// subscriptions, else normal (MONITOR included, as in Redis).
func (c *Conn) class() config.ClientClass {
	if c.sub.subscribed.Load() {
		return config.ClassPubsub
	}
	return config.ClassNormal
}

// outboundStats is the part of a gnet connection that reports its unsent
// output to any goroutine (third_party/gnet's patch).
type outboundStats interface {
	OutboundStats() (static, nodes, total int)
}

// pendingOutput is the connection's unsent output: gnet's outbound buffer
// and the messages queued for its loop. Any goroutine.
func (c *Conn) pendingOutput() int64 {
	n := c.sub.queued.Load()
	if o, ok := c.gc.(outboundStats); ok {
		_, _, total := o.OutboundStats()
		n += int64(total)
	}
	return n
}

// checkOutput closes the connection when its unsent output breaks its
// class's limits; on its loop, after output was added. It reports whether
// it did.
func (c *Conn) checkOutput() bool {
	if c.outClosing.Load() {
		return true
	}
	class := c.class()
	if l := &c.srv.cfg.Limits.Out[class]; l.Hard.Load() == 0 && l.Soft.Load() == 0 {
		return false // no limits (normal's default): nothing to add up
	}
	if !c.obuf.exceeded(c.srv.cfg, class, c.pendingOutput()) {
		return false
	}
	c.closeForOutput(true)
	return true
}

// closeForOutput closes the connection for its output, once: no reply or
// message reaches it after. Redis logs "scheduled to be closed ASAP" when
// output was being added (asap), "closed" from its cron. Any goroutine.
func (c *Conn) closeForOutput(asap bool) {
	if !c.outClosing.CompareAndSwap(false, true) {
		return
	}
	c.srv.cfg.Limits.OutClosed.Add(1)
	how := "closed"
	if asap {
		how = "scheduled to be closed ASAP"
	}
	c.srv.log.Warnf("Client %s %s for overcoming of output buffer limits.", c.describe(), how)
	_ = c.gc.Close()
}

// queryOverLimit reports whether the query buffer (unparsed input and the
// big bulk being received) passes client-query-buffer-limit, logging and
// counting it as Redis does; the caller then closes the connection
// without a reply. On the connection's loop.
func (c *Conn) queryOverLimit() bool {
	got, _ := c.parser.Receiving()
	unparsed := c.gc.InboundBuffered()
	if int64(unparsed)+got <= c.srv.cfg.Limits.Query.Load() {
		return false
	}
	head := c.parser.ReceivedHead(64)
	if head == nil && unparsed > 0 {
		head, _ = c.gc.Peek(min(unparsed, 64))
	}
	c.publishStats()
	c.srv.cfg.Limits.QueryClosed.Add(1)
	c.srv.log.Warnf("Closing client that reached max query buffer length: %s (qbuf initial bytes: %s)",
		c.describe(), appendRepr(nil, head))
	return true
}

// connStats are the figures of a connection CLIENT LIST shows besides its
// identity, published by its loop after each serve (publishStats).
type connStats struct {
	qbuf, qbufFree, argvMem, multiMem, held atomic.Int64
	multi                                   atomic.Int64 // queued commands, -1 outside MULTI
	outCap, outPeak                         atomic.Int64
	watch                                   atomic.Pointer[shard.Watch]
}

// publishStats records the connection's buffers for CLIENT LIST on other
// loops. On its loop. While a unit it dispatched runs elsewhere (an EXEC on
// a coordinator, which ends the MULTI state and may grow the output), the
// figures of that state stay as last published: the unit owns it until it
// completes.
func (c *Conn) publishStats() {
	got, free := c.parser.Receiving()
	c.stats.qbuf.Store(int64(c.gc.InboundBuffered()) + got)
	c.stats.qbufFree.Store(free)
	argv := c.parser.Holding()
	for i := c.flushed; i < c.next; i++ { // in flight: a blocked command's (its args only: the unit writes its reply)
		argv += argvLen(c.cmds[i].args)
	}
	c.stats.argvMem.Store(argv)
	if c.inflight.Load() != 0 {
		return
	}
	multi, multiMem := int64(-1), int64(0)
	if m := c.multi; m != nil {
		multi, multiMem = int64(len(m.cmds)), int64(len(m.buf))+int64(len(m.argv))*24
	}
	c.stats.multi.Store(multi)
	c.stats.multiMem.Store(multiMem)
	c.stats.held.Store(int64(cap(c.arena) + cap(c.out)))
	c.stats.outCap.Store(int64(cap(c.out)))
	var w *shard.Watch
	if c.watch != nil {
		w = c.watch.w
	}
	c.stats.watch.Store(w)
}

// maxClientBuffers are the largest query buffer and unsent output of the
// connected clients (INFO's client_recent_max_input_buffer and
// client_recent_max_output_buffer; Redis takes them over the last few
// seconds, these are now's).
func (s *Server) maxClientBuffers() (in, out int64) {
	for _, c := range s.clientList() {
		in = max(in, c.stats.qbuf.Load())
		out = max(out, c.pendingOutput())
	}
	return in, out
}

// bufferFields sets CLIENT LIST's buffer fields, multi= to tot-mem=, in
// i. Any goroutine.
func (c *Conn) bufferFields(i *client.Info) {
	static, nodes, total := 0, 0, 0
	if o, ok := c.gc.(outboundStats); ok {
		static, nodes, total = o.OutboundStats()
	}
	// qbuf-free: the room left for the big command being received; the
	// room of gnet's inbound buffer is not known (0 between commands).
	i.Multi, i.QBuf, i.QBufFree = c.stats.multi.Load(), c.stats.qbuf.Load(), c.stats.qbufFree.Load()
	i.ArgvMem, i.MultiMem = c.stats.argvMem.Load(), c.stats.multiMem.Load()
	// rbs, rbp: the reply buffer kept between writes and the most it held
	// in one (dfly's c.out, where Redis has its 16 KB static buffer).
	i.RBS, i.RBP = max(c.stats.outCap.Load(), 1024), c.stats.outPeak.Load()
	i.OBL, i.OLL, i.OMem = int64(static), int64(nodes), int64(total)+c.sub.queued.Load()
	i.TotMem = i.QBuf + i.QBufFree + i.ArgvMem + i.MultiMem + i.OMem + c.stats.held.Load() + int64(unsafe.Sizeof(*c))
	i.Flags.InMulti = i.Multi >= 0
	if w := c.stats.watch.Load(); w != nil && w.Dirty() {
		i.Flags.DirtyCAS = true
	}
}
