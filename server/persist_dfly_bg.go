package server

import (
	"bufio"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// BGSAVE in the dfly format: the same point-in-time cut as the RDB
// BGSAVE (persist_snapshot.go), but every shard's Slice streams tagged
// chunks to its own file, written by its own goroutine, so big values are
// written a piece at a time while the bucket streams and the walk
// interleave. The writer compresses the walk's items (whole records) with
// zstd when that shrinks them; pieces of big values are kept as they are.

// bgsaveDfly takes the cut and returns once the walks have started; done
// is called when the files and the summary are written.
func (s *Server) bgsaveDfly(done func(error)) {
	start := time.Now()
	dir, base := s.dflyBase()
	n := len(s.shards)
	outs := make([]chan snapshot.Chunk, n)
	frees := make([]chan []byte, n)
	writes := make([]uint64, n)
	for i := range outs {
		outs[i] = make(chan snapshot.Chunk, 32)
		frees[i] = make(chan []byte, 32)
	}
	slices := make([]*snapshot.Slice, n)
	ref := s.referenceAtCut()
	t := tx.New(s.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		writes[sh.ID] = sh.Stats.Writes
		ref.take(sh)
		slices[sh.ID] = snapshot.Start(sh, snapshot.Options{Tagged: true, Encode: encodeForSnapshot,
			Out: outs[sh.ID], Free: frees[sh.ID], MaxChunk: s.serializationChunk()})
	})
	s.persist.setSlices(slices)
	ref.write()
	go func() {
		files := make([]dfsEntry, n)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				files[i] = writeShardStream(outs[i], frees[i], dir, shardFileName(base, i))
			}()
		}
		wg.Wait()
		s.persist.setSlices(nil)
		err := s.writeSummary(dir, base, files)
		var total uint64
		for _, w := range writes {
			total += w
		}
		s.savedDfly(err, start, total, "Background saving terminated with success (point-in-time)")
		done(err)
	}()
}

// writeShardStream writes one shard's chunks to dir/name: the RDB
// signature, the AUX fields, the chunks (the walk's items compressed when
// it pays), EOF and the CRC-64. It reads the channel to the end even after
// an error, so the shard is never left waiting.
func writeShardStream(chunks <-chan snapshot.Chunk, free chan<- []byte, dir, name string) (ent dfsEntry) {
	ent.name = name
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	var w *dfsWriter
	var zenc *zstd.Encoder
	if err == nil {
		zenc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	}
	if err != nil {
		ent.err = err
	} else {
		defer zenc.Close()
		w = &dfsWriter{w: bufio.NewWriterSize(f, 1<<20)}
		e := rdb.NewEncoder(nil)
		e.WriteHeader()
		w.put(e.TakeBytes())
		e.StandardAUX(RedisVersion, 0)
		w.plain(snapshot.MainStream, e.TakeBytes())
	}
	var zbuf []byte
	for {
		c := <-chunks
		if c.Err != nil && ent.err == nil {
			ent.err = c.Err
		}
		if w != nil && ent.err == nil {
			zbuf = w.frames(c.Data, zenc, zbuf)
		}
		if c.Last {
			break
		}
		select {
		case free <- c.Data[:0]:
		default:
		}
	}
	if w == nil {
		return ent
	}
	if ent.err == nil {
		w.put([]byte{0xFF}) // RDB_OPCODE_EOF; the checksum covers it
		var sum [8]byte
		binary.LittleEndian.PutUint64(sum[:], w.crc)
		_, _ = w.w.Write(sum[:])
		ent.size, ent.crc = w.size+8, w.crc
		ent.err = w.w.Flush()
	}
	if ent.err == nil {
		ent.err = f.Sync()
	}
	if cerr := f.Close(); ent.err == nil {
		ent.err = cerr
	}
	if ent.err == nil {
		ent.err = os.Rename(tmp, path)
	}
	if ent.err != nil {
		os.Remove(tmp)
	}
	return ent
}

// frames writes a Slice's framed chunks, replacing each whole item of the
// main stream by a zstd blob when that is smaller.
func (w *dfsWriter) frames(data []byte, zenc *zstd.Encoder, zbuf []byte) []byte {
	for len(data) >= rdb.ChunkHeaderSize {
		op := data[0]
		n := int(binary.LittleEndian.Uint32(data[5:]))
		frame := data[:rdb.ChunkHeaderSize+n]
		data = data[len(frame):]
		payload := frame[rdb.ChunkHeaderSize:]
		if op == rdb.OpChunkEnd && binary.LittleEndian.Uint32(frame[1:]) == snapshot.MainStream && n >= dfsBlobMin {
			zbuf = zenc.EncodeAll(payload, zbuf[:0])
			if len(zbuf) < n {
				w.buf = rdb.AppendChunk(w.buf[:0], rdb.OpZstdBlob, snapshot.MainStream, zbuf)
				w.put(w.buf)
				continue
			}
		}
		w.put(frame)
	}
	return zbuf
}
