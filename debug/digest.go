package debug

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/rdbvalue"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/hash"
	"github.com/dfly/dfly/types/list"
	"github.com/dfly/dfly/types/set"
	"github.com/dfly/dfly/types/zset"
)

// A digest is Redis's DEBUG DIGEST hashing (debug.c): SHA-1s XORed
// (order-free: set members, hash fields, keys) or mixed (ordered: list
// elements, a key with its value). Strings, lists, sets, sorted sets and
// hashes digest to Redis's own values; a stream's to a value of dfly's
// (Redis mixes its listpacks' raw bytes).
type digest [20]byte

func (d *digest) xor(b []byte) {
	h := sha1.Sum(b)
	for i := range d {
		d[i] ^= h[i]
	}
}

func (d *digest) mix(b []byte) {
	d.xor(b)
	*d = sha1.Sum(d[:])
}

func (d *digest) mixUint32(n uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	d.mix(b[:])
}

// redisTypes are Redis's type numbers (OBJ_STRING ...) by dfly's types.
var redisTypes = [...]uint32{
	shard.TypeString: 0, shard.TypeList: 1, shard.TypeSet: 2, shard.TypeZSet: 3,
	shard.TypeHash: 4, shard.TypeStream: 6, shard.TypeLock: 4, // a lock is a hash in files
}

// value mixes v into d as Redis's xorObjectDigest; expires: the key has a TTL.
func (d *digest) value(v *shard.Value, expires bool) {
	d.mixUint32(redisTypes[v.Type])
	switch o := v.Obj().(type) {
	case nil:
		d.mix(v.Str())
	case *list.List:
		o.Range(0, o.Len()-1, func(e []byte) bool { d.mix(e); return true })
	case *set.Set:
		o.Range(func(m []byte) bool { d.xor(m); return true })
	case *zset.Set:
		o.Ascend(0, func(m string, score float64) bool {
			var e digest
			e.mix([]byte(m))
			e.mix(cFloat(score))
			d.xor(e[:])
			return true
		})
	case *hash.Hash:
		o.Range(func(f, val []byte) bool {
			var e digest
			e.mix(f)
			e.mix(val)
			d.xor(e[:])
			return true
		})
	default:
		if p, err := rdbvalue.Dump(v); err == nil {
			d.mix(p)
		}
	}
	if expires {
		d.xor([]byte("!!expire!!"))
	}
}

// cFloat is C's "%.17g" of f, as Redis formats a score for the digest.
func cFloat(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// digestAll is DEBUG DIGEST: every database's keys and values, zeros for
// an empty dataset.
func digestAll(x *command.Coord) {
	dbs := len(x.Srv().Shards()[0].DBs)
	perShard := make([][]digest, x.NumShards()) // [shard][db]
	keys := make([][]int, x.NumShards())
	x.OnEach(func(s *shard.Shard) {
		perShard[s.ID] = make([]digest, dbs)
		keys[s.ID] = make([]int, dbs)
		for i, db := range s.DBs {
			keys[s.ID][i] = db.Len()
			var cur uint64
			for {
				cur = db.Table.Traverse(cur, func(it shard.Iterator) {
					var kv digest
					kv.mix([]byte(db.Table.Key(it)))
					v := db.Table.Value(it)
					kv.value(v, v.HasExpire)
					perShard[s.ID][i].xor(kv[:])
				})
				if cur == 0 {
					break
				}
			}
		}
	})
	var final digest
	for i := range dbs {
		var db digest
		empty := true
		for sid, ds := range perShard {
			if keys[sid][i] > 0 {
				empty = false
			}
			for j := range db {
				db[j] ^= ds[i][j]
			}
		}
		if empty {
			continue
		}
		// Redis mixes the DB's number, then XORs in each key's digest: the
		// XOR of the keys' digests, each XORed as a SHA-1 of itself.
		final.mixUint32(uint32(i))
		for j := range final {
			final[j] ^= db[j]
		}
	}
	x.W.SimpleString(hex.EncodeToString(final[:]))
}

// digestValues is DEBUG DIGEST-VALUE key ...: each value's digest (without
// its key), zeros for a missing key.
func digestValues(x *command.Coord) {
	keys := x.Args[2:]
	out := make([]digest, len(keys))
	for i, key := range keys {
		x.On(x.ShardOf(key), func(s *shard.Shard) {
			if _, v := s.DBs[x.DB].Find(key); v != nil {
				out[i].value(v, v.HasExpire)
			}
		})
	}
	x.W.Array(len(out))
	for _, d := range out {
		x.W.SimpleString(hex.EncodeToString(d[:]))
	}
}
