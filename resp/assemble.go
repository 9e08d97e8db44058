package resp

// Assembly takes a big command out of the caller's buffer as it arrives.
//
// Without it the caller keeps every byte of a partly arrived command and
// hands the parser all of them again on each read: receiving a command of
// N bytes in reads of r bytes then costs N²/r copying in the caller's
// buffer, and a 512 MB value took minutes and gigabytes. With it, once an
// incomplete multibulk command fills AssembleAt bytes of the buffer, the
// parser copies its whole arguments out, and from then on consumes every
// byte that arrives: each byte is copied about once and the caller's buffer
// never holds more than a header or a small bulk.
//
// A bulk of BigArg bytes or more is received into a buffer of its own:
// first into chunks of at most maxChunk bytes, and once half of it has
// arrived into one buffer of its exact length, with the chunks copied over.
// So memory follows what arrived, never the declared length (a client that
// declares 512 MB and sends one byte costs one small chunk), and a value
// costs at most 1.5 times its length while it arrives. Smaller bulks wait
// whole in the caller's buffer and are then copied to the command's own
// small-argument buffer.

const (
	// AssembleAt is the size of the partly arrived command at which
	// assembly starts (a smaller one waits in the caller's buffer).
	AssembleAt = 256 << 10
	// BigArg: bulks at least this long are received into buffers of their
	// own (Redis's PROTO_MBULK_BIG_ARG).
	BigArg = 32 << 10

	minChunk = 64 << 10
	maxChunk = 1 << 20
)

// assembly is a command being taken out of the caller's buffer.
type assembly struct {
	args    [][]byte // whole arguments so far
	small   []byte   // backing store of the arguments under bigArg bytes
	held    int64    // bytes of args
	pending int      // arguments still to come, the bulk in progress included

	// The bulk in progress: its declared length (-1: none; its header
	// comes next), the bytes received, where they are (chunks until half
	// has arrived, then final), and how much of its CR LF has been seen.
	bulk   int64
	got    int64
	chunks [][]byte
	final  []byte
	crlf   int
	// badEnd: a bulk was not followed by CR LF. As on the other path
	// (frame, then redcon), that is an error once every header has been
	// found valid, so a bad header later in the command wins.
	badEnd bool
}

// SetAssembly turns assembly on or off for the next commands. With it on,
// Next may take bytes of a command that has not fully arrived (ok=false
// with consumed > 0): drop them as after a command. A command returned
// after such a call is assembled (Assembled reports true): its arguments
// are the caller's to keep, the parser holds no reference to their bytes.
func (p *Parser) SetAssembly(on bool) {
	p.assembly = on
	if p.asmAt == 0 {
		p.asmAt, p.bigArg = AssembleAt, BigArg
	}
}

// Assembled reports whether the command the last Next returned was
// assembled (see SetAssembly).
func (p *Parser) Assembled() bool { return p.assembled }

// Receiving reports the bytes received so far of the big bulk in progress
// and the room already allocated for it beyond them: what Redis counts in
// its query buffer (qbuf, qbuf-free in CLIENT LIST) besides unparsed bytes,
// and checks against client-query-buffer-limit.
func (p *Parser) Receiving() (received, free int64) {
	a := p.asm
	if a == nil || a.bulk < 0 {
		return 0, 0
	}
	if a.final != nil {
		return a.got, int64(len(a.final)) - a.got
	}
	if n := len(a.chunks); n > 0 {
		last := a.chunks[n-1]
		return a.got, int64(cap(last) - len(last))
	}
	return a.got, 0
}

// ReceivedHead is up to n first bytes of the big bulk in progress, nil
// when none (Redis's log of a query buffer over its limit shows them).
func (p *Parser) ReceivedHead(n int) []byte {
	a := p.asm
	switch {
	case a == nil || a.bulk < 0 || a.got == 0:
		return nil
	case a.final != nil:
		return a.final[:min(int64(n), a.got)]
	}
	return a.chunks[0][:min(n, len(a.chunks[0]))]
}

// Holding is the bytes of the whole arguments of a command being
// assembled (Redis's argv-mem).
func (p *Parser) Holding() int64 {
	if p.asm == nil {
		return 0
	}
	return p.asm.held
}

// startAssembly takes the whole arguments of the incomplete frame at the
// start of buf (frame left its progress in p) and goes on from there.
func (p *Parser) startAssembly(buf []byte) ([][]byte, int, bool, error) {
	a := &assembly{bulk: -1, pending: p.pending}
	p.partial = false
	_, pos, _ := p.header(buf, 0, '*', ErrTooBigMultibulkCount, ErrInvalidMultibulkLength)
	// frame checked these headers and lengths.
	for i := p.count - p.pending; i > 0; i-- {
		n, next, _ := p.header(buf, pos, '$', ErrTooBigBulkCount, ErrInvalidBulkLength)
		end := next + int(n)
		a.badEnd = a.badEnd || buf[end] != '\r' || buf[end+1] != '\n'
		a.addSmall(buf[next:end])
		pos = end + 2
	}
	p.asm = a
	return p.assemble(buf, pos)
}

// assemble goes on with the command in p.asm from buf[pos:].
func (p *Parser) assemble(buf []byte, pos int) ([][]byte, int, bool, error) {
	a := p.asm
	for {
		if a.bulk < 0 {
			if a.pending == 0 {
				if a.badEnd {
					p.asm = nil
					return nil, 0, false, ErrInvalidBulkLength
				}
				// The arguments go to the caller: p.args is not
				// pointed at them, or it would keep them alive.
				p.asm = nil
				p.assembled = true
				return a.args, pos, true, nil
			}
			n, next, err := p.header(buf, pos, '$', ErrTooBigBulkCount, ErrInvalidBulkLength)
			if err == nil && next != 0 {
				switch {
				case n < 0 || n > p.maxBulkLen:
					err = ErrInvalidBulkLength
				case n > unauthBulkLen && !p.authenticated:
					err = ErrUnauthBulkLength
				}
			}
			if err != nil {
				p.asm = nil
				return nil, 0, false, err
			}
			if next == 0 {
				return nil, pos, false, nil
			}
			if n < int64(p.bigArg) {
				end := next + int(n)
				if len(buf) < end+2 {
					return nil, pos, false, nil // it waits whole in buf
				}
				a.badEnd = a.badEnd || buf[end] != '\r' || buf[end+1] != '\n'
				a.addSmall(buf[next:end])
				a.pending--
				pos = end + 2
				continue
			}
			a.bulk, a.got, a.crlf = n, 0, 0
			pos = next
		}
		if a.got < a.bulk && pos < len(buf) {
			take := min(int64(len(buf)-pos), a.bulk-a.got)
			a.receive(buf[pos : pos+int(take)])
			pos += int(take)
		}
		for a.got == a.bulk && a.crlf < 2 && pos < len(buf) {
			a.badEnd = a.badEnd || buf[pos] != "\r\n"[a.crlf]
			a.crlf++
			pos++
		}
		if a.crlf < 2 {
			return nil, pos, false, nil
		}
		a.args = append(a.args, a.final[:a.bulk:a.bulk])
		a.held += a.bulk
		a.final, a.bulk = nil, -1
		a.pending--
	}
}

func (a *assembly) addSmall(b []byte) {
	off := len(a.small)
	a.small = append(a.small, b...)
	a.args = append(a.args, a.small[off:len(a.small):len(a.small)])
	a.held += int64(len(b))
}

// receive stores the next bytes of the bulk in progress.
func (a *assembly) receive(b []byte) {
	if a.final == nil && (a.got+int64(len(b)))*2 >= a.bulk {
		// Half of it is here: one buffer of the exact length from now on.
		a.final = make([]byte, a.bulk)
		off := 0
		for _, c := range a.chunks {
			off += copy(a.final[off:], c)
		}
		a.chunks = nil
	}
	if a.final != nil {
		copy(a.final[a.got:], b)
		a.got += int64(len(b))
		return
	}
	a.got += int64(len(b))
	for len(b) > 0 {
		n := len(a.chunks)
		if n == 0 || len(a.chunks[n-1]) == cap(a.chunks[n-1]) {
			size := minChunk
			if n > 0 {
				size = min(2*cap(a.chunks[n-1]), maxChunk)
			}
			size = int(min(int64(size), a.bulk-a.got+int64(len(b))))
			a.chunks = append(a.chunks, make([]byte, 0, size))
			n++
		}
		c := a.chunks[n-1]
		k := min(len(b), cap(c)-len(c))
		a.chunks[n-1] = append(c, b[:k]...)
		b = b[k:]
	}
}
