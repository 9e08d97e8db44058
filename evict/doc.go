// Package evict is eviction under maxmemory without the server: Redis
// 7.0's eight maxmemory-policy values and their parameters (Settings,
// read by every shard without a lock), the 24-bit LFU stamp (a 16-bit
// minutes clock and an 8-bit logarithmic counter, lfu.go), the eviction
// pool of the sampled LRU/LFU/TTL policies (Pool), the tenacity's time
// limit, and the Budget that turns used memory over maxmemory into each
// shard's share to free.
//
// Where eviction lives: the server samples used memory every 10 ms
// (server/oom.go: the Go heap's objects, as INFO's used_memory, minus
// what was evicted since the last completed GC cycle: Budget.Over, minus
// what the master holds for its replicas and its snapshots for their
// consumers, INFO's mem_not_counted_for_evict as Redis's) and,
// over maxmemory with an evicting policy, asks every shard to free an
// equal share (maxmemory / shards is each shard's budget; the heap is
// not measured per shard, so the excess is split evenly). Each shard
// evicts its own keys on its own goroutine (shard/evict.go: EvictStep,
// sampling its dash tables, a pool per shard), with no global lock,
// yielding to its clients once the tenacity's time limit passed. While
// a point-in-time snapshot runs, a shard evicts keys whose buckets it has
// covered first (shard.Owing): evicting one it still owes would write the
// bucket out and keep its values alive until the consumer takes them,
// freeing nothing for a while (a replica's full sync under a write load
// had the master evict most of its dataset).
//
// dfly's own policy, allkeys-tinylfu (sketch.go, shard/evict.go): Redis's
// sampled LRU keeps what was touched last, so on a skewed workload (a
// cache's GET then SET-on-miss) every miss of a key asked for once pushes
// out a key asked for often; its LFU counts only while a key is in the
// dataset, so a key evicted and asked for again starts over at 5, the
// same as a key never asked for before. TinyLFU (Einziger, Friedman,
// Manes; Caffeine, Dragonfly's cache mode) instead keeps a count-min
// sketch of the requests of every key read, present or not (4 rows of
// 4-bit counters per shard, 2 counters a row per key of the shard: about
// 4 bytes per key in one block a shard, INFO evict_sketch_bytes; nothing
// per key, the entry's Access keeps the LRU clock), halved every 10 ×
// width requests so that the past fades. Eviction takes the sampled key
// the sketch estimates lowest (the longest idle among equals, twice
// maxmemory-samples); and while memory is over maxmemory, a key just
// written that was asked for no more often than the lesser of two sampled
// keys is the next to go (admission: SET-on-miss of a key asked for once
// does not push out anything). tests/bench/evict.sh measures it against
// Redis's allkeys-lru and allkeys-lfu at equal maxmemory.
//
// Invariants:
//   - Only the shard's owning goroutine evicts its keys, between
//     messages, never inside a command: a key a transaction holds, or a
//     value a snapshot is still writing (a shared key lock), is skipped.
//   - An eviction is an expiry's deletion with another name: the shard's
//     expiry hooks run first (a snapshot that has not covered the key's
//     bucket serializes it at its cut, or defers the DEL to the bucket's
//     deferred deletion queue, so the snapshot stays point-in-time), the
//     journal records a DEL (replicas stay exact), then the "evicted"
//     keyspace event and evicted_keys.
//   - A replica never evicts (it applies its master's DELs), and
//     noeviction or tiered storage evicts nothing: writes over maxmemory
//     get Redis's OOM error instead, as they do while every shard finds
//     nothing it may evict (Budget.Stuck: volatile-* without keys with a
//     TTL).
//   - The per-key state costs no memory: the LRU clock (seconds) or the
//     LFU stamp (24 bits) live in shard.Value's Access field, which
//     existed for OBJECT IDLETIME; an entry stays 24 bytes.
//   - Nothing here knows a shard, a connection or the server.
package evict
