// Package config is the server's configuration: the settings the flags
// give at start (cmd/dfly) and CONFIG GET/SET read and change at run time,
// under Redis's names and with Redis's texts, and the client buffer limits
// (client-output-buffer-limit, client-query-buffer-limit).
//
// params.txt lists Redis 7.0's 192 parameters as redis-server 7.0.15
// reports them: type, bounds or values, default, mutability, old names.
// bound.go says which of them mean something to dfly and where their
// values live (Config's fields, the encodings' thresholds in types/*); the
// rest are stored and shown as Redis would, with its checks and texts.
// dfly's own parameters (shards, dbformat, tiered_*) follow Redis's.
//
// Invariants:
//   - Every field CONFIG SET may change is read and written under Mu,
//     except those read on every command or every write (SLOWLOG's and the
//     latency monitor's thresholds, the buffer limits, the encodings'
//     thresholds), which are atomics.
//   - CONFIG SET applies all its parameters or none (Set): a failed one
//     puts back the values shown before. What a change means to the
//     running server (the default user's password, buffers) is the
//     server's to apply.
package config
