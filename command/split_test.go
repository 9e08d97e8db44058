package command

import (
	"testing"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// splitServer owns keys by their first byte: 'a' on shard 0, 'b' on 1 ...
type splitServer struct{ n int }

func (s splitServer) ShardOf(key []byte) int { return int(key[0]-'a') % s.n }
func (s splitServer) Shards() []*shard.Shard { return make([]*shard.Shard, s.n) }
func (s splitServer) Databases() int         { return 16 }
func (s splitServer) ProtoMaxBulk() int64    { return 512 << 20 }
func (s splitServer) Tiered() bool           { return false }

func args(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestKeySplit: an MGET over three shards cut into its parts, each shard
// answering for its keys (one has none), merges into the reply of the
// whole command in the keys' order, nulls of either protocol included;
// a part's error is the reply.
func TestKeySplit(t *testing.T) {
	for _, proto := range []int{2, 3} {
		k := SplitByKey(splitServer{4}, args("MGET", "a1", "b1", "a2", "c1", "b2"), []int{1, 2, 3, 4, 5}, proto)
		for sid := 0; sid < 4; sid++ {
			a, w := k.Part(sid)
			if sid == 3 {
				if a != nil {
					t.Fatalf("shard 3 has no key, got part %q", a)
				}
				continue
			}
			w.Array(len(a) - 1)
			for _, key := range a[1:] {
				if key[1] == '2' {
					w.Null()
				} else {
					w.Bulk(key)
				}
			}
		}
		var out resp.Writer
		out.Proto = proto
		k.Merge(&out)
		null := "$-1\r\n"
		if proto == 3 {
			null = "_\r\n"
		}
		want := "*5\r\n$2\r\na1\r\n$2\r\nb1\r\n" + null + "$2\r\nc1\r\n" + null
		if string(out.Buf) != want {
			t.Fatalf("RESP%d: merged %q, want %q", proto, out.Buf, want)
		}
	}

	k := SplitByKey(splitServer{2}, args("MGET", "a", "b"), []int{1, 2}, 2)
	_, w0 := k.Part(0)
	w0.Array(1)
	w0.Bulk([]byte("x"))
	_, w1 := k.Part(1)
	w1.Error("ERR boom")
	var out resp.Writer
	k.Merge(&out)
	if string(out.Buf) != "-ERR boom\r\n" {
		t.Fatalf("merged %q, want the part's error", out.Buf)
	}
}
