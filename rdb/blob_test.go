package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// blobFragment is n bytes of string records of 1 KiB values padded with
// zeros, as DEBUG POPULATE makes them.
func blobFragment(n int) []byte {
	e := NewEncoder(nil)
	e.SetCompression(false)
	val := make([]byte, 1024)
	for i := 0; e.Len() < n; i++ {
		copy(val, "value:")
		binary.LittleEndian.PutUint64(val[6:], uint64(i))
		e.String([]byte("key:"+string(rune('a'+i%26))), val, Meta{})
	}
	return e.TakeBytes()
}

func TestBlobsRoundTrip(t *testing.T) {
	var b Blobs
	defer b.Close()
	for _, tc := range []struct {
		name string
		in   []byte
		op   byte
	}{
		{"s2", blobFragment(1 << 20), OpS2Blob},
		{"zstd past MaxS2Blob", blobFragment(MaxS2Blob + 1<<20), OpZstdBlob},
	} {
		op, payload, ok := b.Compress(tc.in)
		if !ok || op != tc.op {
			t.Fatalf("%s: Compress: op 0x%02x ok %v, want op 0x%02x", tc.name, op, ok, tc.op)
		}
		if len(payload) >= len(tc.in)/10 {
			t.Errorf("%s: %d bytes compressed to %d", tc.name, len(tc.in), len(payload))
		}
		payload = bytes.Clone(payload)
		out, err := b.Decompress(op, payload)
		if err != nil || !bytes.Equal(out, tc.in) {
			t.Fatalf("%s: Decompress: %v, equal %v", tc.name, err, bytes.Equal(out, tc.in))
		}
		d := NewDecoder(nil)
		d.ResetBytes(out)
		if err := d.DecodeFragment(&checkedHandler{}); err != nil {
			t.Fatalf("%s: fragment: %v", tc.name, err)
		}
	}
	// Bytes that do not compress are not a blob.
	noise := make([]byte, 64<<10)
	r := testRandSeed(7)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	if _, _, ok := b.Compress(noise); ok {
		t.Error("Compress kept a blob of random bytes")
	}
}

func TestBlobsHostile(t *testing.T) {
	var b Blobs
	defer b.Close()
	valid := func() []byte {
		_, p, _ := b.Compress(blobFragment(64 << 10))
		return bytes.Clone(p)
	}()
	huge := binary.AppendUvarint(nil, 1<<40) // claims 1 TiB
	huge = append(huge, 0, 0, 0)
	tooBig := binary.AppendUvarint(nil, MaxS2Blob+1)
	truncated := valid[:len(valid)/2]
	flipped := bytes.Clone(valid)
	flipped[len(flipped)/2] ^= 0xff
	for name, c := range map[string]struct {
		op byte
		in []byte
	}{
		"empty": {OpS2Blob, nil}, "claims 1 TiB": {OpS2Blob, huge}, "past MaxS2Blob": {OpS2Blob, tooBig},
		"truncated": {OpS2Blob, truncated}, "zstd garbage": {OpZstdBlob, []byte("not zstd at all")},
		"not a blob": {OpChunkEnd, valid},
	} {
		before := allocatedBytes()
		_, err := b.Decompress(c.op, c.in)
		var e *Error
		if err == nil || !errors.As(err, &e) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want an *Error wrapping ErrCorrupt", name, err)
		}
		if grew := allocatedBytes() - before; grew > 1<<20 {
			t.Errorf("%s: allocated %d bytes", name, grew)
		}
	}
	// A flipped byte either fails or yields other bytes; it never panics.
	_, _ = b.Decompress(OpS2Blob, flipped)
}
