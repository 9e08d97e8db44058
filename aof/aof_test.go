package aof

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dfly/dfly/replica"
)

func TestManifestRoundTrip(t *testing.T) {
	redis := "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
	m, err := ParseManifest([]byte(redis))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Encode()) != redis {
		t.Fatalf("Redis's manifest re-encoded as %q", m.Encode())
	}
	m.Files = append(m.Files, File{Name: ShardName("appendonly.aof", 3, 0), Seq: 3, Type: TypeShard, Shard: 0},
		File{Name: ShardName("appendonly.aof", 3, 1), Seq: 3, Type: TypeShard, Shard: 1})
	back, err := ParseManifest(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if g := back.Generations(); len(g) != 2 || len(g[1]) != 2 || g[1][1].Shard != 1 || back.NextSeq(false) != 4 || back.NextSeq(true) != 3 {
		t.Fatalf("generations %v", g)
	}
	for _, bad := range []string{
		"file a seq 1 type x\n",
		"file a/b seq 1 type i\n",
		"file a seq 1 type b\nfile b seq 2 type b\n",
		"file a seq 2 type i\nfile b seq 1 type i\n",
		"file a seq 1 type s\n",
		"file a seq\n",
	} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// parse runs parseFile on text and returns the items and the tail.
func parse(t *testing.T, text string, shardFile bool) ([]item, tail) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	var items []item
	tl := parseFile(f, "f", shardFile, func(b []item) { items = append(items, b...) })
	return items, tl
}

func TestParseFileTails(t *testing.T) {
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	part := "*1\r\n$5\r\nMULTI\r\n" + set + "*4\r\n$4\r\nEXEC\r\n$1\r\n7\r\n$3\r\n0,1\r\n$1\r\n1\r\n"
	items, tl := parse(t, "#TS:1\r\n"+set+part, true)
	if tl.err != nil || tl.truncated || len(items) != 2 || items[1].part == nil || items[1].part.txid != 7 {
		t.Fatalf("whole file: %+v %+v", items, tl)
	}
	whole := int64(len("#TS:1\r\n" + set + part))
	if tl.valid != whole {
		t.Fatalf("valid %d, want %d", tl.valid, whole)
	}
	for cut := 1; cut < len(part); cut++ {
		items, tl := parse(t, set+part[:cut], true)
		if tl.err != nil || !tl.truncated || tl.valid != int64(len(set)) || len(items) != 1 {
			t.Fatalf("cut at %d: %+v %+v", cut, items, tl)
		}
	}
	if _, tl := parse(t, set+strings.Repeat("\x00", 100), true); !tl.truncated || tl.valid != int64(len(set)) {
		t.Fatalf("zero padding: %+v", tl)
	}
	_, tl = parse(t, set+"garbage"+set, true)
	if ce, ok := tl.err.(*CorruptError); !ok || ce.Offset != int64(len(set)) {
		t.Fatalf("corrupt middle: %+v", tl)
	}
	if _, tl := parse(t, set+"\x00\x00x"+set, true); tl.err == nil {
		t.Fatal("zeros then data: not corrupt")
	}
	if _, tl := parse(t, "*1\r\n$5\r\nMULTI\r\n"+set+"*1\r\n$4\r\nEXEC\r\n", true); tl.err == nil {
		t.Fatal("a shard file's EXEC without its id: not corrupt")
	}
	if items, tl := parse(t, "*1\r\n$5\r\nMULTI\r\n"+set+"*1\r\n$4\r\nEXEC\r\n", false); tl.err != nil || len(items) != 1 || len(items[0].block) != 1 {
		t.Fatalf("a Redis MULTI/EXEC block: %+v %+v", items, tl)
	}
}

// recorder is a replica.Applier that keeps what it is given.
type recorder struct{ got []string }

func (r *recorder) FullSync(io.Reader, int64) error { return nil }

func (r *recorder) Apply(ops []replica.Op) error {
	for _, op := range ops {
		if op.Tx != nil {
			var parts []string
			for _, c := range op.Tx {
				parts = append(parts, string(bytes.Join(c.Args, []byte(" "))))
			}
			r.got = append(r.got, "tx["+strings.Join(parts, "; ")+"]")
			continue
		}
		r.got = append(r.got, string(bytes.Join(op.Args, []byte(" "))))
	}
	return nil
}

func resp(args ...string) string {
	s := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		s += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return s
}

// TestReplayTransactions: a transaction is applied once every shard's part
// is there, its commands in Seq order across the parts; one whose part is
// missing from a file that ended is dropped, and what follows it applied.
func TestReplayTransactions(t *testing.T) {
	dir := t.TempDir()
	s0 := resp("SET", "a", "1") +
		resp("MULTI") + resp("SET", "x", "0") + resp("SET", "z", "0") + resp("EXEC", "5", "0,1", "1,3") +
		resp("MULTI") + resp("SET", "lost0", "1") + resp("EXEC", "6", "0,1", "1") +
		resp("SET", "after", "1")
	s1 := resp("SET", "b", "1") +
		resp("MULTI") + resp("SET", "y", "0") + resp("EXEC", "5", "0,1", "2") +
		resp("MULTI") + resp("SET", "torn", "1") // the file ends inside transaction 6's part
	os.WriteFile(filepath.Join(dir, "s0"), []byte(s0), 0o644)
	os.WriteFile(filepath.Join(dir, "s1"), []byte(s1), 0o644)
	rec := &recorder{}
	r := &replayer{apply: rec}
	srcs, err := r.generation(dir, []File{{Name: "s0", Seq: 1, Type: TypeShard, Shard: 0}, {Name: "s1", Seq: 1, Type: TypeShard, Shard: 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := "SET a 1|SET b 1|tx[SET x 0; SET y 0; SET z 0]|SET after 1"
	if got := strings.Join(rec.got, "|"); got != want {
		t.Fatalf("applied %s\n    want %s", got, want)
	}
	if r.dropped != 1 || !srcs[1].end.truncated || srcs[1].end.valid != int64(strings.Index(s1, resp("MULTI")+resp("SET", "torn", "1"))) {
		t.Fatalf("dropped %d, s1's end %+v", r.dropped, srcs[1].end)
	}
}
