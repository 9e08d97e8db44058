package shard

import (
	"math"
	"unsafe"
)

// Type is a value's Redis type.
type Type uint8

const (
	TypeString Type = iota
	TypeList
	TypeHash
	TypeSet
	TypeZSet
	TypeStream
	// TypeLock: a fenced lock (package lock, family/lock.go), a *lock.Lock.
	TypeLock
)

// Name is the type's name as TYPE and SCAN TYPE spell it.
func (t Type) Name() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeStream:
		return "stream"
	case TypeLock:
		return "lock"
	}
	return "none"
}

// Value is what a DB stores per key, in 24 bytes with one pointer: the
// dash table keeps 840 of them per segment, so their size and pointer count
// are most of a key's cost in memory and in GC work. A string keeps its
// bytes (with spare capacity, so APPEND and SETRANGE grow in place) behind
// ptr, length n and capacity c; another type keeps its representation in a
// box behind ptr.
type Value struct {
	ptr  unsafe.Pointer
	n, c uint32
	// Access is the last access time in seconds since the shard's epoch,
	// for OBJECT IDLETIME.
	Access uint32
	// Type is the Redis type; HasExpire mirrors presence in the expiry table
	// so reads of keys without a TTL pay no second lookup.
	Type      Type
	HasExpire bool
	// ext marks an offloaded string (tiered storage, tier.go): ptr is nil,
	// n its length and c its offset in the shard's backing file in 8-byte
	// units. It fits in the struct's padding, so Value stays 24 bytes.
	ext bool
	// flags: flagMark, set by Mark, cleared by anything that may change
	// the bytes (DB.Mutate before an in-place edit, SetStr, SetObj,
	// SetExternal); flagShared, set by Share, cleared when the bytes are
	// replaced; flagPacked (strs.go). The last byte of padding.
	flags uint8
}

const (
	flagMark uint8 = 1 << iota
	flagShared
	// flagPacked: the bytes are in one of the DB's chunks (strs.go), c is
	// the chunk's id and the capacity is n.
	flagPacked
	// flagEncRaw, flagEncFloat: how the string was written, for OBJECT
	// ENCODING (SetEncoding).
	flagEncRaw
	flagEncFloat
)

// StrEncoding is what OBJECT ENCODING says of a string beyond its bytes.
// Redis's encoding of a string depends on how it was written: SET and its
// kin pick int, embstr or raw from the bytes; a string edited in place or
// built by a bit or HyperLogLog command is raw whatever it holds; an
// INCRBYFLOAT result is never int. Replacing the bytes (SetStr, DB.Set,
// DB.SetBytes) goes back to EncByBytes. Not kept by RDB files, as in
// Redis, whose loader picks again from the bytes.
type StrEncoding uint8

const (
	EncByBytes StrEncoding = iota
	EncRaw
	EncNotInt
)

// SetEncoding records how a string value was written (after SetStr,
// which resets it).
func (v *Value) SetEncoding(e StrEncoding) {
	v.flags &^= flagEncRaw | flagEncFloat
	switch e {
	case EncRaw:
		v.flags |= flagEncRaw
	case EncNotInt:
		v.flags |= flagEncFloat
	}
}

// Encoding is what SetEncoding recorded.
func (v *Value) Encoding() StrEncoding {
	switch {
	case v.flags&flagEncRaw != 0:
		return EncRaw
	case v.flags&flagEncFloat != 0:
		return EncNotInt
	}
	return EncByBytes
}

type box struct{ obj any }

// MaxStringLen bounds a string value (Redis's proto-max-bulk-len tops out
// at 512 MiB by default; dfly's representation allows up to 4 GiB - 1).
const MaxStringLen = math.MaxUint32

// NewString makes a string value holding a private copy of b.
func NewString(b []byte) Value {
	s := make([]byte, len(b))
	copy(s, b)
	return StringValue(s)
}

// StringValue makes a string value that takes b over (no copy).
func StringValue(b []byte) Value {
	var v Value
	v.SetStr(b)
	return v
}

// ObjectValue makes a value of type t holding the representation o.
func ObjectValue(t Type, o any) Value {
	v := Value{Type: t}
	v.SetObj(o)
	return v
}

// Str is a string value's bytes (nil for other types). The slice's spare
// capacity belongs to the value: append to it only to store the result
// back with SetStr, after DB.Mutate.
func (v *Value) Str() []byte {
	if v.Type != TypeString || v.ptr == nil {
		return nil
	}
	c := v.c
	if v.flags&flagPacked != 0 {
		c = v.n // a chunk's next bytes are another value's
	}
	return unsafe.Slice((*byte)(v.ptr), c)[:v.n]
}

// SetStr makes v the string b (taken over, not copied).
func (v *Value) SetStr(b []byte) {
	if uint64(cap(b)) > MaxStringLen {
		panic("shard: string value over 4 GiB")
	}
	v.Type = TypeString
	v.ptr = unsafe.Pointer(unsafe.SliceData(b))
	v.n, v.c = uint32(len(b)), uint32(cap(b))
	v.ext, v.flags = false, 0
}

// IsExternal reports whether v is a string offloaded to the shard's
// backing file. Its Str() is nil: the server loads it before a command
// reads it (server/tiered_batch.go), and DB.Find loads it as a fallback.
func (v *Value) IsExternal() bool { return v.ext }

// External is an offloaded string's place in the backing file.
func (v *Value) External() (off int64, n uint32) { return int64(v.c) * 8, v.n }

// SetExternal makes v a string of n bytes kept at off (a multiple of 8,
// below 32 GiB) in the backing file; its in-memory bytes are dropped.
func (v *Value) SetExternal(off int64, n uint32) {
	if off%8 != 0 || off/8 > math.MaxUint32 {
		panic("shard: external offset out of range")
	}
	v.Type = TypeString
	v.ptr = nil
	v.n, v.c = n, uint32(off/8)
	v.ext, v.flags = true, 0
}

// Mark records that v's bytes are being copied across several steps
// (tiered storage writes a big string a chunk at a time): Marked then
// reports whether they may have changed since. Invariant: every in-place
// edit of a string's bytes follows DB.Mutate (see Str), which clears the
// mark, and every other change replaces the Value or its bytes (SetStr,
// SetObj, SetExternal, DB.Set), which clear it too or drop v.
func (v *Value) Mark() { v.flags |= flagMark }

// Marked: Mark was called and nothing since may have changed the bytes.
func (v *Value) Marked() bool { return v.flags&flagMark != 0 }

// Share records that something outside the table reads v's bytes later (a
// snapshot's deferred record, snapshot/deferred.go): before an in-place
// edit it gives v a copy of them. SetStr, SetObj and SetExternal clear it
// (v no longer has those bytes); a stale mark costs one needless copy.
func (v *Value) Share() { v.flags |= flagShared }

// Packed reports whether v's bytes are in its DB's chunks (strs.go):
// they are then never edited in place, so sharing them needs no copy.
func (v *Value) Packed() bool { return v.flags&flagPacked != 0 }

// Shared: Share was called and v still has the same bytes.
func (v *Value) Shared() bool { return v.flags&flagShared != 0 }

// StrLen is a string value's length, offloaded or not.
func (v *Value) StrLen() int {
	if v.Type != TypeString {
		return 0
	}
	return int(v.n)
}

// Obj is a non-string value's representation (nil for strings).
func (v *Value) Obj() any {
	if v.Type == TypeString || v.ptr == nil {
		return nil
	}
	return (*box)(v.ptr).obj
}

// SetObj stores the representation of a non-string value; v.Type must
// already say which type it is.
func (v *Value) SetObj(o any) {
	v.ptr = unsafe.Pointer(&box{o})
	v.n, v.c = 0, 0
	v.ext, v.flags = false, 0
}

// Cloner is implemented by collection representations so COPY can make an
// independent copy.
type Cloner interface {
	Clone() any
}

// Clone is a deep copy of v. An offloaded v must be loaded first (its
// copy would share the file space).
func (v *Value) Clone() Value {
	c := *v
	if v.Type == TypeString {
		c.SetStr(append([]byte(nil), v.Str()...))
		c.SetEncoding(v.Encoding()) // Redis's COPY keeps it too
	} else if cl, ok := v.Obj().(Cloner); ok {
		c.SetObj(cl.Clone())
	}
	return c
}
