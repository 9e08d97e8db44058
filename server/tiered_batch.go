package server

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/offload"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tiered"
)

// Tiered storage in a connection's shard batch: commands that read no
// string bytes run on offloaded values as they are; the values the others
// read are loaded ahead without blocking the shard (tierBefore), and read
// back into memory or served from the read (tierAfter). See tiered.go.

// tierBatch is a shard batch's tiered state (in shardBatch).
type tierBatch struct {
	waiting int           // reads in flight
	segs    []tierSegRead // segments read and retained for the resume
	owned   [][]byte      // bytes read for this batch alone (recycled)
	mine    []tierMine    // bytes of private reads (takeMine)
	temps   []tierTemp    // values a read-only command runs on in place
	noLoad  bool          // the command runs with Find's loading off
	pos     []int
	locks   []shard.KeyLock
	keys    []tierKeyRef
}

// tierSegRead is a read a parked batch issued.
type tierSegRead struct {
	seg     tiered.Segment
	private bool
}

// tierMine is the bytes of a private read of seg at off.
type tierMine struct {
	off  int64
	data []byte
}

// tierTemp: a value made in-memory for one read-only command, offloaded
// again after it.
type tierTemp struct {
	db   *shard.DB
	key  []byte
	seg  tiered.Segment
	data []byte
}

// noLoadCommands read no string bytes: they run on offloaded values as
// they are (the DB frees the space of those they replace or delete).
var noLoadCommands = map[string]bool{
	"set": true, "setnx": true, "setex": true, "psetex": true, "mset": true, "msetnx": true,
	"del": true, "unlink": true, "exists": true, "touch": true, "type": true, "strlen": true,
	"ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true, "persist": true,
	"expire": true, "pexpire": true, "expireat": true, "pexpireat": true,
	"memory": true, // USAGE counts an offloaded value's RAM, not its bytes
}

func needsBytes(p *pending) bool {
	return p.multi != nil || cmdNeedsBytes(p.cmd, p.args)
}

// cmdNeedsBytes: cmd with args reads the string bytes of its keys.
func cmdNeedsBytes(cmd *command.Command, args [][]byte) bool {
	if !noLoadCommands[cmd.Name] {
		return true
	}
	if cmd.Name == "set" && len(args) > 3 {
		for _, a := range args[3:] {
			if o := strings.ToUpper(string(a)); o == "GET" || strings.HasPrefix(o, "IF") { // GET, IFEQ ... (family/cas.go)
				return true
			}
		}
	}
	return false
}

// runQueued runs a command of EXEC or of a script on its shard. With
// tiering, one that reads no string bytes runs with Find's loading off,
// as in a batch (tierBefore); the values the others read were loaded
// ahead (tierBefore for the whole EXEC or script, or tierPreload).
func runQueued(x *command.Exec, cmd *command.Command) {
	set := tierNoLoad(x.S, cmd, x.Args)
	runExec(x, cmd)
	if set {
		x.S.SetNoLoad(false)
	}
}

// tierNoLoad turns Find's loading off for a command that reads no string
// bytes, when tiering is on and it is not off already; true: the caller
// turns it on again after the command.
func tierNoLoad(s *shard.Shard, cmd *command.Command, args [][]byte) bool {
	if s.Tier() == nil || s.NoLoad() || cmdNeedsBytes(cmd, args) {
		return false
	}
	s.SetNoLoad(true)
	return true
}

// tierKeyRef is a key of a command with its DB.
type tierKeyRef struct {
	db  *shard.DB
	key []byte
}

// tierKeys lists p's keys (into the batch's scratch, no allocation).
func (b *shardBatch) tierKeys(s *shard.Shard, p *pending) []tierKeyRef {
	keys := b.tier.keys[:0]
	if p.multi != nil {
		b.tier.locks = execLockKeys(p.multi, p.watch, b.c.srv.cfg.Databases, b.tier.locks[:0])
		for _, k := range b.tier.locks {
			keys = append(keys, tierKeyRef{s.DBs[k.DB], unsafe.Slice(unsafe.StringData(k.Key), len(k.Key))})
		}
	} else {
		b.tier.pos = p.cmd.Keys(b.tier.pos[:0], p.args)
		for _, i := range b.tier.pos {
			keys = append(keys, tierKeyRef{s.DBs[p.db], p.args[i]})
		}
	}
	b.tier.keys = keys
	return keys
}

// tierBefore runs before each command of a batch when tiering is on. It
// makes the offloaded values the command reads available in memory, or
// issues their reads and parks the batch (parked=true). failed: a read
// failed, the command's error reply is written and it must not run.
func (b *shardBatch) tierBefore(s *shard.Shard, p *pending) (parked, failed bool) {
	t := s.Tier().(*offload.Shard)
	if t.Entries() == 0 {
		return false, false
	}
	ext := false
	keys := b.tierKeys(s, p)
	for _, k := range keys {
		if v := k.db.Peek(k.key); v != nil && v.IsExternal() {
			ext = true
			break
		}
	}
	if !ext {
		return false, false
	}
	if !needsBytes(p) {
		s.SetNoLoad(true)
		b.tier.noLoad = true
		return false, false
	}
	readOnly := readsOnly(p)
	missing := false
	for _, k := range keys {
		v := k.db.Peek(k.key)
		if v == nil || !v.IsExternal() {
			continue
		}
		seg := offload.SegmentOf(v)
		if !readOnly && seg.Len > offload.BigValue {
			// Loaded without a copy: only bytes of a private read of this
			// batch (mine) may become the value.
			if data := b.takeMine(seg); data != nil {
				t.Loaded(v, data) // freed after: the batch retains seg until it is done
				continue
			}
			if t.Failed(seg) {
				failed = true
			}
			missing = true
			continue
		}
		data, ok := t.Ready(seg)
		if !ok {
			if t.Failed(seg) {
				failed = true
			}
			missing = true
			continue
		}
		if readOnly {
			b.tier.temps = append(b.tier.temps, tierTemp{db: k.db, key: k.key, seg: seg, data: data})
			v.SetStr(data) // not stored: made external again after the command
			t.Served()
			continue
		}
		t.Loaded(v, bytes.Clone(data)) // freed after: the batch retains seg until it is done
	}
	if failed {
		b.tierAfter(s) // undo the in-place values of this command
		p.reply.Error(command.ErrTierRead)
		return false, true
	}
	if !missing {
		return false, false
	}
	b.tierAfter(s)
	b.dropMine() // read for the previous resume; its segments are released
	// Issue the reads of this command and of the next ones in the batch.
	for i := b.pos; i < len(b.idx) && i < b.pos+tierPrefetchCmd; i++ {
		q := &b.c.cmds[b.idx[i]]
		if i > b.pos && !needsBytes(q) {
			continue
		}
		ro := readsOnly(q)
		for _, k := range b.tierKeys(s, q) {
			if v := k.db.Peek(k.key); v != nil && v.IsExternal() {
				seg := offload.SegmentOf(v)
				b.tierRead(s, t, seg, !ro && seg.Len > offload.BigValue)
			}
		}
	}
	b.inline = false // resumed later from another message
	return true, false
}

// readsOnly: p is a read-only command (not EXEC), which runs on the bytes
// read in place. PFCOUNT is flagged read-only but writes its cache into
// the value's bytes (after DB.Mutate): it loads the value instead, so the
// bytes of a shared read are never modified (see offload.Loader).
func readsOnly(p *pending) bool {
	return p.multi == nil && p.cmd.Flags&command.FlagReadonly != 0 && p.cmd.Name != "pfcount"
}

// tierRead reads seg for the parked batch, once per segment and kind:
// private (a big value a command loads into memory, which takes the bytes
// over: tiered.Store.ReadPrivate) or shared with other readers.
func (b *shardBatch) tierRead(s *shard.Shard, t *offload.Shard, seg tiered.Segment, private bool) {
	for _, g := range b.tier.segs {
		if g.seg.Off == seg.Off && g.private == private {
			return
		}
	}
	b.tier.segs = append(b.tier.segs, tierSegRead{seg, private})
	b.tier.waiting++
	t.Store().Retain(seg)
	done := func(data []byte, shared bool, err error) {
		if err != nil {
			t.ReadFailed(seg, err)
		} else if private {
			b.tier.mine = append(b.tier.mine, tierMine{seg.Off, data})
		} else {
			t.SetReady(seg, data)
			if !shared {
				b.tier.owned = append(b.tier.owned, data)
			}
		}
		b.tier.waiting--
		if b.tier.waiting > 0 {
			return
		}
		segs, owned := b.tier.segs, b.tier.owned
		b.tier.segs, b.tier.owned = nil, nil
		// The batch may complete inside exec and be reused by its
		// connection at once: only locals are used after it.
		b.exec(s, false)
		for _, g := range segs {
			t.Forget(g.seg) // a batch that still waits for g reads it again
		}
		// Nothing holds the bytes only this batch was given: temporary
		// values were made external again, loaded ones and replies copied.
		for _, data := range owned {
			t.Store().Recycle(data)
		}
	}
	if private {
		t.Store().ReadPrivate(seg, func(data []byte, err error) { done(data, false, err) })
	} else {
		t.Store().ReadOwned(seg, done)
	}
}

// takeMine takes over the bytes of seg that a private read of this batch
// brought (nil if none). They are valid while the batch retains seg: mine
// is emptied before the batch parks again (dropMine) and when it
// completes, and the resume that filled it releases its segments only
// after it ran (tierRead), so the bytes found are those of the value
// still at seg.
func (b *shardBatch) takeMine(seg tiered.Segment) []byte {
	for i, m := range b.tier.mine {
		if m.off == seg.Off && len(m.data) == int(seg.Len) {
			b.tier.mine = append(b.tier.mine[:i], b.tier.mine[i+1:]...)
			return m.data
		}
	}
	return nil
}

// dropMine forgets the private bytes not taken over.
func (b *shardBatch) dropMine() {
	if len(b.tier.mine) > 0 {
		clear(b.tier.mine)
		b.tier.mine = b.tier.mine[:0]
	}
}

// tierAfter runs after a command that tierBefore prepared: values a
// read-only command ran on become external again, Find loads again.
func (b *shardBatch) tierAfter(s *shard.Shard) {
	if b.tier.noLoad {
		s.SetNoLoad(false)
		b.tier.noLoad = false
	}
	if len(b.tier.temps) == 0 {
		return
	}
	t := s.Tier().(*offload.Shard)
	for i, tm := range b.tier.temps {
		t.Restore(tm.db, tm.key, tm.seg, tm.data)
		b.tier.temps[i] = tierTemp{}
	}
	b.tier.temps = b.tier.temps[:0]
}

// tierActive: the command needs tierAfter.
func (b *shardBatch) tierActive() bool { return b.tier.noLoad || len(b.tier.temps) > 0 }
