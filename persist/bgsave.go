package persist

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"time"

	"github.com/dfly/dfly/atomicfile"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// BGSAVE in the RDB format is fork-less and point-in-time: the cut is taken
// on every shard at once (under a whole-shard transaction, so no
// multi-shard command is half in it), then each shard's snapshot.Slice
// writes its buckets in steps between commands, serializing a bucket
// first whenever a command is about to change it. A writer goroutine
// appends the shards' chunks to the file as they come. Memory stays at a
// few buffers instead of a copy of the dataset.

// snapshotCut takes the cut and starts the shards' walks; it returns the
// channel their chunks arrive on and the write count at the cut.
func (p *Engine) snapshotCut(also func(*shard.Shard)) ([]chan snapshot.Chunk, chan []byte, uint64, replpos.Cut) {
	outs := make([]chan snapshot.Chunk, len(p.shards))
	for i := range outs {
		outs[i] = make(chan snapshot.Chunk, 16)
	}
	free := make(chan []byte, 64)
	writes := make([]uint64, len(p.shards))
	t := tx.New(p.shards)
	t.AddAllShards()
	t.Lock()
	slices := make([]*snapshot.Slice, len(p.shards))
	ref := p.referenceAtCut()
	cut := p.positionCut()
	t.Finish(func(sh *shard.Shard) {
		writes[sh.ID] = sh.Stats.Writes
		cut.Take(sh)
		if also != nil {
			also(sh)
		}
		ref.take(sh)
		p.host.FunctionsAtCut(sh, outs[sh.ID], false)
		slices[sh.ID] = snapshot.Deferred(sh, snapshot.Options{Encode: rdbvalue.EncodeForSnapshot, Out: outs[sh.ID], Free: free,
			MaxChunk: p.serializationChunk(), Load: p.host.TierLoader(sh)})
	})
	p.setSlices(slices)
	ref.write()
	var total uint64
	for _, w := range writes {
		total += w
	}
	return outs, free, total, cut
}

// reference is --debug_snapshot_reference: the dataset at a BGSAVE's cut,
// taken synchronously in the cut's step, to check the snapshot against.
type reference struct {
	p    *Engine
	path string
	snap []ShardRecords
}

func (p *Engine) referenceAtCut() *reference {
	path := p.settings().SnapshotReference
	if path == "" {
		return nil
	}
	return &reference{p: p, path: path, snap: make([]ShardRecords, len(p.shards))}
}

// take serializes sh at the cut; it runs on sh's goroutine.
func (r *reference) take(sh *shard.Shard) {
	if r != nil {
		r.snap[sh.ID] = r.p.serializeShard(sh)
	}
}

func (r *reference) write() {
	if r == nil {
		return
	}
	if _, err := r.p.writeSnapshotFile(r.path, r.snap, nil); err != nil {
		r.p.log.Warnf("Writing the snapshot reference %s failed: %v", r.path, err)
	}
}

// serializationChunk is --serialization_max_chunk_size.
func (p *Engine) serializationChunk() int { return p.settings().SerializationMaxChunk }

// merger reads the shards' chunk channels into one RDB stream: any shard's
// chunk may come next, except that a chunk ending inside a big value is
// followed by the same shard's next chunk (records must not interleave).
type merger struct {
	outs  []chan snapshot.Chunk
	cases []reflect.SelectCase
	open  int // shard whose big value is half written, -1: none
}

func newMerger(outs []chan snapshot.Chunk) *merger {
	m := &merger{outs: outs, open: -1}
	for _, c := range outs {
		m.cases = append(m.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	return m
}

func (m *merger) next() snapshot.Chunk {
	var c snapshot.Chunk
	if m.open >= 0 {
		c = <-m.outs[m.open]
	} else {
		i, v, _ := reflect.Select(m.cases)
		c = v.Interface().(snapshot.Chunk)
		c.Shard = i
	}
	m.open = -1
	if c.Open {
		m.open = c.Shard
	}
	if c.Last {
		m.cases[c.Shard].Chan = reflect.Value{} // a nil channel: never ready
	}
	return c
}

// DrainChunks consumes a snapshot's chunks to the end, so no shard keeps
// waiting for a consumer that gave up.
func DrainChunks(outs []chan snapshot.Chunk, free chan<- []byte, shards int) error {
	var err error
	m := newMerger(outs)
	for last := 0; last < shards; {
		c := m.next()
		if c.Err != nil && err == nil {
			err = c.Err
		}
		if c.Last {
			last++
		}
	}
	return err
}

// WriteRDB writes the whole RDB (header, chunks, EOF, checksum) to w.
func (p *Engine) WriteRDB(w io.Writer, outs []chan snapshot.Chunk, free chan<- []byte) error {
	return p.writeRDB(w, outs, free, nil)
}

// writeRDB is WriteRDB with the replication position of cut (nil: none)
// among the AUX fields.
func (p *Engine) writeRDB(w io.Writer, outs []chan snapshot.Chunk, free chan<- []byte, cut replpos.Cut) error {
	var crc uint64
	var werr error
	put := func(b []byte) {
		if werr == nil {
			crc = rdb.CRC64(crc, b)
			_, werr = w.Write(b)
		}
	}
	e := rdb.NewEncoder(nil)
	e.WriteHeader()
	e.StandardAUX(p.version, 0)
	if cut != nil {
		pos := cut.End()
		positionAUX(e, &pos)
	}
	put(e.TakeBytes())
	var err error
	m := newMerger(outs)
	for last := 0; last < len(p.shards); {
		c := m.next()
		if c.Err != nil && err == nil {
			err = c.Err
		}
		put(c.Data)
		// The shards usually keep this loop busy: let an event loop coming
		// back from its poll have the processor now, rather than at the
		// scheduler's 10 ms preemption.
		runtime.Gosched()
		if c.Last {
			last++
		} else {
			select {
			case free <- c.Data[:0]:
			default:
			}
		}
	}
	if err != nil {
		return err
	}
	put([]byte{0xFF})
	var sum [8]byte
	for i := range sum {
		sum[i] = byte(crc >> (8 * i))
	}
	if werr == nil {
		_, werr = w.Write(sum[:])
	}
	return werr
}

// WriteBase writes an RDB file of the dataset at a cut to path, as BGSAVE
// does (fork-less), running at(sh) on every shard in the cut's step (an
// AOF rewrite starts its new incremental files there). It waits for the
// file; SAVE, BGSAVE and DEBUG RELOAD are not held meanwhile. The file
// names no replication position: the data an AOF holds goes past it.
func (p *Engine) WriteBase(path string, at func(*shard.Shard)) error {
	outs, free, _, _ := p.snapshotCut(at)
	defer snapshot.BackgroundThread()() // the file writer yields to the shards
	tmp := path + ".tmp"
	f, err := atomicfile.Create(tmp)
	if err != nil {
		_ = DrainChunks(outs, free, len(p.shards))
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = p.WriteRDB(w, outs, free)
	if err == nil {
		err = w.Flush()
	}
	return atomicfile.Commit(f, tmp, path, err)
}

// writeSnapshotStream writes the RDB file from the shards' chunks: header
// and AUX fields, every chunk as it arrives, EOF and the checksum; into a
// temporary file renamed over the old one only when complete. It reads the
// channel to the end even after an error, so no shard is left waiting.
func (p *Engine) writeSnapshotStream(outs []chan snapshot.Chunk, free chan<- []byte, writes uint64, cut replpos.Cut) (err error) {
	start := time.Now()
	path := p.rdbPath()
	defer func() {
		p.lastFailed.Store(err != nil)
		if err != nil {
			p.log.Warnf("Background saving to %s failed: %v", path, err)
			return
		}
		p.lastSave.Store(time.Now().Unix())
		p.writesAtSave.Store(writes)
		p.lastFailed.Store(false)
		p.log.Noticef("Background saving terminated with success (point-in-time, %.3f seconds)", time.Since(start).Seconds())
	}()
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-%d.rdb", os.Getpid()))
	f, err := atomicfile.Create(tmp)
	if err != nil {
		_ = DrainChunks(outs, free, len(p.shards)) // no shard is left waiting
		cut.End()
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = p.writeRDB(w, outs, free, cut) // reads every chunk, even after an error
	if err == nil {
		err = w.Flush()
	}
	return atomicfile.Commit(f, tmp, path, err)
}
