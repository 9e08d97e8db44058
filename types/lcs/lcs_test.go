package lcs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dfly/dfly/types/num"
)

// TestScript replays testdata/lcs.txt: each command line ends with " => "
// and the reply redis-server 7.0.15 gave when the same script ran against
// it from an empty database, so every expected reply is Redis's own.
func TestScript(t *testing.T) {
	f, err := os.Open("testdata/lcs.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	db := map[string][]byte{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		cmd, want, _ := strings.Cut(line, " => ")
		argv := tokens(t, cmd)
		var got string
		switch strings.ToLower(string(argv[0])) {
		case "set":
			db[string(argv[1])] = argv[2]
			got = `"OK"`
		case "lcs":
			got = run(db[string(argv[1])], db[string(argv[2])], argv[3:])
		}
		if got != want {
			t.Errorf("line %d: %s\n got  %s\n want %s", n, cmd, got, want)
		}
	}
}

// run is LCS as the server wires it, rendered like the script's replies.
func run(a, b []byte, args [][]byte) string {
	o, err := ParseOptions(args)
	if err != nil {
		return errorReply(err)
	}
	res, err := Compute(a, b, o)
	if err != nil {
		return errorReply(err)
	}
	switch {
	case o.Idx:
		var ms []string
		for _, m := range res.Matches {
			s := fmt.Sprintf("[[%d %d] [%d %d]", m.A[0], m.A[1], m.B[0], m.B[1])
			if o.WithMatchLen {
				s += fmt.Sprintf(" %d", m.Len)
			}
			ms = append(ms, s+"]")
		}
		return fmt.Sprintf(`["matches" [%s] "len" %d]`, strings.Join(ms, " "), res.Len)
	case o.Len:
		return strconv.Itoa(res.Len)
	}
	return strconv.Quote(string(res.LCS))
}

func errorReply(err error) string {
	var e num.Error
	if !errors.As(err, &e) {
		return "(bad error) " + err.Error()
	}
	return "(error) " + string(e)
}

func tokens(t *testing.T, line string) [][]byte {
	var out [][]byte
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				t.Fatalf("bad quoting: %s", line)
			}
			s, _ := strconv.Unquote(q)
			out = append(out, []byte(s))
			line = line[len(q):]
			continue
		}
		tok, rest, _ := strings.Cut(line, " ")
		out = append(out, []byte(tok))
		line = rest
	}
	return out
}

func TestTooLarge(t *testing.T) {
	if _, err := Compute(make([]byte, 8000), make([]byte, 8000), Options{Len: true}); err != nil {
		t.Fatalf("8000-byte strings refused: %v", err)
	}
	if _, err := Compute(make([]byte, 8192), make([]byte, 8192), Options{Len: true}); err != ErrTooLarge {
		t.Fatalf("8 KiB strings: err = %v, want ErrTooLarge", err)
	}
	if _, err := Compute(make([]byte, MaxCells), []byte("x"), Options{}); err != ErrTooLarge {
		t.Fatalf("oversized table: err = %v, want ErrTooLarge", err)
	}
}

func BenchmarkCompute1KiB(b *testing.B) {
	x := []byte(strings.Repeat("ohmytext", 128))
	y := []byte(strings.Repeat("mynewtext", 114))
	b.ReportAllocs()
	for b.Loop() {
		Compute(x, y, Options{Idx: true})
	}
}
