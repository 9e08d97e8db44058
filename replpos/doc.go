// Package replpos is a dataset's replication position as a snapshot file
// keeps it: where the data stands in a Redis-protocol history (the
// replication id and offset, Redis's repl-id and repl-offset AUX fields)
// and in a dfly master's history (its id and the last LSN of each of its
// shards the data holds, dfly flows' position), so that a server
// restarted from the file continues by a partial sync (PSYNC replid
// offset+1; DFLY HANDOVER, or DFLY FLOW from the next LSNs), as Redis
// does with the fields of its RDB file.
//
// The API, for any file that holds a dataset (persist's RDB and dfly
// formats; an append-only file may reuse it):
//
//	cut := host.PositionCut()       // before the step that holds every shard
//	cut.Take(sh)                    // inside it, on each shard's goroutine
//	pos := cut.End()                // after it: the position at the cut
//	for _, f := range pos.Fields() { e.AUX(f[0], f[1]) }   // saving
//	pos.SetField(key, val)          // loading: each AUX field (or line)
//
// What a position must be: exactly the dataset's. A Cut takes it in the
// step that takes the file's cut, so no write is on one side in the data
// and on the other in the position; a Cut that cannot tell (a replica
// whose link applies while the shards are held, a journal that did not
// record) leaves the part it cannot vouch for empty, and the server then
// syncs in full. A position too far ahead would skip writes and one too
// far behind would apply some twice: an empty one costs a full sync only.
//
// Never: import the server, replication or persistence (they import it).
package replpos
