package script

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/rdb"
	"github.com/dfly/dfly/resp"
)

// Redis 7's function libraries: the registry, FUNCTION's subcommands, and
// the libraries' RDB form (FUNCTION2 records, FUNCTION DUMP's payload).
//
// A library is Lua source that starts with "#!lua name=<lib>" and, when
// loaded, registers functions with redis.register_function. The engine
// keeps each library's source and compiled chunk (Library), with every
// function by its name, case-insensitively as Redis does. The interpreter
// that runs a function first runs the library's chunk once, to make the
// function's closure in that interpreter (VM.libFunction).
//
// Globals: a library's chunk and its functions share one environment per
// interpreter (VM.fnEnv), read-only. While a chunk loads it sees only
// redis.register_function, redis.log, the LOG_* levels and the version;
// when a function runs it sees the scripting globals (redis.call ...), but
// not KEYS and ARGV: a function gets its keys and arguments as parameters.

const funcSource = "user_function"

// Function flags, in the order FUNCTION LIST shows them.
var funcFlagNames = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

const (
	flagNoWrites = 1 << iota
	flagAllowOOM
)

// Library is a loaded library. It never changes: FUNCTION LOAD REPLACE
// makes a new one.
type Library struct {
	Name      string
	code      string
	proto     *lua.FunctionProto
	Functions []*Function // in registration order
	// As Script's.
	MaySort, LeavesShard bool
}

// Function is a function of a library.
type Function struct {
	Name    string
	desc    string
	hasDesc bool
	flags   int // bits of funcFlagNames
	Lib     *Library
}

// NoWrites reports the function's no-writes flag: it runs as FCALL_RO.
func (f *Function) NoWrites() bool { return f.flags&flagNoWrites != 0 }

// Refusal is why the function may not start (Refusal).
func (f *Function) Refusal(ro, replica, oom bool) string {
	return Refusal(true, f.flags, ro, replica, oom)
}

// Flags are the function's flags, for CallsMayOOM.
func (f *Function) Flags() int { return f.flags }

// RunID names the function's runs (MarkCoordinated, SCRIPT KILL's
// registry) apart from any script's SHA.
func (f *Function) RunID() string { return "f:" + strings.ToLower(f.Name) }

// registry is the engine's libraries (under Engine.mu).
type registry struct {
	libs  map[string]*Library  // by name, case-sensitive
	funcs map[string]*Function // by lower-case name
}

func (r *registry) init() {
	if r.libs == nil {
		r.libs, r.funcs = map[string]*Library{}, map[string]*Function{}
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
func (e *Engine) compileLibrary(code []byte) (*Library, string) {
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
	lib := &Library{Name: name, code: string(code), proto: proto, MaySort: !literal, LeavesShard: !literal}
	if MentionsSort(code) {
		lib.MaySort = true
	}
	for _, n := range names {
		lib.LeavesShard = lib.LeavesShard || e.host.LeavesShard(n)
	}
	vm := e.vms.Get().(*VM)
	defer e.vms.Put(vm)
	if _, errText = vm.loadLibrary(lib, true); errText != "" {
		return nil, errText
	}
	if len(lib.Functions) == 0 {
		return nil, "ERR No functions registered"
	}
	return lib, ""
}

// addLibrary registers lib; replace lets it take the place of a library
// of the same name. Under e.mu.
func (e *Engine) addLibrary(lib *Library, replace bool) string {
	r := &e.fn
	r.init()
	old := r.libs[lib.Name]
	if old != nil && !replace {
		return "ERR Library '" + lib.Name + "' already exists"
	}
	for _, f := range lib.Functions {
		if o := r.funcs[strings.ToLower(f.Name)]; o != nil && o.Lib != old {
			return "ERR Function " + f.Name + " already exists"
		}
	}
	if old != nil {
		e.dropLibrary(old)
	}
	r.libs[lib.Name] = lib
	for _, f := range lib.Functions {
		r.funcs[strings.ToLower(f.Name)] = f
	}
	e.libGen.Add(1)
	return ""
}

// dropLibrary forgets lib. Under e.mu.
func (e *Engine) dropLibrary(lib *Library) {
	delete(e.fn.libs, lib.Name)
	for _, f := range lib.Functions {
		delete(e.fn.funcs, strings.ToLower(f.Name))
	}
	e.libGen.Add(1)
}

// loadLibrary compiles code and registers it; replace lets it take the
// place of a library of the same name. The error is the full reply.
func (e *Engine) loadLibrary(code []byte, replace bool) (*Library, string) {
	lib, errText := e.compileLibrary(code)
	if errText == "" {
		e.mu.Lock()
		errText = e.addLibrary(lib, replace)
		e.mu.Unlock()
	}
	if errText != "" {
		return nil, errText
	}
	return lib, ""
}

// Function returns the function named name (any case), or nil.
func (e *Engine) Function(name []byte) *Function {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.fn.funcs[strings.ToLower(string(name))]
}

// libraries returns the loaded libraries by name.
func (e *Engine) libraries() []*Library {
	e.mu.RLock()
	libs := make([]*Library, 0, len(e.fn.libs))
	for _, l := range e.fn.libs {
		libs = append(libs, l)
	}
	e.mu.RUnlock()
	sort.Slice(libs, func(i, j int) bool { return libs[i].Name < libs[j].Name })
	return libs
}

// LoadLibrary loads a library read from a snapshot or a replication
// stream, replacing one of the same name.
func (e *Engine) LoadLibrary(code []byte) error {
	if _, errText := e.loadLibrary(code, true); errText != "" {
		return &LoadError{errText}
	}
	return nil
}

// LoadError is a library that did not load.
type LoadError struct{ msg string }

func (e *LoadError) Error() string { return "function library: " + e.msg }

// FlushLibraries drops every library (FUNCTION FLUSH, a replica's full
// sync).
func (e *Engine) FlushLibraries() {
	e.mu.Lock()
	e.fn = registry{}
	e.libGen.Add(1)
	e.mu.Unlock()
}

// Records returns the libraries as RDB FUNCTION2 records (a snapshot's,
// FUNCTION DUMP's).
func (e *Engine) Records() []byte {
	enc := rdb.NewEncoder(nil)
	for _, l := range e.libraries() {
		enc.Function([]byte(l.code))
	}
	return enc.TakeBytes()
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

// FunctionSubcommands describe FUNCTION's subcommands: arity, flags, key specs, ACL categories.
var FunctionSubcommands = []command.SubcommandInfo{
	{Name: "delete", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: 3, Flags: command.FlagNoScript | command.FlagWrite, ACLCats: "write scripting"},
	{Name: "dump", Arity: 2, Flags: command.FlagNoScript, ACLCats: "scripting"},
	{Name: "flush", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: -2, Flags: command.FlagNoScript | command.FlagWrite, ACLCats: "write scripting"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale, ACLCats: "scripting"},
	{Name: "kill", Tips: "request_policy:all_shards response_policy:one_succeeded", Arity: 2, Flags: command.FlagNoScript | command.FlagAllowBusy, ACLCats: "scripting"},
	{Name: "list", Tips: "nondeterministic_output_order", Arity: -2, Flags: command.FlagNoScript, ACLCats: "scripting"},
	{Name: "load", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: -3, Flags: command.FlagNoScript | command.FlagWrite | command.FlagDenyOOM, ACLCats: "write scripting"},
	{Name: "restore", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: -3, Flags: command.FlagNoScript | command.FlagWrite | command.FlagDenyOOM, ACLCats: "write scripting"},
	{Name: "stats", Tips: "nondeterministic_output request_policy:all_shards response_policy:special", Arity: 2, Flags: command.FlagNoScript | command.FlagAllowBusy, ACLCats: "scripting"},
}

// FunctionCommand answers FUNCTION (args) when its subcommand reads (LIST,
// STATS, DUMP, HELP), is KILL, or is wrong; it returns true, answering
// nothing, for one that changes the libraries (LOAD, DELETE, FLUSH,
// RESTORE: ChangeLibraries), which the server runs holding shard 0 so
// that a change is either in a snapshot's cut or in the journal after it.
func (e *Engine) FunctionCommand(args [][]byte, w *resp.Writer) (changes bool) {
	a := args
	sub := strings.ToLower(string(a[1]))
	switch sub {
	case "help":
		if len(a) != 2 {
			break
		}
		command.WriteHelp(w, functionHelp)
		return false
	case "list":
		e.list(a[2:], w)
		return false
	case "stats":
		if len(a) != 2 {
			break
		}
		if e.Busy() == errBusyScript {
			w.Error(errBusyScript) // as Redis: a busy EVAL is not a function to show
			return false
		}
		e.stats(w)
		return false
	case "kill":
		if len(a) != 2 {
			break
		}
		if err := e.Kill(true); err != "" {
			w.Error(err)
			return false
		}
		w.SimpleString("OK")
		return false
	case "dump":
		if len(a) != 2 {
			break
		}
		w.Bulk(dumpPayload(e.Records()))
		return false
	case "load", "delete", "flush", "restore":
		if len(a) < 3 && sub != "flush" {
			break
		}
		return true
	default:
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try FUNCTION HELP.")
		return false
	}
	w.Error(command.WrongArity("function|" + sub))
	return false
}

// ChangesLibraries reports whether FUNCTION's subcommand sub changes the
// libraries (refused on a replica).
func ChangesLibraries(sub []byte) bool {
	switch strings.ToLower(string(sub)) {
	case "load", "delete", "flush", "restore":
		return true
	}
	return false
}

// ChangeLibraries applies FUNCTION's changing subcommand (LOAD, DELETE,
// FLUSH, RESTORE: FunctionCommand said so) and answers it; it reports
// whether the libraries changed (the command is then journaled).
func (e *Engine) ChangeLibraries(args [][]byte, w *resp.Writer) (changed bool) {
	a := args
	switch strings.ToLower(string(a[1])) {
	case "load":
		replace := false
		for _, o := range a[2 : len(a)-1] {
			if !strings.EqualFold(string(o), "replace") {
				w.Error("ERR Unknown option given: " + string(o))
				return false
			}
			replace = true
		}
		lib, errText := e.loadLibrary(a[len(a)-1], replace)
		if errText != "" {
			w.Error(errText)
			return false
		}
		w.BulkString(lib.Name)
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
		e.FlushLibraries()
		w.SimpleString("OK")
		return true
	default: // restore
		return e.restore(a, w)
	}
}

// list is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func (e *Engine) list(opts [][]byte, w *resp.Writer) {
	var pattern []byte
	withCode := false
	for i := 0; i < len(opts); i++ {
		// Each option once, as Redis: a second is an unknown argument.
		switch o := strings.ToLower(string(opts[i])); {
		case o == "withcode" && !withCode:
			withCode = true
		case o == "libraryname" && pattern == nil:
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
	var libs []*Library
	for _, l := range e.libraries() {
		if pattern == nil || glob.MatchString(string(pattern), l.Name, true) {
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
		w.BulkString(l.Name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		w.Array(len(l.Functions))
		for _, f := range l.Functions {
			w.Map(3)
			w.BulkString("name")
			w.BulkString(f.Name)
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

// stats is FUNCTION STATS: the longest running function, and the engine's
// counts.
func (e *Engine) stats(w *resp.Writer) {
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

// dumpPayload is FUNCTION DUMP's payload: the FUNCTION2 records, then the
// RDB version and a CRC-64, as DUMP's.
func dumpPayload(records []byte) []byte {
	b := append([]byte(nil), records...)
	b = binary.LittleEndian.AppendUint16(b, rdb.Version)
	return binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b))
}

// restore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func (e *Engine) restore(a [][]byte, w *resp.Writer) bool {
	policy := "append"
	if len(a) > 4 {
		command.SubcommandSyntaxErr(w, a, "function")
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
	libs := make([]*Library, 0, len(codes))
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
		e.fn = registry{}
	} else {
		e.fn = registry{libs: make(map[string]*Library, len(saved.libs)), funcs: make(map[string]*Function, len(saved.funcs))}
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
