package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
)

var errStreamOrder = errors.New("rdb: stream entry IDs must increase")

// BeginStream starts a stream of n ≥ 0 live entries, written as Redis 7.0
// does (RDB_TYPE_STREAM_LISTPACKS_2) with nodes of StreamNodeEntries. Then
// come the n StreamEntry calls, StreamMeta, and per group StreamGroup,
// its StreamPending entries, StreamConsumers, and per consumer
// StreamConsumer and its StreamConsumerPending IDs; then End.
func (e *Encoder) BeginStream(key []byte, n int, m Meta) {
	if n < 0 {
		e.fail(errEncoderCount)
		return
	}
	if !e.keyHeader(typeStreamListpacks2, key, m) {
		return
	}
	e.state, e.want, e.have = stStreamEntries, n, 0
	e.nodeHave = 0
	e.appendLen(uint64((n + StreamNodeEntries - 1) / StreamNodeEntries))
}

// StreamEntry appends the next entry; fieldsValues alternates fields and
// values.
func (e *Encoder) StreamEntry(id StreamID, fieldsValues [][]byte) {
	if !e.element(stStreamEntries) {
		return
	}
	if len(fieldsValues)%2 != 0 {
		e.fail(errors.New("rdb: stream entry needs field/value pairs"))
		return
	}
	if e.have > 1 && !e.lastID.Less(id) {
		e.fail(errStreamOrder)
		return
	}
	e.lastID = id
	nf := len(fieldsValues) / 2
	if e.nodeHave == 0 {
		e.master = id
		e.nodeCount = min(StreamNodeEntries, e.want-e.have+1)
		e.lp.reset()
		e.lp.appendInt(int64(e.nodeCount)) // live entries
		e.lp.appendInt(0)                  // deleted entries
		e.lp.appendInt(int64(nf))
		e.masterArena, e.masterFields = e.masterArena[:0], e.masterFields[:0]
		for i := 0; i < len(fieldsValues); i += 2 {
			e.lp.appendString(fieldsValues[i])
			e.masterArena = append(e.masterArena, fieldsValues[i]...)
		}
		p := 0
		for i := 0; i < len(fieldsValues); i += 2 {
			l := len(fieldsValues[i])
			e.masterFields = append(e.masterFields, e.masterArena[p:p+l])
			p += l
		}
		e.lp.appendInt(0) // master entry terminator
	}
	same := nf == len(e.masterFields)
	for i := 0; same && i < nf; i++ {
		same = bytes.Equal(fieldsValues[2*i], e.masterFields[i])
	}
	flags := int64(0)
	if same {
		flags = streamSameFields
	}
	e.lp.appendInt(flags)
	e.lp.appendInt(int64(id.Ms - e.master.Ms))
	e.lp.appendInt(int64(id.Seq - e.master.Seq))
	if !same {
		e.lp.appendInt(int64(nf))
	}
	for i := 0; i < len(fieldsValues); i += 2 {
		if !same {
			e.lp.appendString(fieldsValues[i])
		}
		e.lp.appendString(fieldsValues[i+1])
	}
	if same {
		e.lp.appendInt(int64(nf + 3))
	} else {
		e.lp.appendInt(int64(2*nf + 4))
	}
	e.nodeHave++
	if e.nodeHave == e.nodeCount {
		blob, err := e.lp.finish()
		if err != nil {
			e.fail(err)
			return
		}
		var k [16]byte
		binary.BigEndian.PutUint64(k[:], e.master.Ms)
		binary.BigEndian.PutUint64(k[8:], e.master.Seq)
		e.appendBlob(k[:])
		e.appendBlob(blob)
		e.nodeHave = 0
		e.maybeFlush()
	}
}

// StreamMeta writes the stream's state after its entries; m.Groups
// consumer groups must follow.
func (e *Encoder) StreamMeta(m StreamMeta) {
	if e.err != nil {
		return
	}
	if e.state != stStreamEntries || e.have != e.want {
		e.fail(errEncoderStreamMeta)
		return
	}
	if m.Length != uint64(e.want) {
		e.fail(errors.New("rdb: stream length differs from its entry count"))
		return
	}
	e.appendLen(m.Length)
	e.appendID(m.LastID)
	e.appendID(m.FirstID)
	e.appendID(m.MaxDeletedID)
	e.appendLen(m.EntriesAdded)
	e.appendLen(m.Groups)
	e.groupsLeft = m.Groups
	e.state = stStreamGroups
}

func (e *Encoder) appendID(id StreamID) {
	e.appendLen(id.Ms)
	e.appendLen(id.Seq)
}

func (e *Encoder) appendRawID(id StreamID) {
	e.buf = binary.BigEndian.AppendUint64(e.buf, id.Ms)
	e.buf = binary.BigEndian.AppendUint64(e.buf, id.Seq)
}

// StreamGroup starts a consumer group; g.Pending StreamPending calls and
// then StreamConsumers follow.
func (e *Encoder) StreamGroup(g StreamGroup) {
	if e.err != nil {
		return
	}
	if e.state != stStreamGroups || e.groupsLeft == 0 {
		e.fail(errEncoderState)
		return
	}
	e.groupsLeft--
	e.appendString(g.Name)
	e.appendID(g.LastID)
	e.appendLen(uint64(g.EntriesRead))
	e.appendLen(g.Pending)
	e.pendingLeft = g.Pending
	e.state = stStreamPending
	if g.Pending == 0 {
		e.state = stStreamConsumer
		e.consumersDue = true
	}
}

// StreamPending appends an entry of the current group's PEL.
func (e *Encoder) StreamPending(p StreamPending) {
	if e.err != nil {
		return
	}
	if e.state != stStreamPending || e.pendingLeft == 0 {
		e.fail(errEncoderState)
		return
	}
	e.appendRawID(p.ID)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(p.DeliveryTime))
	e.appendLen(p.DeliveryCount)
	if e.pendingLeft--; e.pendingLeft == 0 {
		e.state = stStreamConsumer
		e.consumersDue = true
	}
	e.maybeFlush()
}

// StreamConsumers announces the current group's n consumers.
func (e *Encoder) StreamConsumers(n uint64) {
	if e.err != nil {
		return
	}
	if e.state != stStreamConsumer || !e.consumersDue {
		e.fail(errEncoderState)
		return
	}
	e.consumersDue = false
	e.appendLen(n)
	e.consumerLeft = n
	if n == 0 {
		e.state = stStreamGroups
	}
}

// StreamConsumer appends a consumer of the current group; c.Pending
// StreamConsumerPending IDs follow. RDB 10 has no place for ActiveTime.
func (e *Encoder) StreamConsumer(c StreamConsumer) {
	if e.err != nil {
		return
	}
	if e.state != stStreamConsumer || e.consumersDue || e.consumerLeft == 0 {
		e.fail(errEncoderState)
		return
	}
	e.consumerLeft--
	e.appendString(c.Name)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(c.SeenTime))
	e.appendLen(c.Pending)
	e.pendingLeft = c.Pending
	switch {
	case c.Pending > 0:
		e.state = stStreamCPending
	case e.consumerLeft == 0:
		e.state = stStreamGroups
	}
}

// StreamConsumerPending appends an ID of the current consumer's PEL.
func (e *Encoder) StreamConsumerPending(id StreamID) {
	if e.err != nil {
		return
	}
	if e.state != stStreamCPending || e.pendingLeft == 0 {
		e.fail(errEncoderState)
		return
	}
	e.appendRawID(id)
	if e.pendingLeft--; e.pendingLeft == 0 {
		if e.consumerLeft == 0 {
			e.state = stStreamGroups
		} else {
			e.state = stStreamConsumer
		}
	}
	e.maybeFlush()
}
