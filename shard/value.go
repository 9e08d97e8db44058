package shard

// Type is a value's Redis type.
type Type uint8

const (
	TypeString Type = iota
	TypeList
	TypeHash
	TypeSet
	TypeZSet
	TypeStream
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
	}
	return "none"
}

// Value is what a DB stores per key. Strings keep their bytes in Str with
// spare capacity so APPEND and SETRANGE grow in place; other types keep
// their representation in Obj.
type Value struct {
	Str []byte
	Obj any
	// Type is the Redis type; HasExpire mirrors presence in the expiry table
	// so reads of keys without a TTL pay no second lookup.
	Type      Type
	HasExpire bool
	// Access is the last access time in seconds since the shard's epoch, for
	// OBJECT IDLETIME.
	Access uint32
}

// NewString makes a string value holding a private copy of b.
func NewString(b []byte) Value {
	s := make([]byte, len(b))
	copy(s, b)
	return Value{Str: s}
}

// Cloner is implemented by collection representations so COPY can make an
// independent copy.
type Cloner interface {
	Clone() any
}

// Clone is a deep copy of v.
func (v *Value) Clone() Value {
	c := *v
	if v.Str != nil {
		c.Str = append([]byte(nil), v.Str...)
	}
	if cl, ok := v.Obj.(Cloner); ok {
		c.Obj = cl.Clone()
	}
	return c
}
