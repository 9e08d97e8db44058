package server

import (
	"io"
	"strconv"
	"testing"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/resp"
)

// BenchmarkEvalShard is a script confined to one shard, as a connection's
// batch runs it on the shard's goroutine: EVALSHA of a script that INCRs
// its two keys (the txbench "eval" test).
func BenchmarkEvalShard(b *testing.B) {
	cfg := config.Default()
	cfg.Shards = 1
	srv := New(cfg, NewLogger(io.Discard, "warning"))
	sha, _, errText := srv.scripts().Load([]byte("redis.call('incr', KEYS[1]); return redis.call('incr', KEYS[2])"))
	if errText != "" {
		b.Fatal(errText)
	}
	s := srv.shards[0]
	x := &command.Exec{S: s, DB: s.DBs[0], W: &resp.Writer{Proto: 2}, Srv: srv}
	args := make([][][]byte, 1024)
	for i := range args {
		args[i] = benchArgs("EVALSHA", sha, "2", "k:"+strconv.Itoa(i), "k:"+strconv.Itoa(i*7+1))
	}
	cmd := srv.table.Lookup([]byte("evalsha"))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		x.W.Reset()
		x.Args = args[i%len(args)]
		x.CanRetry = true
		runExec(x, cmd)
		if x.W.Buf[0] != ':' {
			b.Fatalf("reply %q", x.W.Buf)
		}
	}
}
