package resp

import (
	"bytes"
	"math"

	"github.com/tidwall/redcon"
)

// Redis's defaults and fixed limits.
const (
	DefaultMaxBulkLen  = 512 << 20 // proto-max-bulk-len
	DefaultMaxQueryBuf = 1 << 30   // client-query-buffer-limit

	inlineMaxSize      = 64 << 10 // PROTO_INLINE_MAX_SIZE: a line or header without its end
	maxMultibulkLen    = math.MaxInt32
	unauthMultibulkLen = 10
	unauthBulkLen      = 16384

	// maxRetainedArgs bounds the reused args buffer kept after a huge command.
	maxRetainedArgs = 1024
)

// ProtocolError is a malformed request. Its text is Redis's, so the reply is
// "-ERR " + Error(); after it the connection must be closed.
type ProtocolError struct{ text string }

func (e *ProtocolError) Error() string { return e.text }

// The protocol errors, with Redis 7's texts.
var (
	ErrInvalidMultibulkLength = &ProtocolError{"Protocol error: invalid multibulk length"}
	ErrInvalidBulkLength      = &ProtocolError{"Protocol error: invalid bulk length"}
	ErrUnauthMultibulkLength  = &ProtocolError{"Protocol error: unauthenticated multibulk length"}
	ErrUnauthBulkLength       = &ProtocolError{"Protocol error: unauthenticated bulk length"}
	ErrUnbalancedQuotes       = &ProtocolError{"Protocol error: unbalanced quotes in request"}
	ErrTooBigInlineRequest    = &ProtocolError{"Protocol error: too big inline request"}
	ErrTooBigMultibulkCount   = &ProtocolError{"Protocol error: too big mbulk count string"}
	ErrTooBigBulkCount        = &ProtocolError{"Protocol error: too big bulk count string"}
)

// expectedDollar is Redis's "expected '$', got 'X'" with X the raw byte.
func expectedDollar(c byte) error {
	return &ProtocolError{"Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}

// Parser splits a connection's input into commands. See the package
// documentation for the calling contract. A Parser belongs to one connection.
type Parser struct {
	maxBulkLen    int64
	maxQueryBuf   int
	authenticated bool
	args          [][]byte

	// Progress through a multibulk frame that has not fully arrived: the
	// headers before resumeAt are valid and pending bulks remain.
	partial  bool
	resumeAt int
	pending  int
	count    int

	// Assembly (assemble.go): on, its thresholds, the command being
	// assembled (nil when none), and whether Next's last command was.
	assembly      bool
	asmAt, bigArg int
	asm           *assembly
	assembled     bool
}

// NewParser returns a parser with Redis's proto-max-bulk-len and
// client-query-buffer-limit; zero or negative values mean Redis's defaults.
// It starts authenticated, as for a server without a password.
func NewParser(maxBulkLen int64, maxQueryBuf int) *Parser {
	if maxBulkLen <= 0 {
		maxBulkLen = DefaultMaxBulkLen
	}
	if maxQueryBuf <= 0 {
		maxQueryBuf = DefaultMaxQueryBuf
	}
	return &Parser{maxBulkLen: maxBulkLen, maxQueryBuf: maxQueryBuf, authenticated: true}
}

// SetAuthenticated turns the limits for unauthenticated clients off (true)
// or on (false).
func (p *Parser) SetAuthenticated(authenticated bool) { p.authenticated = authenticated }

// QueryBufLimit is the most bytes a connection may buffer unparsed.
func (p *Parser) QueryBufLimit() int { return p.maxQueryBuf }

// Overflow reports whether buffered unparsed bytes exceed the query buffer
// limit; the connection is then closed without a reply, as Redis does.
func (p *Parser) Overflow(buffered int) bool { return buffered > p.maxQueryBuf }

// Reset forgets the progress through a partly arrived command; call it when
// the bytes given to the last Next are discarded.
func (p *Parser) Reset() { p.partial, p.asm = false, nil }

// Next parses one command from buf. ok=false with err=nil means buf holds
// only part of a command (consumed is 0). consumed counts the bytes used,
// including those of an empty command (ok=true, len(args)==0).
func (p *Parser) Next(buf []byte) (args [][]byte, consumed int, ok bool, err error) {
	if cap(p.args) > maxRetainedArgs {
		p.args = nil
	}
	p.assembled = false
	if p.asm != nil {
		return p.assemble(buf, 0)
	}
	if len(buf) == 0 {
		return nil, 0, false, nil
	}
	if buf[0] != '*' {
		// Redis treats everything else as inline, '$' included (redcon
		// would take it for Tile38's native protocol).
		p.partial = false
		return p.inline(buf)
	}
	end, count, err := p.frame(buf)
	if err != nil {
		p.partial = false
		return nil, 0, false, err
	}
	if end == 0 {
		if p.assembly && p.partial && len(buf) >= p.asmAt {
			return p.startAssembly(buf)
		}
		return nil, 0, false, nil
	}
	if count <= 0 {
		return p.args[:0], end, true, nil
	}
	// frame vouched for every header and length, so redcon can neither panic
	// on a negative length nor stop early; only a bulk not followed by CR LF
	// remains for it to reject.
	complete, args, _, leftover, rerr := redcon.ReadNextCommand(buf[:end], p.args[:0])
	if rerr != nil || !complete || len(leftover) != 0 || len(args) != count {
		return nil, 0, false, ErrInvalidBulkLength
	}
	for i, a := range args {
		args[i] = a[:len(a):len(a)]
	}
	p.args = args
	return args, end, true, nil
}

// frame checks the headers of the multibulk frame at the start of buf with
// Redis's rules and limits, and returns its length (0: not all here) and
// its argument count (<= 0: an empty command Redis skips).
func (p *Parser) frame(buf []byte) (end, count int, err error) {
	var pos, pending int
	if p.partial && p.resumeAt <= len(buf) {
		pos, pending, count = p.resumeAt, p.pending, p.count
	} else {
		n, next, err := p.header(buf, 0, '*', ErrTooBigMultibulkCount, ErrInvalidMultibulkLength)
		if err != nil || next == 0 {
			return 0, 0, err
		}
		switch {
		case n > maxMultibulkLen:
			return 0, 0, ErrInvalidMultibulkLength
		case n > unauthMultibulkLen && !p.authenticated:
			return 0, 0, ErrUnauthMultibulkLength
		case n <= 0:
			return next, int(n), nil
		}
		pos, pending, count = next, int(n), int(n)
	}
	for ; pending > 0; pending-- {
		n, next, err := p.header(buf, pos, '$', ErrTooBigBulkCount, ErrInvalidBulkLength)
		if err != nil {
			return 0, 0, err
		}
		if next == 0 {
			break
		}
		if n < 0 || n > p.maxBulkLen {
			return 0, 0, ErrInvalidBulkLength
		}
		if n > unauthBulkLen && !p.authenticated {
			return 0, 0, ErrUnauthBulkLength
		}
		if int64(len(buf)-next) < n+2 {
			break
		}
		pos = next + int(n) + 2
	}
	if pending > 0 {
		p.partial, p.resumeAt, p.pending, p.count = true, pos, pending, count
		return 0, 0, nil
	}
	p.partial = false
	return pos, count, nil
}

// header parses the "*N\r\n" or "$N\r\n" line at buf[pos:] and returns N and
// the offset after the line, or next == 0 when the line is incomplete. Like
// Redis it waits for the whole line before it looks at the line's first byte.
func (p *Parser) header(buf []byte, pos int, lead byte, tooBig, invalid error) (n int64, next int, err error) {
	// Headers are short: a plain loop beats IndexByte's setup cost.
	end := min(len(buf), pos+32)
	cr := pos
	for cr < end && buf[cr] != '\r' {
		cr++
	}
	if cr == end {
		i := bytes.IndexByte(buf[end:], '\r')
		if i < 0 {
			if len(buf)-pos > inlineMaxSize {
				return 0, 0, tooBig
			}
			return 0, 0, nil
		}
		cr = end + i
	}
	if cr+1 >= len(buf) {
		return 0, 0, nil
	}
	if buf[pos] != lead {
		return 0, 0, expectedDollar(buf[pos])
	}
	n, ok := parseLength(buf[pos+1 : cr])
	if !ok || buf[cr+1] != '\n' {
		return 0, 0, invalid
	}
	return n, cr + 2, nil
}

// parseLength parses a decimal int64 as Redis's string2ll does: an optional
// '-', no '+', no leading zeros, no spaces, no overflow.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] >= '0' && b[0] <= '9' {
		return int64(b[0] - '0'), true
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	// 19 digits hold every int64 and cannot overflow a uint64.
	if len(b) == 0 || len(b) > 19 || b[0] == '0' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// inline parses a telnet-style line.
func (p *Parser) inline(buf []byte) ([][]byte, int, bool, error) {
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > inlineMaxSize {
			return nil, 0, false, ErrTooBigInlineRequest
		}
		return nil, 0, false, nil
	}
	line := buf[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	args, err := splitArgs(line, p.args[:0])
	if err != nil {
		return nil, 0, false, err
	}
	p.args = args
	return args, nl + 1, true, nil
}
