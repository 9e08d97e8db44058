package shard

import "unsafe"

// MemoryUsage estimates the bytes key and its value v hold (MEMORY
// USAGE, and what an eviction frees): the key, its slot, the value's own
// memory (collections sampled up to samples elements, 0: all, as Redis),
// its expiry entry.
func MemoryUsage(key string, v *Value, samples int) int {
	n := len(key) + slotBytes + valueBytes(v, samples)
	if v.HasExpire {
		n += len(key) + expiryBytes
	}
	return n
}

const (
	// slotBytes is a key's share of its table: the Value in its slot, the
	// slot's hash byte and key reference, and the spare slots of a table
	// kept below full.
	slotBytes = int(unsafe.Sizeof(Value{})) + 8
	// expiryBytes: the key's entry in the expiry table (its deadline and
	// slot), besides a copy of the key.
	expiryBytes = 8 + 8
)

// valueBytes estimates the memory a value holds in RAM beyond its slot:
// nothing for a string offloaded to disk (tiered storage), nested
// values sampled up to samples elements (0: all) as in Redis.
func valueBytes(v *Value, samples int) int {
	switch o := v.Obj().(type) {
	case nil:
		if v.Type != TypeString || v.IsExternal() {
			return 0
		}
		return cap(v.Str())
	case interface{ Bytes(samples int) int }: // sorted sets, streams
		return o.Bytes(samples)
	case interface{ Bytes() int }: // lists, sets, hashes
		return o.Bytes()
	default:
		return 64
	}
}
