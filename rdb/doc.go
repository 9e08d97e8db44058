// Package rdb owns the Redis RDB format: a Decoder for files Redis 1.0
// through 7.2 writes (RDB versions 1–11, function libraries included), an
// Encoder writing version 10 (Redis 7.0), DUMP/RESTORE payloads, and the
// tagged chunk framing of dfly's own snapshot files and replication flows,
// with the compression of whole fragments (Blobs: S2, zstd past
// MaxS2Blob). The files and streams that use it are described in
// docs/DESIGN.md §5–6.
//
// It knows nothing of the server's value types: the Decoder reports to a
// Handler, and the Encoder is fed by calls, both as element streams
// (Begin, elements, End), so a collection never exists twice in memory
// and a huge value is written in bounded pieces.
//
// Never: panic or allocate in proportion to a length the input claims
// (buffers grow as bytes actually arrive; LZF lengths are checked against
// the most their compressed bytes can expand to); report a partial result
// as success; touch the server's state.
//
// Invariants:
//   - Every decoding error is an *Error naming the input offset
//     ("rdb: offset 8123: listpack entry overruns its blob") and wraps a
//     cause for errors.Is: ErrCorrupt, ErrTruncated, ErrChecksum,
//     ErrVersion, ErrModuleType, or the Handler's own error.
//   - The Encoder writes only value types Redis 7.0 loads whatever its
//     configuration: strings (integer or LZF encoded where Redis would),
//     RDB_TYPE_LIST_QUICKLIST_2 with listpack nodes, RDB_TYPE_SET,
//     RDB_TYPE_ZSET_2, RDB_TYPE_HASH, RDB_TYPE_STREAM_LISTPACKS_2; its
//     files pass redis-check-rdb.
//   - Listpacks are byte-identical to Redis's for the same elements.
//
// # Use
//
// Loading: NewDecoder(file).Decode(h) with the server's Handler; DUMP
// payloads: DecodeDump(payload, h) (errors are ErrDumpPayload or wrap
// ErrBadDataFormat, Redis's replies). Saving: NewEncoder(w), WriteHeader,
// StandardAUX, per database SelectDB and ResizeDB, the keys, WriteEOF; or
// NewEncoder(nil) and TakeBytes to ship chunks. DUMP: EncodeDump.
//
// # Tagged chunks
//
// dfly's snapshot and replication streams interleave the output of
// several producers (buckets being serialized, big values cut into
// pieces, the journal) on one byte stream. Each piece is framed as
//
//	[opcode u8][stream id u32 LE][length u32 LE][payload]
//
// with opcodes in 0xD0–0xDF, which Redis never uses (value types stop at
// 21, opcodes start at 244):
//
//	0xD0 OpChunk        a piece of the stream's current item; more follow
//	0xD1 OpChunkEnd     the last piece; the item is complete
//	0xD2 OpJournal      one journal entry (opaque to this package)
//	0xD3 OpFullSyncCut  end of a flow's baseline, empty payload
//	0xD4 OpZstdBlob     a fragment compressed with zstd
//	0xD5 OpS2Blob       a fragment compressed with S2 (LZ4-class; see Blobs)
//	0xD6 OpFlowPing     a replication flow's heartbeat, empty payload
//
// An item is a fragment: complete RDB records (opcodes such as SELECTDB
// and whole key entries) without header, EOF or checksum, as an Encoder
// with no header writes them; Decoder.DecodeFragment reads one. Each
// producer has its own Encoder, so its fragment carries its own SELECTDB.
// ChunkReader.NextItem reassembles items by stream id. Payloads are at
// most MaxChunkPayload bytes. Plain .rdb files meant for Redis carry no
// tagged chunks.
package rdb
