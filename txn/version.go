package txn

import (
	"math/rand/v2"
	"strconv"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/shard"
)

// incarnation tells this process's versions from any other server's
// (random, so a replica, its master and a restarted server differ but for
// a chance of 2^-64).
var incarnation = rand.Uint64()

// appendVersion appends the version of the key at it: the incarnation in
// 16 hex digits, '-', the key's bucket version in decimal. A SWAPDB gives
// the database another table whose buckets' versions come from the same
// clock, and a snapshot raises buckets of every table to one version: so
// the database's swap count is mixed into the first part, and a version
// read before a SWAPDB never matches after it.
func appendVersion(dst []byte, db *shard.DB, it shard.Iterator) []byte {
	const digits = "0123456789abcdef"
	id := incarnation + db.Swaps*0x9e3779b97f4a7c15 // odd: distinct for 2^64 swaps
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, digits[id>>uint(shift)&0xf])
	}
	dst = append(dst, '-')
	return strconv.AppendUint(dst, db.Version(it), 10)
}

// cmdKeyVersion is KEYVERSION key: the key's version as a bulk string, nil
// for a missing key.
func cmdKeyVersion(x *command.Exec) {
	it, v := x.DB.Find(x.Args[1])
	if v == nil {
		x.W.Null()
		return
	}
	var buf [40]byte
	x.W.Bulk(appendVersion(buf[:0], x.DB, it))
}
