package server

// The append-only file's wiring (package aof): what it needs of the
// server, BGREWRITEAOF, and a finished batch's replies held until an
// fsync covers its writes (appendfsync always: group commit).

import (
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/shard"
)

type aofHost Server

func (h *aofHost) WriteBase(path string, at func(*shard.Shard)) error {
	return h.persist.WriteRDBAt(path, at)
}

func (h *aofHost) LoadBase(path string) error { return h.persist.LoadBase(path) }

func (h *aofHost) NewApplier() replica.Applier { return replica.NewShardApplier((*replicaHost)(h)) }

func cmdBgrewriteaof(x *Coord) {
	if reply, err := x.Srv.aof.StartRewrite(); err != nil {
		x.W.Error(err.Error())
	} else {
		x.W.SimpleString(reply)
	}
}

// holdForAOF reports whether the finished batch's replies wait for the
// AOF's fsync (then the connection is completed when it is done).
func (c *Conn) holdForAOF() bool {
	if c.aofHeld {
		c.aofHeld = false
		return false
	}
	a := c.srv.aof
	if !a.Always() || !c.batchWrites() {
		return false
	}
	c.inflight.Store(1)
	c.holdReplies, c.aofHeld = true, true
	if !a.WhenSynced(a.Marks(), func() { c.complete(false) }) {
		c.inflight.Store(0)
		c.aofHeld = false
	}
	return c.aofHeld
}

// batchWrites reports whether a command of the batch may have written.
func (c *Conn) batchWrites() bool {
	for i := range c.cmds {
		if p := c.cmds[i].cmd; p != nil && (p.Flags&command.FlagWrite != 0 || p.IsScript() || p.Name == "exec") {
			return true
		}
	}
	return false
}
