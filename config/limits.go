package config

// Client buffer limits, Redis's client-output-buffer-limit and
// client-query-buffer-limit: their values and CONFIG syntax. How the
// server applies them to its clients is server/clientbuf.go.

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dfly/dfly/resp"
)

// ClientClass is a client's output-buffer-limit class.
type ClientClass int

const (
	ClassNormal ClientClass = iota
	ClassReplica
	ClassPubsub
	ClientClasses
)

// classNames are the names CONFIG GET shows, in its order.
var classNames = [ClientClasses]string{"normal", "slave", "pubsub"}

// OutputLimit is one class's limits; read without Config.mu.
type OutputLimit struct {
	Hard, Soft atomic.Uint64
	Seconds    atomic.Int64
}

// ClientLimits are the client buffer limits (Config.limits).
type ClientLimits struct {
	Out   [ClientClasses]OutputLimit
	Query atomic.Int64
	// Memory is maxmemory-clients: bytes, or a percent of maxmemory as a
	// negative number (as Redis keeps it); 0: no client eviction.
	Memory atomic.Int64
	// Disconnections, INFO stats (Redis 7.2's fields; Evicted is 7.0's
	// evicted_clients).
	OutClosed, QueryClosed, Evicted atomic.Int64
}

// ClientEvictionLimit is the clients' memory over which the largest go
// (maxmemory-clients, Redis's getClientEvictionLimit): 0 when off, and no
// less than 128 KiB, so that a bad setting still lets clients talk.
func (c *Config) ClientEvictionLimit() int64 {
	n := c.Limits.Memory.Load()
	if n < 0 {
		c.Mu.RLock()
		n = int64(float64(c.MaxMemory) * float64(-n) / 100)
		c.Mu.RUnlock()
	}
	if n <= 0 {
		return 0
	}
	return max(n, 128<<10)
}

func (l *ClientLimits) setDefaults() {
	l.setOutput(ClassNormal, 0, 0, 0)
	l.setOutput(ClassReplica, 256<<20, 64<<20, 60)
	l.setOutput(ClassPubsub, 32<<20, 8<<20, 60)
	l.Query.Store(resp.DefaultMaxQueryBuf)
}

func (l *ClientLimits) setOutput(c ClientClass, hard, soft uint64, seconds int64) {
	l.Out[c].Hard.Store(hard)
	l.Out[c].Soft.Store(soft)
	l.Out[c].Seconds.Store(seconds)
}

// SetReplicaBufferLimit sets the replica class's hard limit
// (--repl_client_buffer_limit, which predates client-output-buffer-limit).
func (c *Config) SetReplicaBufferLimit(n int64) {
	c.Limits.Out[ClassReplica].Hard.Store(uint64(max(n, 0)))
}

// ReplicaHardLimit is the replica class's hard limit (0: none).
func (c *Config) ReplicaHardLimit() int64 {
	return int64(min(c.Limits.Out[ClassReplica].Hard.Load(), 1<<62))
}

// The errors of CONFIG SET client-output-buffer-limit, Redis's texts.
var (
	errLimitArgs  = errors.New("Wrong number of arguments in buffer limit configuration.")
	errLimitClass = errors.New("Invalid client class specified in buffer limit configuration.")
	errLimitValue = errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
)

// SetClientOutputBufferLimit applies "<class> <hard> <soft> <seconds>
// ...", Redis's syntax: some classes or all, applied only if all parse.
func (c *Config) SetClientOutputBufferLimit(v string) error {
	if v == "" {
		return nil
	}
	// Redis splits on single spaces: two in a row make an empty field.
	f := strings.Split(v, " ")
	if len(f)%4 != 0 {
		return errLimitArgs
	}
	type update struct {
		class      ClientClass
		hard, soft uint64
		seconds    int64
	}
	var ups []update
	for i := 0; i < len(f); i += 4 {
		var u update
		switch strings.ToLower(f[i]) {
		case "normal":
			u.class = ClassNormal
		case "slave", "replica":
			u.class = ClassReplica
		case "pubsub":
			u.class = ClassPubsub
		default:
			return errLimitClass
		}
		var okHard, okSoft bool
		u.hard, okHard = memtoull(f[i+1])
		u.soft, okSoft = memtoull(f[i+2])
		secs, okSecs := strtoll(f[i+3])
		// Redis keeps the seconds in an int: a value that wraps negative
		// is refused, one that wraps positive is taken.
		u.seconds = int64(int32(secs))
		if !okHard || !okSoft || !okSecs || u.seconds < 0 {
			return errLimitValue
		}
		ups = append(ups, u)
	}
	for _, u := range ups {
		c.Limits.setOutput(u.class, u.hard, u.soft, u.seconds)
	}
	return nil
}

// clientOutputBufferLimit is CONFIG GET's value.
func (c *Config) clientOutputBufferLimit() string {
	var b []byte
	for k := range ClientClasses {
		l := &c.Limits.Out[k]
		if k > 0 {
			b = append(b, ' ')
		}
		b = append(b, classNames[k]...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, l.Hard.Load(), 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, l.Soft.Load(), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, l.Seconds.Load(), 10)
	}
	return string(b)
}

// SetClientQueryBufferLimit applies a client-query-buffer-limit value,
// with Redis's bounds (1mb to 2^63-1) and texts.
func (c *Config) SetClientQueryBufferLimit(v string) error {
	n, ok := memtoull(v)
	if !ok {
		return errors.New("argument must be a memory value")
	}
	if n < 1<<20 || n > 1<<63-1 {
		return errors.New("argument must be between 1048576 and 9223372036854775807 inclusive")
	}
	c.Limits.Query.Store(int64(n))
	c.QueryBufMax = int64(n)
	return nil
}

// memtoull parses a memory size as Redis's memtoull: digits (none is 0)
// and a unit b, k, kb, m, mb, g or gb in any case; no sign, no spaces.
// Like Redis it saturates a too long number and wraps on the unit.
func memtoull(s string) (uint64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i >= 128 { // Redis copies the digits into a 128-byte buffer
		return 0, false
	}
	var n uint64
	for _, d := range s[:i] {
		v := uint64(d - '0')
		if n > (1<<64-1-v)/10 {
			n = 1<<64 - 1
			break
		}
		n = n*10 + v
	}
	return n * mul, true
}

// strtoll parses a whole field as C's strtoll: an optional sign, digits
// (an empty field is 0, a sign alone is not a number), saturating on
// overflow.
func strtoll(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
		if s == "" {
			return 0, false
		}
	}
	var n uint64
	for _, d := range []byte(s) {
		if d < '0' || d > '9' {
			return 0, false
		}
		if n <= 1<<63 {
			n = n*10 + uint64(d-'0')
		}
	}
	switch {
	case neg && n >= 1<<63:
		return -1 << 63, true
	case neg:
		return -int64(n), true
	case n >= 1<<63:
		return 1<<63 - 1, true
	}
	return int64(n), true
}

// Memtoull reads a memory size as Redis's memtoull: a number with an
// optional unit (k, kb, m, mb, g, gb; case-insensitive).
func Memtoull(s string) (uint64, bool) { return memtoull(s) }
