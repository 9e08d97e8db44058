package rdbvalue

import "github.com/dfly/dfly/shard"

// Item is one decoded key on its way to its shard.
type Item struct {
	db       int
	key      []byte // may be empty: "" is a key like any other
	val      shard.Value
	expireAt int64
	// reservation: no key, but room for reserve keys, reserveExp of them
	// with a TTL (RESIZEDB; DB.Reserve).
	reservation         bool
	reserve, reserveExp int32
	// chunk: no key; key is a block of small values the loader fills
	// for the items after this one (DB.ImportChunk).
	chunk bool
}

// Apply stores decoded keys; it runs on the shard's goroutine. A key the
// input repeats replaces the earlier one.
func Apply(sh *shard.Shard, items []Item) {
	for i := range items {
		it := &items[i]
		if it.reservation {
			sh.DBs[it.db].Reserve(int(it.reserve), int(it.reserveExp))
			continue
		}
		if it.chunk {
			sh.DBs[it.db].ImportChunk(it.key)
			continue
		}
		sh.DBs[it.db].Load(it.key, it.val, it.expireAt)
	}
}

// Recycle empties an applied batch and offers it back on free, for a
// Loader to reuse: a fresh batch is 256 items of pointers the GC must zero
// and scan, and a full sync makes one per 256 keys. The keys' blocks and
// the values are the table's now; the channel hands the emptied slice
// over to the loader's goroutine (happens-before).
func Recycle(free chan []Item, items []Item) {
	clear(items)
	select {
	case free <- items[:0]:
	default:
	}
}
