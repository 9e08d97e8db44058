package script

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/cespare/xxhash/v2"
)

// Host is what the engine needs of the server around it.
type Host interface {
	// LeavesShard reports whether the command name, called by a script
	// that runs on the shard owning its keys, may have to run on other
	// shards too (Script.LeavesShard).
	LeavesShard(name string) bool
	// CountError counts an error reply of a script's own (not a call's
	// error passed on) in the error statistics.
	CountError(reply []byte)
	// NewCaller makes the Caller of a new interpreter, which keeps it for
	// its life: state a call reuses lives there.
	NewCaller() Caller
	// BusyThreshold is busy-reply-threshold: a script running longer is
	// busy (Engine.Busy, Engine.Kill).
	BusyThreshold() time.Duration
}

// Logger is where redis.log writes and the engine reports, at Redis's
// levels.
type Logger interface {
	Debugf(format string, args ...any)
	Verbosef(format string, args ...any)
	Noticef(format string, args ...any)
	Warnf(format string, args ...any)
}

// Engine is a server's script cache, function libraries, idle
// interpreters and the registry of running scripts, shared by all
// connections.
type Engine struct {
	host    Host
	log     Logger
	version string // redis.REDIS_VERSION

	mu     sync.RWMutex
	protos map[string]*Script // by lower-case SHA1 hex
	// recent remembers Load's answers by body: an EVAL carries its body
	// on every call, looked up by the server's routing and again by its
	// run, and a hash of the body (xxhash) and a comparison cost far less
	// than its SHA1. gen counts flushes: an answer from before the last
	// one is stale (its script is no longer in protos).
	recent [64]atomic.Pointer[loaded]
	gen    atomic.Uint64

	// vms are idle interpreters; each is reset after a run.
	vms sync.Pool

	// fn: the function libraries (function.go), under mu; libGen counts
	// their changes (an interpreter's closures of an older one are stale).
	fn     registry
	libGen atomic.Uint64

	runMu    sync.Mutex
	running  map[*Run]struct{}
	nrunning atomic.Int32 // len(running), read without runMu (Busy)

	// coordinated holds the IDs (lower case) of scripts that run on a
	// coordinator from now on, where they hold only their keys, never an
	// event loop (MarkCoordinated); coordinatedCount is its size, so that
	// the common case of none costs one load.
	coordinated      sync.Map
	coordinatedCount atomic.Int32
}

// New returns an engine; version is the Redis version scripts see.
func New(host Host, log Logger, version string) *Engine {
	e := &Engine{host: host, log: log, version: version, protos: make(map[string]*Script),
		running: make(map[*Run]struct{})}
	e.vms.New = func() any { return newVM(e) }
	return e
}

// SHA1Hex is the SHA1 of b in lower-case hex: a script's name.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Script is a compiled script of the cache.
type Script struct {
	proto *lua.FunctionProto
	// MaySort: its text names SORT (MentionsSort), or it calls a command
	// whose name is not a literal (namesCommands).
	MaySort bool
	// LeavesShard: it may call a command that reaches shards other than
	// its keys' (Host.LeavesShard), or one whose name is not a literal.
	LeavesShard bool
	// Declared: its text starts with a "#!lua" shebang, whose flags (bits
	// of funcFlagNames) it runs with (Refusal, NoWrites).
	Declared bool
	Flags    int
}

// NoWrites reports whether the script declared no-writes: it runs as
// EVAL_RO.
func (s *Script) NoWrites() bool { return s.Declared && s.Flags&flagNoWrites != 0 }

type loaded struct {
	body, sha string
	p         *Script
	gen       uint64
}

// Load compiles body (once) and caches it; the error is the full reply.
func (e *Engine) Load(body []byte) (sha string, _ *Script, errText string) {
	gen := e.gen.Load()
	slot := &e.recent[xxhash.Sum64(body)%uint64(len(e.recent))]
	if l := slot.Load(); l != nil && l.gen == gen && l.body == string(body) {
		return l.sha, l.p, ""
	}
	sha = SHA1Hex(body)
	e.mu.RLock()
	p := e.protos[sha]
	e.mu.RUnlock()
	if p != nil {
		slot.Store(&loaded{body: string(body), sha: sha, p: p, gen: gen})
		return sha, p, ""
	}
	flags, n, err := parseShebang(body)
	if err != "" {
		return sha, nil, err
	}
	proto, literal, names, err := compileScript(body[n:])
	if err != "" {
		return sha, nil, err
	}
	p = &Script{proto: proto, MaySort: MentionsSort(body) || !literal, LeavesShard: !literal,
		Declared: n > 0, Flags: flags}
	for _, n := range names {
		p.LeavesShard = p.LeavesShard || e.host.LeavesShard(n)
	}
	e.mu.Lock()
	if old := e.protos[sha]; old != nil {
		p = old
	} else {
		e.protos[sha] = p
	}
	e.mu.Unlock()
	slot.Store(&loaded{body: string(body), sha: sha, p: p, gen: gen})
	return sha, p, ""
}

// Lookup returns the cached script of sha (lower case), or nil.
func (e *Engine) Lookup(sha string) *Script {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.protos[sha]
}

// LookupBytes is Lookup of a SHA in any case, without allocating when it
// is already lower case (as clients send it).
func (e *Engine) LookupBytes(sha []byte) *Script {
	for _, c := range sha {
		if 'A' <= c && c <= 'Z' {
			return e.Lookup(strings.ToLower(string(sha)))
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.protos[string(sha)]
}

// Flush empties the script cache (SCRIPT FLUSH).
func (e *Engine) Flush() {
	e.mu.Lock()
	e.protos = make(map[string]*Script)
	e.gen.Add(1) // under mu: a load that saw the old gen stored into the old map
	e.mu.Unlock()
}

// Counts are the cached scripts, the libraries and their functions (INFO
// memory).
func (e *Engine) Counts() (scripts, libraries, functions int) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.protos), len(e.fn.libs), len(e.fn.funcs)
}

// VM takes an idle interpreter; Release gives it back.
func (e *Engine) VM() *VM { return e.vms.Get().(*VM) }

// Release gives vm back after a run (Begin ... End). An interpreter whose
// run was interrupted (SCRIPT KILL, a stopped inline run) is dropped.
func (e *Engine) Release(vm *VM) {
	if vm.runCtx.Err() == nil {
		e.vms.Put(vm)
	}
}

// MarkCoordinated makes the script (or function) id run on a coordinator
// from now on: it overran its inline budget, or did something an inline
// run must not (the server decides: Run.Demote).
func (e *Engine) MarkCoordinated(id []byte) {
	if _, had := e.coordinated.LoadOrStore(strings.ToLower(string(id)), struct{}{}); !had {
		e.coordinatedCount.Add(1)
	}
}

// AnyCoordinated reports whether any script is marked (MarkCoordinated).
func (e *Engine) AnyCoordinated() bool { return e.coordinatedCount.Load() != 0 }

// Coordinated reports whether the script id (lower case) is marked.
func (e *Engine) Coordinated(id string) bool {
	_, marked := e.coordinated.Load(id)
	return marked
}

// MentionsSort reports whether a script's text contains "sort" in any
// case: a script that may call SORT or SORT_RO by a literal name. A name
// made at run time escapes it: namesCommands catches those.
func MentionsSort(text []byte) bool {
	for i := 0; i+4 <= len(text); i++ {
		if text[i]|0x20 == 's' && text[i+1]|0x20 == 'o' && text[i+2]|0x20 == 'r' && text[i+3]|0x20 == 't' {
			return true
		}
	}
	return false
}
