package rdb

import (
	"bytes"
	"testing"
)

func benchData(b *testing.B) []byte {
	r := testRandSeed(42)
	ds := randDataset(r, 3000, false)
	var out bytes.Buffer
	if err := encodeDataset(NewEncoder(&out), ds); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}

func BenchmarkDecode(b *testing.B) {
	data := benchData(b)
	d := NewDecoder(nil)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(bytes.NewReader(data))
		if err := d.Decode(NopHandler{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeList(b *testing.B) {
	elem := []byte("some-list-element-0123456789")
	e := NewEncoder(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(elem)) * 1000)
	for b.Loop() {
		e.BeginList([]byte("key"), 1000, Meta{})
		for range 1000 {
			e.ListElement(elem)
		}
		if err := e.End(); err != nil {
			b.Fatal(err)
		}
		e.buf = e.buf[:0]
	}
}

// BenchmarkChunkStream reads a replication flow's baseline as a dfly
// replica does: tagged chunks (ChunkReader.NextItem), each item's records
// decoded in place (Decoder.ResetBytes + DecodeFragment).
func BenchmarkChunkStream(b *testing.B) {
	data := benchData(b)
	records := data[9 : len(data)-9] // the dataset's records: no header, EOF or checksum
	var stream []byte
	for range 8 {
		stream = AppendChunks(stream, 0, records, MaxChunkPayload)
	}
	d := NewDecoder(nil)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		cr := NewChunkReader(bytes.NewReader(stream))
		for {
			c, err := cr.NextItem()
			if err != nil {
				break
			}
			d.ResetBytes(c.Payload)
			if err := d.DecodeFragment(NopHandler{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
