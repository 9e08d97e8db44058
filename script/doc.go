// Package script is Lua scripting and Redis 7's function libraries
// without the server: the interpreter and its sandbox, the libraries
// scripts see, the conversions between RESP and Lua, the script cache,
// the function registry and its RDB form, and the state SCRIPT KILL and
// the inline budget act on. The server decides where a script runs and
// runs the commands it calls (docs/DESIGN.md §2: inline on a shard,
// borrowed, on a coordinator); this package never sees a shard, a
// transaction or a connection.
//
//   - engine.go: Engine (one per server: the cache by SHA1, the idle
//     interpreters, the running scripts, the scripts marked to run on a
//     coordinator), Host (what it needs of the server), Script.
//   - run.go: Run, a running script as SCRIPT KILL, FUNCTION STATS,
//     the BUSY replies past busy-reply-threshold (Engine.Busy) and the
//     inline budget (InlineBudget, Run.Demote) see it.
//   - vm.go: VM, a pooled interpreter: the sandbox shaped like Redis
//     7.0's (read-only globals and libraries, no os/io/loadfile), a run's
//     life (Begin, RunScript or RunFunction, End), Caller (how redis.call
//     reaches the server).
//   - redis.go: the redis library (call, pcall, log, setresp ...);
//     libs.go: cjson, bit and struct; cmsgpack.go: cmsgpack, byte for
//     byte lua-cmsgpack's; convert.go: a script's result to
//     its reply, a call's reply to Lua, errors both ways, as Redis 7.0.
//   - names.go: which commands a script can call, read from its syntax
//     tree when it is compiled (Script.MaySort, Script.LeavesShard);
//     coordinate.go: whether a run must leave its keys' shard for a
//     coordinator (Engine.Coordinate, Engine.CoordinateFunction).
//   - function.go, library.go: libraries ("#!lua name=..."), their
//     functions and flags, FUNCTION's subcommands, FUNCTION2 records;
//     running a library's chunk and redis.register_function.
//   - shebang.go: a script's "#!lua flags=..." line and the refusals of
//     a run its flags (or a function's) call for (Refusal, CallsMayOOM:
//     EVAL_RO, a replica, used memory over maxmemory).
//   - command.go: EVAL's and FCALL's arguments (NumKeys, KeyPositions),
//     SCRIPT's subcommands, the error texts.
//
// A call goes from redis.call to Caller.Call with arguments copied into
// the interpreter's buffers and a reply writer it reuses; the reply comes
// back as a Lua value. The server's Caller checks the call (ACL, declared
// keys, read-only, replica) and runs it within the script's transaction.
//
// Invariants:
//   - An interpreter runs one script at a time, on the goroutine that
//     took it (Engine.VM), and goes back to the pool only with its
//     context never cancelled (Engine.Release): a killed or demoted run's
//     interpreter is dropped, never reused.
//   - Between runs an interpreter's globals are as new: KEYS and ARGV are
//     removed and the read-only proxies emptied (VM.reset), so no script
//     sees another's state.
//   - A run is killed (SCRIPT KILL, the inline budget) only before its
//     first write (Run.BeginWrite under Run.mu): a script either changed
//     nothing or runs to its end.
//   - A library never changes once loaded; an interpreter's closures of
//     libraries are dropped when the registry changes (libGen).
//   - A call copies nothing it need not: its arguments, its reply
//     buffer, the KEYS and ARGV tables and a script's function are
//     reused run after run (BenchmarkEvalShard in server/ measures it).
//   - It imports no server-side package (server, persist, master,
//     replica), even through another (tests/layout_test.go); of package command
//     it uses only Redis's error texts and HELP.
package script
