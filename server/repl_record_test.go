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
	journalWords(srv, 1, &mu, &got)
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

// SET and its TTL variants journal as SET key value [PXAT ms]: a replica
// applies the master's absolute expiry, never a relative one of its own.
func TestJournalSetFamilyAsPXAT(t *testing.T) {
	srv, addr := startZSetServer(t, 1)
	var mu sync.Mutex
	var got []string
	journalWords(srv, 0, &mu, &got)
	z := dialZ(t, addr)
	z.do(t, "SET", "plain", "v1")
	z.do(t, "SETEX", "a", "100", "v2")
	z.do(t, "psetex", "b", "100000", "v3")
	z.do(t, "set", "c", "v4", "EX", "100")
	mu.Lock()
	defer mu.Unlock()
	want := []string{"SET plain v1", "SET a v2 PXAT", "SET b v3 PXAT", "SET c v4 PXAT"}
	if len(got) != len(want) {
		t.Fatalf("journaled %q, want %d entries like %q", got, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) || (strings.HasSuffix(w, "PXAT") && len(strings.Fields(got[i])) != 5) {
			t.Fatalf("entry %d = %q, want %q followed by an absolute ms time", i, got[i], w)
		}
	}
}

// journalWords starts shard sid's journal and appends each command it
// records, as space-separated words, to *got under mu (a transaction's
// commit, which has no command, is left out).
func journalWords(srv *Server, sid int, mu *sync.Mutex, got *[]string) {
	srv.OnShard(sid, func(s *shard.Shard) {
		s.Journal.Start()
		s.Journal.Subscribe(func(e *journal.Entry) {
			if len(e.Args) == 0 {
				return
			}
			var words []string
			for _, a := range e.Args {
				words = append(words, string(a))
			}
			mu.Lock()
			*got = append(*got, strings.Join(words, " "))
			mu.Unlock()
		})
	})
}
