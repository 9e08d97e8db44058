package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Tagged chunk opcodes of dfly's own format (see doc.go). Redis uses
// record types up to 21 and opcodes from 244 up, so 0xD0–0xDF is free.
const (
	// OpChunk carries a piece of a stream's current item; more follow.
	OpChunk byte = 0xD0
	// OpChunkEnd carries the last piece (possibly empty) of a stream's
	// current item, which is then complete.
	OpChunkEnd byte = 0xD1
	// OpJournal carries one whole journal entry of a shard's flow.
	OpJournal byte = 0xD2
	// OpFullSyncCut marks the end of a flow's baseline (empty payload).
	OpFullSyncCut byte = 0xD3
	// OpZstdBlob and OpS2Blob carry a fragment compressed whole (blob.go).
	OpZstdBlob byte = 0xD4
	OpS2Blob   byte = 0xD5
	// OpFlowPing is a replication flow's heartbeat while it has nothing
	// to send (empty payload): the replica knows the link is alive.
	OpFlowPing byte = 0xD6
)

// ChunkHeaderSize is the size of [opcode][stream id u32 LE][length u32 LE].
const ChunkHeaderSize = 9

// MaxChunkPayload bounds one chunk's payload; producers cut bigger items
// into several chunks.
const MaxChunkPayload = 16 << 20

// IsChunkOp reports whether op is one of the tagged chunk opcodes.
func IsChunkOp(op byte) bool { return op >= OpChunk && op <= OpFlowPing }

// AppendChunk appends one framed chunk to dst. Payloads longer than
// MaxChunkPayload must be split by the caller (see AppendChunks).
func AppendChunk(dst []byte, op byte, stream uint32, payload []byte) []byte {
	dst = append(dst, op)
	dst = binary.LittleEndian.AppendUint32(dst, stream)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// AppendChunks frames item, the complete bytes of one stream item, as
// OpChunk pieces of at most size bytes and a final OpChunkEnd.
func AppendChunks(dst []byte, stream uint32, item []byte, size int) []byte {
	size = min(max(size, 1), MaxChunkPayload)
	for len(item) > size {
		dst = AppendChunk(dst, OpChunk, stream, item[:size])
		item = item[size:]
	}
	return AppendChunk(dst, OpChunkEnd, stream, item)
}

// Chunk is one framed chunk; Payload is valid until the next read.
type Chunk struct {
	Op      byte
	Stream  uint32
	Payload []byte
}

// ChunkReader reads framed chunks and reassembles each stream's items,
// however chunks of different streams interleave.
type ChunkReader struct {
	r       reader
	payload []byte
	pending map[uint32][]byte
	// MaxPending bounds the bytes held for incomplete items of all
	// streams together (0: 1 GiB).
	MaxPending int
	held       int
}

// NewChunkReader reads chunks from r.
func NewChunkReader(r io.Reader) *ChunkReader {
	c := &ChunkReader{pending: map[uint32][]byte{}}
	c.r.init(r)
	c.r.noCRC = true // a chunk stream has no checksum to check
	return c
}

// Buffered is the number of input bytes read from the source but not yet
// consumed: with the source's own buffered bytes, what a caller can take
// without waiting for more input.
func (c *ChunkReader) Buffered() int { return c.r.end - c.r.pos }

// Offset is the number of input bytes consumed.
func (c *ChunkReader) Offset() int64 { return c.r.offset() }

// Next reads one chunk. At a clean end of input it returns io.EOF.
func (c *ChunkReader) Next() (Chunk, error) {
	off := c.r.offset()
	if c.r.atEOF() {
		if c.r.srcErr != nil && c.r.srcErr != io.EOF {
			return Chunk{}, c.r.srcErr
		}
		return Chunk{}, io.EOF
	}
	h, err := c.r.next(ChunkHeaderSize)
	if err != nil {
		return Chunk{}, c.err(off, err)
	}
	ch := Chunk{Op: h[0], Stream: binary.LittleEndian.Uint32(h[1:]), Payload: nil}
	n := binary.LittleEndian.Uint32(h[5:])
	if !IsChunkOp(ch.Op) {
		return Chunk{}, &Error{Offset: off, Msg: fmt.Sprintf("unknown chunk opcode 0x%02x", ch.Op), Err: ErrCorrupt}
	}
	if n > MaxChunkPayload {
		return Chunk{}, &Error{Offset: off + 5, Msg: fmt.Sprintf("chunk length %d exceeds %d", n, MaxChunkPayload), Err: ErrCorrupt}
	}
	c.payload, err = c.r.appendN(c.payload[:0], uint64(n))
	if err != nil {
		return Chunk{}, c.err(c.r.offset(), err)
	}
	ch.Payload = c.payload
	return ch, nil
}

func (c *ChunkReader) err(off int64, err error) error {
	if errors.Is(err, ErrTruncated) {
		return &Error{Offset: off, Msg: "chunk truncated", Err: ErrTruncated}
	}
	return err
}

// NextItem reads chunks until one completes an item or is not an
// OpChunk/OpChunkEnd piece. For a completed item it returns OpChunkEnd,
// its stream and the whole item (owned by the caller); other chunks are
// returned as they are (payload valid until the next read).
func (c *ChunkReader) NextItem() (Chunk, error) {
	limit := c.MaxPending
	if limit <= 0 {
		limit = 1 << 30
	}
	for {
		off := c.r.offset()
		ch, err := c.Next()
		if err != nil {
			if err == io.EOF && len(c.pending) > 0 {
				return Chunk{}, &Error{Offset: off, Msg: fmt.Sprintf("input ends with %d incomplete items", len(c.pending)), Err: ErrTruncated}
			}
			return Chunk{}, err
		}
		if ch.Op != OpChunk && ch.Op != OpChunkEnd {
			return ch, nil
		}
		if c.held+len(ch.Payload) > limit {
			return Chunk{}, &Error{Offset: off, Msg: "incomplete chunked items exceed the pending limit", Err: ErrCorrupt}
		}
		buf := append(c.pending[ch.Stream], ch.Payload...)
		if ch.Op == OpChunk {
			c.pending[ch.Stream] = buf
			c.held += len(ch.Payload)
			continue
		}
		c.held -= len(buf) - len(ch.Payload)
		delete(c.pending, ch.Stream)
		return Chunk{Op: OpChunkEnd, Stream: ch.Stream, Payload: buf}, nil
	}
}
