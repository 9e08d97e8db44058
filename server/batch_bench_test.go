package server

import (
	"io"
	"strconv"
	"testing"

	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/shard"
)

// BenchmarkBatchGetSet runs a connection's pipelined batch of SET and GET
// on its shard (shardBatch.exec, the request path without the network):
// with no snapshot (no gate: the key check is skipped) and with a gate
// registered (each command's keys are checked; only multi-key commands
// would be captured); and without latency-tracking (its cost per batch of
// 16 commands).
func BenchmarkBatchGetSet(b *testing.B) {
	for _, v := range []struct{ gated, tracking bool }{{false, true}, {true, true}, {false, false}} {
		gated := v.gated
		b.Run("gated="+strconv.FormatBool(gated)+"/tracking="+strconv.FormatBool(v.tracking), func(b *testing.B) {
			cfg := config.Default()
			cfg.LatencyTracking.Store(v.tracking)
			cfg.Shards = 1
			srv := New(cfg, NewLogger(io.Discard, "warning"))
			s := srv.shards[0]
			if gated {
				s.AddGate(nopGate{})
			}
			c := &Conn{srv: srv, proto: 2, authed: true, user: srv.acl.Default()}
			bt := &shardBatch{c: c}
			set, get := srv.table.Lookup([]byte("set")), srv.table.Lookup([]byte("get"))
			const depth = 16
			c.cmds = make([]pending, depth)
			for i := range c.cmds {
				k := "key:" + strconv.Itoa(i)
				if i%2 == 0 {
					c.cmds[i] = pending{args: benchArgs("SET", k, "value"), cmd: set}
				} else {
					c.cmds[i] = pending{args: benchArgs("GET", k), cmd: get}
				}
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for j := range c.cmds {
					c.cmds[j].reply.Reset()
					bt.idx = append(bt.idx, int32(j))
				}
				c.inflight.Store(1)
				bt.inline = true
				s.Exec(bt)
			}
		})
	}
}

type nopGate struct{}

func (nopGate) Admit(*shard.DB, string) {}
func (nopGate) Capture([]shard.KeyLock) {}

func benchArgs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}
