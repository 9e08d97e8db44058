package master

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
	"github.com/dfly/dfly/tx"
)

// The RDB of a full sync: the same fork-less point-in-time snapshot as
// BGSAVE (package persist), its chunks sent to the replica's socket as
// they come — in Redis's diskless "$EOF:<mark>" form when the replica
// announced capa eof, else through a temporary file so the length can lead.

// replicationCut takes a snapshot's cut on every shard inside one
// whole-shard step, running also(s) in the same step (start journaling,
// mark the feed), and returns the chunk channel.
func (m *Master) replicationCut(also func(*shard.Shard)) ([]chan snapshot.Chunk, chan []byte) {
	outs := make([]chan snapshot.Chunk, len(m.shards))
	for i := range outs {
		outs[i] = make(chan snapshot.Chunk, 16)
	}
	free := make(chan []byte, 64)
	t := tx.New(m.shards)
	t.AddAllShards()
	t.Lock()
	chunk := m.host.Settings().SerializationMaxChunk
	t.Finish(func(sh *shard.Shard) {
		also(sh)
		m.host.FunctionsAtCut(sh, outs[sh.ID], false)
		snapshot.Deferred(sh, snapshot.Options{Encode: rdbvalue.EncodeForSnapshot, Out: outs[sh.ID], Free: free, MaxChunk: chunk,
			Load: m.host.TierLoader(sh)})
	})
	return outs, free
}

// filteredSnapshot stands in for a snapshot's chunks when the keys are
// filtered out (REPLCONF rdb-filter-only): every shard's output is one last
// chunk, shard 0's holding the libraries when functions (taken on shard 0,
// which every library change holds).
func (m *Master) filteredSnapshot(functions bool) []chan snapshot.Chunk {
	var libs []byte
	if functions {
		m.onShard(0, func(*shard.Shard) { libs = m.host.Functions() })
	}
	outs := make([]chan snapshot.Chunk, len(m.shards))
	for i := range outs {
		outs[i] = make(chan snapshot.Chunk, 1)
		c := snapshot.Chunk{Last: true}
		if i == 0 {
			c.Data = libs
		}
		outs[i] <- c
	}
	return outs
}

// sendRDB sends the snapshot to a replica: "$EOF:<40 bytes>\r\n" RDB
// <40 bytes> when eof, else "$<len>\r\n" RDB from a temporary file.
func (m *Master) sendRDB(conn net.Conn, eof bool, chunks []chan snapshot.Chunk, free chan<- []byte) error {
	if eof {
		var mark [20]byte
		_, _ = rand.Read(mark[:])
		end := hex.EncodeToString(mark[:])
		bw := bufio.NewWriterSize(conn, 256<<10)
		_, _ = bw.WriteString("$EOF:" + end + "\r\n")
		if err := m.host.WriteRDB(bw, chunks, free); err != nil {
			return err // WriteRDB consumed every chunk
		}
		_, _ = bw.WriteString(end)
		return bw.Flush()
	}
	f, err := os.CreateTemp(m.host.Settings().Dir, fmt.Sprintf("temp-repl-%d-*.rdb", os.Getpid()))
	if err != nil {
		f, err = os.CreateTemp("", "dfly-repl-*.rdb")
	}
	if err != nil {
		persist.DrainChunks(chunks, free, len(m.shards))
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := m.host.WriteRDB(bw, chunks, free); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("$" + strconv.FormatInt(size, 10) + "\r\n")); err != nil {
		return err
	}
	_, err = io.Copy(conn, f)
	return err
}

// onShard runs fn on shard sid's goroutine and waits for it.
func (m *Master) onShard(sid int, fn func(*shard.Shard)) {
	done := make(chan struct{})
	m.shards[sid].Send(shard.Func(func(sh *shard.Shard) { fn(sh); close(done) }))
	<-done
}
