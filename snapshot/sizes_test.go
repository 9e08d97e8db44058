package snapshot

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/dfly/dfly/rdb"
)

// sizeSink records, per database, the RESIZEDB it announced and the keys
// that came before that announcement.
type sizeSink struct {
	recordSink
	resized map[int][2]uint64
	early   []string // keys of a database before its RESIZEDB
}

func (s *sizeSink) ResizeDB(keys, expires uint64) error {
	if _, again := s.resized[s.db]; again {
		return errors.New("database " + strconv.Itoa(s.db) + " announced twice")
	}
	s.resized[s.db] = [2]uint64{keys, expires}
	return nil
}

func (s *sizeSink) String(key, val []byte, m rdb.Meta) error {
	if _, ok := s.resized[s.db]; !ok {
		s.early = append(s.early, strconv.Itoa(s.db)+"/"+string(key))
	}
	return s.recordSink.String(key, val, m)
}

// Options.Sizes: each database's size at the cut is announced once,
// before its first record, although chunks cut the stream into many
// fragments and writes after the cut change the sizes.
func TestSizesAnnouncedBeforeRecords(t *testing.T) {
	h := newHarness(t, 3)
	for i := range 3000 {
		h.set(0, "a"+strconv.Itoa(i), "v")
	}
	for i := range 500 {
		h.setPX(2, "b"+strconv.Itoa(i), "v", 600_000)
	}
	h.start(Options{Mode: PIT, Tagged: true, Sizes: true})
	for i := range 100 { // after the cut: journaled, not in the sizes
		h.set(0, "c"+strconv.Itoa(i), "v")
		h.step()
	}
	h.finish()

	sink := &sizeSink{resized: map[int][2]uint64{}}
	cr := rdb.NewChunkReader(bytes.NewReader(h.data))
	dec := rdb.NewDecoder(bytes.NewReader(nil))
	fragments := 0
	for {
		ch, err := cr.NextItem()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch.Op != rdb.OpChunkEnd || ch.Stream != MainStream {
			continue
		}
		fragments++
		dec.Reset(bytes.NewReader(ch.Payload))
		if err := dec.DecodeFragment(sink); err != nil {
			t.Fatal(err)
		}
	}
	if fragments < 2 {
		t.Fatalf("%d main-stream fragments: the test needs several", fragments)
	}
	want := map[int][2]uint64{0: {3000, 0}, 2: {500, 500}}
	for db, w := range want {
		if got, ok := sink.resized[db]; !ok || got != w {
			t.Errorf("database %d announced %v (%v), want %v", db, got, ok, w)
		}
	}
	if _, ok := sink.resized[1]; ok {
		t.Errorf("empty database 1 announced")
	}
	if len(sink.early) > 0 {
		t.Errorf("%d keys before their database's announcement, e.g. %s", len(sink.early), sink.early[0])
	}
}
