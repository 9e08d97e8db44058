package family

import (
	"strconv"
	"testing"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
)

// streamExec runs stream commands directly on a shard that no goroutine
// owns (the benchmark is its only user).
func streamExec() *command.Exec {
	s := shard.New(0, 1)
	return &command.Exec{S: s, DB: s.DBs[0], W: &resp.Writer{}}
}

func benchArgs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

func BenchmarkXAdd(b *testing.B) {
	x := streamExec()
	x.Args = benchArgs("XADD", "s", "*", "sensor", "temperature", "value", "21.5")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		x.W.Reset()
		cmdXAdd(x)
	}
}

func BenchmarkXAddMaxLen(b *testing.B) {
	x := streamExec()
	x.Args = benchArgs("XADD", "s", "MAXLEN", "~", "1000", "*", "sensor", "temperature", "value", "21.5")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		x.W.Reset()
		cmdXAdd(x)
	}
}

func BenchmarkXRange(b *testing.B) {
	x := streamExec()
	const n = 100000
	for i := 1; i <= n; i++ {
		x.Args = benchArgs("XADD", "s", strconv.Itoa(i)+"-0", "f", "v")
		cmdXAdd(x)
	}
	args := make([][][]byte, 1024)
	for i := range args {
		args[i] = benchArgs("XRANGE", "s", strconv.Itoa(i*97%n+1), "+", "COUNT", "10")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.W.Reset()
		x.Args = args[i%len(args)]
		xrangeGeneric(x, false)
	}
}
