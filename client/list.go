package client

import (
	"strconv"
	"strings"
	"time"
)

// Type is a client's type as CLIENT LIST TYPE and CLIENT KILL TYPE name it.
type Type int

const (
	Normal Type = iota
	Pubsub
	// Master is the link a replica keeps to its master, Replica a
	// replica's stream on its master; dfly's are not client connections.
	Master
	Replica
)

// ParseType reads a TYPE filter's value as Redis's getClientTypeByName.
func ParseType(name string) (Type, bool) {
	switch strings.ToLower(name) {
	case "normal":
		return Normal, true
	case "pubsub":
		return Pubsub, true
	case "master":
		return Master, true
	case "replica", "slave":
		return Replica, true
	}
	return 0, false
}

// Info is one client as CLIENT LIST shows it: a snapshot its server takes.
type Info struct {
	ID                int64
	Addr, LAddr, Name string
	FD                int
	Created           time.Time
	Idle              time.Duration
	Flags             Flags
	DB                int
	Sub, PSub, SSub   int
	// Multi: commands queued in MULTI, -1 outside.
	Multi int64
	// The buffers, Redis's names: query buffer, its free space, argument
	// bytes of the command being run, MULTI's queue, reply buffer size and
	// peak, output buffer length and list length, unsent output, total.
	QBuf, QBufFree, ArgvMem, MultiMem, RBS, RBP, OBL, OLL, OMem, TotMem int64
	// Cmd: the last command run or queued, "container|sub" for a
	// container's subcommand, as Redis 7.0.
	Cmd             string
	User            string
	Redir           int64
	Resp            int
	LibName, LibVer string
}

// Flags are the client's states CLIENT LIST's flags= letters show.
type Flags struct {
	Monitor, Subscribed, InMulti, Blocked, Tracking, RedirBroken, Bcast bool
	DirtyCAS, CloseAfterReply, Unblocked, CloseASAP, Unix, NoEvict      bool
}

// String is Redis 7.0's flags= field: its letters in its order, N for none.
func (f Flags) String() string {
	var b [16]byte
	s := b[:0]
	for _, l := range [...]struct {
		on     bool
		letter byte
	}{
		{f.Monitor, 'O'}, {f.Subscribed, 'P'}, {f.InMulti, 'x'}, {f.Blocked, 'b'},
		{f.Tracking, 't'}, {f.RedirBroken, 'R'}, {f.Bcast, 'B'}, {f.DirtyCAS, 'd'},
		{f.CloseAfterReply, 'c'}, {f.Unblocked, 'u'}, {f.CloseASAP, 'A'}, {f.Unix, 'U'},
		{f.NoEvict, 'e'},
	} {
		if l.on {
			s = append(s, l.letter)
		}
	}
	if len(s) == 0 {
		return "N"
	}
	return string(s)
}

// Type is the client's type: pubsub while subscribed (a MONITOR is normal).
func (i *Info) Type() Type {
	if i.Flags.Subscribed {
		return Pubsub
	}
	return Normal
}

// Append appends the client's CLIENT LIST line, without its newline.
func (i *Info) Append(b []byte, now time.Time) []byte {
	str := func(name, v string) {
		b = append(b, name...)
		b = append(b, '=')
		b = append(b, v...)
		b = append(b, ' ')
	}
	num := func(name string, v int64) {
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
	}
	num("id", i.ID)
	str("addr", i.Addr)
	str("laddr", i.LAddr)
	num("fd", int64(i.FD))
	str("name", i.Name)
	num("age", int64(now.Sub(i.Created)/time.Second))
	num("idle", int64(i.Idle/time.Second))
	str("flags", i.Flags.String())
	num("db", int64(i.DB))
	num("sub", int64(i.Sub))
	num("psub", int64(i.PSub))
	num("ssub", int64(i.SSub))
	num("multi", i.Multi)
	num("qbuf", i.QBuf)
	num("qbuf-free", i.QBufFree)
	num("argv-mem", i.ArgvMem)
	num("multi-mem", i.MultiMem)
	num("rbs", i.RBS)
	num("rbp", i.RBP)
	num("obl", i.OBL)
	num("oll", i.OLL)
	num("omem", i.OMem)
	num("tot-mem", i.TotMem)
	events := "r"
	if i.OMem > 0 {
		events = "rw" // output waits: Redis's write handler is installed
	}
	str("events", events)
	str("cmd", i.Cmd)
	str("user", i.User)
	num("redir", i.Redir)
	num("resp", int64(i.Resp))
	str("lib-name", i.LibName)
	b = append(b, "lib-ver="...)
	return append(b, i.LibVer...)
}

// ErrName is the reply to a client name ValidName refuses.
const ErrName = "ERR Client names cannot contain spaces, newlines or special characters."

// ValidName reports whether b may be a client name (or a CLIENT SETINFO
// value): printable ASCII without spaces.
func ValidName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}
