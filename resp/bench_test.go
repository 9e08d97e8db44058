package resp

import (
	"strings"
	"testing"
)

func BenchmarkParseSet(b *testing.B) {
	buf := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n")
	p := NewParser(0, 0)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok, _ := p.Next(buf); !ok {
			b.Fatal("not parsed")
		}
	}
}

// BenchmarkParsePipeline16 parses 16 pipelined SETs per op.
func BenchmarkParsePipeline16(b *testing.B) {
	buf := []byte(strings.Repeat("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", 16))
	p := NewParser(0, 0)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		for used := 0; used < len(buf); {
			_, n, ok, _ := p.Next(buf[used:])
			if !ok {
				b.Fatal("not parsed")
			}
			used += n
		}
	}
}

func BenchmarkParseInline(b *testing.B) {
	buf := []byte("SET key value\r\n")
	p := NewParser(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok, _ := p.Next(buf); !ok {
			b.Fatal("not parsed")
		}
	}
}
