package rdb

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
	"time"
)

const (
	// FlushSize is how many buffered bytes make an Encoder with a writer
	// flush at the next element boundary.
	FlushSize = 64 << 10
	// ListNodeEntries is how many elements go into one quicklist node.
	// Counting elements rather than bytes lets Begin compute the node
	// count before the elements arrive.
	ListNodeEntries = 128
	// StreamNodeEntries is how many entries go into one stream node
	// (Redis's stream-node-max-entries default).
	StreamNodeEntries = 100
)

type encState uint8

const (
	stIdle encState = iota
	stList
	stSet
	stZSet
	stHash
	stString
	stStreamEntries
	stStreamGroups   // between groups: StreamGroup or End
	stStreamPending  // inside a group's PEL
	stStreamConsumer // StreamConsumers due, or StreamConsumer
	stStreamCPending // inside a consumer's PEL
)

// Encoder writes RDB version 10 (Redis 7.0) into an internal buffer. With
// a writer it flushes the buffer there whenever it passes FlushSize at an
// element boundary; without one (nil) the caller ships the bytes itself
// with TakeBytes, e.g. in bounded chunks of a snapshot.
//
// Collections are written as element streams: Begin* with the exact
// element count, the elements, End. Methods record the first error and
// do nothing after it; End, Flush, WriteEOF and Err return it.
type Encoder struct {
	w        io.Writer
	buf      []byte
	crc      uint64
	err      error
	lzf      lzfCompressor
	scratch  []byte
	noLZF    bool
	noCRC    bool
	flushAt  int // 0: FlushSize
	dump     bool
	dumpUsed bool

	state      encState
	want, have int
	lp         listpack
	nodeCount  int // elements due in the current node
	nodeHave   int

	// streams
	master       StreamID
	masterFields [][]byte
	masterArena  []byte
	lastID       StreamID
	groupsLeft   uint64
	pendingLeft  uint64
	consumersDue bool
	consumerLeft uint64
}

// NewEncoder returns an Encoder flushing to w, or buffering only when w
// is nil.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: w}
}

// SetCompression turns LZF compression of strings longer than 20 bytes on
// (the default) or off.
func (e *Encoder) SetCompression(on bool) { e.noLZF = !on }

// SetChecksum turns off (or back on) the running CRC-64 that WriteEOF
// appends, for a caller that checksums the bytes it ships itself: it
// costs a pass over every byte. Turn it off before writing anything.
func (e *Encoder) SetChecksum(on bool) { e.noCRC = !on }

// Err returns the first error met.
func (e *Encoder) Err() error { return e.err }

// Len is the number of buffered bytes.
func (e *Encoder) Len() int { return len(e.buf) }

// TakeBytes returns the buffered bytes, which the caller now owns, and
// empties the buffer.
func (e *Encoder) TakeBytes() []byte {
	return e.SwapBytes(nil)
}

// SwapBytes is TakeBytes that continues in next (emptied; nil: a new
// buffer), so a caller can recycle the buffers it has consumed.
func (e *Encoder) SwapBytes(next []byte) []byte {
	b := e.buf
	if !e.noCRC {
		e.crc = CRC64(e.crc, b)
	}
	if next == nil {
		next = make([]byte, 0, min(max(cap(b), 4<<10), 2*FlushSize))
	}
	e.buf = next[:0]
	return b
}

// Flush writes the buffered bytes to the writer.
func (e *Encoder) Flush() error {
	if e.err != nil || e.w == nil || len(e.buf) == 0 {
		return e.err
	}
	if !e.noCRC {
		e.crc = CRC64(e.crc, e.buf)
	}
	if _, err := e.w.Write(e.buf); err != nil {
		e.err = err
		return err
	}
	e.buf = e.buf[:0]
	return nil
}

// SetFlushSize sets how many buffered bytes make an Encoder with a writer
// flush (at the next element boundary); 0 restores FlushSize.
func (e *Encoder) SetFlushSize(n int) { e.flushAt = n }

// Raw appends bytes that are already RDB records (a caller's encoding of
// whole records, e.g. a value encoded apart).
func (e *Encoder) Raw(b []byte) {
	if e.err == nil {
		e.buf = append(e.buf, b...)
	}
}

func (e *Encoder) maybeFlush() {
	at := e.flushAt
	if at == 0 {
		at = FlushSize
	}
	if e.w != nil && len(e.buf) >= at {
		e.Flush()
	}
}

// Fail makes the encoder fail with err, for a caller that could not get a
// value's bytes (tiered storage's read error): the output is then refused
// rather than written with a wrong value.
func (e *Encoder) Fail(err error) { e.fail(err) }

func (e *Encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// WriteHeader writes the RDB signature and version.
func (e *Encoder) WriteHeader() {
	if e.err != nil {
		return
	}
	e.buf = append(e.buf, "REDIS0010"...)
}

// AUX writes an auxiliary field.
func (e *Encoder) AUX(key, val string) {
	if !e.top() {
		return
	}
	e.buf = append(e.buf, opAux)
	e.appendString([]byte(key))
	e.appendString([]byte(val))
}

// StandardAUX writes the fields Redis writes at the start of a file:
// redis-ver (the version we claim), redis-bits, ctime, used-mem,
// aof-base.
func (e *Encoder) StandardAUX(redisVer string, usedMem int64) {
	e.AUX("redis-ver", redisVer)
	e.AUX("redis-bits", strconv.Itoa(strconv.IntSize))
	e.AUX("ctime", strconv.FormatInt(time.Now().Unix(), 10))
	e.AUX("used-mem", strconv.FormatInt(usedMem, 10))
	e.AUX("aof-base", "0")
}

// SelectDB starts the keys of database db.
func (e *Encoder) SelectDB(db uint64) {
	if !e.top() {
		return
	}
	e.buf = append(e.buf, opSelectDB)
	e.appendLen(db)
}

// ResizeDB tells a loader how many keys, and keys with expiry, follow.
func (e *Encoder) ResizeDB(keys, expires uint64) {
	if !e.top() {
		return
	}
	e.buf = append(e.buf, opResizeDB)
	e.appendLen(keys)
	e.appendLen(expires)
}

// Function writes a FUNCTION2 record: a function library's source.
func (e *Encoder) Function(code []byte) {
	if !e.top() {
		return
	}
	e.buf = append(e.buf, opFunction2)
	e.appendString(code)
}

// WriteEOF writes the EOF opcode and the checksum (0, "not computed",
// with SetChecksum(false)), then flushes.
func (e *Encoder) WriteEOF() error {
	if !e.top() {
		return e.err
	}
	e.buf = append(e.buf, opEOF)
	var sum uint64
	if !e.noCRC {
		sum = CRC64(e.crc, e.buf)
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, sum)
	return e.Flush()
}

// top checks that no value is open.
func (e *Encoder) top() bool {
	if e.err != nil {
		return false
	}
	if e.state != stIdle || e.dump {
		e.fail(errEncoderState)
		return false
	}
	return true
}

// keyHeader writes a key's metadata, type and name (in a DUMP payload,
// only the type).
func (e *Encoder) keyHeader(t byte, key []byte, m Meta) bool {
	if e.err != nil {
		return false
	}
	if e.state != stIdle {
		e.fail(errEncoderState)
		return false
	}
	if e.dump {
		if e.dumpUsed {
			e.fail(errEncoderDumpKey)
			return false
		}
		e.dumpUsed = true
		e.buf = append(e.buf, t)
		return true
	}
	if m.ExpireAt != 0 {
		e.buf = append(e.buf, opExpireTimeMs)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(m.ExpireAt))
	}
	if m.HasIdle {
		e.buf = append(e.buf, opIdle)
		e.appendLen(m.Idle)
	}
	if m.HasFreq {
		e.buf = append(e.buf, opFreq, m.Freq)
	}
	e.buf = append(e.buf, t)
	e.appendString(key)
	return true
}

// String writes a string key.
func (e *Encoder) String(key, val []byte, m Meta) {
	if !e.keyHeader(typeString, key, m) {
		return
	}
	e.appendString(val)
	e.maybeFlush()
}

// StringHeader writes a string record up to its value; StringValue
// appends the value, possibly in another encoder and later (a snapshot
// hands string values out by reference and its consumer encodes them off
// the shard: snapshot.Options.Defer). It reports false after an error.
func (e *Encoder) StringHeader(key []byte, m Meta) bool {
	return e.keyHeader(typeString, key, m)
}

// StringValue appends val as the value of a string record begun by
// StringHeader: integer, LZF or raw, as String would write it.
func (e *Encoder) StringValue(val []byte) {
	if e.err == nil {
		e.appendString(val)
	}
}

// BeginString starts a string value of exactly n bytes that arrives in
// parts (StringPart), for values too big to hold twice: it is written raw,
// without integer or LZF encoding.
func (e *Encoder) BeginString(key []byte, n int, m Meta) {
	if n < 0 {
		e.fail(errEncoderCount)
		return
	}
	if !e.keyHeader(typeString, key, m) {
		return
	}
	e.state, e.want, e.have = stString, n, 0
	e.appendLen(uint64(n))
}

// StringPart appends the next bytes of the string begun by BeginString.
func (e *Encoder) StringPart(p []byte) {
	if e.err != nil {
		return
	}
	if e.state != stString {
		e.fail(errEncoderState)
		return
	}
	if len(p) > e.want-e.have {
		e.fail(errEncoderCount)
		return
	}
	e.have += len(p)
	e.buf = append(e.buf, p...)
	e.maybeFlush()
}

func (e *Encoder) begin(t byte, st encState, key []byte, n int, m Meta) bool {
	if n <= 0 && e.err == nil {
		e.fail(errors.New("rdb: empty collections cannot be written (Redis drops them)"))
	}
	if !e.keyHeader(t, key, m) {
		return false
	}
	e.state, e.want, e.have = st, n, 0
	return true
}

// BeginList starts a list of n > 0 elements, written as quicklist nodes
// of ListNodeEntries elements.
func (e *Encoder) BeginList(key []byte, n int, m Meta) {
	if e.begin(typeListQuicklist2, stList, key, n, m) {
		e.appendLen(uint64((n + ListNodeEntries - 1) / ListNodeEntries))
		e.nodeHave, e.nodeCount = 0, 0
	}
}

// ListElement appends the next list element.
func (e *Encoder) ListElement(v []byte) {
	if !e.element(stList) {
		return
	}
	if e.nodeHave == 0 {
		e.lp.reset()
		e.nodeCount = min(ListNodeEntries, e.want-e.have+1)
	}
	e.lp.appendString(v)
	e.nodeHave++
	if e.nodeHave == e.nodeCount {
		blob, err := e.lp.finish()
		if err != nil {
			e.fail(err)
			return
		}
		e.appendLen(quicklistPacked)
		e.appendBlob(blob)
		e.nodeHave = 0
		e.maybeFlush()
	}
}

// element counts one more element of a value in state st.
func (e *Encoder) element(st encState) bool {
	if e.err != nil {
		return false
	}
	if e.state != st {
		e.fail(errEncoderState)
		return false
	}
	if e.have == e.want {
		e.fail(errEncoderCount)
		return false
	}
	e.have++
	return true
}

// BeginSet starts a set of n > 0 members.
func (e *Encoder) BeginSet(key []byte, n int, m Meta) {
	if e.begin(typeSet, stSet, key, n, m) {
		e.appendLen(uint64(n))
	}
}

// SetMember appends the next set member.
func (e *Encoder) SetMember(member []byte) {
	if e.element(stSet) {
		e.appendString(member)
		e.maybeFlush()
	}
}

// BeginZSet starts a sorted set of n > 0 members.
func (e *Encoder) BeginZSet(key []byte, n int, m Meta) {
	if e.begin(typeZSet2, stZSet, key, n, m) {
		e.appendLen(uint64(n))
	}
}

// ZSetMember appends the next member with its score (not NaN).
func (e *Encoder) ZSetMember(member []byte, score float64) {
	if !e.element(stZSet) {
		return
	}
	if math.IsNaN(score) {
		e.fail(errors.New("rdb: zset score is NaN"))
		return
	}
	e.appendString(member)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(score))
	e.maybeFlush()
}

// BeginHash starts a hash of n > 0 fields.
func (e *Encoder) BeginHash(key []byte, n int, m Meta) {
	if e.begin(typeHash, stHash, key, n, m) {
		e.appendLen(uint64(n))
	}
}

// HashField appends the next field and its value.
func (e *Encoder) HashField(field, val []byte) {
	if e.element(stHash) {
		e.appendString(field)
		e.appendString(val)
		e.maybeFlush()
	}
}

// End closes the current value, checking that every promised element
// arrived, and returns the first error met.
func (e *Encoder) End() error {
	if e.err != nil {
		return e.err
	}
	switch e.state {
	case stList, stSet, stZSet, stHash, stString:
		if e.have != e.want {
			e.fail(errEncoderCount)
			return e.err
		}
	case stStreamGroups:
		if e.groupsLeft != 0 {
			e.fail(errEncoderCount)
			return e.err
		}
	default:
		e.fail(errEncoderState)
		return e.err
	}
	e.state = stIdle
	e.maybeFlush()
	return e.err
}

func (e *Encoder) appendLen(n uint64) {
	switch {
	case n < 1<<6:
		e.buf = append(e.buf, byte(n))
	case n < 1<<14:
		e.buf = append(e.buf, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		e.buf = append(e.buf, len32)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	default:
		e.buf = append(e.buf, len64)
		e.buf = binary.BigEndian.AppendUint64(e.buf, n)
	}
}

// appendString writes s as Redis's rdbSaveRawString does: as an integer
// when it is a canonical one fitting 32 bits, else as appendBlob.
func (e *Encoder) appendString(s []byte) {
	if len(s) <= 11 {
		if v, ok := canonicalInt(s); ok && v >= math.MinInt32 && v <= math.MaxInt32 {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				e.buf = append(e.buf, 0xC0|encInt8, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				e.buf = append(e.buf, 0xC0|encInt16, byte(v), byte(v>>8))
			default:
				e.buf = append(e.buf, 0xC0|encInt32)
				e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(v))
			}
			return
		}
	}
	e.appendBlob(s)
}

// appendBlob writes s LZF-compressed when longer than 20 bytes and that
// saves more than 4 bytes, else raw.
func (e *Encoder) appendBlob(s []byte) {
	if !e.noLZF && len(s) > 20 {
		out, ok := e.lzf.compress(e.scratch[:0], s, len(s)-5)
		e.scratch = out
		if ok {
			e.buf = append(e.buf, 0xC0|encLZF)
			e.appendLen(uint64(len(out)))
			e.appendLen(uint64(len(s)))
			e.buf = append(e.buf, out...)
			if cap(e.scratch) > 4<<20 {
				e.scratch = nil
			}
			return
		}
	}
	e.appendLen(uint64(len(s)))
	e.buf = append(e.buf, s...)
}
