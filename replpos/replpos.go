package replpos

import (
	"strconv"
	"strings"

	"github.com/dfly/dfly/shard"
)

// The AUX fields of a position: Redis's three (repl-stream-db is
// always 0: dfly's stream SELECTs before its first command) and dfly's.
const (
	FieldReplID     = "repl-id"
	FieldReplOffset = "repl-offset"
	FieldStreamDB   = "repl-stream-db"
	FieldFlowID     = "dfly-flow-id"
	FieldFlowLSNs   = "dfly-flow-lsns"
)

// Position is where a dataset is in replication histories; the zero value
// is nowhere.
type Position struct {
	// ReplID and Offset: the Redis-protocol history ("" for none), the
	// offset of the last byte the data holds.
	ReplID string
	Offset int64
	// FlowID and LSNs: the dfly master's history ("" for none), per
	// master shard the last LSN the data holds.
	FlowID string
	LSNs   []uint64
	// offsetRead: SetField saw repl-offset (Valid needs it with repl-id).
	offsetRead bool
}

// Empty reports whether the position names no history.
func (p *Position) Empty() bool { return p == nil || p.ReplID == "" && p.FlowID == "" }

// Fields are the position's AUX fields, key and value, none for a
// history it does not name.
func (p *Position) Fields() [][2]string {
	var out [][2]string
	if p == nil {
		return nil
	}
	if p.ReplID != "" {
		out = append(out, [2]string{FieldStreamDB, "0"}, [2]string{FieldReplID, p.ReplID},
			[2]string{FieldReplOffset, strconv.FormatInt(p.Offset, 10)})
	}
	if p.FlowID != "" {
		lsns := make([]string, len(p.LSNs))
		for i, n := range p.LSNs {
			lsns[i] = strconv.FormatUint(n, 10)
		}
		out = append(out, [2]string{FieldFlowID, p.FlowID}, [2]string{FieldFlowLSNs, strings.Join(lsns, ",")})
	}
	return out
}

// SetField takes one field read back; it reports whether key is one of
// a position's. A malformed value empties the history it belongs to.
func (p *Position) SetField(key, val string) bool {
	switch key {
	case FieldStreamDB:
	case FieldReplID:
		p.ReplID = val
	case FieldReplOffset:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			p.ReplID, n = "", 0
		}
		p.Offset, p.offsetRead = n, err == nil && n >= 0
	case FieldFlowID:
		p.FlowID = val
	case FieldFlowLSNs:
		p.LSNs = nil
		for _, f := range strings.Split(val, ",") {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				p.FlowID, p.LSNs = "", nil
				return true
			}
			p.LSNs = append(p.LSNs, n)
		}
	default:
		return false
	}
	return true
}

// Valid drops a history whose fields did not all arrive (a file cut short
// of a field, an id without its offset or LSNs).
func (p *Position) Valid() *Position {
	if !p.offsetRead {
		p.ReplID = ""
	}
	if p.FlowID != "" && len(p.LSNs) == 0 {
		p.FlowID = ""
	}
	if p.FlowID == "" {
		p.LSNs = nil
	}
	return p
}

// Cut takes a position at a snapshot's cut: Take runs on every shard's
// goroutine inside the one step that holds them all, End once after it.
type Cut interface {
	Take(sh *shard.Shard)
	End() Position
}

// Fixed is a Cut of a position known before the cut (a replica's link
// stopped for a shutdown's save).
type Fixed Position

func (f *Fixed) Take(*shard.Shard) {}

func (f *Fixed) End() Position { return Position(*f) }
