package evict

import "strings"

// PoolSize is how many candidates the pool keeps, as Redis's EVPOOL_SIZE.
const PoolSize = 16

// Candidate is a sampled key and how good a victim it is: the higher the
// score the sooner it goes (idle seconds for LRU, 255 minus the counter
// for LFU, the inverse of the expiry for volatile-ttl).
type Candidate struct {
	DB    int
	Key   string
	Score uint64
}

// Pool keeps the best candidates of every sampling round, as Redis's
// eviction pool: a key sampled once stays a candidate until a better one
// pushes it out, so few samples per round still approximate true LRU.
// Keys are not owned: the caller checks a popped key still exists.
type Pool struct {
	c []Candidate // ascending by score: the best is last
}

// Offer adds c if the pool has room or c beats its worst candidate.
func (p *Pool) Offer(c Candidate) {
	for i := range p.c {
		if p.c[i].DB == c.DB && p.c[i].Key == c.Key {
			return // sampled again: its score has not grown since
		}
	}
	if len(p.c) == PoolSize {
		if c.Score <= p.c[0].Score {
			return
		}
		copy(p.c, p.c[1:])
		p.c = p.c[:PoolSize-1]
	}
	i := len(p.c)
	for i > 0 && p.c[i-1].Score > c.Score {
		i--
	}
	p.c = append(p.c, Candidate{})
	copy(p.c[i+1:], p.c[i:])
	c.Key = strings.Clone(c.Key) // the caller's may be a view of its table (dash's Key)
	p.c[i] = c
}

// Pop removes and returns the best candidate.
func (p *Pool) Pop() (Candidate, bool) {
	if len(p.c) == 0 {
		return Candidate{}, false
	}
	c := p.c[len(p.c)-1]
	p.c = p.c[:len(p.c)-1]
	return c, true
}

// Len is the number of candidates.
func (p *Pool) Len() int { return len(p.c) }

// Reset drops every candidate (a flush, a policy change).
func (p *Pool) Reset() { p.c = p.c[:0] }
