package hash

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
)

func testSeed(t *testing.T) uint64 {
	seed := uint64(20240601) // fixed, so a run is reproducible; override to explore
	if s, err := strconv.ParseUint(getenv("HASH_TEST_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (rerun with HASH_TEST_SEED=%d)", seed, seed)
	return seed
}

// randValue is short most of the time, sometimes long enough to convert a
// listpack or to need its own page.
func randValue(r *rand.Rand) []byte {
	n := r.IntN(20)
	switch r.IntN(50) {
	case 0:
		n = 70
	case 1:
		n = bigEntry + 10
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return b
}

// checkModel compares h with the model map, field by field and by walks.
func checkModel(t *testing.T, h *Hash, model map[string]string) {
	t.Helper()
	if h.Len() != len(model) {
		t.Fatalf("len %d, model %d", h.Len(), len(model))
	}
	for f, v := range model {
		got, ok := h.Get([]byte(f))
		if !ok || string(got) != v {
			t.Fatalf("field %q: got %q %v, want %q", f, got, ok, v)
		}
	}
	seen := map[string]bool{}
	h.Range(func(f, v []byte) bool {
		if model[string(f)] != string(v) || seen[string(f)] {
			t.Fatalf("range: %q=%q unexpected", f, v)
		}
		seen[string(f)] = true
		return true
	})
	if len(seen) != len(model) {
		t.Fatalf("range saw %d of %d", len(seen), len(model))
	}
}

func TestHashModel(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 1))
	for round := 0; round < 20; round++ {
		h := New()
		model := map[string]string{}
		keys := 50 + r.IntN(3000)
		for op := 0; op < 8000; op++ {
			f := fmt.Sprintf("f%d", r.IntN(keys))
			switch r.IntN(4) {
			case 0, 1:
				v := randValue(r)
				_, had := model[f]
				if isNew := h.Set([]byte(f), v); isNew == had {
					t.Fatalf("set %q: new=%v had=%v", f, isNew, had)
				}
				model[f] = string(v)
			case 2:
				_, had := model[f]
				if h.Delete([]byte(f)) != had {
					t.Fatalf("delete %q", f)
				}
				delete(model, f)
			case 3:
				v, ok := h.Get([]byte(f))
				mv, had := model[f]
				if ok != had || string(v) != mv {
					t.Fatalf("get %q", f)
				}
			}
		}
		checkModel(t, h, model)
		c := h.Clone().(*Hash)
		checkModel(t, c, model)
	}
}

func TestHashEncodingBoundaries(t *testing.T) {
	h := New()
	for i := 0; i < int(MaxListpackEntries()); i++ {
		h.Set([]byte(strconv.Itoa(i)), []byte("v"))
	}
	if h.Encoding() != "listpack" {
		t.Fatalf("%d entries: %s", MaxListpackEntries(), h.Encoding())
	}
	h.Set([]byte("one more"), []byte("v"))
	if h.Encoding() != "hashtable" {
		t.Fatalf("%d entries: %s", MaxListpackEntries()+1, h.Encoding())
	}
	h2 := New()
	h2.Set([]byte("f"), bytes.Repeat([]byte("x"), int(MaxListpackValue())))
	if h2.Encoding() != "listpack" {
		t.Fatal("value of exactly MaxListpackValue converted")
	}
	h2.Set(bytes.Repeat([]byte("x"), int(MaxListpackValue())+1), nil)
	if h2.Encoding() != "hashtable" {
		t.Fatal("long field did not convert")
	}
	// Deleting never converts back.
	h2.Delete(bytes.Repeat([]byte("x"), int(MaxListpackValue())+1))
	if h2.Encoding() != "hashtable" || h2.Len() != 1 {
		t.Fatal("converted back")
	}
}

// TestMapScanGuarantee checks Redis's SCAN promise: fields present for the
// whole scan are returned, while the table grows and shrinks between steps.
func TestMapScanGuarantee(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 2))
	for round := 0; round < 10; round++ {
		m := &Map{}
		stable := map[string]bool{}
		for i := 0; i < 500+r.IntN(2000); i++ {
			f := fmt.Sprintf("stable%d", i)
			m.Set([]byte(f), []byte("v"))
			stable[f] = true
		}
		seen := map[string]bool{}
		var cursor uint64
		for {
			cursor = m.Scan(cursor, func(f, _ []byte) { seen[string(f)] = true })
			// Grow or shrink the table with up to 5000 other fields.
			add := r.IntN(2) == 0
			for k, n := 0, r.IntN(60); k < n; k++ {
				f := []byte(fmt.Sprintf("churn%d", r.IntN(5000)))
				if add {
					m.Set(f, []byte("x"))
				} else {
					m.Delete(f)
				}
			}
			if cursor == 0 {
				break
			}
		}
		for f := range stable {
			if !seen[f] {
				t.Fatalf("round %d: stable field %q never returned", round, f)
			}
		}
	}
}

// TestMapPagesCompact checks that heavy churn does not leak page memory.
func TestMapPagesCompact(t *testing.T) {
	m := &Map{}
	val := bytes.Repeat([]byte("v"), 40)
	for i := 0; i < 100000; i++ {
		m.Set([]byte(strconv.Itoa(i)), val)
	}
	full := m.Bytes()
	for round := 0; round < 5; round++ {
		for i := 0; i < 100000; i++ {
			if i%10 != 0 {
				m.Delete([]byte(strconv.Itoa(i)))
			}
		}
		for i := 0; i < 100000; i++ {
			if i%10 != 0 {
				m.Set([]byte(strconv.Itoa(i)), val)
			}
		}
	}
	if m.Bytes() > full*2 {
		t.Fatalf("after churn %d bytes, fresh %d", m.Bytes(), full)
	}
	var fields []string
	m.Range(func(f, _ []byte) bool { fields = append(fields, string(f)); return true })
	sort.Strings(fields)
	if len(fields) != 100000 {
		t.Fatalf("%d fields", len(fields))
	}
}

func BenchmarkHSet(b *testing.B) {
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte("field:" + strconv.Itoa(i))
	}
	val := []byte("value-value")
	h := New()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Set(keys[i&(len(keys)-1)], val)
	}
}

func BenchmarkHGet(b *testing.B) {
	for _, n := range []int{100, 1 << 16} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			keys := make([][]byte, n)
			h := New()
			for i := range keys {
				keys[i] = []byte("field:" + strconv.Itoa(i))
				h.Set(keys[i], []byte("value"))
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, ok := h.Get(keys[i%n]); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}
