package aof

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/dfly/dfly/replica"
)

// Replay: a generation's files are parsed in parallel (one goroutine per
// file), and their entries applied through a replica.Applier in runs:
// commands of different shard files commute until a transaction, so
// each file's commands go as far as its next transaction part; a part is
// applied, as one MULTI/EXEC block ordered by Seq, once every shard it
// names has it next. A part whose shard's file ended first is not
// applied: that transaction did not reach the disk whole.

// source is one file being replayed.
type source struct {
	name  string
	shard int
	items chan []item
	tail  chan tail
	cur   []item
	eof   bool
	end   tail
}

// head is the source's next item, nil once it is exhausted.
func (s *source) head() *item {
	for len(s.cur) == 0 {
		if s.eof {
			return nil
		}
		b, ok := <-s.items
		if !ok {
			s.eof = true
			s.end = <-s.tail
			return nil
		}
		s.cur = b
	}
	return &s.cur[0]
}

func (s *source) pop() { s.cur = s.cur[1:] }

func openSource(dir string, f File) (*source, error) {
	fh, err := os.Open(filepath.Join(dir, f.Name))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("The AOF file %s doesn't exist", f.Name)
		}
		return nil, fmt.Errorf("Fatal error: can't open the append only file %s: %w", f.Name, err)
	}
	s := &source{name: f.Name, shard: f.Shard, items: make(chan []item, 8), tail: make(chan tail, 1)}
	go func() {
		defer fh.Close()
		t := parseFile(fh, f.Name, f.Type == TypeShard, func(b []item) { s.items <- b })
		close(s.items)
		s.tail <- t
	}()
	return s, nil
}

// replayChunk is the ops applied at once: the shards apply each chunk in
// parallel, waited for.
const replayChunk = 16384

// replayer applies sources' entries.
type replayer struct {
	apply   replica.Applier
	ops     []replica.Op
	dropped int // incomplete transactions not applied
	cmds    int64
}

func (r *replayer) add(db int, args [][]byte) {
	r.ops = append(r.ops, replica.Op{DB: db, Args: args})
	r.cmds++
	if len(r.ops) >= replayChunk {
		r.flush()
	}
}

func (r *replayer) addBlock(cmds []cmd) {
	tx := make([]replica.Op, len(cmds))
	for i, c := range cmds {
		tx[i] = replica.Op{DB: c.db, Args: c.args}
	}
	r.ops = append(r.ops, replica.Op{Tx: tx})
	r.cmds += int64(len(cmds))
	if len(r.ops) >= replayChunk {
		r.flush()
	}
}

func (r *replayer) flush() {
	if len(r.ops) > 0 {
		_ = r.apply.Apply(r.ops)
		clear(r.ops)
		r.ops = r.ops[:0]
	}
}

// generation replays one generation's files; it returns how each ended.
func (r *replayer) generation(dir string, files []File) ([]*source, error) {
	srcs := make([]*source, 0, len(files))
	byShard := map[int]*source{}
	for _, f := range files {
		s, err := openSource(dir, f)
		if err != nil {
			for _, s := range srcs {
				for range s.items { // let its parser end
				}
			}
			return nil, err
		}
		srcs = append(srcs, s)
		byShard[f.Shard] = s
	}
	for {
		progress, live := false, 0
		for _, s := range srcs {
			for it := s.head(); it != nil && it.part == nil; it = s.head() {
				if it.block != nil {
					r.addBlock(it.block)
				} else {
					r.add(it.db, it.args)
				}
				s.pop()
				progress = true
			}
			if s.head() != nil {
				live++
			}
		}
		if live == 0 {
			break
		}
		if progress {
			continue
		}
		// Every live source is at a transaction's part.
		if !r.transaction(srcs, byShard) {
			// No part is complete nor can ever be: the files disagree.
			for _, s := range srcs {
				if it := s.head(); it != nil {
					return srcs, fmt.Errorf("Bad file format reading the append only file %s: transaction %d's parts are not in the order of the other shards' files", s.name, it.part.txid)
				}
			}
		}
	}
	r.flush()
	return srcs, nil
}

// transaction applies or drops one transaction at the sources' heads and
// reports whether it did.
func (r *replayer) transaction(srcs []*source, byShard map[int]*source) bool {
	for _, s := range srcs {
		it := s.head()
		if it == nil {
			continue
		}
		p := it.part
		complete, missing := true, false
		for _, sid := range p.shards {
			o := byShard[sid]
			oh := o.headIfReady()
			switch {
			case o == nil || (oh == nil && o.eof):
				missing = true
			case oh == nil || oh.part == nil || oh.part.txid != p.txid:
				complete = false
			}
		}
		if missing {
			s.pop() // a part of a transaction not wholly on disk
			r.dropped++
			return true
		}
		if !complete {
			continue
		}
		var all []seqCmd
		for _, sid := range p.shards {
			o := byShard[sid]
			q := o.head().part
			for i, c := range q.cmds {
				all = append(all, seqCmd{seq: q.seqs[i], cmd: c})
			}
			o.pop()
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].seq < all[j].seq })
		cmds := make([]cmd, len(all))
		for i := range all {
			cmds[i] = all[i].cmd
		}
		if len(cmds) > 0 {
			r.addBlock(cmds)
		}
		return true
	}
	return false
}

type seqCmd struct {
	seq uint32
	cmd cmd
}

// headIfReady is head for a source that exists (nil-safe).
func (s *source) headIfReady() *item {
	if s == nil {
		return nil
	}
	return s.head()
}
