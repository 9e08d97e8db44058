package aof

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/journal"
)

// Fsync policies (appendfsync).
const (
	FsyncNo = iota
	FsyncEverysec
	FsyncAlways
)

// ParseFsync is appendfsync's value as a policy.
func ParseFsync(v string) int {
	switch v {
	case "always":
		return FsyncAlways
	case "no":
		return FsyncNo
	}
	return FsyncEverysec
}

// segment is bytes bound for one file.
type segment struct {
	f   *os.File
	buf []byte
}

// writer appends one shard's journal to its incremental file. The
// subscriber (entry, on the shard's goroutine) only encodes into the
// pending buffer under mu and kicks the writer goroutine (run), which
// writes and syncs: a slow disk never holds the shard.
//
// Positions are byte counts of everything the writer was given since it
// started, across files: appended (encoded), synced (written and, under
// appendfsync always or at an everysec tick, on disk). A reply waits for
// synced to pass appended as of its write (group commit: one fsync covers
// every entry encoded meanwhile).
type writer struct {
	m   *Manager
	sid int
	sub int // the journal subscription

	mu      sync.Mutex
	pending []segment // the last is the current file's
	db      int       // the database the file's stream selected (-1: none)
	inPart  bool
	seqs    []byte // the part's commands' Seq, comma-separated
	closing bool   // stop once pending is written

	appended atomic.Uint64
	synced   atomic.Uint64
	size     atomic.Int64 // the current file's size
	kick     chan struct{}
	done     chan struct{}
	scratch  []byte
}

func newWriter(m *Manager, sid int, f *os.File, size int64) *writer {
	w := &writer{m: m, sid: sid, db: -1, kick: make(chan struct{}, 1), done: make(chan struct{})}
	w.pending = []segment{{f: f}}
	w.size.Store(size)
	go w.run()
	return w
}

// entry is the journal subscriber: it encodes e in RESP, as Redis's AOF
// (SELECT when the database changes); a transaction's part is
// "MULTI", its commands, "EXEC <txid> <shards> <seqs>" (see doc.go).
func (w *writer) entry(e *journal.Entry) {
	w.mu.Lock()
	seg := &w.pending[len(w.pending)-1]
	b := seg.buf
	n := len(b)
	if w.m.timestamps.Load() && !w.inPart {
		b = append(b, "#TS:"...)
		b = strconv.AppendInt(b, time.Now().Unix(), 10)
		b = append(b, "\r\n"...)
	}
	switch e.Op {
	case journal.OpCommand:
		b = w.selectDB(b, e.DB)
		b = appendCommand(b, e.Args)
	case journal.OpMulti:
		if !w.inPart {
			b = appendCommand(b, multiArgs)
			w.inPart, w.seqs = true, w.seqs[:0]
		}
		b = w.selectDB(b, e.DB)
		b = appendCommand(b, e.Args)
		if len(w.seqs) > 0 {
			w.seqs = append(w.seqs, ',')
		}
		w.seqs = strconv.AppendUint(w.seqs, uint64(e.Seq), 10)
	case journal.OpExec:
		if !w.inPart {
			b = appendCommand(b, multiArgs)
			w.seqs = w.seqs[:0]
		}
		w.inPart = false
		w.scratch = strconv.AppendUint(w.scratch[:0], e.TxID, 10)
		txid := len(w.scratch)
		for i, s := range e.Shards {
			if i > 0 {
				w.scratch = append(w.scratch, ',')
			}
			w.scratch = strconv.AppendUint(w.scratch, uint64(s), 10)
		}
		b = appendCommand(b, [][]byte{[]byte("EXEC"), w.scratch[:txid], w.scratch[txid:], w.seqs})
	}
	seg.buf = b
	w.appended.Add(uint64(len(b) - n))
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

var multiArgs = [][]byte{[]byte("MULTI")}

func (w *writer) selectDB(b []byte, db int) []byte {
	if db == w.db {
		return b
	}
	w.db = db
	return appendCommand(b, [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, int64(db), 10)})
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// switchTo makes f the file of the entries after this call (a rewrite's
// cut, on the shard's goroutine); the old file is synced and closed once
// its bytes are written.
func (w *writer) switchTo(f *os.File) {
	w.mu.Lock()
	w.pending = append(w.pending, segment{f: f})
	w.db, w.inPart = -1, false
	w.mu.Unlock()
	w.nudge()
}

func (w *writer) nudge() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// stop has the writer write what it holds, sync, close its file and end;
// it waits for that.
func (w *writer) stop() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.nudge()
	<-w.done
}

// run writes the pending bytes as they come: synced at once under
// appendfsync always, once a second under everysec, never under no.
func (w *writer) run() {
	defer close(w.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastSync time.Time
	var spare []byte
	var cur *os.File
	dirty := false
	for {
		tickNow := false
		select {
		case <-w.kick:
		case <-tick.C:
			tickNow = true
		}
		w.mu.Lock()
		segs := w.pending
		last := segs[len(segs)-1]
		// The last segment keeps receiving: take its bytes, leave a
		// fresh buffer (the spare one) in their place.
		w.pending = []segment{{f: last.f, buf: spare[:0]}}
		upTo := w.appended.Load()
		closing := w.closing
		w.mu.Unlock()
		policy := int(w.m.fsync.Load())
		for i, s := range segs {
			if cur != nil && s.f != cur {
				w.syncFile(cur) // the old file ends here (a rewrite's cut)
				cur.Close()
				dirty = false
				w.size.Store(0)
			}
			cur = s.f
			if len(s.buf) > 0 {
				w.write(cur, s.buf, w.size.Load())
				w.size.Add(int64(len(s.buf)))
				dirty = true
			}
			if i == len(segs)-1 {
				spare = s.buf
			}
		}
		if dirty && (policy == FsyncAlways || closing || (policy == FsyncEverysec && (tickNow || time.Since(lastSync) >= time.Second))) {
			w.syncFile(cur)
			lastSync, dirty = time.Now(), false
		}
		if !dirty || policy != FsyncAlways {
			// Written is synced enough for this policy: under everysec
			// and no a reply never waits.
			w.synced.Store(upTo)
			w.m.wake()
		}
		if closing {
			cur.Close()
			return
		}
	}
}

// write appends b to f, whose size is size, retrying on error (a full
// disk) once a second, a short write taken back first: the entries must
// reach the file whole and in order.
func (w *writer) write(f *os.File, b []byte, size int64) {
	for {
		_, err := f.Write(b)
		if err == nil {
			w.m.writeFailed(false)
			return
		}
		w.m.writeFailed(true)
		w.m.log.Warnf("Error writing to the AOF file %s: %v", f.Name(), err)
		_ = f.Truncate(size)
		time.Sleep(time.Second)
	}
}

func (w *writer) syncFile(f *os.File) {
	for {
		err := f.Sync()
		if err == nil {
			return
		}
		w.m.writeFailed(true)
		w.m.log.Warnf("Can't persist AOF for fsync error when the AOF fsync policy is 'always': %v", err)
		time.Sleep(time.Second)
	}
}
