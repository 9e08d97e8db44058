package rdb

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRedisDumpRestore DUMPs every key of every encoding from Redis,
// decodes it, encodes it again and RESTOREs that (with deep payload
// sanitization on) under a new name; Redis must then hold the same value.
func TestRedisDumpRestore(t *testing.T) {
	dir := t.TempDir()
	s := startRedis(t, dir, "dump.rdb", "--sanitize-dump-payload", "yes")
	want := fillAll(s)
	s.do("SELECT", "0")
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if k[0] != '0' {
			continue
		}
		name := k[2:]
		payload := s.do("DUMP", name).(string)
		c := newCollector(t)
		if err := DecodeDump([]byte(payload), c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := c.data["0:"]
		w := *want[k]
		w.Meta = Meta{}
		normalize(dataset{"": &w, "x": got})
		if d := diffValue(&w, got); d != "" {
			t.Fatalf("%s: %s", name, d)
		}
		ours, err := EncodeDump(func(e *Encoder) { encodeValue(e, "", got) })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.try("RESTORE", "copy:"+name, "0", string(ours)); err != nil {
			t.Fatalf("RESTORE of our payload for %s: %v", name, err)
		}
		c2 := newCollector(t)
		if err := DecodeDump([]byte(s.do("DUMP", "copy:"+name).(string)), c2); err != nil {
			t.Fatal(err)
		}
		again := c2.data["0:"]
		normalize(dataset{"x": again})
		if d := diffValue(got, again); d != "" {
			t.Fatalf("%s after RESTORE: %s", name, d)
		}
	}
	// Redis refuses a payload with a wrong checksum with the same words.
	p, _ := EncodeDump(func(e *Encoder) { e.String(nil, []byte("v"), Meta{}) })
	p[len(p)-1] ^= 0xff
	if _, err := s.try("RESTORE", "bad", "0", string(p)); err == nil || err.Error() != ErrDumpPayload.Error() {
		t.Fatalf("Redis says %v, we say %v", err, ErrDumpPayload)
	}
	if err := DecodeDump(p, NopHandler{}); err != ErrDumpPayload {
		t.Fatal(err)
	}
}

// TestEncoderIntoRedis writes random datasets, big values included, that
// redis-check-rdb accepts and Redis loads with the same content.
func TestEncoderIntoRedis(t *testing.T) {
	needRedis(t)
	r := testRand(t)
	ds := randDataset(r, 400, true)
	for _, v := range ds { // Redis keeps LRU/LFU data only under a matching policy
		v.Meta.Idle, v.Meta.HasIdle, v.Meta.Freq, v.Meta.HasFreq = 0, false, 0, false
		if v.Stream != nil {
			for gi := range v.Stream.Groups { // RDB 10 has no active time
				for ci := range v.Stream.Groups[gi].Consumers {
					c := &v.Stream.Groups[gi].Consumers[ci]
					c.Active = c.SeenTime
				}
			}
		}
	}
	var out bytes.Buffer
	if err := encodeDataset(NewEncoder(&out), ds); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ours.rdb")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkRDB(t, path)
	s := startRedis(t, dir, "ours.rdb")
	c, err := decodeAll(t, s.save())
	if err != nil {
		t.Fatal(err)
	}
	// Redis sorts PELs and consumers; our random model does too after normalize.
	want := dataset{}
	for k, v := range ds {
		want[k] = v
	}
	normalizeKeepTimes(want)
	normalizeKeepTimes(c.data)
	if d := diffDatasets(want, c.data); d != "" {
		t.Fatalf("%s\n%s", d, s.log())
	}
}

func normalizeKeepTimes(ds dataset) {
	for _, v := range ds {
		if v.Stream == nil {
			continue
		}
		for gi := range v.Stream.Groups {
			g := &v.Stream.Groups[gi]
			slicesSortPending(g.Pending)
			slicesSortConsumers(g.Consumers)
			for ci := range g.Consumers {
				slices.SortFunc(g.Consumers[ci].Pending, func(a, b StreamID) int {
					if a.Less(b) {
						return -1
					}
					if b.Less(a) {
						return 1
					}
					return 0
				})
			}
		}
	}
}

// rebuildListpack writes the entries of lp again with our writer.
func rebuildListpack(t *testing.T, lp []byte) []byte {
	var out listpack
	out.reset()
	err := lpIterate(lp, func(e entry) error {
		if e.isInt {
			out.appendInt(e.num)
		} else {
			out.appendString(e.str)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := out.finish()
	return b
}

// TestListpackBytesMatchRedis rebuilds every listpack inside Redis's DUMP
// payloads (hash, zset, quicklist nodes, stream nodes) and compares bytes.
func TestListpackBytesMatchRedis(t *testing.T) {
	dir := t.TempDir()
	s := startRedis(t, dir, "dump.rdb")
	fillAll(s)
	s.do("SELECT", "0")
	s.do("CONFIG", "SET", "rdbcompression", "no")
	checked := 0
	for _, key := range []string{"h:small", "z:small", "l:small", "l:big", "l:plain", "x:s", "set:ints"} {
		p := []byte(s.do("DUMP", key).(string))
		d := NewDecoder(bytes.NewReader(p[:len(p)-10]))
		typ, _ := d.r.readByte()
		var blobs [][]byte
		readBlob := func() {
			b, err := d.readString(&d.blob)
			if err != nil {
				t.Fatal(err)
			}
			blobs = append(blobs, bytes.Clone(b))
		}
		switch typ {
		case typeHashListpack, typeZSetListpack:
			readBlob()
		case typeListQuicklist2:
			n, _ := d.length()
			for range n {
				c, _ := d.length()
				readBlob()
				if c == quicklistPlain {
					blobs = blobs[:len(blobs)-1]
				}
			}
		case typeStreamListpacks2:
			n, _ := d.length()
			for range n {
				d.readString(&d.field)
				readBlob()
			}
		default:
			continue
		}
		for _, b := range blobs {
			if got := rebuildListpack(t, b); !bytes.Equal(got, b) {
				t.Fatalf("%s: listpack differs from Redis's\nredis % x\nours  % x", key, b, got)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("only %d listpacks checked", checked)
	}
}

// TestStreamPayloadMatchesRedis encodes a stream as Redis holds it and
// expects Redis's DUMP payload byte for byte.
func TestStreamPayloadMatchesRedis(t *testing.T) {
	dir := t.TempDir()
	s := startRedis(t, dir, "dump.rdb", "--rdbcompression", "no")
	entries := []streamEntry{
		{StreamID{100, 0}, []string{"a", "1", "b", "hello"}},
		{StreamID{100, 1}, []string{"a", "2", "b", "-70000"}},
		{StreamID{105, 0}, []string{"c", "x"}},
		{StreamID{1 << 40, 7}, []string{"a", "3", "b", stringsRepeat("z", 100)}},
	}
	for _, e := range entries {
		s.do(append([]string{"XADD", "x", e.ID.String()}, e.FV...)...)
	}
	want := []byte(s.do("DUMP", "x").(string))
	got, err := EncodeDump(func(e *Encoder) {
		e.SetCompression(false)
		encodeValue(e, "", &value{Type: TypeStream, Stream: &streamValue{
			Entries: entries,
			Meta:    StreamMeta{Length: 4, LastID: entries[3].ID, FirstID: entries[0].ID, EntriesAdded: 4},
		}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("payload differs\nredis % x\nours  % x", want, got)
	}
}
