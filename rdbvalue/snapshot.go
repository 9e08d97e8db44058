package rdbvalue

import (
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// Dump is v as a DUMP payload (DUMP, MIGRATE, DEBUG's payload checks).
func Dump(v *shard.Value) ([]byte, error) {
	return rdb.EncodeDump(func(e *rdb.Encoder) { Encode(e, nil, v, rdb.Meta{}) })
}

// EncodeForSnapshot writes one key for a snapshot (snapshot.Options.Encode:
// BGSAVE, full syncs, dfly flows). A string too big for one chunk is
// written raw in parts, so the encoder can hand it out a chunk at a time
// (and no LZF copy of it is made).
func EncodeForSnapshot(e *rdb.Encoder, key []byte, v *shard.Value, expireAt int64) {
	m := rdb.Meta{ExpireAt: expireAt}
	if s := v.Str(); len(s) > bigString {
		e.BeginString(key, len(s), m)
		for len(s) > 0 {
			n := min(len(s), bigStringPart)
			e.StringPart(s[:n])
			s = s[n:]
		}
		return
	}
	Encode(e, key, v, m)
}

// Strings longer than bigString are written in parts of bigStringPart.
const (
	bigString     = 32 << 10
	bigStringPart = 8 << 10
)
