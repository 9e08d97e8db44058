package rdb

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"
)

var writeCorpus = flag.Bool("write-corpus", false, "rewrite testdata/fuzz/FuzzDecode seeds")

// fuzzSeeds are small inputs covering every encoding and record.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	old, _ := oldFile(9)
	old = bytes.Replace(old, []byte(stringsRepeat("H", 17000)), nil, 1) // keep seeds small (now corrupt there: fine)
	seeds = append(seeds, old)
	old4, _ := oldFile(4)
	seeds = append(seeds, old4[:min(len(old4), 3000)])
	for i, typ := range []Type{TypeString, TypeList, TypeSet, TypeHash, TypeZSet, TypeStream} {
		ds := dataset{}
		r := testRandSeed(uint64(i + 1))
		ds[dbKey(0, "k")] = randValue(r, typ, false)
		ds[dbKey(3, "k2")] = randValue(r, typ, false)
		var b bytes.Buffer
		encodeDataset(NewEncoder(&b), ds)
		seeds = append(seeds, b.Bytes())
		p, _ := EncodeDump(func(e *Encoder) { encodeValue(e, "", ds[dbKey(0, "k")]) })
		seeds = append(seeds, p)
	}
	var lp listpack
	lp.reset()
	for _, s := range []string{"a", "-1", "5000", "70000", "9000000", "3000000000", "-9223372036854775808", stringsRepeat("x", 70), stringsRepeat("y", 5000)} {
		lp.appendString([]byte(s))
	}
	blob, _ := lp.finish()
	seeds = append(seeds, file(rec(byte(typeSetListpack), "s", string(blob))))
	seeds = append(seeds, file(rec(byte(typeListQuicklist2), "l", 2, quicklistPlain, "plain", quicklistPacked, string(blob))))
	seeds = append(seeds, AppendChunks(AppendChunk(nil, OpJournal, 2, []byte("j")), 1, rec(byte(typeString), "k", "v"), 3))
	var b Blobs
	_, s2blob, _ := b.Compress(bytes.Repeat(rec(byte(typeString), "k", stringsRepeat("v", 300)), 4))
	seeds = append(seeds, s2blob)
	return seeds
}

func stringsRepeat(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }

func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run with -write-corpus to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	os.MkdirAll(dir, 0o755)
	for i, s := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to every reader of the package: they
// must never panic, never allocate far beyond their input, and fail only
// with errors naming an offset.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		before := allocatedBytes()

		h := &checkedHandler{}
		err := NewDecoder(bytes.NewReader(in)).Decode(h)
		checkFuzzErr(t, "Decode", err, len(in))
		if err == nil && (h.err != nil || h.open) {
			t.Fatalf("Decode succeeded with bad call order: %v", h.err)
		}
		// The same bytes as a fragment, and with a valid header.
		checkFuzzErr(t, "DecodeFragment", NewDecoder(bytes.NewReader(in)).DecodeFragment(&checkedHandler{}), len(in))
		// In place, as a replica decodes its flows' baseline.
		inPlace := NewDecoder(nil)
		inPlace.ResetBytes(in)
		checkFuzzErr(t, "DecodeFragment in place", inPlace.DecodeFragment(&checkedHandler{}), len(in))
		withHeader := append([]byte("REDIS0011"), in...)
		checkFuzzErr(t, "Decode+header", NewDecoder(bytes.NewReader(withHeader)).Decode(&checkedHandler{}), len(withHeader))
		// As a DUMP payload, with its trailer made valid.
		p := append(bytes.Clone(in), 10, 0)
		p = appendCRC(p)
		if err := DecodeDump(p, &checkedHandler{}); err != nil && !errors.Is(err, ErrBadDataFormat) {
			t.Fatalf("DecodeDump: %v", err)
		}
		// As tagged chunks.
		cr := NewChunkReader(bytes.NewReader(in))
		for {
			_, err := cr.NextItem()
			if err != nil {
				var e *Error
				if err.Error() != "EOF" && !errors.As(err, &e) {
					t.Fatalf("chunks: %v", err)
				}
				break
			}
		}

		// As an S2 blob: bounded by the length it claims (MaxS2Blob).
		var blobs Blobs
		if frag, err := blobs.Decompress(OpS2Blob, in); err != nil {
			checkFuzzErr(t, "Blobs.Decompress", err, len(in))
		} else {
			checkFuzzErr(t, "blob fragment", NewDecoder(bytes.NewReader(frag)).DecodeFragment(&checkedHandler{}), len(frag))
			inPlace.ResetBytes(frag)
			checkFuzzErr(t, "blob fragment in place", inPlace.DecodeFragment(&checkedHandler{}), len(frag))
		}

		// Worst legitimate case: LZF expansion (89x) of the input, a few
		// decoder buffers, and the fuzzer's own garbage.
		if grew := allocatedBytes() - before; grew > uint64(4*lzfMaxRatio*len(in))+64<<20 {
			t.Fatalf("allocated %d bytes for %d bytes of input", grew, len(in))
		}
	})
}

// allocatedBytes reads the heap's cumulative allocations without the
// stop-the-world of runtime.ReadMemStats.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func appendCRC(p []byte) []byte {
	c := CRC64(0, p)
	for i := range 8 {
		p = append(p, byte(c>>(8*i)))
	}
	return p
}

func checkFuzzErr(t *testing.T, what string, err error, n int) {
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error without offset: %v", what, err)
	}
	if e.Offset < 0 || e.Offset > int64(n) {
		t.Fatalf("%s: offset %d outside input of %d bytes: %v", what, e.Offset, n, err)
	}
}
