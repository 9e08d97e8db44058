package persist

// dfly's own snapshot format (--dbformat dfly): one file per shard,
// <dir>/<base>-<NNNN>.dfs, each written in parallel, and a summary
// <dir>/<base>-summary.dfs written last.
//
// A shard file is the RDB signature ("REDIS0010"), then tagged chunks
// (rdb.AppendChunk framing) of stream id = the shard's number (SAVE) or
// the snapshot's streams (BGSAVE): fragments of whole records (AUX, per
// database SELECTDB and RESIZEDB, key records) of about 1 MiB, each an
// OpS2Blob (or, past rdb.MaxS2Blob, OpZstdBlob) chunk when compressing it
// whole made it smaller, else plain (OpChunk pieces past
// rdb.MaxChunkPayload and an OpChunkEnd); then the EOF opcode and the
// CRC-64 of everything before it, as in an RDB file. SAVE writes strings
// without LZF: compressing the whole fragment costs far less.
//
// The summary is text, one field per line:
//
//	dfly-summary 1
//	time <unix seconds of the save>
//	shards <count>
//	file <name> <size> <crc64 hex>     (one per shard, in order)
//	aux <key> <value>                  (the replication position's fields, package replpos)
//
// Shard files are renamed into place before the summary, which is
// written to a temporary file and renamed; a crash between the two leaves
// files whose size or CRC disagree with the old summary, which loading
// reports. Loading reads every file on its own goroutine and routes each
// key by its shardOf, so the loading server's shard count may differ.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/atomicfile"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/replpos"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

const (
	// dfsFragment is the size at which SAVE cuts a shard's records into
	// a fragment.
	dfsFragment = 1 << 20
	// dfsBlobMin is the smallest BGSAVE item tried as a blob.
	dfsBlobMin = 4 << 10
	// dfsMaxPending bounds the pieces held of incomplete chunked items.
	dfsMaxPending = 1 << 30
	dfsMagic      = "dfly-summary 1"
)

// dbFormat is the configured snapshot format, "rdb" or "dfly".
func (p *Engine) dbFormat() string { return p.settings().DBFormat }

// dflyBase is the snapshot directory and the files' base name
// (dbfilename without .rdb).
func (p *Engine) dflyBase() (dir, base string) {
	st := p.settings()
	return st.Dir, strings.TrimSuffix(st.DBFilename, ".rdb")
}

func (p *Engine) summaryPath() string {
	dir, base := p.dflyBase()
	return filepath.Join(dir, base+"-summary.dfs")
}

// useDflyFiles reports whether start-up loads the dfly files: there is a
// summary and either dbformat is dfly or there is no RDB file.
func (p *Engine) useDflyFiles(rdbPath string) bool {
	if _, err := os.Stat(p.summaryPath()); err != nil {
		return false
	}
	if p.dbFormat() == "dfly" {
		return true
	}
	_, err := os.Stat(rdbPath)
	return errors.Is(err, os.ErrNotExist)
}

// dfsEntry is one shard file of a summary.
type dfsEntry struct {
	name string
	size int64
	crc  uint64
	err  error
}

// saveDfly writes the dfly files; t holds every shard and is finished
// here. Each shard encodes its databases into fragments on its goroutine
// (the point-in-time cut: the shards are held until every fragment is
// taken) and a writer goroutine per file compresses and writes them, so
// the files are written in parallel and the shards are released before
// the writers' last writes and fsync.
func (p *Engine) saveDfly(t *tx.Tx) (err error) {
	start := time.Now()
	dir, base := p.dflyBase()
	out := make([]*dfsFile, len(p.shards))
	var writes atomic.Uint64
	cut := p.positionCut()
	t.RunAll(func(sh *shard.Shard) {
		writes.Add(sh.Stats.Writes)
		cut.Take(sh)
		var funcs []byte
		if sh.ID == 0 {
			funcs = p.host.Functions() // every shard is held
		}
		out[sh.ID] = p.encodeShardFile(sh, dir, shardFileName(base, sh.ID), funcs)
	})
	t.Finish(nil)
	files := make([]dfsEntry, len(out))
	for i, f := range out {
		files[i] = f.wait()
	}
	pos := cut.End()
	err = p.writeSummary(dir, base, files, &pos)
	p.savedDfly(err, start, writes.Load(), "DB saved on disk")
	return err
}

func shardFileName(base string, id int) string { return fmt.Sprintf("%s-%04d.dfs", base, id) }

// savedDfly records the outcome of a dfly save.
func (p *Engine) savedDfly(err error, start time.Time, writes uint64, what string) {
	p.lastFailed.Store(err != nil)
	if err != nil {
		p.log.Warnf("Failed saving the DB to %s: %v", p.summaryPath(), err)
		return
	}
	p.lastSave.Store(time.Now().Unix())
	p.writesAtSave.Store(writes)
	p.log.Noticef("%s in %.3f seconds", what, time.Since(start).Seconds())
}

// writeSummary ties the shard files together, once they are all in place,
// with the replication position they hold (nil: none).
func (p *Engine) writeSummary(dir, base string, files []dfsEntry, pos *replpos.Position) error {
	for _, f := range files {
		if f.err != nil {
			return f.err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\ntime %d\nshards %d\n", dfsMagic, time.Now().Unix(), len(files))
	for _, f := range files {
		fmt.Fprintf(&b, "file %s %d %016x\n", f.name, f.size, f.crc)
	}
	for _, f := range pos.Fields() {
		fmt.Fprintf(&b, "aux %s %s\n", f[0], f[1])
	}
	if err := atomicfile.Write(filepath.Join(dir, base+"-summary.dfs"), []byte(b.String())); err != nil {
		return err
	}
	// Files of an earlier save with more shards are no longer listed.
	for i := len(files); ; i++ {
		if os.Remove(filepath.Join(dir, shardFileName(base, i))) != nil {
			break
		}
	}
	return nil
}

// dfsWriter writes a shard file, keeping its size and CRC.
type dfsWriter struct {
	w    *bufio.Writer
	crc  uint64
	size int64
	hdr  [rdb.ChunkHeaderSize]byte
}

func (w *dfsWriter) put(b []byte) {
	w.crc = rdb.CRC64(w.crc, b)
	w.size += int64(len(b))
	_, _ = w.w.Write(b) // the bufio.Writer keeps the first error for Flush
}

// chunk writes one framed chunk without copying the payload.
func (w *dfsWriter) chunk(op byte, stream uint32, payload []byte) {
	w.hdr[0] = op
	binary.LittleEndian.PutUint32(w.hdr[1:], stream)
	binary.LittleEndian.PutUint32(w.hdr[5:], uint32(len(payload)))
	w.put(w.hdr[:])
	w.put(payload)
}

// plain frames a fragment as one item: OpChunk pieces and an OpChunkEnd.
func (w *dfsWriter) plain(stream uint32, b []byte) {
	for len(b) > rdb.MaxChunkPayload {
		w.chunk(rdb.OpChunk, stream, b[:rdb.MaxChunkPayload])
		b = b[rdb.MaxChunkPayload:]
	}
	w.chunk(rdb.OpChunkEnd, stream, b)
}

// AppendPlainFrames is plain into a buffer: b framed as one item of
// stream, appended to dst.
func AppendPlainFrames(dst []byte, stream uint32, b []byte) []byte {
	for {
		n, op := len(b), byte(rdb.OpChunkEnd)
		if n > rdb.MaxChunkPayload {
			n, op = rdb.MaxChunkPayload, rdb.OpChunk
		}
		dst = append(dst, op)
		dst = binary.LittleEndian.AppendUint32(dst, stream)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst = append(dst, b[:n]...)
		b = b[n:]
		if op == rdb.OpChunkEnd {
			return dst
		}
	}
}

// fragment writes a fragment as a blob when compressing shrinks it,
// otherwise plain.
func (w *dfsWriter) fragment(stream uint32, b []byte, blobs *rdb.Blobs) {
	if len(b) == 0 {
		return
	}
	if op, payload, ok := blobs.Compress(b); ok {
		w.chunk(op, stream, payload)
		return
	}
	w.plain(stream, b)
}

// createShardFile opens dir/name's temporary file and writes the RDB
// signature.
func createShardFile(dir, name string) (*os.File, *dfsWriter, error) {
	f, err := atomicfile.Create(filepath.Join(dir, name) + ".tmp")
	if err != nil {
		return nil, nil, err
	}
	w := &dfsWriter{w: bufio.NewWriterSize(f, 1<<20)}
	e := rdb.NewEncoder(nil)
	e.WriteHeader()
	w.put(e.TakeBytes())
	return f, w, nil
}

// finish ends a shard file opened by createShardFile: EOF and CRC-64,
// flush, fsync, rename into place. On an earlier error (err) or its own it
// removes the temporary file.
func (w *dfsWriter) finish(f *os.File, dir, name string, err error) dfsEntry {
	ent := dfsEntry{name: name, err: err}
	path := filepath.Join(dir, name)
	if ent.err == nil {
		w.put([]byte{0xFF}) // RDB_OPCODE_EOF; the checksum covers it
		var sum [8]byte
		binary.LittleEndian.PutUint64(sum[:], w.crc)
		_, _ = w.w.Write(sum[:])
		ent.size, ent.crc = w.size+8, w.crc
		ent.err = w.w.Flush()
	}
	ent.err = atomicfile.Commit(f, path+".tmp", path, ent.err)
	return ent
}

// dfsFile is a shard file being written by SAVE: the shard's goroutine
// sends fragments of raw records (no LZF: the writer compresses whole
// fragments, much faster than LZF value by value), the file's writer
// goroutine frames, compresses, checksums and writes them. At most
// dfsQueue fragments wait, so a slow disk holds the shard back rather
// than fill memory.
type dfsFile struct {
	frags chan []byte
	free  chan []byte
	done  chan dfsEntry
	err   error // the encoder's, set before frags is closed
}

const dfsQueue = 4

func startShardFile(dir, name string, stream uint32) *dfsFile {
	f := &dfsFile{frags: make(chan []byte, dfsQueue), free: make(chan []byte, dfsQueue+1), done: make(chan dfsEntry, 1)}
	go f.write(dir, name, stream)
	return f
}

// write is the writer goroutine. It reads fragments to the end even after
// an error, so the shard is never left waiting.
func (f *dfsFile) write(dir, name string, stream uint32) {
	file, w, err := createShardFile(dir, name)
	var blobs rdb.Blobs
	defer blobs.Close()
	for b := range f.frags {
		if err == nil {
			w.fragment(stream, b, &blobs)
		}
		select {
		case f.free <- b[:0]:
		default:
		}
	}
	if err == nil {
		err = f.err
	}
	if file == nil {
		f.done <- dfsEntry{name: name, err: err}
		return
	}
	f.done <- w.finish(file, dir, name, err)
}

// buffer is an empty fragment buffer, recycled when one is free.
func (f *dfsFile) buffer() []byte {
	select {
	case b := <-f.free:
		return b
	default:
		return make([]byte, 0, dfsFragment+dfsFragment/4)
	}
}

// wait returns the file's entry once it is written (or failed).
func (f *dfsFile) wait() dfsEntry { return <-f.done }

// encodeShardFile encodes sh's databases into fragments for a new
// dfsFile; it runs on the shard's goroutine and returns when every
// fragment is queued.
func (p *Engine) encodeShardFile(sh *shard.Shard, dir, name string, funcs []byte) *dfsFile {
	out := startShardFile(dir, name, uint32(sh.ID))
	defer close(out.frags)
	e := rdb.NewEncoder(nil)
	e.SetCompression(false)
	e.SetChecksum(false) // the writer checksums the file
	e.SwapBytes(out.buffer())
	e.StandardAUX(p.version, 0)
	e.Raw(funcs)
	now := sh.Now()
	for i, db := range sh.DBs {
		if db.Len() == 0 {
			continue
		}
		e.SelectDB(uint64(i))
		e.ResizeDB(uint64(db.Len()), uint64(db.Expire.Len()))
		var cursor uint64
		for {
			cursor = db.Table.Traverse(cursor, func(it shard.Iterator) {
				var m rdb.Meta
				if at, ok := db.ExpireAt(it); ok {
					if at <= now {
						return // logically expired, not yet swept
					}
					m.ExpireAt = at
				}
				// TierView: offloaded strings read synchronously.
				rdbvalue.Encode(e, []byte(db.Table.Key(it)), p.host.TierView(sh, e, db.Table.Value(it)), m)
				if e.Len() >= dfsFragment && e.Err() == nil {
					out.frags <- e.SwapBytes(out.buffer())
				}
			})
			if cursor == 0 {
				break
			}
		}
		if err := e.Err(); err != nil {
			out.err = err // read by the writer once frags is closed
			return out
		}
	}
	out.frags <- e.TakeBytes()
	return out
}

// readSummary parses the summary file: its shard files and the
// replication position.
func readSummary(path string) ([]dfsEntry, *replpos.Position, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	bad := func(line int, why string) error {
		return fmt.Errorf("summary %s: line %d: %s", path, line, why)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 3 || lines[0] != dfsMagic {
		return nil, nil, bad(1, "not a dfly summary file")
	}
	f := strings.Fields(lines[2])
	if len(f) != 2 || f[0] != "shards" {
		return nil, nil, bad(3, "no shard count")
	}
	var pos replpos.Position
	for len(lines) > 3 && strings.HasPrefix(lines[len(lines)-1], "aux ") {
		f := strings.Fields(lines[len(lines)-1])
		if len(f) != 3 || !pos.SetField(f[1], f[2]) {
			return nil, nil, bad(len(lines), "bad aux line")
		}
		lines = lines[:len(lines)-1]
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 1 || n != len(lines)-3 {
		return nil, nil, bad(3, fmt.Sprintf("shard count %q does not match the %d files listed", f[1], len(lines)-3))
	}
	var files []dfsEntry
	for i, ln := range lines[3:] {
		f := strings.Fields(ln)
		if len(f) != 4 || f[0] != "file" || filepath.Base(f[1]) != f[1] {
			return nil, nil, bad(i+4, "bad file line")
		}
		size, err1 := strconv.ParseInt(f[2], 10, 64)
		crc, err2 := strconv.ParseUint(f[3], 16, 64)
		if err1 != nil || err2 != nil {
			return nil, nil, bad(i+4, "bad file size or checksum")
		}
		files = append(files, dfsEntry{name: f[1], size: size, crc: crc})
	}
	return files, pos.Valid(), nil
}

// loadDflyOnStart loads the files the summary lists, in parallel, before
// the server serves.
func (p *Engine) loadDflyOnStart() error {
	start := time.Now()
	summary := p.summaryPath()
	files, pos, err := readSummary(summary)
	if err != nil {
		return err
	}
	dir := filepath.Dir(summary)
	var total int64
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("shard file %s (listed in %s): %w", path, summary, err)
		}
		if fi.Size() != f.size {
			return fmt.Errorf("shard file %s: offset %d: size %d, the summary says %d", path, min(fi.Size(), f.size), fi.Size(), f.size)
		}
		total += f.size
	}
	p.log.Noticef("Loading %d dfly snapshot files (%d bytes)...", len(files), total)
	// With a file per shard (or more), each file's reader applies its keys
	// itself, under the shard's lock: a file written by shard i with the
	// same shard count holds only keys of shard i, so the readers run in
	// parallel without a hand-off. With fewer files than shards, worker
	// goroutines apply them so that every shard works.
	dispatch, wait, applied := p.lockedApply(), func() {}, true
	var free chan []rdbvalue.Item
	if len(files) < len(p.shards) {
		dispatch, wait, free = p.startLoadWorkers()
		applied = false
	}
	endLoad := p.BeginLoad(total, time.Second)
	errs := make([]error, len(files))
	keys := make([]int, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = p.loadShardFile(filepath.Join(dir, f.name), f.crc, dispatch, applied, free)
		}()
	}
	wg.Wait()
	wait()
	endLoad()
	n := 0
	for i := range files {
		if errs[i] != nil {
			return errs[i]
		}
		n += keys[i]
	}
	p.loaded.Store(pos)
	p.loadDone(n, start)
	return nil
}

// lockedApply returns a dispatch that applies a batch (apply) holding the
// shard's lock: the batch is applied when it returns.
func (p *Engine) lockedApply() func(sid int, items []rdbvalue.Item) {
	locks := make([]sync.Mutex, len(p.shards))
	return func(sid int, items []rdbvalue.Item) {
		locks[sid].Lock()
		p.apply(p.shards[sid], items)
		locks[sid].Unlock()
	}
}

// loadShardFile decodes one shard file, handing its keys to dispatch
// (applied: dispatch has applied them when it returns; otherwise free, if
// not nil, offers batches to reuse). Errors name the file and the offset
// in it.
func (p *Engine) loadShardFile(path string, wantCRC uint64, dispatch func(int, []rdbvalue.Item), applied bool, free chan []rdbvalue.Item) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("shard file %s: %w", path, err)
	}
	defer f.Close()
	r := &shardFileReader{path: path, r: bufio.NewReaderSize(f, 1<<20), loaded: &p.prog.loaded}
	if err := r.signature(); err != nil {
		return 0, err
	}
	l := p.NewLoader(dispatch)
	l.Reuse, l.Free = applied, free
	if fi, err := f.Stat(); err == nil {
		l.LimitReserve(fi.Size())
	}
	d := &shardFileDecoder{r: r, l: l, d: rdb.NewDecoder(nil), items: itemAssembler{pending: map[uint32]*partialItem{}}}
	defer d.blobs.Close()
	for {
		at := r.off
		op, stream, payload, err := r.chunk()
		if err != nil {
			return 0, err
		}
		if op == 0xFF { // EOF
			if err := r.trailer(wantCRC); err != nil {
				return 0, err
			}
			if off, ok := d.items.incomplete(); ok {
				return 0, r.fail(off, "incomplete chunked item")
			}
			break
		}
		if err := d.chunk(at, op, stream, payload); err != nil {
			return 0, err
		}
	}
	l.Flush()
	return l.Keys(), nil
}

// shardFileReader reads a shard file, keeping its offset, the CRC-64 of
// what it read and the load's progress.
type shardFileReader struct {
	path    string
	r       *bufio.Reader
	off     int64
	crc     uint64
	loaded  *atomic.Int64
	hdr     [rdb.ChunkHeaderSize]byte
	payload []byte // reused for every chunk
}

// fail is an error at offset at of the file.
func (f *shardFileReader) fail(at int64, format string, args ...any) error {
	return fmt.Errorf("shard file %s: offset %d: %s", f.path, at, fmt.Sprintf(format, args...))
}

// read fills b from the file, counting it in the CRC and the progress.
func (f *shardFileReader) read(b []byte) error {
	if _, err := io.ReadFull(f.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return f.fail(f.off, "unexpected end of file (truncated?)")
		}
		return f.fail(f.off, "%v", err)
	}
	f.crc = rdb.CRC64(f.crc, b)
	f.off += int64(len(b))
	f.loaded.Add(int64(len(b)))
	return nil
}

// signature reads the RDB signature that opens a shard file.
func (f *shardFileReader) signature() error {
	if err := f.read(f.hdr[:9]); err != nil {
		return err
	}
	if !bytes.HasPrefix(f.hdr[:], []byte("REDIS")) {
		return f.fail(0, "not a dfly shard file (no REDIS signature)")
	}
	return nil
}

// chunk reads the next chunk: its opcode, stream and payload (valid until
// the next call), or only the opcode 0xFF at the end of the file.
func (f *shardFileReader) chunk() (op byte, stream uint32, payload []byte, err error) {
	at := f.off
	if err := f.read(f.hdr[:1]); err != nil {
		return 0, 0, nil, err
	}
	if f.hdr[0] == 0xFF {
		return 0xFF, 0, nil, nil
	}
	if err := f.read(f.hdr[1:]); err != nil {
		return 0, 0, nil, err
	}
	op, stream, n := f.hdr[0], binary.LittleEndian.Uint32(f.hdr[1:]), binary.LittleEndian.Uint32(f.hdr[5:])
	if !rdb.IsChunkOp(op) {
		return 0, 0, nil, f.fail(at, "unknown chunk opcode 0x%02x", op)
	}
	if n > rdb.MaxChunkPayload {
		return 0, 0, nil, f.fail(at+5, "chunk length %d exceeds %d", n, rdb.MaxChunkPayload)
	}
	if cap(f.payload) < int(n) {
		f.payload = make([]byte, n)
	}
	f.payload = f.payload[:n]
	if err := f.read(f.payload); err != nil {
		return 0, 0, nil, err
	}
	return op, stream, f.payload, nil
}

// trailer checks the CRC-64 after the EOF opcode against the content's
// and the summary's (want).
func (f *shardFileReader) trailer(want uint64) error {
	sum := f.crc
	var stored [8]byte
	if _, err := io.ReadFull(f.r, stored[:]); err != nil {
		return f.fail(f.off, "unexpected end of file in the checksum")
	}
	if got := binary.LittleEndian.Uint64(stored[:]); got != sum || sum != want {
		return f.fail(f.off, "checksum mismatch: file has %016x, content is %016x, summary says %016x", got, sum, want)
	}
	f.loaded.Add(8)
	return nil
}

// shardFileDecoder decodes a shard file's chunks into its loader.
type shardFileDecoder struct {
	r     *shardFileReader
	l     *rdbvalue.Loader
	d     *rdb.Decoder
	blobs rdb.Blobs
	items itemAssembler
}

// chunk takes one chunk, read at offset at: a piece of an item, the end
// of one, or a blob of whole records.
func (d *shardFileDecoder) chunk(at int64, op byte, stream uint32, payload []byte) error {
	dataOff := at + rdb.ChunkHeaderSize
	switch op {
	case rdb.OpChunk:
		if !d.items.add(stream, payload, dataOff) {
			return d.r.fail(at, "incomplete chunked items exceed %d bytes", dfsMaxPending)
		}
	case rdb.OpChunkEnd:
		item, off := d.items.end(stream, payload, dataOff)
		return d.decode(item, off, "")
	case rdb.OpZstdBlob, rdb.OpS2Blob:
		frag, err := d.blobs.Decompress(op, payload)
		if re := (*rdb.Error)(nil); errors.As(err, &re) {
			return d.r.fail(dataOff, "%s", re.Msg)
		} else if err != nil {
			return d.r.fail(dataOff, "%v", err)
		}
		return d.decode(frag, dataOff, "in the blob")
	case rdb.OpFullSyncCut:
	default:
		return d.r.fail(at, "unexpected chunk opcode 0x%02x in a snapshot file", op)
	}
	return nil
}

// decode loads an item's whole records; at is where the item starts in
// the file, what names a blob it came out of.
func (d *shardFileDecoder) decode(item []byte, at int64, what string) error {
	d.d.ResetBytes(item)
	err := d.d.DecodeFragment(d.l)
	if err == nil {
		return nil
	}
	var re *rdb.Error
	if errors.As(err, &re) {
		if what != "" {
			return d.r.fail(at, "%s, at byte %d of it: %s", what, re.Offset, re.Msg)
		}
		return d.r.fail(at+re.Offset, "%s", re.Msg)
	}
	return d.r.fail(at, "%v", err)
}

// itemAssembler reassembles chunked items. Items of several streams
// interleave (a snapshot's bucket streams); each is reassembled apart.
// Offsets in errors are positions in the reassembled item, counted from
// its first piece.
type itemAssembler struct {
	pending map[uint32]*partialItem
	held    int // bytes pending, at most dfsMaxPending
}

type partialItem struct {
	data []byte
	off  int64 // where its first piece is in the file
}

// add keeps a piece of stream's item; false when too much is pending.
func (a *itemAssembler) add(stream uint32, piece []byte, off int64) bool {
	p := a.pending[stream]
	if p == nil {
		p = &partialItem{off: off}
		a.pending[stream] = p
	}
	if a.held += len(piece); a.held > dfsMaxPending {
		return false
	}
	p.data = append(p.data, piece...)
	return true
}

// end returns stream's whole item, whose last piece is last (at off), and
// where it starts.
func (a *itemAssembler) end(stream uint32, last []byte, off int64) ([]byte, int64) {
	p := a.pending[stream]
	if p == nil {
		return last, off
	}
	a.held -= len(p.data)
	delete(a.pending, stream)
	return append(p.data, last...), p.off
}

// incomplete reports where an item left incomplete starts, if any.
func (a *itemAssembler) incomplete() (int64, bool) {
	for _, p := range a.pending {
		return p.off, true
	}
	return 0, false
}

// countingReader counts the bytes read into n (load progress).
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}
