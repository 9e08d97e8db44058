package bitmap

import (
	"bytes"
	"math/bits"
	"math/rand"
	"testing"
)

// naiveCount counts set bits in the bit range [from, to] of val, one bit at
// a time, for cross-checking the word-at-a-time Count.
func naiveCount(val []byte, from, to int64) int64 {
	var n int64
	for i := from; i <= to; i++ {
		n += int64(Bit(val, uint64(i)))
	}
	return n
}

func TestCountMatchesNaive(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for range 2000 {
		val := make([]byte, r.Intn(100))
		r.Read(val)
		nbits := int64(len(val)) * 8
		if nbits == 0 {
			continue
		}
		from := r.Int63n(nbits)
		to := from + r.Int63n(nbits-from)
		got := Count(val, Span{Start: from, End: to, HasStart: true, HasEnd: true, Bits: true})
		if want := naiveCount(val, from, to); got != want {
			t.Fatalf("Count(%x, bits %d..%d) = %d, want %d", val, from, to, got, want)
		}
		if got, want := Count(val, Span{}), naiveCount(val, 0, nbits-1); got != want {
			t.Fatalf("Count(%x) = %d, want %d", val, got, want)
		}
	}
}

func TestPosMatchesNaive(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for range 2000 {
		val := bytes.Repeat([]byte{0xff}, r.Intn(40))
		for i := r.Intn(3); i > 0 && len(val) > 0; i-- {
			val[r.Intn(len(val))] = byte(r.Intn(256))
		}
		bit := r.Intn(2)
		got := Pos(val, bit, Span{})
		want := int64(-1)
		for i := range int64(len(val)) * 8 {
			if Bit(val, uint64(i)) == bit {
				want = i
				break
			}
		}
		if want == -1 && bit == 0 && len(val) > 0 { // "" answers -1 in Redis
			want = int64(len(val)) * 8
		}
		if got != want {
			t.Fatalf("Pos(%x, %d) = %d, want %d", val, bit, got, want)
		}
	}
}

func TestApplyReusesDst(t *testing.T) {
	dst := make([]byte, 0, 64)
	dst = append(dst, "garbage garbage"...)
	got := Apply(Or, dst[:0], [][]byte{[]byte("a"), nil, []byte("\x00\x00b")})
	if string(got) != "a\x00b" {
		t.Fatalf("Apply = %q", got)
	}
	if &got[0] != &dst[0] {
		t.Fatal("Apply did not reuse dst")
	}
}

func TestSetRangeZeroesSpareCapacity(t *testing.T) {
	val := append(make([]byte, 0, 16), "ab"...)
	val[:cap(val)][5] = 'x' // stale byte beyond len
	got, err := SetRange(val, 8, []byte("z"))
	if err != nil || string(got) != "ab\x00\x00\x00\x00\x00\x00z" {
		t.Fatalf("SetRange = %q, %v", got, err)
	}
}

func TestBitfieldExecAllocs(t *testing.T) {
	p, err := ParseBitfield([][]byte{[]byte("incrby"), []byte("u8"), []byte("#3"), []byte("1"), []byte("get"), []byte("i5"), []byte("0")}, false)
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 8)
	results := make([]Result, 0, 4)
	if n := testing.AllocsPerRun(100, func() { val, results = p.Exec(val, results[:0]) }); n != 0 {
		t.Fatalf("Exec allocates %v times", n)
	}
}

func BenchmarkCount1MiB(b *testing.B) {
	val := make([]byte, 1<<20)
	rand.New(rand.NewSource(1)).Read(val)
	b.SetBytes(int64(len(val)))
	b.ReportAllocs()
	var n int64
	for b.Loop() {
		n += Count(val, Span{})
	}
	_ = bits.OnesCount64(uint64(n))
}

func BenchmarkCountBitRange1MiB(b *testing.B) {
	val := make([]byte, 1<<20)
	rand.New(rand.NewSource(1)).Read(val)
	s := Span{Start: 3, End: int64(len(val))*8 - 5, HasStart: true, HasEnd: true, Bits: true}
	b.SetBytes(int64(len(val)))
	b.ReportAllocs()
	for b.Loop() {
		Count(val, s)
	}
}

func BenchmarkPos1MiB(b *testing.B) {
	val := bytes.Repeat([]byte{0xff}, 1<<20)
	b.SetBytes(int64(len(val)))
	b.ReportAllocs()
	for b.Loop() {
		Pos(val, 0, Span{})
	}
}

func BenchmarkApplyXor1MiB(b *testing.B) {
	x, y := make([]byte, 1<<20), make([]byte, 1<<20)
	dst := make([]byte, 0, 1<<20)
	b.SetBytes(int64(len(x)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Apply(Xor, dst, [][]byte{x, y})
	}
}
