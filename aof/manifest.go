package aof

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dfly/dfly/atomicfile"
)

// File types of a manifest line: Redis 7's base, history and incremental
// files, and dfly's per-shard incremental files (type s), which Redis's
// loader refuses ("Unknown AOF file type") rather than misread as one
// stream.
const (
	TypeBase  = 'b'
	TypeHist  = 'h'
	TypeIncr  = 'i'
	TypeShard = 's'
)

// File is one line of the manifest.
type File struct {
	Name string
	Seq  int64
	Type byte
	// Shard is a type s file's shard (-1 otherwise).
	Shard int
}

// Manifest lists the files of the AOF in load order: at most one base,
// then the incremental files, oldest first. Incremental files of one seq
// form a generation: one Redis stream (type i), or one file per shard of
// the server that wrote it (type s).
type Manifest struct {
	Files []File
}

// Base is the manifest's base file, nil when none.
func (m *Manifest) Base() *File {
	for i := range m.Files {
		if m.Files[i].Type == TypeBase {
			return &m.Files[i]
		}
	}
	return nil
}

// Generations are the incremental files grouped by seq, in order.
func (m *Manifest) Generations() [][]File {
	var out [][]File
	for _, f := range m.Files {
		if f.Type != TypeIncr && f.Type != TypeShard {
			continue
		}
		if n := len(out); n > 0 && out[n-1][0].Seq == f.Seq {
			out[n-1] = append(out[n-1], f)
			continue
		}
		out = append(out, []File{f})
	}
	return out
}

// NextSeq is the seq after every file's of type t (base and incremental
// seqs count apart, as Redis's).
func (m *Manifest) NextSeq(base bool) int64 {
	var n int64
	for _, f := range m.Files {
		if (f.Type == TypeBase) == base && f.Seq > n {
			n = f.Seq
		}
	}
	return n + 1
}

// BaseName, IncrName and ShardName are the files' names: Redis 7's
// <appendfilename>.<seq>.base.rdb and .incr.aof, and dfly's
// <appendfilename>.<seq>.s<shard>.incr.aof.
func BaseName(prefix string, seq int64) string {
	return fmt.Sprintf("%s.%d.base.rdb", prefix, seq)
}

func ShardName(prefix string, seq int64, sid int) string {
	return fmt.Sprintf("%s.%d.s%d.incr.aof", prefix, seq, sid)
}

// ManifestName is the manifest's name in the directory.
func ManifestName(prefix string) string { return prefix + ".manifest" }

// Encode is the manifest's text, one "file <name> seq <n> type <t>" line
// per file (plus "shard <n>" for dfly's; Redis's loader skips keys it does
// not know).
func (m *Manifest) Encode() []byte {
	var b bytes.Buffer
	for _, f := range m.Files {
		fmt.Fprintf(&b, "file %s seq %d type %c", f.Name, f.Seq, f.Type)
		if f.Type == TypeShard {
			fmt.Fprintf(&b, " shard %d", f.Shard)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ParseManifest reads a manifest's text, with Redis 7's checks: one base
// at most, known types, names without a path, incremental seqs ascending.
func ParseManifest(text []byte) (*Manifest, error) {
	m := &Manifest{}
	bases := 0
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		args := strings.Fields(line)
		if len(args)%2 != 0 {
			return nil, fmt.Errorf("invalid AOF manifest file format: line %d", i+1)
		}
		f := File{Shard: -1}
		for k := 0; k < len(args); k += 2 {
			v := strings.Trim(args[k+1], `"`)
			switch args[k] {
			case "file":
				f.Name = v
			case "seq":
				f.Seq, _ = strconv.ParseInt(v, 10, 64)
			case "type":
				f.Type = v[0]
			case "shard":
				f.Shard, _ = strconv.Atoi(v)
			}
		}
		switch {
		case f.Name == "" || f.Seq <= 0 || f.Type == 0:
			return nil, fmt.Errorf("invalid AOF manifest file format: line %d", i+1)
		case strings.ContainsRune(f.Name, '/'):
			return nil, fmt.Errorf("file can't be a path, just a filename: line %d", i+1)
		case f.Type == TypeShard && f.Shard < 0:
			return nil, fmt.Errorf("invalid AOF manifest file format: line %d: no shard", i+1)
		case f.Type != TypeBase && f.Type != TypeHist && f.Type != TypeIncr && f.Type != TypeShard:
			return nil, fmt.Errorf("unknown AOF file type: line %d", i+1)
		}
		if f.Type == TypeBase {
			if bases++; bases > 1 {
				return nil, fmt.Errorf("found duplicate base file information: line %d", i+1)
			}
		}
		if n := len(m.Files); (f.Type == TypeIncr || f.Type == TypeShard) && n > 0 {
			if last := m.Files[n-1]; (last.Type == TypeIncr || last.Type == TypeShard) && last.Seq > f.Seq {
				return nil, fmt.Errorf("found a non-monotonic sequence number: line %d", i+1)
			}
		}
		m.Files = append(m.Files, f)
	}
	return m, nil
}

// ReadManifest reads dir's manifest; nil, nil when there is none.
func ReadManifest(dir, prefix string) (*Manifest, error) {
	text, err := os.ReadFile(filepath.Join(dir, ManifestName(prefix)))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(text)
	if err != nil {
		return nil, fmt.Errorf("the AOF manifest %s: %w", ManifestName(prefix), err)
	}
	return m, nil
}

// WriteManifest replaces dir's manifest with m, atomically.
func WriteManifest(dir, prefix string, m *Manifest) error {
	if err := atomicfile.Write(filepath.Join(dir, ManifestName(prefix)), m.Encode()); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Prune removes the files of dir named like the AOF's (prefix.*) that m
// does not name: a failed or interrupted rewrite's, history files.
func Prune(dir, prefix string, m *Manifest) {
	named := map[string]bool{ManifestName(prefix): true}
	for _, f := range m.Files {
		if f.Type != TypeHist {
			named[f.Name] = true
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, prefix+".") && !named[n] {
			os.Remove(filepath.Join(dir, n))
		}
	}
}
