package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Wait is Runner.Wait: the client waits for b to be served, for the
// deadline, for CLIENT UNBLOCK, or for the connection to close. The first
// wait counts the client in blocked_clients until its command ends.
func (x *Coord) Wait(b *shard.Blocker, deadline <-chan time.Time) command.WaitEnd {
	if !x.blocked {
		x.blocked = true
		x.Srv.blockedClients.Add(1)
	}
	x.Conn.startWaiting()
	defer x.Conn.waiting.Store(false)
	select {
	case asError := <-x.Conn.unblock: // CLIENT UNBLOCK
		if asError {
			return command.UnblockedError
		}
		return command.Unblocked
	case <-b.Done:
		return command.Served
	case <-deadline:
		return command.TimedOut
	case <-x.Conn.gone:
		return command.Gone
	}
}

// startWaiting marks c as waiting in a blocking command, after dropping
// an UNBLOCK meant for an earlier one.
func (c *Conn) startWaiting() {
	select {
	case <-c.unblock:
	default:
	}
	c.waiting.Store(true)
}

// clientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when client id was
// waiting in a blocking command, which then answers as if it timed out
// (or with an UNBLOCKED error), 0 otherwise.
func clientUnblock(c *Conn, a [][]byte, w *resp.Writer) {
	id, err := strconv.ParseInt(string(a[2]), 10, 64)
	if err != nil {
		w.Error(command.ErrNotInt)
		return
	}
	asError := false
	if len(a) == 4 {
		switch strings.ToLower(string(a[3])) {
		case "timeout":
		case "error":
			asError = true
		default:
			w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	} else if len(a) > 4 {
		command.SubcommandSyntaxErr(w, a, "client")
		return
	}
	t := c.srv.connByID(id)
	if t == nil || !t.waiting.Load() {
		w.Int(0)
		return
	}
	select {
	case t.unblock <- asError:
	default: // one is pending already
	}
	w.Int(1)
}

// forEachKeyShard registers, within the transaction, fn for each distinct
// key on its shard.
func (x *Coord) forEachKeyShard(t *tx.Tx, pos []int, fn func(s *shard.Shard, key string)) {
	seen := map[string]bool{}
	for _, i := range pos {
		k := string(x.Args[i])
		if seen[k] {
			continue
		}
		seen[k] = true
		t.Run(x.ShardOf(x.Args[i]), func(s *shard.Shard) { fn(s, k) })
	}
}

// unblock removes b from every key's queue; the shards do it when they get
// to it, the client does not wait.
func (x *Coord) unblock(b *shard.Blocker, pos []int) {
	for _, i := range pos {
		k := string(x.Args[i])
		x.Srv.shards[x.ShardOf(x.Args[i])].Send(shard.Func(func(s *shard.Shard) { s.Unblock(x.DB, k, b) }))
	}
}
