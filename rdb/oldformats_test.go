package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Builders for encodings Redis 7 no longer writes but still loads:
// ziplists, zipmaps, intsets, quicklist v1, v1 zset scores, v1 streams,
// second-resolution expiries, files without checksum.

func zlEntry(prevLen int, s string) []byte {
	var b []byte
	if prevLen < 254 {
		b = append(b, byte(prevLen))
	} else {
		b = append(b, 254)
		b = binary.LittleEndian.AppendUint32(b, uint32(prevLen))
	}
	if v, ok := canonicalInt([]byte(s)); ok {
		switch {
		case v >= 0 && v <= 12:
			return append(b, 0xF1+byte(v))
		case v >= math.MinInt8 && v <= math.MaxInt8:
			return append(b, 0xFE, byte(v))
		case v >= math.MinInt16 && v <= math.MaxInt16:
			return append(b, 0xC0, byte(v), byte(v>>8))
		case v >= -1<<23 && v < 1<<23:
			return append(b, 0xF0, byte(v), byte(v>>8), byte(v>>16))
		case v >= math.MinInt32 && v <= math.MaxInt32:
			b = append(b, 0xD0)
			return binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = append(b, 0xE0)
			return binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	n := len(s)
	switch {
	case n < 64:
		b = append(b, byte(n))
	case n < 16384:
		b = append(b, 0x40|byte(n>>8), byte(n))
	default:
		b = append(b, 0x80)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	return append(b, s...)
}

func buildZiplist(elems ...string) []byte {
	b := make([]byte, zlHeaderSize)
	prev, tail := 0, zlHeaderSize
	for _, s := range elems {
		tail = len(b)
		e := zlEntry(prev, s)
		b = append(b, e...)
		prev = len(e)
	}
	b = append(b, zlEnd)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(tail))
	binary.LittleEndian.PutUint16(b[8:], uint16(min(len(elems), 0xFFFF)))
	return b
}

func buildZipmap(fv ...string) []byte {
	b := []byte{byte(len(fv) / 2)}
	zmLen := func(n int) {
		if n < 254 {
			b = append(b, byte(n))
		} else {
			b = append(b, 254)
			b = binary.LittleEndian.AppendUint32(b, uint32(n))
		}
	}
	for i := 0; i < len(fv); i += 2 {
		zmLen(len(fv[i]))
		b = append(b, fv[i]...)
		zmLen(len(fv[i+1]))
		b = append(b, 2) // two free bytes
		b = append(b, fv[i+1]...)
		b = append(b, 'x', 'y')
	}
	return append(b, 0xFF)
}

func buildIntset(width int, vals ...int64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(width))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(vals)))
	for _, v := range vals {
		switch width {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return b
}

// oldFile writes an RDB file of the given version with every old
// encoding, and returns it with the dataset it holds.
func oldFile(version int) ([]byte, dataset) {
	ds := dataset{}
	e := NewEncoder(nil)
	e.buf = fmt.Appendf(e.buf, "REDIS%04d", version)
	e.SelectDB(0)
	key := func(t byte, k string, v *value) {
		e.buf = append(e.buf, t)
		e.appendString([]byte(k))
		ds[dbKey(0, k)] = v
	}
	long := strings.Repeat("long-element-", 30) // > 254 bytes: 5-byte prevlens
	huge := strings.Repeat("H", 17000)          // 32-bit ziplist string length
	lst := []string{"a", "0", "12", "13", "-1", "127", "-128", "300", "-70000", "8000000", "2147483647", "-9223372036854775808", long, "after-long", huge, ""}
	key(typeListZiplist, "l:ziplist", &value{Type: TypeList, List: lst})
	e.appendBlob(buildZiplist(lst...))

	var ql []string
	key(typeListQuicklist, "l:quicklist", nil)
	e.appendLen(3)
	for n := range 3 {
		node := seq(50, fmt.Sprintf("node%d-%%d", n))
		ql = append(ql, node...)
		e.appendBlob(buildZiplist(node...))
	}
	ds[dbKey(0, "l:quicklist")] = &value{Type: TypeList, List: ql}

	for _, w := range []int{2, 4, 8} {
		vals := []int64{-5, 0, 1, 100}
		if w >= 4 {
			vals = append(vals, 100000)
		}
		if w == 8 {
			vals = append(vals, 1<<40)
		}
		set := map[string]bool{}
		for _, v := range vals {
			set[strconv.FormatInt(v, 10)] = true
		}
		key(typeSetIntset, fmt.Sprintf("set:intset%d", w), &value{Type: TypeSet, Set: set})
		e.appendBlob(buildIntset(w, vals...))
	}

	zs := []string{"a", "1", "b", "2.5", "c", "-3", "d", "inf", "e", "100000"}
	zv := &value{Type: TypeZSet, ZSet: map[string]float64{}}
	for i := 0; i < len(zs); i += 2 {
		zv.ZSet[zs[i]], _ = strconv.ParseFloat(zs[i+1], 64)
	}
	key(typeZSetZiplist, "z:ziplist", zv)
	e.appendBlob(buildZiplist(zs...))

	hs := []string{"f1", "v1", "n", "42", "7", "seven", "long", long}
	hv := &value{Type: TypeHash, Hash: map[string]string{}}
	for i := 0; i < len(hs); i += 2 {
		hv.Hash[hs[i]] = hs[i+1]
	}
	key(typeHashZiplist, "h:ziplist", hv)
	e.appendBlob(buildZiplist(hs...))
	key(typeHashZipmap, "h:zipmap", hv)
	e.appendBlob(buildZipmap(hs...))

	// v1 zset: scores as strings, 254/255 for infinities.
	key(typeZSet, "z:v1", &value{Type: TypeZSet, ZSet: map[string]float64{"a": 1.5, "b": math.Inf(1), "c": math.Inf(-1), "d": -2}})
	e.appendLen(4)
	e.appendString([]byte("a"))
	e.buf = append(e.buf, 3, '1', '.', '5')
	e.appendString([]byte("b"))
	e.buf = append(e.buf, 254)
	e.appendString([]byte("c"))
	e.buf = append(e.buf, 255)
	e.appendString([]byte("d"))
	e.buf = append(e.buf, 2, '-', '2')

	// Expiry in seconds.
	e.buf = append(e.buf, opExpireTime)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, 2000000000)
	key(typeString, "s:expsec", &value{Type: TypeString, Str: "x", Meta: Meta{ExpireAt: 2000000000000}})
	e.appendString([]byte("x"))

	if version >= 9 {
		// A v1 stream (RDB_TYPE_STREAM_LISTPACKS, Redis 5–6).
		sv := &streamValue{Entries: []streamEntry{
			{ID: StreamID{5, 0}, FV: []string{"a", "1"}},
			{ID: StreamID{5, 1}, FV: []string{"a", "2"}},
			{ID: StreamID{6, 0}, FV: []string{"b", "x", "c", "y"}},
		}}
		sv.Meta = StreamMeta{Length: 3, LastID: StreamID{6, 0}, FirstID: StreamID{5, 0}, EntriesAdded: 3, Groups: 1}
		sv.Groups = []groupValue{{Name: "g", LastID: StreamID{5, 1}, EntriesRead: -1,
			Pending:   []StreamPending{{ID: StreamID{5, 0}, DeliveryTime: 1700000000000, DeliveryCount: 2}},
			Consumers: []consumerValue{{Name: "c", SeenTime: 1700000000123, Active: 1700000000123, Pending: []StreamID{{5, 0}}}},
		}}
		key(typeStreamListpacks, "x:v1", &value{Type: TypeStream, Stream: sv})
		// Borrow the node from a v2 encoding of the same entries.
		enc := NewEncoder(nil)
		enc.dump = true
		enc.BeginStream(nil, 3, Meta{})
		for _, en := range sv.Entries {
			fv := make([][]byte, len(en.FV))
			for i := range en.FV {
				fv[i] = []byte(en.FV[i])
			}
			enc.StreamEntry(en.ID, fv)
		}
		nodes := enc.buf[2:] // type byte, node count 1
		e.appendLen(1)
		e.buf = append(e.buf, nodes...)
		e.appendLen(3)
		e.appendID(StreamID{6, 0})
		e.appendLen(1) // groups
		e.appendString([]byte("g"))
		e.appendID(StreamID{5, 1})
		e.appendLen(1)
		e.appendRawID(StreamID{5, 0})
		e.buf = binary.LittleEndian.AppendUint64(e.buf, 1700000000000)
		e.appendLen(2)
		e.appendLen(1) // consumers
		e.appendString([]byte("c"))
		e.buf = binary.LittleEndian.AppendUint64(e.buf, 1700000000123)
		e.appendLen(1)
		e.appendRawID(StreamID{5, 0})
	}
	e.buf = append(e.buf, opEOF)
	if version >= 5 {
		e.buf = binary.LittleEndian.AppendUint64(e.buf, CRC64(0, e.buf))
	}
	return e.TakeBytes(), ds
}

func TestOldEncodings(t *testing.T) {
	for _, version := range []int{3, 4, 6, 9} {
		t.Run(fmt.Sprint(version), func(t *testing.T) {
			b, want := oldFile(version)
			c, err := decodeAll(t, b)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffDatasets(want, c.data); d != "" {
				t.Fatal(d)
			}
			if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
				needRedis(t)
			}
			// Real Redis must read the file the same way.
			dir := t.TempDir()
			path := filepath.Join(dir, "old.rdb")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			checkRDB(t, path)
			s := startRedis(t, dir, "old.rdb")
			c2, err := decodeAll(t, s.save())
			if err != nil {
				t.Fatal(err)
			}
			normalize(want)
			normalize(c2.data)
			for _, v := range want {
				if v.Stream != nil {
					for i := range v.Stream.Groups {
						// Redis 7 estimates what older files lack.
						v.Stream.Groups[i].EntriesRead = c2.data[dbKey(0, "x:v1")].Stream.Groups[i].EntriesRead
					}
				}
			}
			if d := diffDatasets(want, c2.data); d != "" {
				t.Fatalf("%s\n%s", d, s.log())
			}
		})
	}
}

var _ = bytes.Equal
