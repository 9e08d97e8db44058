package server

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/shard"
)

// A borrowed run executes a script whose keys live on the shards of more
// than one event loop on one loop, as one inline run, instead of on a
// coordinator that hops to a shard for each call and waits for each hop
// (a cross-shard EVAL cost 3.2x the server CPU of one confined to a shard:
// goroutine hand-offs, not work). The loop that runs it, the borrower, is
// the lowest of the loops owning the script's shards: a connection of a
// higher loop forwards its scripts there (forward.go). The borrower asks
// every other loop owning one of the script's shards, a lender, to lend
// those shards (shard.Lend): the lender checks that each is quiet
// (shard.Lendable: the script's keys free, no snapshot, no recording
// journal, no tiered storage), marks them lent and answers at once, by a
// message back. A lent shard defers every message that comes for it; its
// loop goes on serving its connections and its other shards. The borrower
// runs the script inline, touching the lent shards as their owner would
// (ExecBorrowed). After the run it keeps them (loopLend.kept): the next
// run over them needs no ask, until the lender wants them back — a
// message deferred on one, or a run of the lender's own waiting for one,
// recalls them (shard.Recall) — and the borrower sends them back
// (shard.Return), which runs the deferred messages in order.

// Atomicity: while the script runs, no other goroutine runs anything on
// any of its shards (the borrower's own are busy with it, the lent ones
// defer), and none of its keys was locked by another transaction when it
// started. So it is one indivisible step, as an inline script on one
// shard is.
//
// No deadlock, and no loop stalled behind another:
//   - A lender never waits: it answers a request when its loop reaches
//     it, yes or no.
//   - A borrower waits only for the answers to its requests (or for its
//     own shards to come back), and while it waits it serves the lend
//     messages for its own loop (scanInbox): requests are answered as
//     when idle (borrowing goes up, forward.go: they come from lower
//     loops; one from a higher loop would be refused while it tries, the
//     lower loop winning a conflict), answers, returns and recalls are
//     taken. So answers always come.
//   - A borrower gives back everything it keeps before it asks, and one
//     whose request was refused, or whose own shards were lent meanwhile,
//     gives back everything granted before it waits again (for its
//     shards' return, recalled), so no loop waits while holding or
//     keeping another's shards. After maxBorrowTries failed tries the
//     script goes to a coordinator, which waits on no event loop's
//     goroutine.
//   - A loop keeping shards waits for nothing on their account: a message
//     for one is deferred and recalls it, and the keeper takes the recall
//     at its next connection or inbox turn (as it takes asks).
//   - No wait lasts longer than borrowWait: a lender busy in a long
//     script (or holding the borrower's shards for one) answers only
//     after it, and the borrower must not stall its own connections that
//     long. It abandons the try (answers still out will be stale: what
//     they lent goes straight back) and the script goes to a coordinator.
//
// A borrowed run is subject to the inline script budget (script.Run): one
// that has not written by script.InlineBudget stops and runs again on a
// coordinator; one that has written runs to its end, holding the loops'
// shards as an inline script holds its shard's.

// maxBorrowTries bounds the tries of one borrowed run before it goes to a
// coordinator.
const maxBorrowTries = 8

type lendKind uint8

const (
	lendAsk    lendKind = iota // to the lender: lend sids to loop from
	lendAck                    // to the borrower: the answer (granted)
	lendBack                   // to the lender: take sids back
	lendRecall                 // to the borrower: the lender wants its shards back
)

// borrowWait bounds each wait of a borrower (for answers, or for its own
// shards' return): past it the script goes to a coordinator instead. A
// loop answers within microseconds unless it is itself running a script
// that takes long; the borrower must not stall its loop behind that.
const borrowWait = time.Millisecond

// lendMsg is a message between loops for a borrowed run. It runs on the
// receiving loop outside any shard's Exec (a shardTask without a shard).
type lendMsg struct {
	srv  *Server
	kind lendKind
	// from and lender: the borrowing and the lending loop; to: the loop
	// the message is posted to (an ask goes to the lender and comes back
	// as the answer).
	from, lender, to int
	sids             []int // the lender's shards of the run, ascending
	// keys: the run's keys on those shards (a copy: an abandoned ask
	// may still be read after the borrower moved on).
	keys    []shard.KeyLock
	gen     uint64 // the borrower's try (loopLend.gen)
	granted bool   // the answer to a lendAsk
	// busy: refused because a shard was not quiet (not for priority), so
	// trying again soon is unlikely to do better.
	busy bool
}

func (m *lendMsg) Run(*shard.Shard) { m.srv.lends[m.to].handle(m) }

// loopLend is an event loop's part in borrowed runs. Only the loop's
// goroutine touches it, except poke, which other loops send to.
type loopLend struct {
	srv  *Server
	loop int
	in   *loopInbox
	// poke: a lend message was posted to this loop; timer: bounds a wait
	// for one (borrowWait).
	poke  chan struct{}
	timer *time.Timer
	// gen is the current try's number (of tries, this loop's count; 0:
	// none): an answer of another try is stale. answered, refused and busy: this try's
	// answers; pending: per lending loop, whether its answer is out.
	gen, tries        uint64
	answered, refused int
	busy              bool
	pending           []bool
	// trying: the loop is taking shards for a run (or waits to try again):
	// requests from higher loops are refused meanwhile. (A fixed order:
	// with an order by age instead, two loops under load took turns
	// refusing each other, three tries a run, and cost 40% more CPU. A
	// higher loop's run that keeps losing goes to a coordinator after
	// maxBorrowTries.)
	trying bool
	// asks and backs: per lending loop, reused (an ask is answered, a back
	// is taken, before the next run posts it again: inbox order).
	asks, backs []*lendMsg
	// The run being tried: its shards (ascending), which of them are
	// involved, the lenders' loops, and the keys on each own shard.
	sids     []int
	involved []bool
	lenders  []int
	keys     [][]shard.KeyLock
	scratch  []*lendMsg
	co       Coord
	nest     borrowNest
	owner    func(a, b int) bool
	// runs and fallbacks count the loop's borrowed runs and the scripts
	// that tried and went to a coordinator (INFO stats).
	runs, fallbacks atomic.Uint64
	// skip: scripts to send straight to a coordinator, after a fallback:
	// while other transactions keep the shards locked (or a snapshot
	// runs), a try costs a round trip that ends in a coordinator anyway.
	// backoff doubles with each fallback in a row (up to maxBorrowSkip)
	// and ends with a borrowed run.
	skip, backoff int
	// holding: the shards lent for the last run stay with this loop while
	// the same connection (holder) goes on with its batch, until
	// holdUntil, or for the rest of a forwarded run (forward.go): its next
	// scripts over them run without asking again, and its commands for
	// one of them run here, as for a shard of the loop (Conn.dispatch).
	// Invariant: the loop holds shards only while that connection's serve
	// (or that forwarded run's message) runs; serve ends the hold
	// (Conn.releaseHeld) before it returns, for any reason, and before it
	// parses more input, and runBorrowed before it asks for others; the
	// shards are then kept (kept, below) or given back. So a hold never
	// outlives one batch of one connection, the loop waits for nothing
	// while it holds (a batch or a coordinator sent to a held shard is
	// deferred by its lender until the shards are back, and serve returns
	// first), and it never holds while it asks.
	holding   bool
	holder    *Conn
	holdUntil int64
	// kept: the shards granted for the last run stay lent to this loop
	// after its hold ended, with no run on them, until their lender
	// recalls them (shard.Recall: a message for one of them came, or the
	// lender's own run needs it) or a run of this loop needs others; a
	// run that finds the shards it needs kept holds them again without
	// asking. The loop never waits while it keeps shards: every wait of
	// a borrower comes after giveBack. recalled: per lending loop, a
	// recall came for what it lent: given back at the hold's end, and not
	// held again.
	kept     bool
	recalled []bool
	// held counts the runs over shards held from a run before (no ask);
	// forwarded the forwarded runs the loop ran (forward.go).
	held, forwarded atomic.Uint64
	// asked counts the tries that asked lenders; answerWait and
	// returnWait the nanoseconds the loop waited for their answers and
	// for its own shards to come back from another loop's run (INFO
	// stats: where a loop under cross-shard scripts spends its time).
	asked, answerWait, returnWait atomic.Uint64
}

// holdFor bounds a hold (loopLend.holding): the lender's own commands on
// those shards wait meanwhile, and a borrower there waits for them at most
// borrowWait before it gives up.
const holdFor = 200 * time.Microsecond

// maxBorrowSkip bounds loopLend.backoff.
const maxBorrowSkip = 64

// fellBack counts a fallback and backs off (loopLend.skip).
func (l *loopLend) fellBack() {
	l.fallbacks.Add(1)
	l.backoff = min(max(1, 2*l.backoff), maxBorrowSkip)
	l.skip = l.backoff
}

func (s *Server) initLends(inboxes []*loopInbox) {
	n := len(inboxes)
	s.lends = make([]*loopLend, n)
	s.lentTo = make([]int, len(s.shards))
	for i, in := range inboxes {
		l := &loopLend{srv: s, loop: i, in: in, poke: make(chan struct{}, 1), timer: time.NewTimer(time.Hour),
			asks: make([]*lendMsg, n), backs: make([]*lendMsg, n), pending: make([]bool, n), recalled: make([]bool, n),
			involved: make([]bool, len(s.shards)), keys: make([][]shard.KeyLock, len(s.shards))}
		l.timer.Stop()
		for j := range n {
			l.asks[j] = &lendMsg{srv: s, kind: lendAsk, from: i, lender: j, to: j}
			l.backs[j] = &lendMsg{srv: s, kind: lendBack, from: i, lender: j, to: j}
		}
		l.owner = func(_, b int) bool { return l.involved[b] }
		l.nest.l = l
		s.lends[i] = l
	}
}

// post sends m to its loop (m.to) and wakes that loop if it waits. Once
// posted, m belongs to the receiver (it turns an ask into its answer),
// so nothing of it is read after the post.
func (s *Server) postLend(m *lendMsg) {
	to := m.to
	s.inboxes[to].post(shardTask{r: m})
	s.inboxes[to].lendMail.Store(true)
	select {
	case s.lends[to].poke <- struct{}{}:
	default:
	}
}

// handle runs a lend message on the loop it was sent to.
func (l *loopLend) handle(m *lendMsg) {
	shards := l.srv.shards
	switch m.kind {
	case lendBack:
		for _, sid := range m.sids {
			shards[sid].Return()
		}
		return
	case lendAck:
		l.answer(m)
		return
	case lendRecall:
		// Stale when what m.lender lent went back already (a spurious
		// one, for a later lend, only returns that one early). An ask
		// still out belongs to its lender (it answers, then recalls).
		if a := l.asks[m.lender]; !l.pending[m.lender] && a.granted {
			l.recalled[m.lender] = true
			if l.kept {
				l.giveBackTo(m.lender)
				l.kept = l.anyGranted()
			}
		}
		return
	}
	ok := !(l.trying && m.from > l.loop)
	m.busy = false
	for _, sid := range m.sids {
		s := shards[sid]
		switch {
		case !ok:
		case s.Lent():
			ok = false // lent to another run: soon back
			s.Recall() // or kept by its borrower
		case !s.Lendable(m.keys): // keys of its other shards are never locked here
			ok, m.busy = false, true
		}
	}
	if ok {
		for _, sid := range m.sids {
			shards[sid].Lend()
			l.srv.lentTo[sid] = m.from
		}
	}
	m.granted = ok
	m.kind, m.to = lendAck, m.from
	l.srv.postLend(m)
}

// answer takes an answer to one of this loop's requests. One of an
// abandoned try is stale: what it lent goes straight back.
func (l *loopLend) answer(m *lendMsg) {
	m.kind, m.to = lendAsk, m.lender // ready to be posted again
	if m.gen != l.gen || l.gen == 0 {
		if m.granted {
			m.granted = false
			l.srv.postLend(&lendMsg{srv: l.srv, kind: lendBack, from: l.loop, lender: m.lender, to: m.lender, sids: m.sids})
		}
		return
	}
	l.pending[m.lender] = false
	l.answered++
	if !m.granted {
		l.refused++
		l.busy = l.busy || m.busy
	}
}

// wait blocks until a lend message is posted to this loop, and handles
// the loop's lend messages; false when the deadline (nanotime) passed
// first.
func (l *loopLend) wait(deadline int64) bool {
	left := deadline - nanotime()
	if left <= 0 {
		return false
	}
	l.timer.Reset(time.Duration(left))
	select {
	case <-l.poke:
		l.timer.Stop()
		l.scanInbox()
		return true
	case <-l.timer.C:
		return false
	}
}

// abandon ends the current try while answers are out: they will be stale
// (answer gives back what they lent), and their asks, still travelling,
// are replaced for the next runs. What this try was lent goes back.
func (l *loopLend) abandon() {
	l.gen = 0
	for _, lp := range l.lenders {
		if l.pending[lp] {
			l.pending[lp] = false
			l.asks[lp] = &lendMsg{srv: l.srv, kind: lendAsk, from: l.loop, lender: lp, to: lp}
		}
	}
	l.giveBack()
}

// scanInbox takes the lend messages out of the loop's inbox and handles
// them, leaving the rest in order: what a borrower does while it waits,
// and what a loop does before it serves its next connection (OnTraffic).
// Taking a return ahead of messages posted before it keeps each shard's
// order: those came after the shard was lent, so they would only have
// been deferred behind the ones Return runs first. Taking an ask ahead of
// a message posted before it for the same shard only moves that message
// behind the borrowed run (the shard defers it until Return): it comes
// from another connection (a connection's own run starts only when its
// earlier work is done) or from a coordinator, whose locked keys the
// lend check keeps the run away from, so no order a client could see
// changes.
func (l *loopLend) scanInbox() {
	in := l.in
	in.lendMail.Store(false) // before the scan: a message posted after it sets it again
	msgs := l.scratch[:0]
	in.mu.Lock()
	q := in.queue[:0]
	for _, t := range in.queue {
		if m, ok := t.r.(*lendMsg); ok && t.s == nil {
			msgs = append(msgs, m)
			continue
		}
		q = append(q, t)
	}
	clear(in.queue[len(q):])
	in.queue = q
	in.mu.Unlock()
	for i, m := range msgs {
		l.handle(m)
		msgs[i] = nil
	}
	l.scratch = msgs[:0]
}

// ownLent reports whether one of the run's own shards is lent out.
func (l *loopLend) ownLent() bool {
	for _, sid := range l.sids {
		if l.srv.shardLoop[sid] == l.loop && l.srv.shards[sid].Lent() {
			return true
		}
	}
	return false
}

// borrowable reports whether cmd may run as a borrowed run: a script.
func borrowable(cmd *command.Command) bool { return cmd.IsScript() }

// runBorrowed runs the script p (keys at c.keyPos, on more than one shard,
// cleared by its Coordinate check to run inline) as a borrowed run on the
// connection's loop, and reports true when it did (or handed it to a
// coordinator after an inline start, having answered nothing): the
// command is then complete or in flight. False: nothing ran; the caller
// sends it to a coordinator.
func (c *Conn) runBorrowed(p *pending) bool {
	l := c.borrowFor(p, false)
	if l == nil {
		return false
	}
	l.runs.Add(1)
	c.runLent(p)
	l.keep(c)
	return true
}

// borrowAhead takes the shards of the script p, which comes after the
// commands dispatch has gathered, before those are sent: held, the
// gathered commands for those shards run here too (dispatch), and so does
// the script after them, with no round trip for either. Nothing happens
// when they cannot be had at once (the script tries again at its turn).
func (c *Conn) borrowAhead(p *pending) {
	remote := false
	for _, sid := range c.used {
		if c.srv.shardLoop[sid] == c.loop {
			continue
		}
		// A gathered command for a shard the script does not need would
		// be sent anyway, and serve give the shards back while it waits.
		if !slices.ContainsFunc(c.keyPos, func(i int) bool { return c.srv.ShardOf(p.args[i]) == sid }) {
			return
		}
		remote = true
	}
	if remote {
		c.borrowFor(p, true)
	}
}

// borrowFor gets the shards of p's run for the connection's loop: held
// from a run before, or lent by their loops on request. Unless ahead, it
// also checks the loop's own shards (ownReady) and counts a failure (a
// fallback, then backing off). It returns the loop's lending state, or nil
// when p cannot run borrowed now.
func (c *Conn) borrowFor(p *pending, ahead bool) *loopLend {
	srv := c.srv
	if c.loop < 0 || srv.lends == nil || srv.tiered != nil || p.track || c.tracker.Options() != nil {
		return nil
	}
	return c.borrowOn(srv.lends[c.loop], p, c.keyPos, ahead)
}

// borrowOn is borrowFor on loop l's goroutine, which is the connection's
// own or, for a forwarded run (forward.go), a lower loop's; keyPos: p's
// key positions.
func (c *Conn) borrowOn(l *loopLend, p *pending, keyPos []int, ahead bool) *loopLend {
	srv := c.srv
	if l.skip > 0 && l.holder != c {
		if !ahead {
			l.skip--
		}
		return nil
	}
	for _, sid := range l.sids {
		l.involved[sid] = false
		l.keys[sid] = l.keys[sid][:0]
	}
	l.sids, l.lenders = l.sids[:0], l.lenders[:0]
	excl := p.cmd.Flags&command.FlagWrite != 0
	for _, i := range keyPos {
		sid := srv.ShardOf(p.args[i])
		if !l.involved[sid] {
			l.involved[sid] = true
			l.sids = append(l.sids, sid)
		}
		l.keys[sid] = append(l.keys[sid], shard.KeyLock{DB: p.db, Key: string(p.args[i]), Excl: excl})
	}
	slices.Sort(l.sids)
	for _, sid := range l.sids {
		if lp := srv.shardLoop[sid]; lp != l.loop && !slices.Contains(l.lenders, lp) {
			l.lenders = append(l.lenders, lp)
		}
	}
	if l.holding {
		// ownLent: a loop with several shards may have lent one the held
		// run did not need (while it asked); this run must not start
		// without it (borrowNest would find it deferring).
		if l.holder == c && l.heldFits() && !l.ownLent() {
			if ahead {
				return l
			}
			if l.ownReady() == ownOK {
				l.held.Add(1)
				return l
			}
			l.release()
			l.fellBack()
			return nil
		}
		l.release()
	}
	if l.kept {
		// ownLent as above.
		if l.keptFits() && !l.ownLent() {
			if ahead || l.ownReady() == ownOK {
				if !ahead {
					l.held.Add(1)
				}
				l.kept, l.holding, l.holder, l.holdUntil = false, true, c, nanotime()+int64(holdFor)
				return l
			}
			l.giveBack()
			l.fellBack()
			return nil
		}
		l.giveBack()
	}
	for _, lp := range l.lenders {
		l.recalled[lp] = false // one for an earlier lend is stale
		a := l.asks[lp]
		a.sids, a.keys = a.sids[:0], a.keys[:0]
		for _, sid := range l.sids {
			if srv.shardLoop[sid] == lp {
				a.sids = append(a.sids, sid)
				a.keys = append(a.keys, l.keys[sid]...)
			}
		}
	}
	for try := 0; ; try++ {
		if try == maxBorrowTries {
			l.failed(ahead)
			return nil
		}
		l.trying = true
		deadline := nanotime() + int64(borrowWait)
		if l.ownLent() {
			t0 := nanotime()
			l.recallOwn()
			for l.ownLent() {
				// The borrower of our shards returns them with a poke.
				if !l.wait(deadline) {
					l.returnWait.Add(uint64(nanotime() - t0))
					l.trying = false
					l.failed(ahead)
					return nil
				}
			}
			l.returnWait.Add(uint64(nanotime() - t0))
		}
		l.tries++
		l.gen, l.answered, l.refused, l.busy = l.tries, 0, 0, false
		for _, lp := range l.lenders {
			a := l.asks[lp]
			a.gen, l.pending[lp] = l.gen, true
			srv.postLend(a)
		}
		l.asked.Add(1)
		t0 := nanotime()
		deadline = t0 + int64(borrowWait)
		for l.answered < len(l.lenders) {
			if !l.wait(deadline) {
				l.answerWait.Add(uint64(nanotime() - t0))
				l.trying = false
				l.abandon()
				l.failed(ahead)
				return nil
			}
		}
		l.answerWait.Add(uint64(nanotime() - t0))
		l.gen, l.trying = 0, false
		refused, busy := l.refused, l.busy
		if refused == 0 && !l.ownLent() {
			if ahead {
				l.holding, l.holder, l.holdUntil = true, c, nanotime()+int64(holdFor)
				return l
			}
			switch l.ownReady() {
			case ownOK:
				l.backoff = 0
				return l
			case ownBusy:
				l.giveBack()
				l.fellBack()
				return nil
			}
		}
		l.giveBack()
		if busy {
			l.failed(ahead)
			return nil
		}
	}
}

// failed ends a try that did not get the shards: a fallback for a run,
// nothing for a borrowAhead (the script tries again itself).
func (l *loopLend) failed(ahead bool) {
	if !ahead {
		l.fellBack()
	}
}

type ownState uint8

const (
	ownOK   ownState = iota
	ownBusy          // a key locked, a journal recording, tiered storage: a coordinator's job
)

// ownReady checks the run's shards on the borrower's own loop as a
// connection's batch checks a command's (shardBatch.exec), and shows a
// multi-key write's keys to a snapshot's gates.
func (l *loopLend) ownReady() ownState {
	for _, sid := range l.sids {
		s := l.srv.shards[sid]
		if l.srv.shardLoop[sid] != l.loop {
			continue
		}
		if s.Journal.Active() || s.Tier() != nil {
			return ownBusy
		}
		if !s.Idle() && !s.Available(l.keys[sid]) {
			return ownBusy
		}
	}
	n, write := 0, false
	for _, sid := range l.sids {
		n += len(l.keys[sid])
		for _, k := range l.keys[sid] {
			write = write || k.Excl
		}
	}
	if n > 1 && write {
		for _, sid := range l.sids {
			if s := l.srv.shards[sid]; l.srv.shardLoop[sid] == l.loop && !s.Idle() {
				s.Capture(l.keys[sid])
			}
		}
	}
	return ownOK
}

// giveBack returns every lent shard of the run whose request was granted,
// and those kept.
func (l *loopLend) giveBack() {
	for lp, a := range l.asks {
		if a.granted {
			l.giveBackTo(lp)
		}
	}
	l.kept = false
}

// giveBackTo returns what loop lp lent.
func (l *loopLend) giveBackTo(lp int) {
	a := l.asks[lp]
	a.granted, l.recalled[lp] = false, false
	// The lender took this run's ask after the last back it was sent
	// (inbox order), so that back is done with.
	b := l.backs[lp]
	b.sids = append(b.sids[:0], a.sids...)
	l.srv.postLend(b)
}

// anyGranted reports whether the loop has lent shards (held or kept).
func (l *loopLend) anyGranted() bool {
	for _, a := range l.asks {
		if a.granted {
			return true
		}
	}
	return false
}

// release ends a hold: the held shards whose lenders recalled them go
// back, the others are kept (loopLend.kept).
func (l *loopLend) release() {
	l.holding, l.holder = false, nil
	for lp, a := range l.asks {
		if a.granted && l.recalled[lp] {
			l.giveBackTo(lp)
		}
	}
	l.kept = l.anyGranted()
}

// recallOwn asks the borrowers of the run's own lent shards for them.
func (l *loopLend) recallOwn() {
	for _, sid := range l.sids {
		if l.srv.shardLoop[sid] == l.loop {
			l.srv.shards[sid].Recall()
		}
	}
}

// recallShard is shard sid's recall (shard.AttachRecall), on its owner.
func (s *Server) recallShard(sid int) {
	owner := s.shardLoop[sid]
	s.postLend(&lendMsg{srv: s, kind: lendRecall, from: owner, lender: owner, to: s.lentTo[sid]})
}

// keptFits reports whether every lent shard the run needs is kept, not
// recalled, and would be lent to it now (the lender's check).
func (l *loopLend) keptFits() bool {
	for _, sid := range l.sids {
		lp := l.srv.shardLoop[sid]
		if lp == l.loop {
			continue
		}
		a := l.asks[lp]
		if !a.granted || l.recalled[lp] || !slices.Contains(a.sids, sid) || !l.srv.shards[sid].StillLendable(l.keys[sid]) {
			return false
		}
	}
	return true
}

// keep holds the run's shards for c's next commands, or ends the hold
// (release) when c has none parsed or the hold is over.
func (l *loopLend) keep(c *Conn) {
	now := nanotime()
	if !l.holding {
		l.holdUntil = now + int64(holdFor)
	}
	if c.next < len(c.cmds) && now < l.holdUntil && !c.closing {
		l.holding, l.holder = true, c
		return
	}
	l.release()
}

// holds reports whether sid, another loop's shard, is held by this loop.
func (l *loopLend) holds(sid int) bool {
	if !l.holding {
		return false
	}
	a := l.asks[l.srv.shardLoop[sid]]
	return a.granted && slices.Contains(a.sids, sid)
}

// heldFits reports whether every lent shard the run needs is held, and
// would be lent to it now (the lender's check, done by the holder).
func (l *loopLend) heldFits() bool {
	for _, sid := range l.sids {
		if l.srv.shardLoop[sid] == l.loop {
			continue
		}
		if !l.holds(sid) || !l.srv.shards[sid].StillLendable(l.keys[sid]) {
			return false
		}
	}
	return true
}

// releaseHeld ends the hold of c's loop for c (see loopLend.holding):
// serve calls it before it returns or parses more.
func (c *Conn) releaseHeld() {
	if l := c.heldLend(); l != nil {
		l.release()
	}
}

// heldLend is the loop's lending state when c holds shards, or nil.
func (c *Conn) heldLend() *loopLend {
	if c.loop >= 0 && c.srv.lends != nil {
		if l := c.srv.lends[c.loop]; l.holder == c {
			return l
		}
	}
	return nil
}

// runLent runs the script of p with every shard of the run held: inside
// an Exec of each (its clock set, its blocked clients served after), as a
// coordinator would run it (counted, timed, a panic answered), with the
// command's reply written for the connection's serve to send.
func (c *Conn) runLent(p *pending) {
	if c.runLentOn(c.srv.lends[c.loop], p) {
		// Over the inline budget before it wrote: it runs again on a
		// coordinator, holding only its keys (cmdEvalShard's retry).
		co := c.coord(p.cmd)
		co.reset(c, p.cmd, p.db, p.args, &p.reply)
		co.start(c)
		return
	}
	c.complete(true)
}

// runLentOn is runLent on loop l's goroutine (the connection's own, or
// that of a forwarded run), without completing the command: true when the
// script was demoted (it must run again on a coordinator; it wrote no
// reply).
func (c *Conn) runLentOn(l *loopLend, p *pending) (demoted bool) {
	x := &l.co
	x.reset(c, p.cmd, p.db, p.args, &p.reply)
	x.InTx, x.Local, x.owner, x.canRetry = true, c.srv.shards[l.sids[0]], l.owner, true
	x.bind()
	n := &l.nest
	n.i = 0
	n.run()
	demoted = x.demoted
	*x = Coord{step: x.step, owned: x.owned}
	return demoted
}

// borrowNest enters the Exec of each of the run's shards in turn (its own
// ones' Exec, the lent ones' ExecBorrowed) and runs the script innermost.
// None of its own shards may be lent out when it starts (runBorrowed
// checks ownLent on every path): Exec would defer the rest of the nest.
type borrowNest struct {
	l *loopLend
	i int
}

func (n *borrowNest) Run(*shard.Shard) { n.run() }

func (n *borrowNest) run() {
	l := n.l
	if n.i < len(l.sids) {
		sid := l.sids[n.i]
		n.i++
		if s := l.srv.shards[sid]; l.srv.shardLoop[sid] == l.loop {
			s.Exec(n)
		} else {
			s.ExecBorrowed(n)
		}
		return
	}
	x := &l.co
	start := nanotime()
	x.runGuarded()
	if x.demoted {
		return // counted by the coordinator that runs it again
	}
	x.Cmd.Calls.Add(1)
	if end := x.Srv.slowCheck(x.Conn, x.Args, start); end != 0 {
		x.Cmd.Nsec.Add(uint64(end - start))
		x.Srv.trackLatency(x.Srv.loopRecorder(-1), x.Cmd, x.Args, end-start)
	}
}

// borrowStats sums every loop's counters of borrowed runs (INFO stats).
func (s *Server) borrowStats() (st borrowStats) {
	for _, l := range s.lends {
		st.runs += l.runs.Load()
		st.held += l.held.Load()
		st.fallbacks += l.fallbacks.Load()
		st.forwarded += l.forwarded.Load()
		st.asks += l.asked.Load()
		st.answerWait += l.answerWait.Load()
		st.returnWait += l.returnWait.Load()
	}
	return st
}

// borrowStats: the borrowed runs, those of them over shards held from a
// run before, the fallbacks, the tries that asked, and the waits.
type borrowStats struct {
	runs, held, fallbacks, asks, forwarded uint64
	answerWait, returnWait                 uint64 // nanoseconds
}
