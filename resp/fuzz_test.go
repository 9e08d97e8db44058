package resp

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// FuzzParser checks that the parser never panics, never claims more bytes
// than it was given, and that any chunking of a stream parses exactly like
// the whole stream at once.
func FuzzParser(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c.in), int64(len(c.in)))
	}
	for _, c := range errorCases {
		if len(c.in) < 1000 {
			f.Add([]byte(c.in), int64(0))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, seed int64) {
		if len(data) > 60000 {
			return // the 64 KiB limits legitimately depend on how bytes arrive
		}
		whole := bytes.Clone(data)
		p := NewParser(1<<20, 0)
		var want [][]string
		var wantErr error
		for used := 0; used < len(whole); {
			args, n, ok, err := p.Next(whole[used:])
			if n < 0 || n > len(whole)-used {
				t.Fatalf("consumed %d of %d", n, len(whole)-used)
			}
			if (!ok || err != nil) && n != 0 { // assembly is off here
				t.Fatalf("consumed %d without a command", n)
			}
			if err != nil {
				wantErr = err
				break
			}
			if !ok {
				break
			}
			if n == 0 {
				t.Fatal("command of zero bytes")
			}
			cmd := []string{}
			for _, a := range args {
				cmd = append(cmd, string(a))
			}
			want = append(want, cmd)
			used += n
		}

		rng := rand.New(rand.NewSource(seed))
		var chunks [][]byte
		for rest := data; len(rest) > 0; {
			n := min(1+rng.Intn(16), len(rest))
			if rng.Intn(4) == 0 {
				n = len(rest)
			}
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		got, gotErr := stream(NewParser(1<<20, 0), chunks)
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("chunked %q: %q, %v; at once: %q, %v", chunks, got, gotErr, want, wantErr)
		}
		// And with assembly taking commands out of the buffer early.
		asm := assembling(1+rng.Intn(64), 1+rng.Intn(16))
		asm.maxBulkLen = 1 << 20
		got, gotErr = stream(asm, chunks)
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("assembled %q: %q, %v; at once: %q, %v", chunks, got, gotErr, want, wantErr)
		}
	})
}
