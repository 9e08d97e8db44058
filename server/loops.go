package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/panjf2000/gnet/v2"

	"github.com/dfly/dfly/shard"
)

// Shards run on the event loops: shard i is owned by loop i mod L, whose
// goroutine executes every message for it (docs/DESIGN.md §2: an event loop owns
// its shards and runs commands on their keys inline, hopping only for keys
// of other shards). gnet offers no list of its loops, so at boot the server
// enrolls socketpair connections until it has seen every loop, and keeps
// their EventLoop handles.

// shardTask runs a shard message on the shard's event loop, or, without
// a shard, a message for the loop itself.
type shardTask struct {
	s *shard.Shard
	r shard.Runnable
}

func (t shardTask) Run(context.Context) error {
	if t.s == nil {
		t.r.Run(nil) // a message for the loop itself (borrow.go's lendMsg)
		return nil
	}
	t.s.Exec(t.r)
	return nil
}

// discoverLoops finds the engine's event loops and attaches each shard to
// one. It runs once, after boot, before any client command is served.
func (s *Server) discoverLoops(want int) error {
	var found []gnet.EventLoop
	var keep []net.Conn
	defer func() {
		for _, c := range keep {
			_ = c.Close()
		}
	}()
	for attempts := 0; len(found) < want && attempts < 8*want; attempts++ {
		local, remote, err := socketPair()
		if err != nil {
			return err
		}
		keep = append(keep, local, remote)
		ctx := gnet.NewContext(gnet.NewNetConnContext(context.Background(), local), loopProbe{})
		ch, err := s.eng.Register(ctx)
		if err != nil {
			return fmt.Errorf("enroll a loop probe: %w", err)
		}
		res := <-ch
		if res.Err != nil {
			return fmt.Errorf("enroll a loop probe: %w", res.Err)
		}
		el := res.Conn.EventLoop()
		seen := false
		for _, f := range found {
			if f == el {
				seen = true
			}
		}
		if !seen {
			found = append(found, el)
			// The loop's first probe stays open: it wakes the loop for
			// yielded work (Shard.Yield).
			keep = keep[:len(keep)-2]
			s.wakers = append(s.wakers, &loopWaker{loop: el, local: local, remote: remote})
		}
	}
	if len(found) < want {
		return fmt.Errorf("found %d of %d event loops", len(found), want)
	}
	s.loops = found
	inboxes := make([]*loopInbox, len(found))
	for i, el := range found {
		inboxes[i] = &loopInbox{loop: el}
	}
	s.inboxes = inboxes
	s.initLends(inboxes)
	s.shardLoop = make([]int, len(s.shards))
	for i, sh := range s.shards {
		li := i % len(found)
		s.shardLoop[i] = li
		sh, w, in := sh, s.wakers[li], inboxes[li]
		sh.Attach(func(r shard.Runnable) { in.post(shardTask{sh, r}) })
		sh.AttachYield(func(r shard.Runnable) { w.yield(shardTask{sh, r}) })
		sid := i
		sh.AttachRecall(func() { s.recallShard(sid) })
		sh.Start()
	}
	return nil
}

// loopInbox carries the shard messages for one loop. A message is a
// shardTask appended to a slice; only the first message since the loop
// last drained the inbox posts a gnet task (an allocation, and an eventfd
// write when the loop sleeps), so a burst of hops costs one wake-up, not
// one per message. Messages run in the order they were posted, and a
// message posted before a sender's later gnet task (a Wake) runs before it:
// the drain task that will run it is queued already or is queued now.
type loopInbox struct {
	loop         gnet.EventLoop
	mu           sync.Mutex
	queue, spare []shardTask
	armed        bool // a drain task is queued and has not taken the queue yet
	// lendMail: a lend message (borrow.go) may be in the queue; the loop
	// takes it before serving its next connection (Server.OnTraffic).
	lendMail atomic.Bool
}

func (in *loopInbox) post(t shardTask) {
	in.mu.Lock()
	in.queue = append(in.queue, t)
	if in.armed {
		in.mu.Unlock()
		return
	}
	in.armed = true
	in.mu.Unlock()
	_ = in.loop.Execute(context.Background(), in)
}

// Run drains the inbox on its loop; messages posted meanwhile queue a new
// drain, which gnet runs before it polls again.
func (in *loopInbox) Run(ctx context.Context) error {
	in.lendMail.Store(false) // every message queued now is run below
	in.mu.Lock()
	q := in.queue
	in.queue, in.spare = in.spare, nil
	in.armed = false
	in.mu.Unlock()
	for i := range q {
		_ = q[i].Run(ctx)
		q[i] = shardTask{}
	}
	in.mu.Lock()
	if in.spare == nil && cap(q) <= 4096 {
		in.spare = q[:0]
	}
	in.mu.Unlock()
	return nil
}

// loopProbe marks the enrolled discovery connections.
type loopProbe struct{}

// loopWaker runs a loop's yielded work (Shard.Yield: a snapshot's next
// step) after the loop has served the I/O that is ready. gnet drains its
// task queue until it is empty before it polls again, so a task that posts
// its successor with Execute would starve every connection of the loop;
// a yield instead writes a byte to the loop's probe socket, and the work
// runs from that socket's OnTraffic, one turn per poll. Only the loop's
// goroutine touches queue and armed.
type loopWaker struct {
	loop          gnet.EventLoop
	local, remote net.Conn
	queue, spare  []shardTask
	armed         bool
}

func (w *loopWaker) yield(t shardTask) {
	w.queue = append(w.queue, t)
	if !w.armed {
		w.armed = true
		_, _ = w.remote.Write([]byte{1})
	}
}

// run executes the work yielded before this turn.
func (w *loopWaker) run() {
	q := w.queue
	w.queue, w.spare = w.spare[:0], nil
	w.armed = false
	for i := range q {
		q[i].Run(context.Background())
		q[i] = shardTask{}
	}
	w.spare = q[:0]
}

// waker is the waker of loop el (nil before discovery).
func (s *Server) waker(el gnet.EventLoop) *loopWaker {
	for _, w := range s.wakers {
		if w.loop == el {
			return w
		}
	}
	return nil
}

func socketPair() (net.Conn, net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "loop-probe")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
		conns[i] = c
	}
	return conns[0], conns[1], nil
}

// loopIndex is the position of el among the discovered loops, -1 if none.
func (s *Server) loopIndex(el gnet.EventLoop) int {
	for i, l := range s.loops {
		if l == el {
			return i
		}
	}
	return -1
}

// sameLoop reports whether shards a and b are owned by the same event loop.
func (s *Server) sameLoop(a, b int) bool {
	return s.shardLoop != nil && s.shardLoop[a] == s.shardLoop[b]
}
