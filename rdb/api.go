package rdb

import (
	"errors"
	"fmt"
)

// Versions of the RDB format.
const (
	// Version is what the Encoder writes: Redis 7.0's, loadable by Redis
	// 7.0 and later.
	Version = 10
	// MaxVersion is the newest the Decoder reads (Redis 7.2 writes 11).
	MaxVersion = 11
)

// Type is the logical type of a value, independent of its encoding.
type Type uint8

const (
	TypeString Type = iota
	TypeList
	TypeSet
	TypeZSet
	TypeHash
	TypeStream
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeHash:
		return "hash"
	case TypeStream:
		return "stream"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Meta is what an RDB file records about a key besides its value. The
// zero value means none of it.
type Meta struct {
	// ExpireAt is the absolute expiry in Unix milliseconds; 0 means the
	// key does not expire. (A file's expiry at or before the epoch is
	// reported as 1: equally in the past, and still an expiry.)
	ExpireAt int64
	// Idle is the LRU idle time in seconds, when HasIdle.
	Idle    uint64
	HasIdle bool
	// Freq is the LFU counter, when HasFreq.
	Freq    uint8
	HasFreq bool
}

// StreamID is a stream entry ID, ms-seq.
type StreamID struct{ Ms, Seq uint64 }

func (id StreamID) String() string { return fmt.Sprintf("%d-%d", id.Ms, id.Seq) }

// Less orders IDs as streams do.
func (id StreamID) Less(o StreamID) bool {
	return id.Ms < o.Ms || id.Ms == o.Ms && id.Seq < o.Seq
}

// StreamMeta is a stream's state besides its entries.
type StreamMeta struct {
	Length       uint64 // entries in the stream
	LastID       StreamID
	FirstID      StreamID // 0-0 when empty
	MaxDeletedID StreamID
	EntriesAdded uint64
	Groups       uint64 // consumer groups that follow
}

// StreamGroup is a consumer group. Pending entries (its PEL) follow, then
// its consumers.
type StreamGroup struct {
	Name   []byte
	LastID StreamID
	// EntriesRead is the group's read counter; -1 when unknown (files
	// before RDB 10 do not record it; Redis then estimates it).
	EntriesRead int64
	Pending     uint64 // StreamPending calls that follow
}

// StreamPending is an entry of a group's PEL.
type StreamPending struct {
	ID            StreamID
	DeliveryTime  int64 // Unix ms of the last delivery
	DeliveryCount uint64
}

// StreamConsumer is a consumer of the current group; the IDs of its
// pending entries follow, each also in the group's PEL.
type StreamConsumer struct {
	Name       []byte
	SeenTime   int64 // Unix ms of the last attempted interaction
	ActiveTime int64 // Unix ms of the last successful one (RDB 11; else SeenTime)
	Pending    uint64
}

// Handler receives what a Decoder reads, in file order. Byte slices are
// valid only during the call: a handler copies what it keeps. A non-nil
// error stops decoding and is returned (wrapped with the offset).
//
// Collections arrive as element streams: Begin, the elements, End.
// sizeHint is the element count the file claims when it states one
// (else 0); it is untrusted input capped at MaxSizeHint, so use it only
// as a hint. Empty collections are skipped, as Redis does (Begin is only
// called once a first element is known to exist), except streams, which
// may legitimately be empty. Duplicate members are not detected here.
//
// A stream delivers StreamEntry for every live entry in ID order, then
// StreamMeta, then per group StreamGroup, its StreamPending entries, and
// for each of its consumers StreamConsumer followed by its
// StreamConsumerPending IDs; then End. The Decoder checks that the
// consumers own exactly as many entries as the group PEL holds; that each
// owned ID is in the PEL is the handler's to check, as Redis does.
type Handler interface {
	AUX(key, val []byte) error
	SelectDB(db uint64) error
	ResizeDB(keys, expires uint64) error
	// Function is a FUNCTION2 record: the source of a function library.
	Function(code []byte) error

	String(key, val []byte, m Meta) error
	Begin(key []byte, t Type, sizeHint int, m Meta) error
	ListElement(val []byte) error
	SetMember(member []byte) error
	HashField(field, val []byte) error
	ZSetMember(member []byte, score float64) error
	// StreamEntry gives fields and values alternating: f1, v1, f2, v2...
	StreamEntry(id StreamID, fieldsValues [][]byte) error
	StreamMeta(m StreamMeta) error
	StreamGroup(g StreamGroup) error
	StreamPending(p StreamPending) error
	StreamConsumer(c StreamConsumer) error
	StreamConsumerPending(id StreamID) error
	End() error
}

// MaxSizeHint caps the sizeHint passed to Handler.Begin.
const MaxSizeHint = 1 << 20

// NopHandler ignores everything; embed it to handle only some records.
type NopHandler struct{}

func (NopHandler) AUX(key, val []byte) error                            { return nil }
func (NopHandler) SelectDB(db uint64) error                             { return nil }
func (NopHandler) ResizeDB(keys, expires uint64) error                  { return nil }
func (NopHandler) Function(code []byte) error                           { return nil }
func (NopHandler) String(key, val []byte, m Meta) error                 { return nil }
func (NopHandler) Begin(key []byte, t Type, sizeHint int, m Meta) error { return nil }
func (NopHandler) ListElement(val []byte) error                         { return nil }
func (NopHandler) SetMember(member []byte) error                        { return nil }
func (NopHandler) HashField(field, val []byte) error                    { return nil }
func (NopHandler) ZSetMember(member []byte, score float64) error        { return nil }
func (NopHandler) StreamEntry(id StreamID, fieldsValues [][]byte) error { return nil }
func (NopHandler) StreamMeta(m StreamMeta) error                        { return nil }
func (NopHandler) StreamGroup(g StreamGroup) error                      { return nil }
func (NopHandler) StreamPending(p StreamPending) error                  { return nil }
func (NopHandler) StreamConsumer(c StreamConsumer) error                { return nil }
func (NopHandler) StreamConsumerPending(id StreamID) error              { return nil }
func (NopHandler) End() error                                           { return nil }

// Errors a caller may test for with errors.Is; decoding errors wrap them
// in an *Error naming the offset.
var (
	ErrChecksum          = errors.New("checksum mismatch")
	ErrVersion           = errors.New("unsupported RDB version")
	ErrModuleType        = errors.New("unsupported module type")
	ErrTruncated         = errors.New("unexpected end of input")
	ErrCorrupt           = errors.New("corrupt input")
	ErrDumpPayload       = errors.New("ERR DUMP payload version or checksum are wrong")
	ErrBadDataFormat     = errors.New("ERR Bad data format")
	errEncoderState      = errors.New("rdb: encoder call out of order")
	errEncoderCount      = errors.New("rdb: element count differs from the count given at Begin")
	errEncoderDumpKey    = errors.New("rdb: a DUMP payload holds exactly one value")
	errEncoderStreamMeta = errors.New("rdb: stream meta out of order")
)

// Error is a decoding failure at a byte offset of the input.
type Error struct {
	Offset int64
	Msg    string
	Err    error // the cause, for errors.Is: ErrCorrupt, ErrTruncated, ...
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("rdb: offset %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("rdb: offset %d: %s", e.Offset, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }
