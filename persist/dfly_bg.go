package persist

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// BGSAVE in the dfly format: the same point-in-time cut as the RDB
// BGSAVE (bgsave.go), but every shard's Slice streams tagged
// chunks to its own file, written by its own goroutine, so big values are
// written a piece at a time while the bucket streams and the walk
// interleave. The shards write values without LZF; the writer compresses
// the walk's items (whole records) as blobs (rdb.Blobs) when that shrinks
// them; pieces of big values are kept as they are.

// bgsaveDfly takes the cut and returns once the walks have started; done
// is called when the files and the summary are written.
func (p *Engine) bgsaveDfly(done func(error)) {
	start := time.Now()
	dir, base := p.dflyBase()
	n := len(p.shards)
	outs := make([]chan snapshot.Chunk, n)
	frees := make([]chan []byte, n)
	writes := make([]uint64, n)
	for i := range outs {
		outs[i] = make(chan snapshot.Chunk, 32)
		frees[i] = make(chan []byte, 32)
	}
	slices := make([]*snapshot.Slice, n)
	ref := p.referenceAtCut()
	cut := p.positionCut()
	t := tx.New(p.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		writes[sh.ID] = sh.Stats.Writes
		cut.Take(sh)
		ref.take(sh)
		p.host.FunctionsAtCut(sh, outs[sh.ID], true)
		slices[sh.ID] = snapshot.Deferred(sh, snapshot.Options{Tagged: true, Encode: rdbvalue.EncodeForSnapshot, NoLZF: true,
			Out: outs[sh.ID], Free: frees[sh.ID], MaxChunk: p.serializationChunk(), Load: p.host.TierLoader(sh)})
	})
	p.setSlices(slices)
	ref.write()
	go func() {
		files := make([]dfsEntry, n)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer snapshot.BackgroundThread()() // the file writer yields to the shards
				files[i] = p.writeShardStream(outs[i], frees[i], dir, shardFileName(base, i))
			}()
		}
		wg.Wait()
		p.setSlices(nil)
		pos := cut.End()
		err := p.writeSummary(dir, base, files, &pos)
		var total uint64
		for _, w := range writes {
			total += w
		}
		p.savedDfly(err, start, total, "Background saving terminated with success (point-in-time)")
		done(err)
	}()
}

// writeShardStream writes one shard's chunks to dir/name: the RDB
// signature, the AUX fields, the chunks (the walk's items compressed when
// it pays), EOF and the CRC-64. It reads the channel to the end even after
// an error, so the shard is never left waiting.
func (p *Engine) writeShardStream(chunks <-chan snapshot.Chunk, free chan<- []byte, dir, name string) dfsEntry {
	f, w, err := createShardFile(dir, name)
	var blobs rdb.Blobs
	defer blobs.Close()
	if err == nil {
		e := rdb.NewEncoder(nil)
		e.StandardAUX(p.version, 0)
		w.plain(snapshot.MainStream, e.TakeBytes())
	}
	for {
		c := <-chunks
		if c.Err != nil && err == nil {
			err = c.Err
		}
		if err == nil {
			w.frames(c.Data, &blobs)
		}
		if c.Last {
			break
		}
		select {
		case free <- c.Data[:0]:
		default:
		}
	}
	if f == nil {
		return dfsEntry{name: name, err: err}
	}
	return w.finish(f, dir, name, err)
}

// frames writes a Slice's framed chunks (BlobFrames).
func (w *dfsWriter) frames(data []byte, blobs *rdb.Blobs) { BlobFrames(data, blobs, w.put) }

// BlobFrames writes a Slice's framed chunks with put, replacing each whole
// item of the main stream of at least dfsBlobMin bytes by a blob chunk
// when that is smaller (dfly files, replication flows).
func BlobFrames(data []byte, blobs *rdb.Blobs, put func([]byte)) {
	var hdr [rdb.ChunkHeaderSize]byte
	for len(data) >= rdb.ChunkHeaderSize {
		op := data[0]
		n := int(binary.LittleEndian.Uint32(data[5:]))
		frame := data[:rdb.ChunkHeaderSize+n]
		data = data[len(frame):]
		payload := frame[rdb.ChunkHeaderSize:]
		if op == rdb.OpChunkEnd && binary.LittleEndian.Uint32(frame[1:]) == snapshot.MainStream && n >= dfsBlobMin {
			if op, blob, ok := blobs.Compress(payload); ok {
				hdr[0] = op
				binary.LittleEndian.PutUint32(hdr[1:], snapshot.MainStream)
				binary.LittleEndian.PutUint32(hdr[5:], uint32(len(blob)))
				put(hdr[:])
				put(blob)
				continue
			}
		}
		put(frame)
	}
}
