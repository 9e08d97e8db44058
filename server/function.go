package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/persist"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

// FUNCTION and FCALL / FCALL_RO: Redis 7's function libraries.
//
// A library is Lua source that starts with "#!lua name=<lib>" and, when
// loaded, registers functions with redis.register_function. The server
// keeps each library's source and compiled chunk (funcLib) in the script
// engine, with every function by its name, case-insensitively as Redis
// does. An FCALL runs like EVALSHA (cmdEval: inline on the shard owning
// its keys or on a coordinator, its declared keys locked, replicated by
// its effects): the interpreter that runs it first runs the library's
// chunk once, to make the function's closure in that interpreter
// (luaVM.libFunction).
//
// Globals: a library's chunk and its functions share one environment per
// interpreter (luaVM.fnEnv), read-only. While a chunk loads it sees only
// redis.register_function, redis.log, the LOG_* levels and the version;
// when a function runs it sees the scripting globals (redis.call ...), but
// not KEYS and ARGV: a function gets its keys and arguments as parameters.
//
// Durability: libraries are saved in RDB files and snapshots (FUNCTION2
// records, written at the cut: cutFunctions) and loaded from them (a
// Redis RDB's too), carried by full syncs, and every change is journaled
// on shard 0 while holding it, the way a snapshot's cut holds every shard,
// so a change is either in a cut or in the journal after it.

const (
	funcSource      = "user_function"
	errFuncNotFound = "ERR Function not found"
	errLibNotFound  = "ERR Library not found"
	errNameChars    = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	errROWriteFunc  = "ERR Can not execute a script with write flag using *_ro command."
)

// Function flags, in the order FUNCTION LIST shows them.
var funcFlagNames = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

const flagNoWrites = 1

// funcLib is a loaded library. It never changes: FUNCTION LOAD REPLACE
// makes a new one.
type funcLib struct {
	name, code string
	proto      *lua.FunctionProto
	fns        []*funcDef // in registration order
	// As compiledScript's (evalCoordinate).
	maySort, leavesShard bool
}

// funcDef is a function of a library.
type funcDef struct {
	name    string
	desc    string
	hasDesc bool
	flags   int // bits of funcFlagNames
	lib     *funcLib
}

// funcRegistry is the engine's libraries (under scriptEngine.mu).
type funcRegistry struct {
	libs  map[string]*funcLib // by name, case-sensitive
	funcs map[string]*funcDef // by lower-case name
}

func (r *funcRegistry) init() {
	if r.libs == nil {
		r.libs, r.funcs = map[string]*funcLib{}, map[string]*funcDef{}
	}
}

// validName: letters, digits and underscores, at least one.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// libraryName reads the "#!lua name=<lib>" line.
func libraryName(code []byte) (string, string) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return "", "ERR Missing library metadata"
	}
	nl := bytes.IndexByte(code, '\n')
	if nl < 0 {
		return "", "ERR Invalid library metadata"
	}
	parts := strings.Fields(string(code[2:nl]))
	if len(parts) == 0 {
		return "", "ERR Invalid library metadata"
	}
	if !strings.EqualFold(parts[0], "lua") {
		return "", "ERR Engine '" + parts[0] + "' not found"
	}
	name, named := "", false
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "name=")
		if !ok {
			return "", "ERR Invalid metadata value given: " + p
		}
		if named {
			return "", "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, named = v, true
	}
	if !named {
		return "", "ERR Library name was not given"
	}
	if !validName(name) {
		return "", errNameChars
	}
	return name, ""
}

// compileLibrary compiles code and runs its chunk once, collecting the
// functions it registers; the error is the full reply.
func (e *scriptEngine) compileLibrary(code []byte) (*funcLib, string) {
	name, errText := libraryName(code)
	if errText != "" {
		return nil, errText
	}
	// The metadata line becomes a comment, so line numbers stay the
	// source's.
	src := append([]byte("--"), code[2:]...)
	proto, literal, names, errText := compileChunk(src, funcSource, "ERR Error compiling function: ")
	if errText != "" {
		return nil, errText
	}
	lib := &funcLib{name: name, code: string(code), proto: proto, maySort: !literal, leavesShard: !literal}
	if mentionsSort(code) {
		lib.maySort = true
	}
	for _, n := range names {
		lib.leavesShard = lib.leavesShard || e.leaves(n)
	}
	vm := e.vms.Get().(*luaVM)
	defer e.vms.Put(vm)
	if _, errText = vm.loadLibrary(lib, true); errText != "" {
		return nil, errText
	}
	if len(lib.fns) == 0 {
		return nil, "ERR No functions registered"
	}
	return lib, ""
}

// addLibrary registers lib; replace lets it take the place of a library
// of the same name. Under e.mu.
func (e *scriptEngine) addLibrary(lib *funcLib, replace bool) string {
	r := &e.fn
	r.init()
	old := r.libs[lib.name]
	if old != nil && !replace {
		return "ERR Library '" + lib.name + "' already exists"
	}
	for _, f := range lib.fns {
		if o := r.funcs[strings.ToLower(f.name)]; o != nil && o.lib != old {
			return "ERR Function " + f.name + " already exists"
		}
	}
	if old != nil {
		e.dropLibrary(old)
	}
	r.libs[lib.name] = lib
	for _, f := range lib.fns {
		r.funcs[strings.ToLower(f.name)] = f
	}
	e.libGen.Add(1)
	return ""
}

// dropLibrary forgets lib. Under e.mu.
func (e *scriptEngine) dropLibrary(lib *funcLib) {
	delete(e.fn.libs, lib.name)
	for _, f := range lib.fns {
		delete(e.fn.funcs, strings.ToLower(f.name))
	}
	e.libGen.Add(1)
}

// function returns the function named name (any case), or nil.
func (e *scriptEngine) function(name []byte) *funcDef {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.fn.funcs[strings.ToLower(string(name))]
}

// libraries returns the loaded libraries by name.
func (e *scriptEngine) libraries() []*funcLib {
	e.mu.RLock()
	libs := make([]*funcLib, 0, len(e.fn.libs))
	for _, l := range e.fn.libs {
		libs = append(libs, l)
	}
	e.mu.RUnlock()
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	return libs
}

// LoadFunctionLibrary loads a library read from a snapshot or a
// replication stream, replacing one of the same name.
func (s *Server) loadFunctionLibrary(code []byte) error {
	e := s.scripts()
	lib, errText := e.compileLibrary(code)
	if errText == "" {
		e.mu.Lock()
		errText = e.addLibrary(lib, true)
		e.mu.Unlock()
	}
	if errText != "" {
		return &funcLoadError{errText}
	}
	return nil
}

type funcLoadError struct{ msg string }

func (e *funcLoadError) Error() string { return "function library: " + e.msg }

// flushFunctions drops every library (a replica's full sync).
func (s *Server) flushFunctions() {
	e := s.scripts()
	e.mu.Lock()
	e.fn = funcRegistry{}
	e.libGen.Add(1)
	e.mu.Unlock()
}

// cutFunctions returns the libraries as RDB FUNCTION2 records, for a
// snapshot's cut: call it while holding shard 0 (every change holds it).
func (s *Server) cutFunctions() []byte {
	e := rdb.NewEncoder(nil)
	for _, l := range s.scripts().libraries() {
		e.Function([]byte(l.code))
	}
	return e.TakeBytes()
}

// functionsAtCut puts the libraries first on shard 0's output of a
// snapshot (tagged: as a main-stream fragment) when there are any; it runs
// at the cut, on the shard's goroutine, holding it.
func (s *Server) functionsAtCut(sh *shard.Shard, out chan<- snapshot.Chunk, tagged bool) {
	if sh.ID != 0 {
		return
	}
	b := s.cutFunctions()
	if len(b) == 0 {
		return
	}
	if tagged {
		b = persist.AppendPlainFrames(nil, snapshot.MainStream, b)
	}
	out <- snapshot.Chunk{Data: b} // the first item of an empty channel: never blocks
}

func functionCommands() []*command.Command {
	f := command.FlagNoScript | command.FlagStale
	return []*command.Command{
		{Name: "fcall", Arity: -3, Flags: f | command.FlagWrite, KeyPositions: evalKeyPositions,
			Coordinate: viaServer(fcallCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdFcall(c, false) }) },
			Multi: viaCoord(func(x *Coord) { cmdFcall(x, false) })},
		{Name: "fcall_ro", Arity: -3, Flags: f | command.FlagReadonly, KeyPositions: evalKeyPositions,
			Coordinate: viaServer(fcallCoordinate), Shard: func(x *command.Exec) { cmdEvalShard(x, func(c *Coord) { cmdFcall(c, true) }) },
			Multi: viaCoord(func(x *Coord) { cmdFcall(x, true) })},
		{Name: "function", Arity: -2, Flags: command.FlagNoScript | command.FlagWrite, Multi: viaCoord(cmdFunction)},
	}
}

func init() { command.Register("scripting", functionCommands) }

// fcallCoordinate is evalCoordinate for a function.
func fcallCoordinate(srv *Server, args [][]byte) bool {
	n, e := parseNumKeys(args)
	if e != "" || n == 0 {
		return true
	}
	f := srv.scripts().function(args[1])
	if f == nil {
		return true // the error needs no shard
	}
	if srv.tiered != nil && f.lib.maySort || srv.shardsApart() && f.lib.leavesShard {
		return true
	}
	if coordCount.Load() == 0 {
		return false
	}
	_, marked := coordScripts.Load(funcRunID(f))
	return marked
}

// funcRunID names a function's runs in coordScripts (and SCRIPT KILL's
// registry), apart from any script's SHA.
func funcRunID(f *funcDef) string { return "f:" + strings.ToLower(f.name) }

func cmdFcall(x *Coord, readonly bool) {
	numKeys, errText := parseNumKeys(x.Args)
	if errText != "" {
		if errText == command.ErrNotInt {
			errText = "ERR Bad number of keys provided"
		}
		x.W.Error(errText)
		return
	}
	f := x.Srv.scripts().function(x.Args[1])
	if f == nil {
		x.W.Error(errFuncNotFound)
		return
	}
	noWrites := f.flags&flagNoWrites != 0
	if readonly && !noWrites {
		x.W.Error(errROWriteFunc)
		return
	}
	if !noWrites && x.Srv.replica.active.Load() {
		x.W.Error(errReadonlyReplica)
		return
	}
	runScript(x, scriptTarget{fn: f, id: []byte(funcRunID(f))}, numKeys, readonly || noWrites)
}

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Prints this help.",
}

// cmdFunction is FUNCTION. The subcommands that read (LIST, STATS, DUMP,
// HELP) and KILL need no shard; those that change the libraries run
// while holding shard 0 and are journaled there (see the top).
func cmdFunction(x *Coord) {
	e := x.Srv.scripts()
	a, w := x.Args, x.W
	sub := strings.ToLower(string(a[1]))
	switch sub {
	case "help":
		if len(a) != 2 {
			break
		}
		command.WriteHelp(w, functionHelp)
		return
	case "list":
		functionList(e, a[2:], w)
		return
	case "stats":
		if len(a) != 2 {
			break
		}
		functionStats(e, w)
		return
	case "kill":
		if len(a) != 2 {
			break
		}
		if err := e.kill(true); err != "" {
			w.Error(err)
			return
		}
		w.SimpleString("OK")
		return
	case "dump":
		if len(a) != 2 {
			break
		}
		w.Bulk(dumpFunctions(x.Srv.cutFunctions()))
		return
	case "load", "delete", "flush", "restore":
		if len(a) < 3 && sub != "flush" {
			break
		}
		changeFunctions(x, sub)
		return
	default:
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try FUNCTION HELP.")
		return
	}
	w.Error(command.WrongArity("function|" + sub))
}

// functionWrites reports whether FUNCTION's subcommand sub changes the
// libraries (refused on a replica).
func functionWrites(sub []byte) bool {
	switch strings.ToLower(string(sub)) {
	case "load", "delete", "flush", "restore":
		return true
	}
	return false
}

// changeFunctions runs LOAD, DELETE, FLUSH and RESTORE holding shard 0,
// and journals the command there when it changed something.
func changeFunctions(x *Coord, sub string) {
	t := x.Tx()
	t.AddShard(0)
	t.Lock()
	if functionChange(x, sub) && t.Recording() {
		t.Record(x.DB, x.Args)
	}
	t.Finish(nil)
}

// functionChange applies one changing subcommand and answers it; it
// reports whether the libraries changed.
func functionChange(x *Coord, sub string) bool {
	e := x.Srv.scripts()
	a, w := x.Args, x.W
	switch sub {
	case "load":
		replace := false
		for _, o := range a[2 : len(a)-1] {
			if !strings.EqualFold(string(o), "replace") {
				w.Error("ERR Unknown option given: " + string(o))
				return false
			}
			replace = true
		}
		lib, errText := e.compileLibrary(a[len(a)-1])
		if errText == "" {
			e.mu.Lock()
			errText = e.addLibrary(lib, replace)
			e.mu.Unlock()
		}
		if errText != "" {
			w.Error(errText)
			return false
		}
		w.BulkString(lib.name)
		return true
	case "delete":
		if len(a) != 3 {
			w.Error(command.WrongArity("function|delete"))
			return false
		}
		e.mu.Lock()
		lib := e.fn.libs[string(a[2])]
		if lib != nil {
			e.dropLibrary(lib)
		}
		e.mu.Unlock()
		if lib == nil {
			w.Error(errLibNotFound)
			return false
		}
		w.SimpleString("OK")
		return true
	case "flush":
		if len(a) > 3 {
			w.Error(command.WrongArity("function|flush"))
			return false
		}
		if len(a) == 3 {
			if m := strings.ToLower(string(a[2])); m != "sync" && m != "async" {
				w.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
				return false
			}
		}
		x.Srv.flushFunctions()
		w.SimpleString("OK")
		return true
	default: // restore
		return functionRestore(x)
	}
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func functionList(e *scriptEngine, opts [][]byte, w *resp.Writer) {
	var pattern []byte
	withCode := false
	for i := 0; i < len(opts); i++ {
		switch o := strings.ToLower(string(opts[i])); {
		case o == "withcode":
			withCode = true
		case o == "libraryname":
			if i+1 >= len(opts) {
				w.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern = opts[i]
		default:
			w.Error("ERR Unknown argument " + string(opts[i]))
			return
		}
	}
	var libs []*funcLib
	for _, l := range e.libraries() {
		if pattern == nil || glob.MatchString(string(pattern), l.name, true) {
			libs = append(libs, l)
		}
	}
	w.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		w.Map(n)
		w.BulkString("library_name")
		w.BulkString(l.name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		w.Array(len(l.fns))
		for _, f := range l.fns {
			w.Map(3)
			w.BulkString("name")
			w.BulkString(f.name)
			w.BulkString("description")
			if f.hasDesc {
				w.BulkString(f.desc)
			} else {
				w.Null()
			}
			w.BulkString("flags")
			var names []string
			for i, fl := range funcFlagNames {
				if f.flags&(1<<i) != 0 {
					names = append(names, fl)
				}
			}
			w.Set(len(names))
			for _, fl := range names {
				w.SimpleString(fl)
			}
		}
		if withCode {
			w.BulkString("library_code")
			w.BulkString(l.code)
		}
	}
}

// functionStats is FUNCTION STATS: the longest running function, and the
// engine's counts.
func functionStats(e *scriptEngine, w *resp.Writer) {
	name, cmd, ms := e.runningFunction()
	w.Map(2)
	w.BulkString("running_script")
	if name == "" {
		w.Null()
	} else {
		w.Map(3)
		w.BulkString("name")
		w.BulkString(name)
		w.BulkString("command")
		w.Array(len(cmd))
		for _, c := range cmd {
			w.Bulk(c)
		}
		w.BulkString("duration_ms")
		w.Int(ms)
	}
	e.mu.RLock()
	libs, fns := len(e.fn.libs), len(e.fn.funcs)
	e.mu.RUnlock()
	w.BulkString("engines")
	w.Map(1)
	w.BulkString("LUA")
	w.Map(2)
	w.BulkString("libraries_count")
	w.Int(int64(libs))
	w.BulkString("functions_count")
	w.Int(int64(fns))
}

// runningFunction names the function running longest, with its command
// and how long it has run.
func (e *scriptEngine) runningFunction() (string, [][]byte, int64) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	var best *scriptRun
	for r := range e.running {
		r.mu.Lock()
		if r.active && r.fn != nil && (best == nil || r.start.Before(best.start)) {
			best = r
		}
		r.mu.Unlock()
	}
	if best == nil {
		return "", nil, 0
	}
	best.mu.Lock()
	defer best.mu.Unlock()
	if !best.active || best.fn == nil {
		return "", nil, 0
	}
	cmd := make([][]byte, len(best.cmd)) // the request's buffers are the run's only while it runs
	for i, a := range best.cmd {
		cmd[i] = bytes.Clone(a)
	}
	return best.fn.name, cmd, time.Since(best.start).Milliseconds()
}

// dumpFunctions is FUNCTION DUMP's payload: the FUNCTION2 records, then
// the RDB version and a CRC-64, as DUMP's.
func dumpFunctions(records []byte) []byte {
	b := append([]byte(nil), records...)
	b = binary.LittleEndian.AppendUint16(b, rdb.Version)
	return binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b))
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func functionRestore(x *Coord) bool {
	a, w := x.Args, x.W
	policy := "append"
	if len(a) > 4 {
		w.Error(command.WrongArity("function|restore"))
		return false
	}
	if len(a) == 4 {
		policy = strings.ToLower(string(a[3]))
		if policy != "flush" && policy != "append" && policy != "replace" {
			w.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return false
		}
	}
	codes, err := rdb.DecodeFunctionDump(a[2])
	if errors.Is(err, rdb.ErrDumpPayload) {
		w.Error("ERR DUMP payload version or checksum are wrong")
		return false
	}
	if err != nil {
		w.Error("ERR given type is not a function")
		return false
	}
	e := x.Srv.scripts()
	libs := make([]*funcLib, 0, len(codes))
	for _, c := range codes {
		lib, errText := e.compileLibrary(c)
		if errText != "" {
			w.Error(errText)
			return false
		}
		libs = append(libs, lib)
	}
	// All or nothing: the libraries go into a copy of the registry, which
	// replaces it only when every one fits.
	e.mu.Lock()
	defer e.mu.Unlock()
	saved := e.fn
	if policy == "flush" {
		e.fn = funcRegistry{}
	} else {
		e.fn = funcRegistry{libs: make(map[string]*funcLib, len(saved.libs)), funcs: make(map[string]*funcDef, len(saved.funcs))}
		for k, v := range saved.libs {
			e.fn.libs[k] = v
		}
		for k, v := range saved.funcs {
			e.fn.funcs[k] = v
		}
	}
	for _, lib := range libs {
		if errText := e.addLibrary(lib, policy == "replace"); errText != "" {
			e.fn = saved
			w.Error(errText)
			return false
		}
	}
	e.libGen.Add(1)
	w.SimpleString("OK")
	return true
}
