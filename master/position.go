package master

import (
	"time"

	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
)

// PositionCut takes this master's replication position at a snapshot's
// cut (package replpos): in its dfly form, its id and every shard's
// journal LSN, when every journal records (a journal that stopped
// recording no longer tells the data: its LSN stays while writes go on);
// in the Redis protocol's, its id and the stream's offset at the cut,
// when the feed follows every shard: a cut mark in each shard's queue,
// the feed handing back the offset once it emitted everything before
// them all and nothing after.
func (m *Master) PositionCut() replpos.Cut {
	n := len(m.shards)
	return &positionCut{m: m, lsns: make([]uint64, n), recording: make([]bool, n), fed: make([]bool, n),
		mark: &cutMark{done: make(chan int64, 1)}}
}

type positionCut struct {
	m         *Master
	id        string
	lsns      []uint64
	recording []bool
	fed       []bool
	mark      *cutMark
}

// Take runs on sh's goroutine inside the step that holds every shard.
func (c *positionCut) Take(sh *shard.Shard) {
	if sh.ID == 0 {
		c.id = c.m.ID()
	}
	c.lsns[sh.ID] = sh.Journal.LSN()
	c.recording[sh.ID] = sh.Journal.Active()
	if c.m.subIDs[sh.ID] != 0 { // the feed's subscriptions change only in such steps
		c.fed[sh.ID] = true
		c.m.push(sh.ID, feedItem{cut: c.mark})
	}
}

// End waits (at most a second: the feed may stop meanwhile) for the
// stream's offset at the cut.
func (c *positionCut) End() replpos.Position {
	pos := replpos.Position{FlowID: c.id, LSNs: c.lsns}
	for sid := range c.lsns {
		if !c.recording[sid] {
			pos.FlowID, pos.LSNs = "", nil
		}
		if !c.fed[sid] {
			return pos
		}
	}
	select { // the feed drains now, not after flowFlushEvery
	case c.m.urgent <- struct{}{}:
	default:
	}
	select {
	case pos.Offset = <-c.mark.done:
		pos.ReplID = c.id
	case <-time.After(time.Second):
	}
	return pos
}

// FlowHistory is pos's place in a dfly master's history, nil for none.
func FlowHistory(pos *replpos.Position) *History {
	if pos.FlowID == "" {
		return nil
	}
	return &History{ReplID: pos.FlowID, LSNs: pos.LSNs}
}
