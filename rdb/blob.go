package rdb

import (
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Blob chunks (OpS2Blob, OpZstdBlob) carry one fragment compressed whole.
// S2 is klauspost/compress's LZ4-class block codec: several GB/s on one
// core, so a fragment of raw (not LZF) records costs a fraction of what
// LZF costs value by value. Fragments past MaxS2Blob (one huge record)
// go to zstd. Both decoders allocate the size a blob claims once it is
// checked against the bound: at most MaxS2Blob, or MaxZstdBlob.
const (
	// MaxS2Blob bounds the decompressed size of an S2 blob: the decoder
	// allocates the size the blob claims before it can check the data.
	MaxS2Blob = MaxChunkPayload
	// MaxZstdBlob bounds the decompressed size of a zstd blob.
	MaxZstdBlob = 1 << 30
)

// Blobs compresses fragments into blob payloads and back, reusing its
// buffers and codec state. Not safe for concurrent use; the zero value is
// ready.
type Blobs struct {
	zenc *zstd.Encoder
	zdec *zstd.Decoder
	out  []byte
}

// Compress returns the blob chunk opcode and payload for fragment, or
// ok=false when compressing does not make it smaller or it does not fit
// a chunk. The payload is valid until the next call.
func (b *Blobs) Compress(fragment []byte) (op byte, payload []byte, ok bool) {
	if len(fragment) <= MaxS2Blob {
		op = OpS2Blob
		b.out = s2.Encode(b.out[:cap(b.out)], fragment)
	} else {
		if b.zenc == nil {
			var err error
			b.zenc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
			if err != nil {
				return 0, nil, false
			}
		}
		op = OpZstdBlob
		b.out = b.zenc.EncodeAll(fragment, b.out[:0])
	}
	if len(b.out) >= len(fragment) || len(b.out) > MaxChunkPayload {
		b.release()
		return 0, nil, false
	}
	payload = b.out
	b.release()
	return op, payload, true
}

// release drops a buffer grown for a rare big fragment.
func (b *Blobs) release() {
	if cap(b.out) > 4*MaxS2Blob {
		b.out = nil
	}
}

// Decompress returns the fragment a blob chunk's payload holds, valid
// until the next call. Errors are *Error with offsets in the payload.
func (b *Blobs) Decompress(op byte, payload []byte) ([]byte, error) {
	bad := func(format string, args ...any) error {
		return &Error{Offset: 0, Msg: fmt.Sprintf(format, args...), Err: ErrCorrupt}
	}
	switch op {
	case OpS2Blob:
		n, err := s2.DecodedLen(payload)
		if err != nil {
			return nil, bad("s2 blob: %v", err)
		}
		if n > MaxS2Blob {
			return nil, bad("s2 blob of %d bytes exceeds %d", n, MaxS2Blob)
		}
		out, err := s2.Decode(b.out[:cap(b.out)], payload)
		if err != nil {
			return nil, bad("s2 blob: %v", err)
		}
		b.out = out
		return out, nil
	case OpZstdBlob:
		if b.zdec == nil {
			var err error
			b.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxZstdBlob))
			if err != nil {
				return nil, err
			}
		}
		out, err := b.zdec.DecodeAll(payload, b.out[:0])
		if err != nil {
			return nil, bad("zstd blob: %v", err)
		}
		b.out = out
		if cap(out) > 4*MaxS2Blob {
			b.out = nil // do not hold a rare big buffer
		}
		return out, nil
	}
	return nil, bad("chunk opcode 0x%02x is not a blob", op)
}

// Close releases the codecs' goroutines and memory.
func (b *Blobs) Close() {
	if b.zenc != nil {
		b.zenc.Close()
	}
	if b.zdec != nil {
		b.zdec.Close()
	}
	*b = Blobs{}
}
