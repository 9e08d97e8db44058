package server

import (
	"strings"
	"sync/atomic"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
)

// Flags describe a command, in Redis's COMMAND vocabulary.
type Flags uint32

const (
	FlagWrite Flags = 1 << iota
	FlagReadonly
	FlagFast
	FlagAdmin
	FlagNoAuth // allowed before AUTH
	FlagNoScript
	FlagLoading
	FlagStale
	FlagDenyOOM
	FlagPubSub
	FlagBlocking
	FlagNoMulti
	// FlagQuiet: the command's writes are no key change to WATCH and
	// CLIENT TRACKING (shard.Quiet), as in Redis 7.0.
	FlagQuiet
	// FlagAsking: a cluster's ASKING applies (COMMAND INFO shows it; a
	// standalone server treats it as any command).
	FlagAsking

	// Flags Redis 7 reports that only COMMAND INFO and GETKEYS read: dfly
	// has no busy script state, no async loading, and does not skip these
	// commands in MONITOR or SLOWLOG by flag.
	FlagAllowBusy
	FlagNoAsyncLoading
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagNoMandatoryKeys
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"},
	{FlagBlocking, "blocking"}, {FlagLoading, "loading"}, {FlagStale, "stale"},
	{FlagNoAuth, "no_auth"}, {FlagFast, "fast"}, {FlagAsking, "asking"},
	{FlagNoMulti, "no_multi"}, {FlagAllowBusy, "allow_busy"}, {FlagNoAsyncLoading, "no_async_loading"},
	{FlagSkipMonitor, "skip_monitor"}, {FlagSkipSlowlog, "skip_slowlog"},
	{FlagNoMandatoryKeys, "no_mandatory_keys"},
}

// Command is one entry of the command table.
type Command struct {
	Name  string
	Arity int // Redis style: n = exactly n args with the name, -n = at least n
	Flags Flags
	// Key positions, the keys dfly locks and checks: first, last (negative
	// counts from the end) and step. FirstKey 0 means no keys. COMMAND INFO
	// reports Redis's, derived from key specs (command_info.go).
	FirstKey, LastKey, Step int
	// KeyPositions overrides the above for commands whose keys are not a
	// simple range (BITOP, LCS ...); it appends positions to dst.
	KeyPositions func(dst []int, args [][]byte) []int

	// Exactly one of these runs the command:
	// Local runs inline on the connection's event loop (no keys).
	Local func(c *Conn, args [][]byte, w *resp.Writer)
	// Shard runs on the one shard that owns all of the command's keys.
	Shard func(x *Exec)
	// Multi runs on a coordinator goroutine; it is used when the keys span
	// shards (or always, when Shard is nil).
	Multi func(x *Coord)
	// Coordinate, when set and true for the arguments, sends the command to
	// Multi even when its keys share a shard (XREAD BLOCK must wait on a
	// coordinator, not on a shard; so must a script that may SORT by
	// offloaded values, see evalCoordinate).
	Coordinate func(s *Server, args [][]byte) bool
	// Group is the command's family (table.add); cats its ACL categories
	// (aclCategories bits, acl_cat.go).
	Group string
	cats  uint32
	// subs: a container's subcommands by name, for ACL (acl_cat.go).
	subs map[string]*Command

	// What COMMAND INFO reports (command_info.go), apart from what runs:
	// shown are flags reported beyond Flags, specs the key specifications
	// (the reported first/last/step derive from them, as in Redis), and
	// infoSubs the subcommands' own entries, sorted by name.
	shown    Flags
	specs    []keySpec
	infoSubs []*Command

	calls, nsec, failed, rejected atomic.Uint64
}

// Exec is a command running on a shard goroutine.
type Exec struct {
	S    *shard.Shard
	DB   *shard.DB
	Args [][]byte
	W    *resp.Writer
	Srv  *Server
	// Conn is the issuing client, for commands that run client-side logic
	// on the shard (a single-shard EVAL); nil inside EXEC and scripts.
	Conn *Conn
	// canRetry: the command runs in a connection's batch, which can hand
	// it to a coordinator by setting retry (an inline script over budget).
	canRetry bool
	retry    *Coord
	// ownArgs: the command's big arguments are buffers of their own that
	// it may keep (pending.assembled; newString).
	ownArgs bool
	// keys is scratch for lock checks.
	keys []shard.KeyLock
	// prop: what the journal records instead of Args (see Propagate).
	prop [][][]byte
}

func (x *Exec) Now() int64 { return x.S.Now() }

// newString is DB.NewString, without the copy when b is a big argument of
// an assembled command (resp/assemble.go): a value received into a buffer
// of its own becomes the stored value, as in Redis, instead of costing its
// size twice.
func (x *Exec) newString(b []byte) shard.Value {
	if x.ownArgs && len(b) >= resp.BigArg && cap(b) == len(b) {
		return shard.StringValue(b)
	}
	return x.DB.NewString(b)
}

// keys returns the command's key positions for args.
func (cmd *Command) keys(dst []int, args [][]byte) []int {
	if cmd.KeyPositions != nil {
		return cmd.KeyPositions(dst, args)
	}
	if cmd.FirstKey == 0 || cmd.FirstKey >= len(args) {
		return dst
	}
	last := cmd.LastKey
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	step := cmd.Step
	if step <= 0 {
		step = 1
	}
	for i := cmd.FirstKey; i <= last; i += step {
		dst = append(dst, i)
	}
	return dst
}

// otherDBLock is the lock of the key a command writes in a database other
// than its own — MOVE's key in the destination — for the lock steps: no
// transaction on that key interleaves, and a snapshot sees the command as
// one with two keys (shard.Capture; MOVE from a bucket the walk has not
// reached into a database it has passed is RENAME across databases).
func (cmd *Command) otherDBLock(args [][]byte, ndb int) (shard.KeyLock, bool) {
	if cmd.Name != "move" || len(args) != 3 {
		return shard.KeyLock{}, false
	}
	n, ok := num.ParseInt(args[2])
	if !ok || n < 0 || n >= int64(ndb) {
		return shard.KeyLock{}, false
	}
	return shard.KeyLock{DB: int(n), Key: string(args[1]), Excl: true}, true
}

func (cmd *Command) arityOK(n int) bool {
	if cmd.Arity >= 0 {
		return n == cmd.Arity
	}
	return n >= -cmd.Arity
}

// Table is the command table, looked up by lower-case name.
type Table struct {
	byName map[string]*Command
}

func (t *Table) add(group string, cmds ...*Command) {
	for _, c := range cmds {
		if _, dup := t.byName[c.Name]; dup {
			panic("server: command registered twice: " + c.Name)
		}
		c.Group = group
		t.byName[c.Name] = c
	}
}

// lookup finds a command by its name as sent, in any case, without
// allocating for names of up to 32 bytes.
func (t *Table) lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return t.byName[strings.ToLower(string(name))]
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return t.byName[string(buf[:len(name)])]
}

func newTable() *Table {
	t := &Table{byName: make(map[string]*Command)}
	t.add("connection", connCommands()...)
	t.add("server", serverCommands()...)
	t.add("server", memoryCommands()...)
	t.add("string", stringCommands()...)
	t.add("bitmap", bitCommands()...)
	t.add("generic", keyCommands()...)
	t.add("geo", geoCommands()...)
	for _, f := range typeFamilies {
		t.add(f.group, f.commands()...)
	}
	for _, c := range t.byName {
		c.cats = categoriesOf(c) // acl_cat.go
		c.subs = subcommandsOf(c)
	}
	for _, c := range t.byName {
		describe(c) // command_info.go
	}
	return t
}

// typeFamilies are the command families registered by their files' init
// functions (data types, Pub/Sub, scripting ...), each in its group (as
// COMMAND DOCS names it; it decides ACL categories).
var typeFamilies []family

type family struct {
	group    string
	commands func() []*Command
}

func addFamily(group string, commands func() []*Command) {
	typeFamilies = append(typeFamilies, family{group, commands})
}
