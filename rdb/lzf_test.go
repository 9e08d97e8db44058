package rdb

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestLZF(t *testing.T) {
	r := testRand(t)
	inputs := [][]byte{
		[]byte(strings.Repeat("P", 500)),
		[]byte(strings.Repeat("P", 100000)),
		[]byte(strings.Repeat("abcd", 1000)),
		[]byte(strings.Repeat("compressible-compressible-", 50)),
		bytes.Repeat([]byte{0}, 70000),
	}
	for range 200 {
		n := r.IntN(20000) + 21
		b := make([]byte, n)
		alpha := r.IntN(255) + 1
		for i := range b {
			if i > 10 && r.IntN(3) == 0 {
				b[i] = b[i-1-r.IntN(min(i-1, 9000))]
			} else {
				b[i] = byte(r.IntN(alpha))
			}
		}
		inputs = append(inputs, b)
	}
	var c lzfCompressor
	for i, in := range inputs {
		out, ok := c.compress(nil, in, len(in)+len(in)/16+64)
		if !ok {
			t.Fatalf("input %d: did not fit", i)
		}
		dec := make([]byte, len(in))
		if err := lzfDecompress(out, dec); err != nil || !bytes.Equal(dec, in) {
			t.Fatalf("input %d (%d bytes): %v", i, len(in), err)
		}
		if err := lzfDecompress(out, make([]byte, len(in)+1)); err == nil {
			t.Fatalf("input %d: wrong declared length accepted", i)
		}
		// With a limit below the input's length (as the encoder asks),
		// compress may give up, but what it returns is within the limit
		// and decompresses.
		limit := len(in) - 5
		if out, ok := c.compress([]byte("x"), in, limit); ok {
			if len(out)-1 > limit || lzfDecompress(out[1:], dec) != nil || !bytes.Equal(dec, in) {
				t.Fatalf("input %d: tight limit: %d bytes over %d", i, len(out)-1, limit)
			}
		} else if string(out) != "x" {
			t.Fatalf("input %d: a refusal changed dst", i)
		}
	}
	// An incompressible head gives up early; a compressible one does not.
	head := []byte(pseudoRandom(4096, 9) + strings.Repeat("z", 4096))
	if _, ok := c.compress(nil, head, len(head)-5); ok {
		t.Log("incompressible head compressed (allowed, not expected)")
	}
	tail := []byte(strings.Repeat("z", 4096) + pseudoRandom(4096, 9))
	if _, ok := c.compress(nil, tail, len(tail)-5); !ok {
		t.Fatal("a value with a compressible head was not compressed")
	}
	// A limit too small is reported, not exceeded.
	in := []byte(pseudoRandom(1000, 7))
	if out, ok := c.compress([]byte("x"), in, len(in)-5); ok || string(out) != "x" {
		t.Fatalf("incompressible input: ok=%v len=%d", ok, len(out))
	}
}

func TestCRC64(t *testing.T) {
	// Redis's crc64 self test vectors.
	if got := CRC64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %x", got)
	}
	b := []byte("This is a test of the emergency broadcast system.")
	if CRC64(CRC64(0, b[:13]), b[13:]) != CRC64(0, b) {
		t.Fatal("crc64 not incremental")
	}
}

// BenchmarkLZFDecompress decompresses values like DEBUG POPULATE's
// ("value:N" padded with zeros to 100 bytes).
func BenchmarkLZFDecompress(b *testing.B) {
	var c lzfCompressor
	var ins [][]byte
	for i := range 1000 {
		v := make([]byte, 100)
		copy(v, fmt.Sprintf("value:%d", i*997))
		in, ok := c.compress(nil, v, len(v))
		if !ok {
			b.Fatal("incompressible")
		}
		ins = append(ins, in)
	}
	out := make([]byte, 100)
	b.SetBytes(100 * int64(len(ins)))
	for b.Loop() {
		for _, in := range ins {
			if err := lzfDecompress(in, out); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLZFCompress compresses 1 KiB values: DEBUG POPULATE's
// ("value:N" padded with zeros), text with repeats, and random bytes
// (incompressible).
func BenchmarkLZFCompress(b *testing.B) {
	kinds := map[string]func(i int) []byte{
		"populate": func(i int) []byte {
			v := make([]byte, 1024)
			copy(v, fmt.Sprintf("value:%d", i*997))
			return v
		},
		"text": func(i int) []byte {
			return []byte(strings.Repeat(fmt.Sprintf(`{"id":%d,"name":"user-%d","tags":["a","b"]},`, i, i*31), 30)[:1024])
		},
		"random": func(i int) []byte { return []byte(pseudoRandom(1024, uint32(i))) },
	}
	for _, name := range []string{"populate", "text", "random"} {
		b.Run(name, func(b *testing.B) {
			var ins [][]byte
			for i := range 256 {
				ins = append(ins, kinds[name](i))
			}
			var c lzfCompressor
			dst := make([]byte, 0, 2048)
			b.SetBytes(1024 * int64(len(ins)))
			for b.Loop() {
				for _, in := range ins {
					c.compress(dst[:0], in, len(in)-5)
				}
			}
		})
	}
}
