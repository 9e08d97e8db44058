package stream

import (
	"math"
	"strconv"
)

// ID is a stream entry ID: milliseconds and a sequence number.
type ID struct {
	Ms, Seq uint64
}

// MinID and MaxID are the smallest and largest possible IDs ("-" and "+").
var (
	MinID = ID{}
	MaxID = ID{math.MaxUint64, math.MaxUint64}
)

// Compare returns -1, 0 or +1 as id is less than, equal to or greater than o.
func (id ID) Compare(o ID) int {
	switch {
	case id.Ms < o.Ms:
		return -1
	case id.Ms > o.Ms:
		return 1
	case id.Seq < o.Seq:
		return -1
	case id.Seq > o.Seq:
		return 1
	}
	return 0
}

// Less reports id < o.
func (id ID) Less(o ID) bool { return id.Ms < o.Ms || (id.Ms == o.Ms && id.Seq < o.Seq) }

// IsZero reports id == 0-0.
func (id ID) IsZero() bool { return id.Ms == 0 && id.Seq == 0 }

// Next is the smallest ID greater than id; ok=false for MaxID.
func (id ID) Next() (ID, bool) {
	if id.Seq == math.MaxUint64 {
		if id.Ms == math.MaxUint64 {
			return id, false
		}
		return ID{id.Ms + 1, 0}, true
	}
	return ID{id.Ms, id.Seq + 1}, true
}

// Prev is the largest ID smaller than id; ok=false for 0-0.
func (id ID) Prev() (ID, bool) {
	if id.Seq == 0 {
		if id.Ms == 0 {
			return id, false
		}
		return ID{id.Ms - 1, math.MaxUint64}, true
	}
	return ID{id.Ms, id.Seq - 1}, true
}

// Append appends the "ms-seq" form of id to dst.
func (id ID) Append(dst []byte) []byte {
	dst = strconv.AppendUint(dst, id.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, id.Seq, 10)
}

func (id ID) String() string { return string(id.Append(nil)) }

// ParseID parses "ms-seq" or "ms" (seq = missingSeq), and "-" / "+" unless
// strict, like Redis's streamGenericParseIDOrReply. With autoSeq, "ms-*"
// is accepted and reported by seqGiven=false (XADD's form).
func ParseID(b []byte, missingSeq uint64, strict, autoSeq bool) (id ID, seqGiven, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, false
		}
		if b[0] == '-' {
			return MinID, true, true
		}
		return MaxID, true, true
	}
	dash := -1
	for i, c := range b {
		if c == '-' {
			dash = i
			break
		}
	}
	msPart := b
	if dash >= 0 {
		msPart = b[:dash]
	}
	ms, ok := parseUint(msPart)
	if !ok {
		return id, false, false
	}
	seq, seqGiven := missingSeq, true
	if dash >= 0 {
		rest := b[dash+1:]
		if autoSeq && len(rest) == 1 && rest[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = parseUint(rest); !ok {
			return id, false, false
		}
	}
	return ID{ms, seq}, seqGiven, true
}

// parseUint is Redis's string2ull: string2ll for a non-negative value, or
// else what strtoull accepts (leading spaces, a sign, all digits, no
// overflow; a '-' negates modulo 2^64).
func parseUint(b []byte) (uint64, bool) {
	if n, ok := parseStrictInt(b); ok {
		if n < 0 {
			return 0, false
		}
		return uint64(n), true
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStrictInt is string2ll (no sign but '-', no spaces, no leading zeros).
func parseStrictInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := b[0] == '-'
	if neg {
		i++
	}
	if i == n || b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}
