package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Reading a file of RESP commands (an incremental file, a base without
// the RDB preamble): Redis's annotations (#...) are skipped; the file may
// end inside a command (a torn write) or in zeros (a power cut after the
// size grew): truncated; anything else unparsable is corrupt.

// errTruncated: the file ends inside a command or in zeros.
var errTruncated = errors.New("truncated")

// CorruptError is a file that does not parse at Offset.
type CorruptError struct {
	File   string
	Offset int64
	Why    string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("Bad file format reading the append only file %s at offset %d (%s): make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>", e.File, e.Offset, e.Why)
}

// maxBulk bounds an argument's length (proto-max-bulk-len's bound).
const maxBulk = 512 << 20

type reader struct {
	r    *bufio.Reader
	name string
	size int64
	off  int64
	line []byte
}

func newReader(f *os.File, name string) (*reader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &reader{r: bufio.NewReaderSize(f, 1<<20), name: name, size: st.Size()}, nil
}

func (r *reader) corrupt(off int64, why string) error {
	return &CorruptError{File: r.name, Offset: off, Why: why}
}

// readLine reads up to \r\n (dropped).
func (r *reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		b, err := r.r.ReadSlice('\n')
		r.off += int64(len(b))
		r.line = append(r.line, b...)
		if err == bufio.ErrBufferFull {
			if len(r.line) > 1<<16 {
				return nil, errors.New("line too long")
			}
			continue
		}
		if err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		if len(r.line) < 2 || r.line[len(r.line)-2] != '\r' {
			return nil, errors.New("line not ended by CRLF")
		}
		return r.line[:len(r.line)-2], nil
	}
}

// next reads the next command and the offset it starts at: io.EOF at a
// clean end, errTruncated, or a *CorruptError.
func (r *reader) next() (args [][]byte, start int64, err error) {
	for {
		start = r.off
		c, err := r.r.ReadByte()
		if err == io.EOF {
			return nil, start, io.EOF
		}
		if err != nil {
			return nil, start, err
		}
		r.off++
		switch c {
		case '#': // an annotation (#TS:...)
			if _, err := r.readLine(); err != nil {
				return nil, start, errTruncated
			}
			continue
		case '*':
		case 0:
			if r.zerosToEnd() {
				return nil, start, errTruncated
			}
			return nil, start, r.corrupt(start, "zero bytes")
		default:
			return nil, start, r.corrupt(start, fmt.Sprintf("expected '*', got %q", c))
		}
		args, err := r.command(start)
		return args, start, err
	}
}

func (r *reader) command(start int64) ([][]byte, error) {
	fail := func(err error, why string) ([][]byte, error) {
		if err == io.ErrUnexpectedEOF {
			return nil, errTruncated
		}
		return nil, r.corrupt(start, why)
	}
	line, err := r.readLine()
	if err != nil {
		return fail(err, "bad array header")
	}
	n, err := strconv.Atoi(string(line))
	if err != nil || n < 1 || n > 1<<20 {
		return fail(err, "bad argument count")
	}
	args := make([][]byte, n)
	for i := range args {
		c, err := r.r.ReadByte()
		if err != nil {
			return nil, errTruncated
		}
		r.off++
		if c != '$' {
			return fail(nil, "expected '$'")
		}
		line, err := r.readLine()
		if err != nil {
			return fail(err, "bad bulk header")
		}
		l, err := strconv.Atoi(string(line))
		if err != nil || l < 0 || l > maxBulk {
			return fail(nil, "bad bulk length")
		}
		if r.off+int64(l)+2 > r.size {
			return nil, errTruncated
		}
		a := make([]byte, l+2)
		if _, err := io.ReadFull(r.r, a); err != nil {
			return nil, errTruncated
		}
		r.off += int64(l) + 2
		if a[l] != '\r' || a[l+1] != '\n' {
			return fail(nil, "bulk not ended by CRLF")
		}
		args[i] = a[:l:l]
	}
	return args, nil
}

// zerosToEnd reports whether only zero bytes remain.
func (r *reader) zerosToEnd() bool {
	for {
		b, err := r.r.ReadByte()
		if err != nil {
			return true
		}
		if b != 0 {
			return false
		}
	}
}

// item is a parsed entry of a file: a command, a self-contained
// MULTI/EXEC block (a Redis file's), or a transaction's part on one
// shard (a dfly shard file's).
type item struct {
	db    int
	args  [][]byte
	block []cmd
	part  *part
}

type cmd struct {
	db   int
	args [][]byte
}

type part struct {
	txid   uint64
	shards []int
	seqs   []uint32
	cmds   []cmd
}

// tail is how a file ended: valid is the offset after the last entry
// replayed; truncated when it ended in a torn entry or zeros.
type tail struct {
	valid     int64
	truncated bool
	err       error
}

// parseFile reads f's entries, calling emit with each batch (the items
// are not reused); shardFile files hold transaction parts ("EXEC txid
// shards seqs"), others plain MULTI/EXEC blocks.
func parseFile(f *os.File, name string, shardFile bool, emit func([]item)) tail {
	r, err := newReader(f, name)
	if err != nil {
		return tail{err: err}
	}
	var (
		batch    []item
		db       int
		inMulti  bool
		multiAt  int64
		block    []cmd
		valid    int64
		multiArg = []byte("multi")
		execArg  = []byte("exec")
	)
	for {
		args, start, err := r.next()
		if err != nil {
			if len(batch) > 0 {
				emit(batch)
			}
			t := tail{valid: valid}
			switch {
			case err == io.EOF && inMulti:
				t.truncated, t.valid = true, multiAt
			case err == io.EOF:
			case err == errTruncated:
				t.truncated = true
				if inMulti {
					t.valid = multiAt
				}
			default:
				t.err = err
			}
			return t
		}
		switch {
		case bytes.EqualFold(args[0], multiArg):
			if inMulti {
				return tail{err: r.corrupt(start, "nested MULTI")}
			}
			inMulti, multiAt, block = true, start, nil
			continue
		case bytes.EqualFold(args[0], execArg):
			if !inMulti {
				return tail{err: r.corrupt(start, "EXEC without MULTI")}
			}
			inMulti = false
			valid = r.off
			if !shardFile {
				if len(args) != 1 {
					return tail{err: r.corrupt(start, "EXEC with arguments")}
				}
				batch = append(batch, item{block: block})
				break
			}
			p, err := parsePart(args, block)
			if err != nil {
				return tail{err: r.corrupt(start, err.Error())}
			}
			batch = append(batch, item{part: p})
		case len(args) == 2 && bytes.EqualFold(args[0], []byte("select")):
			n, err := strconv.Atoi(string(args[1]))
			if err != nil || n < 0 {
				return tail{err: r.corrupt(start, "bad SELECT")}
			}
			db = n
			if !inMulti {
				valid = r.off
			}
			continue
		case inMulti:
			block = append(block, cmd{db: db, args: args})
			continue
		default:
			valid = r.off
			batch = append(batch, item{db: db, args: args})
		}
		if len(batch) >= 256 {
			emit(batch)
			batch = nil
		}
	}
}

// parsePart reads "EXEC txid shards seqs" closing a part of cmds.
func parsePart(args [][]byte, cmds []cmd) (*part, error) {
	if len(args) != 4 {
		return nil, errors.New("a shard file's EXEC needs txid, shards and seqs")
	}
	p := &part{cmds: cmds}
	var err error
	if p.txid, err = strconv.ParseUint(string(args[1]), 10, 64); err != nil {
		return nil, errors.New("bad transaction id")
	}
	for _, s := range bytes.Split(args[2], []byte(",")) {
		n, err := strconv.Atoi(string(s))
		if err != nil || n < 0 {
			return nil, errors.New("bad shard list")
		}
		p.shards = append(p.shards, n)
	}
	if len(args[3]) > 0 {
		for _, s := range bytes.Split(args[3], []byte(",")) {
			n, err := strconv.ParseUint(string(s), 10, 32)
			if err != nil {
				return nil, errors.New("bad seq list")
			}
			p.seqs = append(p.seqs, uint32(n))
		}
	}
	if len(p.seqs) != len(cmds) {
		return nil, errors.New("seq list does not match the part's commands")
	}
	return p, nil
}
