package server

import (
	"strings"
	"sync"
	"testing"

	"github.com/dfly/dfly/journal"
	"github.com/dfly/dfly/shard"
)

// A replication session starts the shards' journals one by one as it
// releases its hold of every shard. A coordinator command that locks a
// shard whose journal records while shard 0's does not yet must still be
// journaled by what it propagated: SORT ... BY ... STORE as DEL and RPUSH
// of the stored rows, never as the SORT (whose pattern keys a replica may
// not have loaded yet).
func TestCoordPropagateJournalStartsShardByShard(t *testing.T) {
	srv, addr := startZSetServer(t, 2)
	key := func(prefix string, sid int) string {
		for i := 0; ; i++ {
			if k := prefix + strings.Repeat("x", i%7) + string(rune('a'+i%26)); srv.ShardOf([]byte(k)) == sid {
				return k
			}
		}
	}
	src, dst := key("src", 0), key("dst", 1)
	z := dialZ(t, addr)
	z.do(t, "RPUSH", src, "1", "2")
	z.do(t, "SET", "w_1", "9")
	z.do(t, "SET", "w_2", "3")

	var mu sync.Mutex
	var got []string
	srv.OnShard(1, func(s *shard.Shard) {
		s.Journal.Start()
		s.Journal.Subscribe(func(e *journal.Entry) {
			if len(e.Args) == 0 { // a transaction's commit (OpExec)
				return
			}
			var words []string
			for _, a := range e.Args {
				words = append(words, string(a))
			}
			mu.Lock()
			got = append(got, strings.Join(words, " "))
			mu.Unlock()
		})
	})
	if r := z.do(t, "SORT", src, "BY", "w_*", "STORE", dst); r != ":2\r\n" {
		t.Fatalf("SORT STORE: %q", r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"DEL " + dst, "RPUSH " + dst + " 2 1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("shard 1 journaled:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
