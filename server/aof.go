package server

// The append-only file's wiring (package aof): BGREWRITEAOF, and a
// finished batch's replies held until an fsync covers its writes
// (appendfsync always: group commit).

func cmdBgrewriteaof(x *Coord) {
	if reply, err := x.Srv.aof.StartRewrite(); err != nil {
		x.W.Error(err.Error())
	} else {
		x.W.SimpleString(reply)
	}
}

// holdForAOF reports whether the finished batch's replies wait for the
// AOF's fsync; the connection is completed when it is done.
func (c *Conn) holdForAOF() bool {
	if c.aofHeld {
		c.aofHeld = false
		return false
	}
	a := c.srv.aof
	if !a.Always() {
		return false
	}
	for i := range c.cmds {
		if p := c.cmds[i].cmd; p != nil && p.MayWrite() {
			c.inflight.Store(1)
			c.holdReplies, c.aofHeld = true, a.WhenSynced(a.Marks(), func() { c.complete(false) })
			if !c.aofHeld {
				c.inflight.Store(0)
			}
			return c.aofHeld
		}
	}
	return false
}
