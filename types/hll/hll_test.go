package hll

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
)

func addRange(t *testing.T, v []byte, prefix string, from, to int) []byte {
	t.Helper()
	var elems [][]byte
	for i := from; i < to; i++ {
		elems = append(elems, []byte(prefix+strconv.Itoa(i)))
	}
	v, _, err := Add(v, elems)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestAgainstRedis replays PFADD of "e0", "e1", ... in batches of 1000 and
// checks PFCOUNT and the GET bytes (after PFCOUNT cached the cardinality).
// The expected values were captured from redis-server 7.0.15 running the
// same commands; they cover sparse values, the promotion to dense past
// hll-sparse-max-bytes 3000, and dense values.
func TestAgainstRedis(t *testing.T) {
	want := []struct {
		n      int
		card   uint64
		dense  bool
		length int
		sha    string
	}{
		{1, 1, false, 21, "ccda8ba82764c30e591077812417c1f3a165c993cdaba7a6c5c185325d6745c5"},
		{2, 2, false, 24, "92b278a2c210952b8d493fc36642e67ff1c1fddb0a0fffd6ce0217f31c8cc207"},
		{3, 3, false, 27, "20fad011f1c9cf449235924a364c8128399f8074d7cff4d5df2036d0f0c2cbdd"},
		{10, 10, false, 48, "0bba112db5cc118cf31893908d2e54640bdf4049ee589c6fbf8d90df0fd3c91a"},
		{100, 100, false, 285, "aebee27e50c672722325ed27d2acb1011cc7138f9a0f43d52abc23308a822a44"},
		{200, 200, false, 513, "1f40af84180704c352389436fa6ad1462ac651895078d99c5ee8ddf80444434a"},
		{500, 506, false, 1068, "70c1bb138b0e357f77f72a59b77602c42fe811d4f4f681c0e0466a4a667867e2"},
		{1000, 1008, false, 1906, "ab6313e24c05ff993730105e09ef76d5c0c4fcde58406d6a29d1889220a056e4"},
		{2000, 2000, true, DenseSize, "934a6aaa45ebe9f4d7eb83d8de87a5e1a80bedb95a800a5d53c7008670f21c56"},
		{3000, 2979, true, DenseSize, "a79c6647dea1e8570562e201a1bc6571d88845e7fb45f82fd0ea810e49c9d5ff"},
		{5000, 4968, true, DenseSize, "bd470063c39f632ff0572b22d3ae558cdc523a5ae6f47e7324ed636dcc84e2ec"},
		{10000, 9973, true, DenseSize, "c44e2d26f9f332c8f4369b82fc1a4a99449b59ddf9337f9680ccdd66872ca7b5"},
		{100000, 100853, true, DenseSize, "548dba672576d8a299d51943c2728e21beda0aea57391bd87567dba08eed8e4e"},
	}
	v := New()
	next := 0
	for _, w := range want {
		for next < w.n {
			end := min(w.n, next+1000)
			v = addRange(t, v, "e", next, end)
			next = end
		}
		card, changed, err := Count(v)
		if err != nil || !changed || card != w.card {
			t.Fatalf("n=%d: Count = %d %v %v, redis %d", w.n, card, changed, err, w.card)
		}
		if again, changed, _ := Count(v); again != card || changed {
			t.Fatalf("n=%d: cached Count = %d %v", w.n, again, changed)
		}
		if IsDense(v) != w.dense || len(v) != w.length || digest(v) != w.sha {
			t.Fatalf("n=%d: dense %v len %d sha %s; redis: %v %d %s", w.n, IsDense(v), len(v), digest(v), w.dense, w.length, w.sha)
		}
	}
}

// TestMergeAgainstRedis checks PFMERGE's destination bytes and PFCOUNT of
// several keys. Captured from redis-server 7.0.15: a = PFADD of x0..x49,
// b = y0..y299, c = z0..z2999, one element per PFADD, then
// PFMERGE d1 a; PFMERGE d2 a b; PFMERGE d3 a c; PFMERGE a b; PFMERGE d4;
// PFCOUNT a b c d3.
func TestMergeAgainstRedis(t *testing.T) {
	mk := func(prefix string, n int) []byte {
		v := New()
		for i := 0; i < n; i++ {
			v = addRange(t, v, prefix, i, i+1)
		}
		return v
	}
	vals := map[string][]byte{"a": mk("x", 50), "b": mk("y", 300), "c": mk("z", 3000)}
	cases := []struct {
		keys   []string
		card   uint64
		length int
		sha    string
	}{
		{[]string{"d1", "a"}, 50, 158, "19c54181d66ad54d678a3486e5f2fa5979ced1ca2f44b10e554bf8c960fe73bf"},
		{[]string{"d2", "a", "b"}, 351, 783, "c8487ab13ebcf788626de164cf949626cbb85a760c2cb24279ad4eb18ceee37f"},
		{[]string{"d3", "a", "c"}, 3035, DenseSize, "2b6ed9312ebfbc0c21bee2ec2659bf8ef3ca40ea48596e726500d01e713bcb24"},
		{[]string{"a", "b"}, 351, 783, "c8487ab13ebcf788626de164cf949626cbb85a760c2cb24279ad4eb18ceee37f"},
		{[]string{"d4"}, 0, 18, "a548e8daa487445abcc90ca3151b4a3d7d0bdd6282090ac09e86de8355deaad8"},
	}
	for _, c := range cases {
		var r RawRegisters
		dense := false
		for _, k := range c.keys {
			if v, ok := vals[k]; ok {
				if err := r.Merge(v); err != nil {
					t.Fatal(err)
				}
				dense = dense || IsDense(v)
			}
		}
		out, err := Store(vals[c.keys[0]], &r, dense)
		if err != nil {
			t.Fatal(err)
		}
		vals[c.keys[0]] = out
		sha := digest(out) // GET right after PFMERGE: the cache is stale
		card, _, _ := Count(out)
		if card != c.card || len(out) != c.length || sha != c.sha {
			t.Fatalf("PFMERGE %v: card %d len %d sha %s; redis %d %d %s", c.keys, card, len(out), sha, c.card, c.length, c.sha)
		}
	}
	var all RawRegisters
	for _, k := range []string{"a", "b", "c", "d3"} {
		all.Merge(vals[k])
	}
	if got := all.Count(); got != 3332 {
		t.Fatalf("PFCOUNT a b c d3 = %d, redis 3332", got)
	}
}

func TestValidAndCorrupt(t *testing.T) {
	v := New()
	// "HYLL", sparse, unused, card 0, XZERO:16384 — redis-server's bytes
	// for PFADD k (no elements) before the cache is invalidated.
	if want := []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"); !bytes.Equal(v, want) {
		t.Fatalf("New = %q", v)
	}
	for _, bad := range []string{"", "HYLL", "HYLX\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff",
		"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"} {
		if Valid([]byte(bad)) {
			t.Errorf("Valid(%q)", bad)
		}
	}
	// A sparse value whose opcodes cover too few registers.
	short := []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe")
	if !Valid(short) {
		t.Fatal("short sparse value must pass the header check")
	}
	if _, _, err := Count(short); err != ErrInvalid {
		t.Fatalf("Count = %v", err)
	}
	var r RawRegisters
	if err := r.Merge(short); err != ErrInvalid {
		t.Fatalf("Merge = %v", err)
	}
}

func TestMurmur(t *testing.T) {
	// Every tail length goes through the same code as the 8-byte blocks.
	seen := map[uint64]bool{}
	for n := 0; n < 20; n++ {
		h := MurmurHash64A(bytes.Repeat([]byte{'a'}, n), 0xadc83b19)
		if seen[h] {
			t.Fatalf("collision at length %d", n)
		}
		seen[h] = true
	}
}

func BenchmarkAddDense(b *testing.B) {
	v, _ := toDense(New())
	elem := [][]byte{[]byte("element:000000")}
	for i := 0; b.Loop(); i++ {
		copy(elem[0][8:], strconv.Itoa(i%1000000))
		v, _, _ = Add(v, elem)
	}
}

// TestWouldAdd: WouldAdd(v, elems) is true exactly when Add changes v,
// sparse and dense, for elements new and already counted.
func TestWouldAdd(t *testing.T) {
	v := New()
	var unchanged [2]int // sparse, dense
	for i := 0; i < 6000; i++ {
		e := []byte("e" + strconv.Itoa(i))
		// A new element, then two counted already (no change).
		for _, elems := range [][][]byte{{e}, {e, []byte("e" + strconv.Itoa(i/2))}} {
			would := WouldAdd(v, elems)
			before := append([]byte(nil), v...)
			var changed bool
			var err error
			v, changed, err = Add(v, elems)
			if err != nil {
				t.Fatal(err)
			}
			if would != changed {
				t.Fatalf("step %d (dense %v): WouldAdd %v, Add changed %v", i, IsDense(before), would, changed)
			}
			if !changed {
				if !bytes.Equal(before, v) {
					t.Fatalf("step %d: Add reported no change but changed the value", i)
				}
				unchanged[boolIndex(IsDense(v))]++
			}
		}
	}
	if unchanged[0] == 0 || unchanged[1] == 0 {
		t.Fatalf("unchanged adds: %d sparse, %d dense; want both", unchanged[0], unchanged[1])
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
