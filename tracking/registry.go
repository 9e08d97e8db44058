package tracking

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/resp"
)

// Channel is where a RESP2 redirect target hears of invalidations.
const Channel = "__redis__:invalidate"

// Conn is a connection as the package reaches it: the tracking client
// itself, or the target it redirects to.
type Conn interface {
	// Proto is the connection's protocol version now (HELLO may change it).
	Proto() int
	// PubSub: it is in Pub/Sub mode (subscribed to anything), where a
	// RESP2 target hears of invalidations as messages on Channel.
	PubSub() bool
	// Deliver queues msg on the connection, like a Pub/Sub message; from
	// any goroutine, it never blocks.
	Deliver(msg []byte)
}

// Host finds redirect targets: the connection with that id, nil when gone.
type Host interface {
	Target(id int64) Conn
}

// Client is one connection's tracking state.
type Client struct {
	reg  *Registry
	conn Conn
	opts atomic.Pointer[Options]
	// broken: an invalidation found its redirect target gone (TRACKINGINFO's
	// broken_redirect), until tracking is set again.
	broken atomic.Bool
}

// Options is c's configuration, nil when not tracking.
func (c *Client) Options() *Options {
	if c == nil {
		return nil
	}
	return c.opts.Load()
}

// Registry is the server's set of tracking clients (a flush tells them
// all; BCAST ones see every change), and the tracking table's totals.
type Registry struct {
	host    Host
	mu      sync.RWMutex
	clients map[*Client]struct{}
	// prefixes counts BCAST clients per prefix (tracking_total_prefixes).
	prefixes map[string]int
	bcast    atomic.Int32
	// keys and items total the shards' tables (tracking_total_keys, _items).
	keys, items atomic.Int64
}

// NewRegistry returns an empty registry that finds targets through host.
func NewRegistry(host Host) *Registry {
	return &Registry{host: host, clients: map[*Client]struct{}{}, prefixes: map[string]int{}}
}

// NewClient returns the tracking state of conn, not tracking.
func (r *Registry) NewClient(conn Conn) *Client { return &Client{reg: r, conn: conn} }

// Set gives c the configuration o (nil: tracking off).
func (r *Registry) Set(c *Client, o *Options) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.broken.Store(false)
	if old := c.opts.Swap(o); old != nil && old.BCAST {
		r.bcast.Add(-1)
		for _, p := range old.Prefixes {
			if r.prefixes[p]--; r.prefixes[p] == 0 {
				delete(r.prefixes, p)
			}
		}
	}
	if o == nil {
		delete(r.clients, c)
		return
	}
	r.clients[c] = struct{}{}
	if o.BCAST {
		r.bcast.Add(1)
		for _, p := range o.Prefixes {
			r.prefixes[p]++
		}
	}
}

// Stats is what INFO shows: tracking clients, keys in the tables, their
// (key, client) items, distinct BCAST prefixes.
func (r *Registry) Stats() (clients, keys, items, prefixes int64) {
	r.mu.RLock()
	clients, prefixes = int64(len(r.clients)), int64(len(r.prefixes))
	r.mu.RUnlock()
	return clients, r.keys.Load(), r.items.Load(), prefixes
}

// Flushed tells every tracking client to drop its whole cache (FLUSHDB,
// FLUSHALL): one message with a null key.
func (r *Registry) Flushed() {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for c := range r.clients {
		c.send(nil)
	}
}

// change is a key a shard step changed and the client whose command
// changed it (nil: none or not known).
type change struct {
	key    string
	writer *Client
}

// broadcast tells the BCAST clients of the keys changed in one shard step:
// one message per client and matching prefix (in the prefixes' order),
// its keys sorted and once each, as Redis's per-prefix tables send them.
// A NOLOOP client does not hear of a key whose last writer it was.
func (r *Registry) broadcast(changed []change) {
	slices.SortStableFunc(changed, func(a, b change) int { return strings.Compare(a.key, b.key) })
	last := changed[:0] // each key once, with its last writer
	for i, ch := range changed {
		if i+1 < len(changed) && changed[i+1].key == ch.key {
			continue
		}
		last = append(last, ch)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var keys []string
	for c := range r.clients {
		o := c.opts.Load()
		if o == nil || !o.BCAST {
			continue
		}
		for _, p := range o.Prefixes {
			keys = keys[:0]
			for _, ch := range last {
				if strings.HasPrefix(ch.key, p) && !(o.NoLoop && ch.writer == c) {
					keys = append(keys, ch.key)
				}
			}
			if len(keys) > 0 {
				c.send(keys)
			}
		}
	}
}

// send queues one invalidation of keys (nil: a flush) for c, to c or its
// redirect target: a RESP3 push, or a RESP2 message on Channel to a target
// in Pub/Sub mode; nothing to a RESP2 client that does not redirect. A
// RESP3 client whose target is gone hears tracking-redir-broken instead.
func (c *Client) send(keys []string) {
	o := c.opts.Load()
	if o == nil {
		return
	}
	target := c.conn
	if o.Redirect > 0 {
		if target = c.reg.host.Target(o.Redirect); target == nil {
			c.broken.Store(true)
			if c.conn.Proto() == 3 {
				w := resp.Writer{Proto: 3}
				w.Push(2)
				w.BulkString("tracking-redir-broken")
				w.Int(o.Redirect)
				c.conn.Deliver(w.Buf)
			}
			return
		}
	}
	w := resp.Writer{Proto: target.Proto()}
	if w.Proto == 3 {
		w.Push(2)
		w.BulkString("invalidate")
	} else {
		if o.Redirect <= 0 || !target.PubSub() {
			return
		}
		w.Array(3)
		w.BulkString("message")
		w.BulkString(Channel)
	}
	if keys == nil {
		w.Null()
	} else {
		w.Array(len(keys))
		for _, k := range keys {
			w.BulkString(k)
		}
	}
	target.Deliver(w.Buf)
}
