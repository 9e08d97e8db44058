// Package config is the server's configuration: the settings the flags
// give at start (cmd/dfly) and CONFIG GET/SET read and change at run time,
// under Redis's names and with Redis's texts, and the client buffer limits
// (client-output-buffer-limit, client-query-buffer-limit).
//
// Invariants:
//   - Every field CONFIG SET may change is read and written under Mu,
//     except those read on every command or every write (SLOWLOG's and the
//     latency monitor's thresholds, the buffer limits), which are atomics.
//   - A parameter either applies whole or not at all, with Redis's error
//     text (Set); what its change means to the running server (the
//     default user's password, buffers) is the server's to apply.
package config
