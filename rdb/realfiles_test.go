package rdb

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/redis-7.0.rdb with redis-server")

const farFuture = 4102444800000 // 2100-01-01, in ms

// filler issues commands to a real Redis (when s is set) and builds the
// dataset they produce, so the same code makes both the file and what it
// must decode to.
type filler struct {
	s  *redisServer
	db uint64
	ds dataset
}

func (f *filler) do(args ...string) {
	if f.s != nil {
		f.s.do(args...)
	}
}

func (f *filler) put(key string, v *value) { f.ds[dbKey(f.db, key)] = v }

func (f *filler) selectDB(db uint64) {
	f.db = db
	f.do("SELECT", strconv.FormatUint(db, 10))
}

func (f *filler) str(key, val string, expire int64) {
	f.do("SET", key, val)
	if expire != 0 {
		f.do("PEXPIREAT", key, strconv.FormatInt(expire, 10))
	}
	f.put(key, &value{Type: TypeString, Str: val, Meta: Meta{ExpireAt: expire}})
}

func (f *filler) list(key string, elems ...string) {
	for i := 0; i < len(elems); i += 100 {
		f.do(append([]string{"RPUSH", key}, elems[i:min(i+100, len(elems))]...)...)
	}
	f.put(key, &value{Type: TypeList, List: elems})
}

func (f *filler) set(key string, members ...string) {
	v := &value{Type: TypeSet, Set: map[string]bool{}}
	for i := 0; i < len(members); i += 100 {
		f.do(append([]string{"SADD", key}, members[i:min(i+100, len(members))]...)...)
	}
	for _, m := range members {
		v.Set[m] = true
	}
	f.put(key, v)
}

func (f *filler) hash(key string, fv ...string) {
	v := &value{Type: TypeHash, Hash: map[string]string{}}
	for i := 0; i < len(fv); i += 100 {
		f.do(append([]string{"HSET", key}, fv[i:min(i+100, len(fv))]...)...)
	}
	for i := 0; i < len(fv); i += 2 {
		v.Hash[fv[i]] = fv[i+1]
	}
	f.put(key, v)
}

func (f *filler) zset(key string, sm ...string) {
	v := &value{Type: TypeZSet, ZSet: map[string]float64{}}
	for i := 0; i < len(sm); i += 100 {
		f.do(append([]string{"ZADD", key}, sm[i:min(i+100, len(sm))]...)...)
	}
	for i := 0; i < len(sm); i += 2 {
		s, _ := strconv.ParseFloat(sm[i], 64)
		v.ZSet[sm[i+1]] = s
	}
	f.put(key, v)
}

func pseudoRandom(n int, seed uint32) string {
	b := make([]byte, n)
	for i := range b {
		seed = seed*1664525 + 1013904223
		b[i] = byte(seed >> 24)
	}
	return string(b)
}

func seq(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// fillAll makes keys in every encoding Redis 7.0 writes.
func fillAll(s *redisServer) dataset {
	f := &filler{s: s, ds: dataset{}}
	f.do("FLUSHALL")
	f.do("FUNCTION", "FLUSH")
	f.selectDB(0)
	f.str("s:int", "12345", 0)
	f.str("s:neg", "-7", 0)
	f.str("s:int64", "123456789012", 0)
	f.str("s:raw", "hello world", 0)
	f.str("s:empty", "", 0)
	f.str("s:lzf", strings.Repeat("abcd", 100), 0)
	f.str("s:bin", pseudoRandom(200, 1), 0)
	f.str("s:exp", "v", farFuture)

	f.list("l:small", "a", "b", "c", "1", "2", "-3", "", "123456789012345", "-4097", "70000", "9000000", "3000000000")
	f.list("l:big", seq(1000, "item-%d")...)
	f.do("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "200")
	f.list("l:plain", "x", strings.Repeat("P", 500), "y", strings.Repeat("Q", 300))
	f.do("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1073741824")
	f.do("CONFIG", "SET", "list-compress-depth", "1")
	f.list("l:compressed", seq(2000, "compressible-compressible-%d")...)
	f.do("CONFIG", "SET", "list-compress-depth", "0")

	f.set("set:ints", append(seq(50, "%d"), "-5", "70000", "-3000000000")...)
	f.set("set:bigints", seq(1000, "%d")...)
	f.set("set:strs", "a", "b", "c", "1")

	f.zset("z:small", "1", "a", "2.5", "b", "-3", "c", "inf", "d", "-inf", "e", "0.1", "f", "100", "g")
	var zs []string
	for i := range 200 {
		zs = append(zs, strconv.FormatFloat(float64(i)*1.25-7, 'g', -1, 64), fmt.Sprintf("member-%d", i))
	}
	f.zset("z:big", zs...)

	f.hash("h:small", "f1", "v1", "f2", "123", "num", "-456", "7", "seven")
	var hs []string
	for i := range 600 {
		hs = append(hs, fmt.Sprintf("field-%d", i), fmt.Sprintf("%d", i*3))
	}
	f.hash("h:big", hs...)
	f.hash("h:longval", "f", strings.Repeat("L", 100))

	fillStreams(f)

	f.selectDB(1)
	f.str("s:db1", "one", 0)
	f.list("l:db1", "x", "y")
	f.do("PEXPIREAT", "l:db1", strconv.FormatInt(farFuture+1, 10))
	f.ds[dbKey(1, "l:db1")].Meta.ExpireAt = farFuture + 1
	f.selectDB(5)
	f.hash("h:db5", "a", "1")
	f.do("PEXPIREAT", "h:db5", strconv.FormatInt(farFuture+2, 10))
	f.ds[dbKey(5, "h:db5")].Meta.ExpireAt = farFuture + 2
	f.do("FUNCTION", "LOAD", testFunction)
	return f.ds
}

const testFunction = "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 1 end)"

func fillStreams(f *filler) {
	sv := &streamValue{}
	added := 0
	var maxDeleted StreamID
	deleted := map[int]bool{3: true, 10: true, 149: true, 249: true}
	var live []streamEntry
	for i := range 250 {
		id := StreamID{Ms: 1000 + uint64(i/3), Seq: uint64(i % 3)}
		var fv []string
		switch {
		case i%7 == 0:
			fv = []string{"other", fmt.Sprint(i), "1", "int-field"}
		case i%11 == 0:
			fv = []string{"name", "n" + fmt.Sprint(i)}
		default:
			fv = []string{"name", "n" + fmt.Sprint(i), "val", fmt.Sprint(i * 1000)}
		}
		f.do(append([]string{"XADD", "x:s", id.String()}, fv...)...)
		added++
		if deleted[i] {
			maxDeleted = id
		} else {
			live = append(live, streamEntry{ID: id, FV: fv})
		}
		sv.Meta.LastID = id
	}
	for i := range 250 {
		if deleted[i] {
			f.do("XDEL", "x:s", StreamID{Ms: 1000 + uint64(i/3), Seq: uint64(i % 3)}.String())
		}
	}
	sv.Entries = live
	sv.Meta.Length = uint64(len(live))
	sv.Meta.FirstID = live[0].ID
	sv.Meta.MaxDeletedID = maxDeleted
	sv.Meta.EntriesAdded = uint64(added)
	// Group g1: consumers with pending entries, claimed at fixed times.
	f.do("XGROUP", "CREATE", "x:s", "g1", "1010-0", "ENTRIESREAD", "31")
	g1 := groupValue{Name: "g1", LastID: StreamID{1010, 0}, EntriesRead: 31}
	for ci, c := range []string{"alice", "bob"} {
		f.do("XGROUP", "CREATECONSUMER", "x:s", "g1", c)
		cv := consumerValue{Name: c}
		for j := range 3 {
			id := live[ci*3+j].ID
			f.do("XCLAIM", "x:s", "g1", c, "0", id.String(), "TIME", strconv.Itoa(1700000000000+j), "RETRYCOUNT", strconv.Itoa(j+1), "FORCE", "JUSTID")
			g1.Pending = append(g1.Pending, StreamPending{ID: id, DeliveryTime: int64(1700000000000 + j), DeliveryCount: uint64(j + 1)})
			cv.Pending = append(cv.Pending, id)
		}
		g1.Consumers = append(g1.Consumers, cv)
	}
	f.do("XGROUP", "CREATECONSUMER", "x:s", "g1", "idle")
	g1.Consumers = append(g1.Consumers, consumerValue{Name: "idle"})
	// Group g0: no consumers, no PEL.
	f.do("XGROUP", "CREATE", "x:s", "g0", "0")
	g0 := groupValue{Name: "g0", EntriesRead: -1} // SCG_INVALID_ENTRIES_READ
	// Redis's rax orders groups by name.
	sv.Groups = []groupValue{g0, g1}
	sv.Meta.Groups = 2
	f.put("x:s", &value{Type: TypeStream, Stream: sv})

	f.do("XGROUP", "CREATE", "x:empty", "g", "$", "MKSTREAM")
	f.put("x:empty", &value{Type: TypeStream, Stream: &streamValue{
		Meta:   StreamMeta{Groups: 1},
		Groups: []groupValue{{Name: "g", EntriesRead: -1}},
	}})
}

// normalize drops what a real server makes up as it runs (consumer
// seen times) and sorts PELs as Redis's rax does.
func normalize(ds dataset) {
	for _, v := range ds {
		if v.Stream == nil {
			continue
		}
		for gi := range v.Stream.Groups {
			g := &v.Stream.Groups[gi]
			slicesSortPending(g.Pending)
			for ci := range g.Consumers {
				g.Consumers[ci].SeenTime, g.Consumers[ci].Active = 0, 0
			}
			slicesSortConsumers(g.Consumers)
		}
	}
}

func slicesSortPending(p []StreamPending) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].ID.Less(p[j-1].ID); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

func slicesSortConsumers(c []consumerValue) {
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].Name < c[j-1].Name; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}

func checkFillAll(t *testing.T, b []byte) *collector {
	t.Helper()
	c, err := decodeAll(t, b)
	if err != nil {
		t.Fatal(err)
	}
	want := fillAll(nil)
	normalize(want)
	normalize(c.data)
	if d := diffDatasets(want, c.data); d != "" {
		t.Fatal(d)
	}
	if len(c.functions) != 1 || c.functions[0] != testFunction {
		t.Fatalf("functions %q", c.functions)
	}
	if c.aux["redis-ver"] == "" {
		t.Fatalf("aux %v", c.aux)
	}
	return c
}

// TestRedisFile decodes the committed file Redis 7.0.15 wrote.
func TestRedisFile(t *testing.T) {
	path := filepath.Join("testdata", "redis-7.0.rdb")
	if *update {
		dir := t.TempDir()
		s := startRedis(t, dir, "dump.rdb")
		fillAll(s)
		if err := os.WriteFile(path, s.save(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := checkFillAll(t, b)
	if c.aux["redis-ver"] != "7.0.15" {
		t.Fatalf("redis-ver %q", c.aux["redis-ver"])
	}
}

// TestRedisLive fills a running Redis, has it save, decodes the file,
// then writes the decoded data with the Encoder and has Redis load that.
func TestRedisLive(t *testing.T) {
	dir := t.TempDir()
	s := startRedis(t, dir, "dump.rdb")
	fillAll(s)
	b := s.save()
	c := checkFillAll(t, b)

	// Re-encode and load it into a fresh Redis, which saves it again.
	var out bytes.Buffer
	if err := encodeDataset(NewEncoder(&out), c.data); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	path := filepath.Join(dir2, "ours.rdb")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkRDB(t, path)
	s2 := startRedis(t, dir2, "ours.rdb")
	if n := s2.do("DBSIZE").(int64); n != int64(len(dbKeys(c.data, 0))) {
		t.Fatalf("DBSIZE %d after loading our file\n%s", n, s2.log())
	}
	c2, err := decodeAll(t, s2.save())
	if err != nil {
		t.Fatal(err)
	}
	normalize(c2.data)
	if d := diffDatasets(c.data, c2.data); d != "" {
		t.Fatal(d)
	}
}

func dbKeys(ds dataset, db uint64) []string {
	var out []string
	for k := range ds {
		if strings.HasPrefix(k, strconv.FormatUint(db, 10)+":") {
			out = append(out, k)
		}
	}
	return out
}

var _ = math.Inf
