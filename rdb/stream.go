package rdb

import (
	"encoding/binary"
	"strconv"
)

// Stream node listpack (Redis t_stream.c): a master entry
//
//	count | deleted | num-fields | field_1 ... field_N | 0
//
// then entries, IDs relative to the node's master ID (the rax key):
//
//	flags | ms-diff | seq-diff | num-fields | f1 | v1 ... | lp-count
//	flags | ms-diff | seq-diff | v1 ... vN | lp-count      (SAMEFIELDS)

// stream reads a stream value of type t (15, 19 or 21).
func (d *Decoder) stream(t byte) error {
	d.cur.t = TypeStream
	d.cur.begun = true
	if err := d.h.Begin(d.cur.key, TypeStream, 0, d.cur.meta); err != nil {
		return err
	}
	nodes, err := d.length()
	if err != nil {
		return err
	}
	var st streamState
	for range nodes {
		off := d.r.offset()
		mk, err := d.readString(&d.field)
		if err != nil {
			return err
		}
		if len(mk) != 16 {
			return d.corrupt(off, "stream node key is %d bytes, not 16", len(mk))
		}
		master := StreamID{binary.BigEndian.Uint64(mk), binary.BigEndian.Uint64(mk[8:])}
		blob, dataOff, lzf, err := d.readStringAt(&d.blob)
		if err != nil {
			return err
		}
		if err := d.streamNode(master, blob, &st); err != nil {
			return d.blobError(err, dataOff, lzf)
		}
	}
	var m StreamMeta
	off := d.r.offset()
	if m.Length, err = d.length(); err != nil {
		return err
	}
	if m.Length != st.live {
		return d.corrupt(off, "stream length %d but its nodes hold %d entries", m.Length, st.live)
	}
	if m.LastID, err = d.streamID(); err != nil {
		return err
	}
	if st.live > 0 && m.LastID.Less(st.last) {
		return d.corrupt(off, "stream last ID %v is before its last entry %v", m.LastID, st.last)
	}
	if t >= typeStreamListpacks2 {
		if m.FirstID, err = d.streamID(); err != nil {
			return err
		}
		if m.MaxDeletedID, err = d.streamID(); err != nil {
			return err
		}
		if m.EntriesAdded, err = d.length(); err != nil {
			return err
		}
	} else {
		// As Redis 7 does when loading an older stream.
		m.FirstID, m.EntriesAdded = st.first, m.Length
	}
	if m.Groups, err = d.length(); err != nil {
		return err
	}
	if err := d.h.StreamMeta(m); err != nil {
		return err
	}
	for range m.Groups {
		var g StreamGroup
		if g.Name, err = d.readString(&d.field); err != nil {
			return err
		}
		if g.LastID, err = d.streamID(); err != nil {
			return err
		}
		g.EntriesRead = -1
		if t >= typeStreamListpacks2 {
			n, err := d.length()
			if err != nil {
				return err
			}
			g.EntriesRead = int64(n)
		}
		if g.Pending, err = d.length(); err != nil {
			return err
		}
		if err := d.h.StreamGroup(g); err != nil {
			return err
		}
		for range g.Pending {
			var p StreamPending
			if p.ID, err = d.rawStreamID(); err != nil {
				return err
			}
			u, err := d.r.uint64LE()
			if err != nil {
				return err
			}
			p.DeliveryTime = int64(u)
			if p.DeliveryCount, err = d.length(); err != nil {
				return err
			}
			if err := d.h.StreamPending(p); err != nil {
				return err
			}
		}
		consumers, err := d.length()
		if err != nil {
			return err
		}
		var owned uint64
		for range consumers {
			var c StreamConsumer
			if c.Name, err = d.readString(&d.field); err != nil {
				return err
			}
			u, err := d.r.uint64LE()
			if err != nil {
				return err
			}
			c.SeenTime, c.ActiveTime = int64(u), int64(u)
			if t >= typeStreamListpacks3 {
				if u, err = d.r.uint64LE(); err != nil {
					return err
				}
				c.ActiveTime = int64(u)
			}
			off := d.r.offset()
			if c.Pending, err = d.length(); err != nil {
				return err
			}
			if owned += c.Pending; owned > g.Pending || owned < c.Pending {
				return d.corrupt(off, "stream consumers own more pending entries than their group's PEL holds")
			}
			if err := d.h.StreamConsumer(c); err != nil {
				return err
			}
			for range c.Pending {
				id, err := d.rawStreamID()
				if err != nil {
					return err
				}
				if err := d.h.StreamConsumerPending(id); err != nil {
					return err
				}
			}
		}
		if owned != g.Pending {
			return d.corrupt(d.r.offset(), "stream group PEL has entries no consumer owns")
		}
	}
	return d.h.End()
}

func (d *Decoder) streamID() (StreamID, error) {
	ms, err := d.length()
	if err != nil {
		return StreamID{}, err
	}
	seq, err := d.length()
	return StreamID{ms, seq}, err
}

// rawStreamID reads an ID as PELs store it: 16 bytes big-endian.
func (d *Decoder) rawStreamID() (StreamID, error) {
	b, err := d.r.next(16)
	if err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}, nil
}

type streamState struct {
	live        uint64
	first, last StreamID
}

// streamNode reports the live entries of one node listpack.
func (d *Decoder) streamNode(master StreamID, lp []byte, st *streamState) error {
	declared, err := lpCheckHeader(lp)
	if err != nil {
		return err
	}
	p, n := lpHeaderSize, 0
	if lp[p] == lpEOF {
		return blobErr(p, "empty listpack inside stream")
	}
	next := func() (entry, int, error) {
		if lp[p] == lpEOF {
			return entry{}, p, blobErr(p, "stream listpack ends inside an entry")
		}
		at := p
		e, q, err := lpEntryAt(lp, p)
		if err != nil {
			return e, at, err
		}
		p = q
		n++
		return e, at, nil
	}
	nextInt := func(what string) (int64, error) {
		e, at, err := next()
		if err != nil {
			return 0, err
		}
		if !e.isInt {
			return 0, blobErr(at, "stream listpack: "+what+" is not an integer")
		}
		return e.num, nil
	}
	count, err := nextInt("master entry count")
	if err != nil {
		return err
	}
	deleted, err := nextInt("master deleted count")
	if err != nil {
		return err
	}
	nmaster, err := nextInt("master field count")
	if err != nil {
		return err
	}
	if nmaster < 0 || nmaster > int64(len(lp)) {
		return blobErr(p, "stream listpack: bad master field count")
	}
	d.arena, d.spans = d.arena[:0], d.spans[:0]
	for range nmaster {
		if err := d.spanNext(lp, next); err != nil {
			return err
		}
	}
	d.master = d.materialize(lp, d.master[:0])
	masterArena := len(d.arena)
	if z, err := nextInt("master entry terminator"); err != nil {
		return err
	} else if z != 0 {
		return blobErr(p, "stream listpack: master entry not terminated by 0")
	}
	var live, dead int64
	for lp[p] != lpEOF {
		flags, err := nextInt("entry flags")
		if err != nil {
			return err
		}
		msd, err := nextInt("entry ms-diff")
		if err != nil {
			return err
		}
		seqd, err := nextInt("entry seq-diff")
		if err != nil {
			return err
		}
		id := StreamID{master.Ms + uint64(msd), master.Seq + uint64(seqd)}
		nf := nmaster
		same := flags&streamSameFields != 0
		if !same {
			if nf, err = nextInt("entry field count"); err != nil {
				return err
			}
			if nf < 0 || nf > int64(len(lp)) {
				return blobErr(p, "stream listpack: bad entry field count")
			}
		}
		d.arena, d.spans = d.arena[:masterArena], d.spans[:0]
		for i := range nf {
			if same {
				d.spans = append(d.spans, span{s: -1, e: int(i)})
			} else if err := d.spanNext(lp, next); err != nil {
				return err
			}
			if err := d.spanNext(lp, next); err != nil {
				return err
			}
		}
		at := p
		lpCount, err := nextInt("entry lp-count")
		if err != nil {
			return err
		}
		want := nf + 3
		if !same {
			want = 2*nf + 4
		}
		if lpCount != want {
			return blobErr(at, "stream listpack: entry lp-count does not match its fields")
		}
		if flags&streamDeleted != 0 {
			dead++
			continue
		}
		live++
		if st.live > 0 && !st.last.Less(id) {
			return blobErr(at, "stream entries out of order")
		}
		if st.live == 0 {
			st.first = id
		}
		st.live++
		st.last = id
		d.fields = d.materialize(lp, d.fields[:0])
		if err := d.h.StreamEntry(id, d.fields); err != nil {
			return err
		}
	}
	if p != len(lp)-1 {
		return blobErr(p, "listpack terminator before the end of its blob")
	}
	if declared != lpUnknownSize && declared != n {
		return blobErr(4, "listpack header count does not match its entries")
	}
	if live != count || dead != deleted {
		return blobErr(lpHeaderSize, "stream node counts do not match its entries")
	}
	return nil
}

// spanNext records the next listpack entry as a span of lp, or of the
// arena for integers.
func (d *Decoder) spanNext(lp []byte, next func() (entry, int, error)) error {
	e, _, err := next()
	if err != nil {
		return err
	}
	if e.isInt {
		s := len(d.arena)
		d.arena = strconv.AppendInt(d.arena, e.num, 10)
		d.spans = append(d.spans, span{s: s, e: len(d.arena), arena: true})
		return nil
	}
	d.spans = append(d.spans, span{s: e.off, e: e.off + len(e.str)})
	return nil
}

// materialize turns the recorded spans into slices (SAMEFIELDS spans
// s == -1 name master field e).
func (d *Decoder) materialize(lp []byte, dst [][]byte) [][]byte {
	for _, sp := range d.spans {
		switch {
		case sp.s < 0:
			dst = append(dst, d.master[sp.e])
		case sp.arena:
			dst = append(dst, d.arena[sp.s:sp.e])
		default:
			dst = append(dst, lp[sp.s:sp.e])
		}
	}
	return dst
}
