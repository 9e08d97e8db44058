// Command dfly runs the dfly server: a Redis-protocol in-memory store on
// shared-nothing shards (docs/DESIGN.md).
//
// It holds the process's wiring and nothing else: flag parsing into a
// config.Config (Redis's and Dragonfly's flag names; an unknown flag or a
// bad value exits with status 2), the log file, the Go runtime's tuning
// (the collector's room for garbage is a sixteenth of the live heap, at
// least 64 MiB, retuned after each cycle: reclaim.Headroom; GOGC 100 with
// tiered storage; neither when GOGC is set; with
// --maxmemory a GOMEMLIMIT of 1.25× it, 2× with tiered storage, unless
// GOMEMLIMIT is set), then, in order: the ACL file, the dataset from
// --dir/--dbfilename (a failed load stops the start), the save schedule,
// --replicaof, SIGTERM/SIGINT handling (a graceful shutdown), and
// server.Serve until shutdown.
//
// Development aids read from the environment: DFLY_PPROF=addr serves
// net/http/pprof, DFLY_CPUPROFILE=file profiles the whole run.
package main
