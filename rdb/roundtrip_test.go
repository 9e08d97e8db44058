package rdb

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: time)")

func testRand(t testing.TB) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	return testRandSeed(seed)
}

func testRandSeed(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// randString returns strings that exercise every encoding: canonical and
// non-canonical integers, short, compressible and incompressible long.
func randString(r *rand.Rand, big bool) string {
	switch r.IntN(10) {
	case 0:
		return strconv.FormatInt(r.Int64N(1000)-500, 10)
	case 1:
		return strconv.FormatInt(int64(r.Uint64()), 10)
	case 2:
		return []string{"", "0", "-0", "007", "+1", "-", "1e3", " 1", "9223372036854775808", "-9223372036854775808", "2147483648", "-2147483649"}[r.IntN(12)]
	case 3:
		n := r.IntN(40) + 20
		if big {
			n = r.IntN(100000) + 1000
		}
		return string(bytes.Repeat([]byte{byte('a' + r.IntN(26))}, n))
	case 4:
		n := r.IntN(300)
		if big {
			n = r.IntN(70000)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return string(b)
	default:
		n := r.IntN(30)
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh0123456789:"[r.IntN(19)]
		}
		return string(b)
	}
}

func randMeta(r *rand.Rand) Meta {
	var m Meta
	if r.IntN(3) == 0 {
		m.ExpireAt = time.Now().UnixMilli() + r.Int64N(1e9) + 1e6
	}
	if r.IntN(5) == 0 {
		m.Idle, m.HasIdle = r.Uint64N(1e6), true
	} else if r.IntN(5) == 0 {
		m.Freq, m.HasFreq = uint8(r.UintN(256)), true
	}
	return m
}

func randValue(r *rand.Rand, t Type, big bool) *value {
	n := r.IntN(20) + 1
	if big {
		n = r.IntN(3000) + 200
	}
	v := &value{Type: t, Meta: randMeta(r)}
	switch t {
	case TypeString:
		v.Str = randString(r, big)
	case TypeList:
		for range n {
			v.List = append(v.List, randString(r, false))
		}
	case TypeSet:
		v.Set = map[string]bool{}
		for range n {
			v.Set[randString(r, false)] = true
		}
	case TypeHash:
		v.Hash = map[string]string{}
		for range n {
			v.Hash[randString(r, false)] = randString(r, false)
		}
	case TypeZSet:
		v.ZSet = map[string]float64{}
		for range n {
			s := r.NormFloat64() * 1e6
			switch r.IntN(8) {
			case 0:
				s = math.Inf(1)
			case 1:
				s = math.Inf(-1)
			case 2:
				s = float64(r.IntN(100))
			}
			v.ZSet[randString(r, false)] = s
		}
	case TypeStream:
		v.Stream = randStream(r, n-1)
	}
	return v
}

func randStream(r *rand.Rand, n int) *streamValue {
	s := &streamValue{}
	id := StreamID{Ms: uint64(r.Int64N(1e12)), Seq: 0}
	fields := []string{"temp", "hum", "1", "x"}
	for i := range n {
		if r.IntN(3) == 0 {
			id.Ms += uint64(r.IntN(1000)) + 1
			id.Seq = uint64(r.IntN(5))
		} else {
			id.Seq++
		}
		var fv []string
		if r.IntN(4) == 0 {
			for j := range r.IntN(4) + 1 {
				fv = append(fv, fmt.Sprintf("f%d-%d", i, j), randString(r, false))
			}
		} else {
			for _, f := range fields[:1+r.IntN(len(fields))] {
				fv = append(fv, f, randString(r, false))
			}
		}
		s.Entries = append(s.Entries, streamEntry{ID: id, FV: fv})
	}
	s.Meta = StreamMeta{Length: uint64(n), LastID: id, MaxDeletedID: StreamID{1, 2}, EntriesAdded: uint64(n + 3)}
	if n > 0 {
		s.Meta.FirstID = s.Entries[0].ID
	}
	for g := range r.IntN(3) {
		gv := groupValue{Name: fmt.Sprintf("group%d", g), LastID: id, EntriesRead: int64(r.IntN(n + 1))}
		if r.IntN(3) == 0 {
			gv.EntriesRead = -1
		}
		var pel []StreamID
		nc := r.IntN(3)
		for _, e := range s.Entries {
			if nc > 0 && r.IntN(3) == 0 { // every PEL entry needs an owner
				pel = append(pel, e.ID)
				gv.Pending = append(gv.Pending, StreamPending{ID: e.ID, DeliveryTime: int64(r.Uint64N(1 << 42)), DeliveryCount: r.Uint64N(10) + 1})
			}
		}
		for c := range nc {
			seen := int64(r.Uint64N(1 << 42))
			gv.Consumers = append(gv.Consumers, consumerValue{Name: fmt.Sprintf("c%d", c), SeenTime: seen, Active: seen})
		}
		if nc > 0 { // hand the PEL out to consumers
			for _, id := range pel {
				c := &gv.Consumers[r.IntN(nc)]
				c.Pending = append(c.Pending, id)
			}
		}
		s.Groups = append(s.Groups, gv)
	}
	s.Meta.Groups = uint64(len(s.Groups))
	return s
}

func randDataset(r *rand.Rand, keys int, bigs bool) dataset {
	ds := dataset{}
	types := []Type{TypeString, TypeList, TypeSet, TypeHash, TypeZSet, TypeStream}
	for i := range keys {
		db := uint64(r.IntN(3) * r.IntN(8))
		t := types[r.IntN(len(types))]
		ds[dbKey(db, fmt.Sprintf("%s:%d:%s", t, i, randString(r, false)))] = randValue(r, t, bigs && r.IntN(4) == 0)
	}
	return ds
}

func decodeAll(t testing.TB, b []byte) (*collector, error) {
	c := newCollector(t)
	err := NewDecoder(bytes.NewReader(b)).Decode(c)
	return c, err
}

func TestRoundTrip(t *testing.T) {
	r := testRand(t)
	for _, tc := range []struct {
		name string
		keys int
		big  bool
	}{{"small", 300, false}, {"big", 60, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ds := randDataset(r, tc.keys, tc.big)
			var out bytes.Buffer
			e := NewEncoder(&out)
			if err := encodeDataset(e, ds); err != nil {
				t.Fatal(err)
			}
			c, err := decodeAll(t, out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if d := diffDatasets(ds, c.data); d != "" {
				t.Fatal(d)
			}
			if c.aux["redis-ver"] != "7.0.15" || c.aux["redis-bits"] != "64" {
				t.Fatalf("aux %v", c.aux)
			}
			// Uncompressed, and shipped in chunks through TakeBytes.
			e = NewEncoder(nil)
			e.SetCompression(false)
			var chunks bytes.Buffer
			e.WriteHeader()
			for k, v := range ds {
				e.SelectDB(0)
				encodeValue(e, k, v)
				if e.Len() > 4096 {
					chunks.Write(e.TakeBytes())
				}
			}
			if err := e.WriteEOF(); err != nil {
				t.Fatal(err)
			}
			chunks.Write(e.TakeBytes())
			c, err = decodeAll(t, chunks.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if len(c.data) != len(ds) {
				t.Fatalf("%d keys, want %d", len(c.data), len(ds))
			}
		})
	}
}

func TestDumpRoundTrip(t *testing.T) {
	r := testRand(t)
	for _, typ := range []Type{TypeString, TypeList, TypeSet, TypeHash, TypeZSet, TypeStream} {
		for _, big := range []bool{false, true} {
			v := randValue(r, typ, big)
			v.Meta = Meta{}
			p, err := EncodeDump(func(e *Encoder) { encodeValue(e, "ignored", v) })
			if err != nil {
				t.Fatal(err)
			}
			c := newCollector(t)
			if err := DecodeDump(p, c); err != nil {
				t.Fatalf("%v: %v", typ, err)
			}
			if d := diffValue(v, c.data["0:"]); d != "" {
				t.Fatalf("%v: %s", typ, d)
			}
			bad := bytes.Clone(p)
			bad[len(bad)/2] ^= 1
			if err := DecodeDump(bad, NopHandler{}); err != ErrDumpPayload {
				t.Fatalf("flipped bit: %v", err)
			}
		}
	}
}
