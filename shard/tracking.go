package shard

import "github.com/dfly/dfly/tracking"

// Client-side caching (CLIENT TRACKING): the shard holds its part of the
// tracking table (tracking.Keys), tells it of every changed key (touched),
// of flushes, and of the end of every step (exec), when the step's BCAST
// invalidations go out.
//
// Invariant: a read registers its keys on the shard goroutine in the same
// step as the read, or in an earlier message (see server/tracking.go), so
// no write can fall between the read and the registration unnoticed: at
// worst a client is told about a change it had already seen.

// Tracking is the shard's tracking table; only its goroutine may use it.
func (s *Shard) Tracking() *tracking.Keys { return &s.tracking }

// SetWriter records the tracking client whose command the shard runs
// next (nil: none, or not known); the caller resets it after.
func (s *Shard) SetWriter(c *tracking.Client) { s.tracking.SetWriter(c) }

// Track registers c's interest in key (the client read it).
func (s *Shard) Track(key string, c *tracking.Client) { s.tracking.Track(key, c) }
