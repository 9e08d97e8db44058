package lcs

import "github.com/dfly/dfly/types/num"

// MaxCells bounds (len(a)+1)·(len(b)+1), the size of the table: 64 Mi
// uint32 cells, 256 MiB. Two strings of 8000 bytes fit, two of 8 KiB do not;
// a 1 MiB string can be compared with one of up to 63 bytes.
const MaxCells = 64 << 20

// Error replies of LCS, as Redis 7.0 words them.
const (
	ErrSyntax           = num.ErrSyntax
	ErrLenIdx num.Error = "ERR If you want both the length and indexes, please just use IDX."
	// ErrWrongType is LCS's own WRONGTYPE text, checked before the options.
	ErrWrongType num.Error = "ERR The specified keys must contain string values"
	// ErrTooLarge is the reply Redis gives when it cannot allocate the
	// table; here it is given for tables beyond MaxCells.
	ErrTooLarge num.Error = "ERR Insufficient memory, failed allocating transient memory for LCS"
)

// Options are LCS's flags after the two keys.
type Options struct {
	Len          bool  // LEN: reply with the length only
	Idx          bool  // IDX: reply with the matches and the length
	WithMatchLen bool  // WITHMATCHLEN: add each match's length
	MinMatchLen  int64 // MINMATCHLEN: omit shorter matches (negative reads 0)
}

// ParseOptions parses the arguments after the two keys, any case, in
// order: ErrSyntax for an unknown one (or MINMATCHLEN without a value),
// num.ErrNotInt for a bad MINMATCHLEN, then ErrLenIdx for LEN with IDX.
// Redis parses these after checking the keys' types (ErrWrongType).
func ParseOptions(args [][]byte) (Options, error) {
	var o Options
	for j := 0; j < len(args); j++ {
		switch a := args[j]; {
		case equalFold(a, "idx"):
			o.Idx = true
		case equalFold(a, "len"):
			o.Len = true
		case equalFold(a, "withmatchlen"):
			o.WithMatchLen = true
		case equalFold(a, "minmatchlen") && j+1 < len(args):
			v, err := num.Int(args[j+1])
			if err != nil {
				return o, err
			}
			o.MinMatchLen = max(v, 0)
			j++
		default:
			return o, ErrSyntax
		}
	}
	if o.Idx && o.Len {
		return o, ErrLenIdx
	}
	return o, nil
}

func equalFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != word[i] {
			return false
		}
	}
	return true
}

// Match is one IDX entry: the inclusive ranges [A[0], A[1]] of the first
// string and [B[0], B[1]] of the second that match, and their length (for
// WITHMATCHLEN).
type Match struct {
	A, B [2]int
	Len  int
}

// Result is what LCS replies with, depending on the options: the LCS
// itself (no option), Len (LEN), or Matches then Len (IDX).
type Result struct {
	LCS     []byte // nil when only LEN was asked
	Len     int
	Matches []Match // IDX only, from the end of the strings to the start
}

// Compute runs LCS on a and b (a missing key is empty). It fails with
// ErrTooLarge when the table would exceed MaxCells.
func Compute(a, b []byte, o Options) (Result, error) {
	rows, cols := len(a)+1, len(b)+1
	if uint64(rows)*uint64(cols) > MaxCells {
		return Result{}, ErrTooLarge
	}
	// table[i*cols+j] is the LCS length of a[:i] and b[:j].
	table := make([]uint32, rows*cols)
	for i := 1; i < rows; i++ {
		row, prev := table[i*cols:(i+1)*cols], table[(i-1)*cols:i*cols]
		for j := 1; j < cols; j++ {
			if a[i-1] == b[j-1] {
				row[j] = prev[j-1] + 1
			} else {
				row[j] = max(prev[j], row[j-1])
			}
		}
	}
	n := int(table[rows*cols-1])
	res := Result{Len: n}
	if o.Len && !o.Idx {
		return res, nil
	}
	res.LCS = make([]byte, n)
	// Walk back from the end like Redis, growing a match while both strings
	// step back together and emitting it when the run breaks or reaches the
	// start of either string.
	idx := n
	const unset = -1
	aStart, aEnd, bStart, bEnd := unset, 0, 0, 0
	for i, j := len(a), len(b); i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			res.LCS[idx-1] = a[i-1]
			if aStart == unset {
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			} else if aStart == i && bStart == j {
				aStart--
				bStart--
			} else {
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if table[(i-1)*cols+j] > table[i*cols+j-1] {
				i--
			} else {
				j--
			}
			if aStart != unset {
				emit = true
			}
		}
		if emit {
			if l := aEnd - aStart + 1; o.Idx && int64(l) >= o.MinMatchLen {
				res.Matches = append(res.Matches, Match{A: [2]int{aStart, aEnd}, B: [2]int{bStart, bEnd}, Len: l})
			}
			aStart = unset
		}
	}
	return res, nil
}
