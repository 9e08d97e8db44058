package command

import "github.com/dfly/dfly/shard"

// TypedValue finds key as a value of type t, writing WRONGTYPE for another
// type; the representation is nil (T's zero) for a missing key. The
// per-family lookups (listValue, hashValue, ...) are this with their types.
func TypedValue[T any](x *Exec, key []byte, t shard.Type) (shard.Iterator, T, bool) {
	var zero T
	it, v, ok := x.DB.FindType(key, t)
	if !ok {
		x.W.Error(ErrWrongType)
		return it, zero, false
	}
	if v == nil {
		return it, zero, true
	}
	return it, v.Obj().(T), true
}

// Mutable announces an in-place update of the value at it (DB.Mutate) and
// returns its representation.
func Mutable[T any](db *shard.DB, it shard.Iterator) T {
	return db.Mutate(it).Obj().(T)
}
