package evict

import (
	"errors"
	"strings"
	"sync/atomic"
)

// Policy is maxmemory-policy: which keys go when memory is over maxmemory.
type Policy uint8

const (
	NoEviction Policy = iota
	AllKeysLRU
	AllKeysLFU
	AllKeysRandom
	VolatileLRU
	VolatileLFU
	VolatileRandom
	VolatileTTL
	// AllKeysTinyLFU is dfly's own (sketch.go): any key, the least asked
	// for lately by a sketch that remembers keys not in the dataset too,
	// the longest idle among equals; newly written keys are candidates at
	// once, so one asked for less than what it would push out goes first.
	AllKeysTinyLFU
)

// names are Redis's, in the order its error text lists them, then dfly's.
var names = [...]struct {
	p    Policy
	name string
}{
	{VolatileLRU, "volatile-lru"}, {VolatileLFU, "volatile-lfu"}, {VolatileRandom, "volatile-random"},
	{VolatileTTL, "volatile-ttl"}, {AllKeysLRU, "allkeys-lru"}, {AllKeysLFU, "allkeys-lfu"},
	{AllKeysRandom, "allkeys-random"}, {NoEviction, "noeviction"}, {AllKeysTinyLFU, "allkeys-tinylfu"},
}

// ParsePolicy reads a policy's name, in any case as Redis does; its
// error is Redis's, which lists Redis's.
func ParsePolicy(s string) (Policy, error) {
	for _, n := range names {
		if strings.EqualFold(s, n.name) {
			return n.p, nil
		}
	}
	return 0, errors.New("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
}

func (p Policy) String() string {
	for _, n := range names {
		if n.p == p {
			return n.name
		}
	}
	return "noeviction"
}

// LFU: keys carry an access counter instead of a last access time.
func (p Policy) LFU() bool { return p == AllKeysLFU || p == VolatileLFU }

// Volatile: only keys with a TTL may go.
func (p Policy) Volatile() bool { return p >= VolatileLRU && p <= VolatileTTL }

// Settings are the eviction parameters (maxmemory-policy,
// maxmemory-samples, lfu-log-factor, lfu-decay-time,
// maxmemory-eviction-tenacity), read by every shard on every key access
// without a lock: atomics, set by CONFIG SET.
type Settings struct {
	policy    atomic.Uint32
	Samples   atomic.Int64
	LogFactor atomic.Int64
	DecayTime atomic.Int64
	Tenacity  atomic.Int64
}

// NewSettings holds Redis's defaults.
func NewSettings() *Settings {
	s := &Settings{}
	s.Samples.Store(5)
	s.LogFactor.Store(10)
	s.DecayTime.Store(1)
	s.Tenacity.Store(10)
	return s
}

// Policy is the current maxmemory-policy.
func (s *Settings) Policy() Policy { return Policy(s.policy.Load()) }

// SetPolicy changes it.
func (s *Settings) SetPolicy(p Policy) { s.policy.Store(uint32(p)) }
