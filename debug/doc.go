// Package debug is the DEBUG command: Redis 7.0's subcommands that clients
// and test suites use, answered as Redis answers them, on a coordinator
// (command.Coord), reaching the server only through Host.
//
// What is done as in Redis: HELP, SLEEP, OBJECT, POPULATE, RELOAD, DIGEST,
// DIGEST-VALUE, SET-ACTIVE-EXPIRE (stops the shards' active expiry; lazy
// expiry on access goes on), CHANGE-REPL-ID, ERROR, LOG, PROTOCOL, LISTPACK and
// QUICKLIST (their checks; the structure is "printed on stdout" as nothing),
// and the tuning knobs without meaning here, which answer OK and change
// nothing: QUICKLIST-PACKED-THRESHOLD (its bounds checked), AOF-FLUSH-SLEEP,
// SET-SKIP-CHECKSUM-VALIDATION, PAUSE-CRON, REPLYBUFFER, LEAK,
// STRINGMATCH-TEST. GC is dfly's own (a garbage collection now).
//
// Answered as unknown (Redis's "unknown subcommand or wrong number of
// arguments"): the subcommands that crash or restart the server (ASSERT,
// PANIC, SEGFAULT, OOM, CRASH-AND-RECOVER, RESTART), those of jemalloc,
// AOF, cluster and Redis's own structures (MALLCTL, MALLCTL-STR, LOADAOF,
// DROP-CLUSTER-PACKET-FILTER, CLUSTERLINK, HTSTATS, HTSTATS-KEY, SDSLEN,
// STRUCTSIZE, CLIENT-EVICTION, CONFIG-REWRITE-FORCE-ALL, REPLICATE); and
// what Redis 7.0 itself does not know (JMAP, ZIPLIST, STRINGMATCH-LEN).
//
// DIGEST and DIGEST-VALUE hash as Redis's debug.c (digest.go): the same
// values for strings, lists, sets, sorted sets and hashes in any encoding,
// TTLs and databases included; a stream's of dfly's own.
//
// enable-debug-command (no, yes, local) is checked by the server before
// Run, with Redis's text; dfly's default is local (Redis's is no): its
// tests, benchmarks and tools send DEBUG over loopback.
package debug
