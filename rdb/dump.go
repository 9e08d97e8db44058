package rdb

import (
	"encoding/binary"
	"fmt"
)

// EncodeDump returns a DUMP payload (what DUMP replies and RESTORE
// takes): the value written by write, the RDB version (2 bytes LE) and
// the CRC-64 of all that (8 bytes LE). write calls exactly one value
// method of e (String, or Begin*... End); keys and Meta given to it are
// ignored.
func EncodeDump(write func(e *Encoder)) ([]byte, error) {
	e := &Encoder{dump: true}
	write(e)
	if e.err == nil && (!e.dumpUsed || e.state != stIdle) {
		e.err = errEncoderState
	}
	if e.err != nil {
		return nil, e.err
	}
	b := binary.LittleEndian.AppendUint16(e.buf, Version)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b)), nil
}

// VerifyDump checks a DUMP payload's version and checksum as RESTORE
// does, returning ErrDumpPayload if they are wrong.
func VerifyDump(payload []byte) error {
	if len(payload) < 10 {
		return ErrDumpPayload
	}
	n := len(payload)
	if binary.LittleEndian.Uint16(payload[n-10:]) > MaxVersion {
		return ErrDumpPayload
	}
	if CRC64(0, payload[:n-8]) != binary.LittleEndian.Uint64(payload[n-8:]) {
		return ErrDumpPayload
	}
	return nil
}

// DecodeDump verifies a DUMP payload (ErrDumpPayload, as Redis words it)
// and reports its value to h with a nil key and zero Meta. A payload
// that does not decode, or has bytes left over, gives an error wrapping
// ErrBadDataFormat and the *Error naming the offset.
func DecodeDump(payload []byte, h Handler) error {
	if err := VerifyDump(payload); err != nil {
		return err
	}
	body := payload[:len(payload)-10]
	d := &Decoder{num1: make([]byte, 0, 24), num2: make([]byte, 0, 24)}
	d.r.initBytes(body)
	d.h = h
	d.version = MaxVersion
	err := func() error {
		t, err := d.r.readByte()
		if err != nil {
			return err
		}
		if !isValueType(t) {
			return d.corrupt(0, "unknown value type %d", t)
		}
		if err := d.value(t, 0, nil, Meta{}); err != nil {
			return err
		}
		if !d.cur.begun && t != typeString {
			return d.corrupt(d.r.offset(), "empty collection")
		}
		if !d.r.atEOF() {
			return d.corrupt(d.r.offset(), "%d bytes after the value", len(body)-int(d.r.offset()))
		}
		return nil
	}()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadDataFormat, d.wrap(err))
	}
	return nil
}

// DecodeFunctionDump verifies a FUNCTION DUMP payload (ErrDumpPayload)
// and returns the library sources of its FUNCTION2 records, in order.
func DecodeFunctionDump(payload []byte) ([][]byte, error) {
	if err := VerifyDump(payload); err != nil {
		return nil, err
	}
	body := payload[:len(payload)-10]
	d := &Decoder{num1: make([]byte, 0, 24), num2: make([]byte, 0, 24)}
	d.r.initBytes(body)
	d.version = MaxVersion
	var codes [][]byte
	for !d.r.atEOF() {
		off := d.r.offset()
		op, err := d.r.readByte()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadDataFormat, d.wrap(err))
		}
		if op != opFunction2 {
			return nil, fmt.Errorf("%w: %w", ErrBadDataFormat, d.wrap(d.corrupt(off, "record type %d in a function dump", op)))
		}
		var buf []byte
		code, err := d.readString(&buf)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadDataFormat, d.wrap(err))
		}
		codes = append(codes, append([]byte(nil), code...))
	}
	return codes, nil
}
