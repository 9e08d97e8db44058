// Package notify is keyspace notifications (notify-keyspace-events), as
// Redis 7.0's notify.c: the classes and their letters (Parse, String),
// and the Notifier that publishes an event on __keyspace@<db>__:<key>
// (the event's name as message) and __keyevent@<db>__:<event> (the key
// as message) through the server's Pub/Sub (Notifier.Publish).
//
// Who emits: each command family (package family) after it changes a
// key, with Redis's event name for the command (DB.Notify in package
// shard); package shard for what no command does: "new" when a key is
// added (DB.Insert, not a load), "expired" when a key's TTL passed
// (lazily on access and by the active sweep), and "keymiss" when a read
// finds no key: Find misses of a read-only command (shard.ReadMisses,
// set per command by package command and per transaction step by tx)
// and the reads of write commands (DB.FindRead: GETSET, a STORE's
// sources ...), as Redis's lookupKeyRead. A replica expires nothing
// itself: it emits "del" when it applies its master's DEL, as Redis.
//
// Invariants:
//   - An event is published on the goroutine that owns the key's shard,
//     right after the change, so a key's events arrive in the order its
//     changes happened; a command on keys of several shards emits per
//     shard. Publishing queues the message on each subscriber and never
//     waits for it to be written.
//   - With notifications off, a change pays one atomic load (On).
//   - Nothing here knows a connection or a shard.
package notify
