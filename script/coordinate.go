package script

import "strings"

// Where a script runs: the server runs one inline on the shard that owns
// its keys unless these say it must run on a coordinator.

// Coordinate reports whether EVAL, EVALSHA or their _RO forms (args) are
// to run on a coordinator instead of inline on the shard that owns their
// keys (the server's cmdEvalShard); tiered: tiering is on; apart: shards
// are owned by more than one goroutine (event loop). Yes when
//   - it has no keys: it may call keyless commands (FLUSHALL, DBSIZE) that
//     take locks of their own;
//   - it may call a command that reaches other shards (DBSIZE, KEYS,
//     SCAN, SORT's patterns: command.Table.LeavesShard), or one not named
//     by a literal, and the shards are owned by more than one goroutine. Inline,
//     the shard's goroutine would wait for another shard's, which may at
//     that moment wait for it in a script of its own: two event loops
//     waiting for each other forever. A coordinator waits for both
//     without holding either;
//   - tiering is on and it may call SORT: its text names it
//     (MentionsSort), or a command it calls is not named by a literal
//     (checked when it is compiled: Script.MaySort). SORT's BY and GET
//     patterns reach keys known only once it runs, whose values
//     may be offloaded, and a shard's goroutine must not wait for their
//     reads (the server's tiered.go). Inline, SORT could only stop a
//     script that has not written to run it again on a coordinator
//     (Run.Demote);
//     one that has written cannot be undone, and a script inside EXEC (run
//     by the shard for an EXEC on one shard, or in a coordinator's step)
//     cannot be stopped at all. On a coordinator SORT waits for the reads
//     on its own goroutine (family/sort.go). Deciding here costs the
//     scripts that merely mention sort (table.sort, a comment) their
//     inline run, with tiering only; undoing writes would cost every
//     inline script a copy of what it overwrites, and sending every script
//     to a coordinator would cost them all;
//   - it is marked to run on a coordinator (Coordinated): it
//     overran its inline budget, or it called SORT inline with tiering on
//     in a way the checks above missed (the server's Caller, a safety net).
//
// The check is per script, so it holds wherever the script runs: alone,
// in an EXEC on one shard or in one on several.
func (e *Engine) Coordinate(args [][]byte, tiered, apart bool) bool {
	n, errText := NumKeys(args)
	if errText != "" || n == 0 {
		return true
	}
	bySHA := len(args[0]) > 4 && (args[0][4] == 's' || args[0][4] == 'S') // EVALSHA[_RO]
	// sha: of an EVAL's body, once computed.
	var sha string
	if tiered || apart {
		var s *Script
		if bySHA {
			s = e.LookupBytes(args[1])
		} else if tiered && MentionsSort(args[1]) { // EVAL carries the body
			return true
		} else {
			sha, s, _ = e.Load(args[1]) // cached for the run that follows
		}
		if s != nil && (tiered && s.MaySort || apart && s.LeavesShard) {
			return true
		}
	}
	if !e.AnyCoordinated() {
		return false
	}
	switch {
	case bySHA:
		sha = strings.ToLower(string(args[1]))
	case sha == "":
		sha = SHA1Hex(args[1])
	}
	return e.Coordinated(sha)
}

// CoordinateFunction is Coordinate for FCALL and FCALL_RO.
func (e *Engine) CoordinateFunction(args [][]byte, tiered, apart bool) bool {
	n, errText := NumKeys(args)
	if errText != "" || n == 0 {
		return true
	}
	f := e.Function(args[1])
	if f == nil {
		return true // the error needs no shard
	}
	if tiered && f.Lib.MaySort || apart && f.Lib.LeavesShard {
		return true
	}
	if !e.AnyCoordinated() {
		return false
	}
	return e.Coordinated(f.RunID())
}
