// Package tracking is client-side caching (CLIENT TRACKING) without the
// server: the tracking table, BCAST prefixes, redirection, and the
// invalidation messages, as Redis 7.0 sends them. It reaches a connection
// only through Conn (protocol, Pub/Sub mode, Deliver) and finds redirect
// targets through Host; it imports no server, shard or command package.
//
// What it holds:
//   - Options: a client's configuration, parsed with Redis's checks and
//     error texts (Parse, prefix overlaps included), CLIENT CACHING's check,
//     CLIENT TRACKINGINFO's reply (WriteInfo).
//   - Registry: the server's tracking clients (a flush tells them all, one
//     null), its BCAST clients and their prefixes, and the totals INFO shows
//     (tracking_clients, tracking_total_keys/_items/_prefixes).
//   - Keys: one shard's part of the table, which clients read which keys
//     (default mode), and the keys the shard's current step changed (BCAST).
//     Only the shard's goroutine uses it.
//
// What is sent, and when (Redis 7.0 checked against redis-server 7.0.15):
//   - Default mode: one message per invalidated key, even when one command
//     (MSET, DEL, EXEC) changes several; a key's registrations are dropped
//     when it fires. The message is queued on the shard goroutine in the
//     step that changed the key, before that step returns, so it is on the
//     target connection's queue before the writer's reply is written.
//   - BCAST: the keys a shard step changed go out when the step ends
//     (Keys.EndStep), one message per client and matching prefix, in the
//     prefixes' order, its keys sorted and once each, as Redis's per-prefix
//     tables do at the end of an event-loop turn. A command's keys on one
//     shard come in one message; keys on several shards come in one message
//     per shard (Redis: one per prefix for the turn).
//   - A client's own writes: their invalidations come after the command's
//     reply (the connection holds back, while a command is in flight, the
//     messages delivered since it was dispatched), as in Redis.
//   - NOLOOP: a client does not hear of keys its own command changed,
//     whatever runs it (the connection's batch, a hop group, a coordinator's
//     transaction steps: Keys.SetWriter, tx.Tx.SetWriter); in BCAST the
//     key's last writer in the step counts. Redis's BCAST counts a script's
//     writes as another client's (its Lua client wrote them) and tells a
//     NOLOOP caller; dfly does not.
//   - Scripts (EVAL, FCALL and their _RO forms): the caller tracks the keys
//     a script declared once a read-only command ran inside it, none
//     otherwise, as Redis 7.0 (the server compares shard.Stats.Reads around
//     the script; a script run on a coordinator tracks them ahead).
//   - Expiry and eviction invalidate like writes; FLUSHDB and FLUSHALL send
//     one null to every tracking client; SWAPDB sends nothing (Redis 7.0).
//   - Redirection: to a RESP3 target as pushes; to a RESP2 one only while it
//     is in Pub/Sub mode, as messages on __redis__:invalidate; nothing to a
//     RESP2 client that does not redirect. The target's protocol is read at
//     each send (HELLO may switch it). A target that is gone makes a RESP3
//     tracking client hear tracking-redir-broken with the target's id, each
//     time, and TRACKINGINFO show broken_redirect until tracking is set again.
//
// Invariants:
//   - A read registers its keys on the shard goroutine in the same step as
//     the read, or in an earlier message, so no write can fall between the
//     read and the registration unnoticed: at worst a client is told about a
//     change it had already seen.
//   - A client that disconnects leaves nothing in the table: every shard
//     drops its registrations (Keys.Drop; Redis keeps them until they fire).
//     A client that turns tracking off is skipped and forgotten lazily.
//   - A shard's table holds at most MaxKeys keys; past it the oldest are
//     invalidated and forgotten (Redis's tracking-table-max-keys).
//   - Nothing here blocks: messages are queued (Conn.Deliver), never written.
package tracking
