package server

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dfly/dfly/rdb"
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
func (s *Server) snapshotCut() (<-chan snapshot.Chunk, chan []byte, uint64) {
	out := make(chan snapshot.Chunk, 64)
	free := make(chan []byte, 64)
	writes := make([]uint64, len(s.shards))
	t := tx.New(s.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		writes[sh.ID] = sh.Stats.Writes
		encode := encodeForSnapshot
		if sh.Tier() != nil {
			// Offloaded strings are read synchronously for now (tiered.go);
			// the snapshot's DelayedPending state will read them with
			// Server.TierStore(sh).Read instead.
			encode = func(e *rdb.Encoder, key []byte, v *shard.Value, at int64) {
				encodeForSnapshot(e, key, tierView(sh, e, v), at)
			}
		}
		snapshot.Start(sh, encode, out, free)
	})
	var total uint64
	for _, w := range writes {
		total += w
	}
	return out, free, total
}

func encodeForSnapshot(e *rdb.Encoder, key []byte, v *shard.Value, expireAt int64) {
	encodeValue(e, key, v, rdb.Meta{ExpireAt: expireAt})
}

// writeSnapshotStream writes the RDB file from the shards' chunks: header
// and AUX fields, every chunk as it arrives, EOF and the checksum; into a
// temporary file renamed over the old one only when complete. It reads the
// channel to the end even after an error, so no shard is left waiting.
func (s *Server) writeSnapshotStream(chunks <-chan snapshot.Chunk, free chan<- []byte, writes uint64) (err error) {
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
		s.log.Noticef("Background saving terminated with success (point-in-time, %.3f seconds)", time.Since(start).Seconds())
	}()
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-bg-%d.rdb", os.Getpid()))
	f, ferr := os.Create(tmp)
	var w *bufio.Writer
	var crc uint64
	put := func(b []byte) {
		if w != nil {
			crc = rdb.CRC64(crc, b)
			_, _ = w.Write(b) // bufio keeps the first error for Flush
		}
	}
	if ferr != nil {
		err = ferr
	} else {
		w = bufio.NewWriterSize(f, 1<<20)
		e := rdb.NewEncoder(nil)
		e.WriteHeader()
		e.StandardAUX(RedisVersion, 0)
		put(e.TakeBytes())
	}
	for last := 0; last < len(s.shards); {
		c := <-chunks
		if c.Err != nil && err == nil {
			err = c.Err
		}
		put(c.Data) // bufio copies it: the buffer can go back to the shards
		if c.Last {
			last++
		} else {
			select {
			case free <- c.Data[:0]:
			default:
			}
		}
	}
	if f == nil {
		return err
	}
	if err == nil {
		put([]byte{0xFF}) // RDB_OPCODE_EOF, under the checksum
		var sum [8]byte
		for i := range sum {
			sum[i] = byte(crc >> (8 * i))
		}
		_, _ = w.Write(sum[:])
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
