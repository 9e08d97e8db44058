package server

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
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
func (s *Server) snapshotCut() ([]chan snapshot.Chunk, chan []byte, uint64) {
	outs := make([]chan snapshot.Chunk, len(s.shards))
	for i := range outs {
		outs[i] = make(chan snapshot.Chunk, 16)
	}
	free := make(chan []byte, 64)
	writes := make([]uint64, len(s.shards))
	t := tx.New(s.shards)
	t.AddAllShards()
	t.Lock()
	slices := make([]*snapshot.Slice, len(s.shards))
	ref := s.referenceAtCut()
	t.Finish(func(sh *shard.Shard) {
		writes[sh.ID] = sh.Stats.Writes
		ref.take(sh)
		s.functionsAtCut(sh, outs[sh.ID], false)
		slices[sh.ID] = snapshot.Deferred(sh, snapshot.Options{Encode: rdbvalue.EncodeForSnapshot, Out: outs[sh.ID], Free: free,
			MaxChunk: s.serializationChunk(), Load: tierLoader(sh)}) // tierLoader: tiered.go
	})
	s.persist.setSlices(slices)
	ref.write()
	var total uint64
	for _, w := range writes {
		total += w
	}
	return outs, free, total
}

// reference is --debug_snapshot_reference: the dataset at a BGSAVE's cut,
// taken synchronously in the cut's step, to check the snapshot against.
type reference struct {
	s    *Server
	path string
	snap []shardSnapshot
}

func (s *Server) referenceAtCut() *reference {
	s.cfg.mu.RLock()
	defer s.cfg.mu.RUnlock()
	if s.cfg.SnapshotReference == "" {
		return nil
	}
	return &reference{s: s, path: s.cfg.SnapshotReference, snap: make([]shardSnapshot, len(s.shards))}
}

// take serializes sh at the cut; it runs on sh's goroutine.
func (r *reference) take(sh *shard.Shard) {
	if r != nil {
		r.snap[sh.ID] = serializeShard(sh)
	}
}

func (r *reference) write() {
	if r == nil {
		return
	}
	if _, err := r.s.writeSnapshotFile(r.path, r.snap); err != nil {
		r.s.log.Warnf("Writing the snapshot reference %s failed: %v", r.path, err)
	}
}

// serializationChunk is --serialization_max_chunk_size.
func (s *Server) serializationChunk() int {
	s.cfg.mu.RLock()
	defer s.cfg.mu.RUnlock()
	return int(s.cfg.SerializationMaxChunk)
}

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

// drainChunks consumes a snapshot's chunks to the end, so no shard keeps
// waiting for a consumer that gave up.
func drainChunks(outs []chan snapshot.Chunk, free chan<- []byte, shards int) error {
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

// writeRDB writes the whole RDB (header, chunks, EOF, checksum) to w.
func (s *Server) writeRDB(w io.Writer, outs []chan snapshot.Chunk, free chan<- []byte) error {
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
	e.StandardAUX(RedisVersion, 0)
	put(e.TakeBytes())
	var err error
	m := newMerger(outs)
	for last := 0; last < len(s.shards); {
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

// writeSnapshotStream writes the RDB file from the shards' chunks: header
// and AUX fields, every chunk as it arrives, EOF and the checksum; into a
// temporary file renamed over the old one only when complete. It reads the
// channel to the end even after an error, so no shard is left waiting.
func (s *Server) writeSnapshotStream(outs []chan snapshot.Chunk, free chan<- []byte, writes uint64) (err error) {
	start := time.Now()
	path := s.rdbPath()
	defer func() {
		s.persist.lastFailed.Store(err != nil)
		if err != nil {
			s.log.Warnf("Background saving to %s failed: %v", path, err)
			return
		}
		s.persist.lastSave.Store(time.Now().Unix())
		s.persist.writesAtSave.Store(writes)
		s.persist.lastFailed.Store(false)
		s.log.Noticef("Background saving terminated with success (point-in-time, %.3f seconds)", time.Since(start).Seconds())
	}()
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-bg-%d.rdb", os.Getpid()))
	f, err := os.Create(tmp)
	if err != nil {
		_ = drainChunks(outs, free, len(s.shards)) // no shard is left waiting
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = s.writeRDB(w, outs, free) // reads every chunk, even after an error
	if err == nil {
		err = w.Flush()
	}
	return replaceWithTemp(f, tmp, path, err)
}
