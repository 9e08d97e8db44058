package resp

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"
)

// assembling is a parser with assembly on and its thresholds lowered, so
// that small inputs go through every path of assemble.go.
func assembling(asmAt, bigArg int) *Parser {
	p := NewParser(0, 0)
	p.SetAssembly(true)
	p.asmAt, p.bigArg = asmAt, bigArg
	return p
}

// bigCommands is a pipeline whose commands have arguments of every size
// around the lowered thresholds, with what it parses to.
func bigCommands(rng *rand.Rand, n int) ([]byte, [][]string) {
	var whole []byte
	var want [][]string
	for i := 0; i < n; i++ {
		args := []string{"SET"}
		for k := rng.Intn(5); k >= 0; k-- {
			b := make([]byte, rng.Intn(40))
			for j := range b {
				b[j] = "ab\r\n$*"[rng.Intn(6)]
			}
			args = append(args, string(b))
		}
		whole = fmt.Appendf(whole, "*%d\r\n", len(args))
		for _, a := range args {
			whole = fmt.Appendf(whole, "$%d\r\n%s\r\n", len(a), a)
		}
		want = append(want, args)
		if i%7 == 0 {
			whole = append(whole, "PING\r\n"...)
			want = append(want, []string{"PING"})
		}
	}
	return whole, want
}

func TestAssemblySplitAtEveryByte(t *testing.T) {
	var whole []byte
	var want [][]string
	for _, c := range validCases {
		whole = append(whole, c.in...)
		want = append(want, c.want...)
	}
	big, bigWant := bigCommands(rand.New(rand.NewSource(1)), 20)
	whole, want = append(whole, big...), append(want, bigWant...)
	for _, th := range [][2]int{{1, 1}, {1, 3}, {8, 4}, {20, 10}} {
		for k := 0; k <= len(whole); k++ {
			got, err := stream(assembling(th[0], th[1]), [][]byte{whole[:k], whole[k:]})
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("thresholds %v, split at %d: got %q, %v", th, k, got, err)
			}
		}
		chunks := make([][]byte, len(whole))
		for i := range whole {
			chunks[i] = whole[i : i+1]
		}
		if got, err := stream(assembling(th[0], th[1]), chunks); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("thresholds %v, byte by byte: got %q, %v", th, got, err)
		}
	}
}

func TestAssemblyRandomChunks(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	whole, want := bigCommands(rng, 3000)
	for round := 0; round < 20; round++ {
		var chunks [][]byte
		for rest := whole; len(rest) > 0; {
			n := min(1+rng.Intn(200), len(rest))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		p := assembling(1+rng.Intn(100), 1+rng.Intn(30))
		if got, err := stream(p, chunks); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("thresholds %d %d: got %d commands, err %v; want %d", p.asmAt, p.bigArg, len(got), err, len(want))
		}
	}
}

// Malformed input fails with the same error however it arrives.
func TestAssemblyErrors(t *testing.T) {
	for _, c := range errorCases {
		if len(c.in) > 1000 || c.in[0] != '*' {
			continue
		}
		for k := 0; k <= len(c.in); k++ {
			p := assembling(1, 1)
			if c.maxBulk != 0 {
				p.maxBulkLen = c.maxBulk
			}
			p.SetAuthenticated(!c.unauth)
			_, err := stream(p, [][]byte{[]byte(c.in[:k]), []byte(c.in[k:])})
			if err == nil || err.Error() != c.want.Error() {
				t.Fatalf("%s split at %d: err %v, want %v", c.name, k, err, c.want)
			}
		}
	}
	// A bulk not followed by CR LF, small or big, first or last: an error
	// once the command is whole, unless a header after it is bad.
	for _, c := range []struct{ in, want string }{
		{"*2\r\n$3\r\nSET\r\n$40\r\n" + strings.Repeat("x", 40) + "\rX", ErrInvalidBulkLength.Error()},
		{"*2\r\n$3\r\nSETxx$40\r\n" + strings.Repeat("x", 40) + "\r\n", ErrInvalidBulkLength.Error()},
		{"*3\r\n$3\r\nSET\r\n$40\r\n" + strings.Repeat("x", 40) + "\rX$1\r\nx\r\n", ErrInvalidBulkLength.Error()},
		{"*3\r\n$3\r\nSET\r\n$40\r\n" + strings.Repeat("x", 40) + "\rXx1\r\nx\r\n", expectedDollar('x').Error()},
	} {
		for k := 0; k <= len(c.in); k++ {
			_, err := stream(assembling(1, 4), [][]byte{[]byte(c.in[:k]), []byte(c.in[k:])})
			if err == nil || err.Error() != c.want {
				t.Fatalf("%q split at %d: %v, want %s", c.in, k, err, c.want)
			}
			_, err = stream(NewParser(0, 0), [][]byte{[]byte(c.in[:k]), []byte(c.in[k:])})
			if err == nil || err.Error() != c.want {
				t.Fatalf("without assembly, %q split at %d: %v, want %s", c.in, k, err, c.want)
			}
		}
	}
}

// An assembled command's arguments are the caller's: later input and
// later commands do not change them.
func TestAssembledArgumentsOwned(t *testing.T) {
	p := assembling(16, 8)
	value := strings.Repeat("v", 100)
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n" + value + "\r\n")
	buf := bytes.Clone(in[:30])
	_, n, ok, err := p.Next(buf)
	if ok || err != nil || n == 0 {
		t.Fatalf("first part: ok %v err %v consumed %d", ok, err, n)
	}
	if h := p.Holding(); h != 4 { // SET, k
		t.Errorf("holding %d", h)
	}
	rest := bytes.Clone(in[n:])
	args, m, ok, err := p.Next(rest)
	if !ok || err != nil || m != len(rest) || !p.Assembled() {
		t.Fatalf("rest: ok %v err %v consumed %d/%d assembled %v", ok, err, m, len(rest), p.Assembled())
	}
	clear(buf)
	clear(rest)
	if _, _, ok, _ := p.Next([]byte("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\ny\r\n")); !ok || p.Assembled() {
		t.Fatal("next command")
	}
	if string(args[0]) != "SET" || string(args[1]) != "k" || string(args[2]) != value {
		t.Fatalf("args changed: %q", args)
	}
}

// A huge declared bulk costs what arrived, not what was declared.
func TestAssemblyFollowsArrival(t *testing.T) {
	p := NewParser(0, 0)
	p.SetAssembly(true)
	head := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n")
	piece := make([]byte, 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	buf := append(bytes.Clone(head), piece[:AssembleAt]...)
	_, n, ok, err := p.Next(buf)
	if ok || err != nil || n != len(buf) {
		t.Fatalf("ok %v err %v consumed %d/%d", ok, err, n, len(buf))
	}
	const pieces = 64
	for i := 0; i < pieces; i++ {
		if _, n, _, err := p.Next(piece); err != nil || n != len(piece) {
			t.Fatalf("piece %d: consumed %d, %v", i, n, err)
		}
	}
	runtime.ReadMemStats(&after)
	got, free := p.Receiving()
	sent := int64(AssembleAt + pieces*len(piece))
	if got != sent || free > maxChunk {
		t.Errorf("receiving %d (+%d free), sent %d", got, free, sent)
	}
	if alloc := int64(after.TotalAlloc - before.TotalAlloc); alloc > sent+2*maxChunk {
		t.Errorf("allocated %d bytes for %d received", alloc, sent)
	}
}

// Receiving N bytes costs O(N): a 64 MB value in 64 KB reads, the caller
// keeping only what the parser did not take.
func TestAssemblyLinear(t *testing.T) {
	const size = 64 << 20
	value := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	whole := append(fmt.Appendf(nil, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", size), value...)
	whole = append(whole, "\r\n"...)
	p := NewParser(0, 0)
	p.SetAssembly(true)
	var kept []byte
	start := time.Now()
	var args [][]byte
	for i := 0; i < len(whole) && args == nil; i += 64 << 10 {
		kept = append(kept, whole[i:min(i+64<<10, len(whole))]...)
		a, n, ok, err := p.Next(kept)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			args = a
		}
		kept = kept[n:]
		if len(kept) > AssembleAt+64<<10 {
			t.Fatalf("caller keeps %d bytes", len(kept))
		}
	}
	d := time.Since(start)
	if args == nil || !bytes.Equal(args[2], value) {
		t.Fatal("value not parsed")
	}
	t.Logf("64 MB in 64 KB reads: %v", d)
	if d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

// The hot path is unchanged by assembly being on.
func TestAssemblyNoAllocs(t *testing.T) {
	p := NewParser(0, 0)
	p.SetAssembly(true)
	buf := []byte(strings.Repeat("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", 16))
	allocs := testing.AllocsPerRun(100, func() {
		for used := 0; used < len(buf); {
			_, n, ok, err := p.Next(buf[used:])
			if !ok || err != nil {
				t.Fatal(err)
			}
			used += n
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
