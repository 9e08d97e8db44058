package rdbvalue

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/shard"
)

// rdbWithResize is an RDB stream announcing keys for DB 3 (RESIZEDB) and
// holding n of them, with values of size bytes.
func rdbWithResize(t *testing.T, announce uint64, n, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := rdb.NewEncoder(&buf)
	e.SetCompression(false)
	e.WriteHeader()
	val := bytes.Repeat([]byte("v"), size)
	e.SelectDB(3)
	e.ResizeDB(announce, 0)
	for i := range n {
		e.String([]byte("k"+strconv.Itoa(i)), val, rdb.Meta{})
	}
	if err := e.WriteEOF(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// segments is the segment count of DB db's main table on each shard.
func segments(shards []*shard.Shard, db int) []int {
	var out []int
	for _, sh := range shards {
		out = append(out, sh.DBs[db].Table.Segments())
	}
	return out
}

// A load makes room for the keys a RESIZEDB announces, each shard for its
// share, before they arrive; a count the stream cannot hold is bounded by
// its size.
func TestLoadReservesAnnouncedKeys(t *testing.T) {
	shards := []*shard.Shard{shard.New(0, 16), shard.New(1, 16)}
	shardOf := func(key []byte) int { return int(xxhash.Sum64(key) % 2) }
	load := func(data []byte) {
		l := NewLoader(len(shards), 16, shardOf, func(sid int, items []Item) { Apply(shards[sid], items) })
		l.Reuse = true
		l.LimitReserve(int64(len(data)))
		if err := l.Load(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	// 400k announced, 2000 sent (1.4 MB, which could hold 400k keys):
	// room for 200k a shard (512 segments at 70% fill, 390 each), where
	// 1000 keys alone fill 2 or 4.
	load(rdbWithResize(t, 400_000, 2000, 700))
	for sid, n := range segments(shards, 3) {
		if n < 256 {
			t.Errorf("shard %d: %d segments, 200k keys announced", sid, n)
		}
	}
	if got := shards[0].DBs[3].Len() + shards[1].DBs[3].Len(); got != 2000 {
		t.Errorf("%d keys loaded, want 2000", got)
	}
	// A corrupt count in a small stream reserves what the stream can hold.
	for _, sh := range shards {
		sh.DBs[3].Flush()
	}
	load(rdbWithResize(t, 1<<60, 10, 1))
	for sid, n := range segments(shards, 3) {
		if n > 2 {
			t.Errorf("shard %d: %d segments after a RESIZEDB of 2^60 in a stream of 10 keys", sid, n)
		}
	}
}
