package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Limits of the link.
const (
	// maxLine bounds a reply line (PSYNC answer, payload header).
	maxLine = 64 << 10
	// initialBuf is the read buffer's starting size; it grows only for a
	// single command that does not fit, up to the query buffer limit.
	initialBuf = 256 << 10
)

var errLineTooLong = errors.New("replica: reply line too long")

// wire is a buffered reader over the master's socket that can hand out
// its buffered bytes without copying (the stream parser works on them in
// place). Every read has a deadline.
type wire struct {
	nc      net.Conn
	buf     []byte
	r, w    int
	timeout time.Duration
	maxBuf  int
	// onRead is told about every successful read (last I/O time, counters).
	onRead func(n int)
}

func newWire(nc net.Conn, timeout time.Duration, maxBuf int) *wire {
	return &wire{nc: nc, buf: make([]byte, initialBuf), timeout: timeout, maxBuf: maxBuf}
}

func (w *wire) buffered() []byte { return w.buf[w.r:w.w] }

func (w *wire) discard(n int) { w.r += n }

// fill reads at least one more byte, compacting the buffer first and
// growing it when it is full of one unfinished item.
func (w *wire) fill() error {
	if w.r > 0 {
		n := copy(w.buf, w.buf[w.r:w.w])
		w.r, w.w = 0, n
	}
	if w.w == len(w.buf) {
		if len(w.buf) >= w.maxBuf {
			return fmt.Errorf("replica: a command from the master exceeds %d bytes", w.maxBuf)
		}
		nb := make([]byte, min(2*len(w.buf), w.maxBuf))
		copy(nb, w.buf[:w.w])
		w.buf = nb
	}
	if w.timeout > 0 {
		_ = w.nc.SetReadDeadline(time.Now().Add(w.timeout))
	}
	n, err := w.nc.Read(w.buf[w.w:])
	if n > 0 {
		w.w += n
		if w.onRead != nil {
			w.onRead(n)
		}
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// readLine returns the next line without its CR LF (a bare LF ends it
// too); the result is valid until the next read.
func (w *wire) readLine() ([]byte, error) {
	scanned := 0
	for {
		b := w.buffered()
		if i := bytes.IndexByte(b[scanned:], '\n'); i >= 0 {
			line := b[:scanned+i]
			w.discard(scanned + i + 1)
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		}
		scanned = len(b)
		if scanned > maxLine {
			return nil, errLineTooLong
		}
		if err := w.fill(); err != nil {
			return nil, err
		}
	}
}

// Read implements io.Reader over the buffer, then the socket.
func (w *wire) Read(p []byte) (int, error) {
	if w.r == w.w {
		if len(p) >= len(w.buf) {
			// Large reads bypass the buffer.
			if w.timeout > 0 {
				_ = w.nc.SetReadDeadline(time.Now().Add(w.timeout))
			}
			n, err := w.nc.Read(p)
			if n > 0 && w.onRead != nil {
				w.onRead(n)
			}
			return n, err
		}
		if err := w.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, w.buffered())
	w.discard(n)
	return n, nil
}

// write sends b with a deadline.
func (w *wire) write(b []byte) error {
	if w.timeout > 0 {
		_ = w.nc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
	_, err := w.nc.Write(b)
	return err
}

// eofMarkLen is the length of the diskless payload's end mark.
const eofMarkLen = 40

// eofReader yields a diskless payload ("$EOF:<mark>" form): the bytes up
// to the first occurrence of the mark, which it consumes too, and nothing
// after it (the command stream that follows stays in the wire).
type eofReader struct {
	w    *wire
	mark []byte
	// tail holds the last bytes seen (fewer than the mark) that may be
	// the start of the mark, not yet handed out.
	tail    []byte
	scratch []byte
	out     []byte
	done    bool
}

func newEOFReader(w *wire, mark []byte) *eofReader {
	return &eofReader{w: w, mark: append([]byte(nil), mark...), tail: make([]byte, 0, eofMarkLen)}
}

func (e *eofReader) Read(p []byte) (int, error) {
	for {
		if len(e.out) > 0 {
			n := copy(p, e.out)
			e.out = e.out[n:]
			return n, nil
		}
		if e.done {
			return 0, io.EOF
		}
		if len(e.w.buffered()) == 0 {
			if err := e.w.fill(); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
		}
		chunk := e.w.buffered()
		win := append(append(e.scratch[:0], e.tail...), chunk...)
		e.scratch = win
		if i := bytes.Index(win, e.mark); i >= 0 {
			e.w.discard(i + len(e.mark) - len(e.tail))
			e.out, e.tail, e.done = win[:i], e.tail[:0], true
			continue
		}
		e.w.discard(len(chunk))
		keep := min(len(e.mark)-1, len(win))
		e.out = win[:len(win)-keep]
		e.tail = append(e.tail[:0], win[len(win)-keep:]...)
	}
}
