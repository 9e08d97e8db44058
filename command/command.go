package command

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
	// reports Redis's, derived from key specs (info.go).
	FirstKey, LastKey, Step int
	// KeyPositions overrides the above for commands whose keys are not a
	// simple range (BITOP, LCS ...); it appends positions to dst.
	KeyPositions func(dst []int, args [][]byte) []int
	// Inner lists the commands this one carries and runs as their own
	// (TXN's mutations and reads) and the keys it reads itself (a Call
	// without Cmd: TXN's conditions), appended to dst: ACL judges each
	// command as if it were called alone and each read key as a read, in
	// place of this command's own keys. Nil for most commands.
	Inner func(dst []Call, args [][]byte) []Call

	// Exactly one of these runs the command:
	// Local runs inline on the connection's event loop (no keys).
	Local func(c Client, args [][]byte, w *resp.Writer)
	// Shard runs on the one shard that owns all of the command's keys.
	Shard func(x *Exec)
	// Multi runs on a coordinator goroutine; it is used when the keys span
	// shards (or always, when Shard is nil).
	Multi func(x *Coord)
	// Coordinate, when set and true for the arguments, sends the command to
	// Multi even when its keys share a shard (XREAD BLOCK must wait on a
	// coordinator, not on a shard; so must a script that may SORT by
	// offloaded values, see evalCoordinate).
	Coordinate func(s Server, args [][]byte) bool
	// SplitsByKey: a read command whose keys may be run apart, shard by
	// shard: run with only one shard's keys it replies an array of one
	// element per key, and its reply is those elements in the keys' order
	// (MGET). EXEC runs such a command over several shards in its
	// per-shard steps (KeySplit), not in a coordinator step of its own.
	SplitsByKey bool
	// Rewrite, when set, journals the command run on a shard in a
	// deterministic form (record.go), from the key's state and the reply
	// after it; JournalArgs is the arguments journaled when it ran on a
	// coordinator.
	Rewrite     func(x *Exec, reply []byte, record func(args ...[]byte))
	JournalArgs func(args [][]byte) [][]byte

	// What COMMAND INFO and ACL say of the command beyond how it runs,
	// written beside its handler; NewTable derives the rest (info.go,
	// acl_cat.go).
	//
	// KeySpecs are its key specs in info.go's notation when its keys are
	// not the one range FirstKey..LastKey by Step (or not only those dfly
	// locks); KeyFlags the flags of that range's spec when not its kind's
	// ("RO access" for a reader, "RW access update" for a writer).
	KeySpecs, KeyFlags string
	// InfoFlags are flags COMMAND INFO reports beyond Flags (Redis's, that
	// dfly does not act on); InfoHides flags of Flags it does not report.
	InfoFlags, InfoHides Flags
	// ACLCats adjusts the ACL categories its group and flags give, where
	// Redis files it otherwise: "name" adds a category, "-name" removes one.
	ACLCats string
	// Tips are Redis 7's command tips COMMAND INFO reports, space
	// separated ("request_policy:all_shards response_policy:agg_sum",
	// "nondeterministic_output"): what a cluster client should know of the
	// reply, in Redis's order.
	Tips string
	// Subcommands describe a container's subcommands (CONFIG GET ...);
	// ACL judges a call by its subcommand's categories, unless
	// SubcommandsInfoOnly: then only COMMAND INFO shows them, and ACL
	// judges the command as one (COMMAND).
	Subcommands         []SubcommandInfo
	SubcommandsInfoOnly bool

	// Summary is COMMAND DOCS' summary, for dfly's own commands (their
	// syntax; Redis's commands have none here).
	Summary string

	// Group is the command's family (Register); Cats its ACL categories
	// (ACLCategories bits, acl_cat.go).
	Group string
	// table is the table the command is in (Add): a command that runs
	// others (TXN) finds them there.
	table *Table
	Cats  uint32
	// Subs: a container's subcommands by name, for ACL (acl_cat.go).
	Subs map[string]*Command

	// What COMMAND INFO reports (info.go), derived: specs the key
	// specifications (the reported first/last/step derive from them, as
	// in Redis), and infoSubs the subcommands' own entries, sorted by name.
	specs    []keySpec
	infoSubs []*Command

	// Stats count the command's calls, their time in nanoseconds, the
	// calls that failed and those rejected before running (INFO
	// commandstats, errorstats).
	Calls, Nsec, Failed, Rejected atomic.Uint64
}

// SubcommandInfo is one subcommand of a container command, as Redis 7.0
// reports it: its arity (counting the container's name), flags, key specs
// (Command.KeySpecs' notation), its ACL categories beyond @slow and its
// tips.
type SubcommandInfo struct {
	Name     string
	Arity    int
	Flags    Flags
	KeySpecs string
	ACLCats  string
	Tips     string // as Command.Tips
}

// Flag sets of subcommands, as Redis 7.0 reports them.
const (
	FlagsLoadingStale         = FlagLoading | FlagStale
	FlagsLoadingStaleNoScript = FlagsLoadingStale | FlagNoScript
	FlagsAdminSub             = FlagsLoadingStaleNoScript | FlagAdmin
)

// Client is the connection a Local command runs for (the server's).
type Client interface {
	// Table is the server's command table.
	Table() *Table
}

// Exec is a command running on a shard goroutine.
type Exec struct {
	S    *shard.Shard
	DB   *shard.DB
	Args [][]byte
	W    *resp.Writer
	Srv  Server
	// Conn is the issuing client (the server's connection), for commands
	// that run client-side logic on the shard (a single-shard EVAL); nil
	// inside EXEC and scripts.
	Conn any
	// CanRetry: the command runs in a connection's batch, which can hand
	// it to a coordinator by setting Retry (an inline script over budget).
	CanRetry bool
	Retry    *Coord
	// OwnArgs: the command's big arguments are buffers of their own that
	// it may keep (pending.assembled; NewString).
	OwnArgs bool
	// Locks is scratch for lock checks.
	Locks []shard.KeyLock
	// Prop: what the journal records instead of Args (see Propagate).
	Prop [][][]byte
}

func (x *Exec) Now() int64 { return x.S.Now() }

// ExpiredAt reports whether a write giving a key the absolute expiry at
// must delete it now instead: at is past, and this is not a replica. A
// replica stores the past TTL (the key is hidden from clients) and waits
// for its master's DEL, as Redis's checkAlreadyExpired: applying the
// master's PEXPIREAT a little late must not delete a key the master has
// meanwhile given a new TTL.
func (x *Exec) ExpiredAt(at int64) bool { return at <= x.Now() && !x.S.ReplicaMode }

// NewString is DB.NewString, without the copy when b is a big argument of
// an assembled command (resp/assemble.go): a value received into a buffer
// of its own becomes the stored value, as in Redis, instead of costing its
// size twice.
func (x *Exec) NewString(b []byte) shard.Value {
	if x.OwnArgs && len(b) >= resp.BigArg && cap(b) == len(b) {
		return shard.StringValue(b)
	}
	return x.DB.NewString(b)
}

// Keys returns the command's key positions for args.
func (cmd *Command) Keys(dst []int, args [][]byte) []int {
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

// OtherDBLock is the lock of the key a command writes in a database other
// than its own — MOVE's key in the destination — for the lock steps: no
// transaction on that key interleaves, and a snapshot sees the command as
// one with two keys (shard.Capture; MOVE from a bucket the walk has not
// reached into a database it has passed is RENAME across databases).
func (cmd *Command) OtherDBLock(args [][]byte, ndb int) (shard.KeyLock, bool) {
	if cmd.Name != "move" || len(args) != 3 {
		return shard.KeyLock{}, false
	}
	n, ok := num.ParseInt(args[2])
	if !ok || n < 0 || n >= int64(ndb) {
		return shard.KeyLock{}, false
	}
	return shard.KeyLock{DB: int(n), Key: string(args[1]), Excl: true}, true
}

func (cmd *Command) ArityOK(n int) bool {
	if cmd.Arity >= 0 {
		return n == cmd.Arity
	}
	return n >= -cmd.Arity
}

// Table is the command table, looked up by lower-case name.
type Table struct {
	// ByName holds every command; read-only once NewTable returns.
	ByName map[string]*Command
}

// Add puts cmds in the table under group (their Group); only before the
// table serves (NewTable; tests adding commands of their own).
func (t *Table) Add(group string, cmds ...*Command) {
	for _, c := range cmds {
		if _, dup := t.ByName[c.Name]; dup {
			panic("server: command registered twice: " + c.Name)
		}
		c.Group, c.table = group, t
		t.ByName[c.Name] = c
	}
}

// Table is the table the command is in (nil before Table.Add).
func (c *Command) Table() *Table { return c.table }

// Call is one command with its arguments (Args[0] its name), as another
// command carries it (Command.Inner); without Cmd, Args[0] is a key the
// carrying command reads.
type Call struct {
	Cmd  *Command
	Args [][]byte
}

// Lookup finds a command by its name as sent, in any case, without
// allocating for names of up to 32 bytes.
func (t *Table) Lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return t.ByName[strings.ToLower(string(name))]
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return t.ByName[string(buf[:len(name)])]
}

// NewTable builds the command table of every registered family.
func NewTable() *Table {
	t := &Table{ByName: make(map[string]*Command)}
	for _, f := range families {
		t.Add(f.group, f.commands()...)
	}
	for _, c := range t.ByName {
		c.Cats = categoriesOf(c) // acl_cat.go
		c.Subs = subcommandsOf(c)
	}
	for _, c := range t.ByName {
		describe(c) // info.go
	}
	return t
}

// families are the command families, each registered by its file's init
// function (Register) in its group (as COMMAND DOCS names it; it decides
// ACL categories).
var families []family

type family struct {
	group    string
	commands func() []*Command
}

// Register adds a family of commands to the tables built after it; each
// family's file calls it from its init function.
func Register(group string, commands func() []*Command) {
	families = append(families, family{group, commands})
}

// LeavesShard reports whether the command name, called by a script that
// runs on the shard owning its keys, may have to run on other shards too:
// a keyless one that is not a connection command (DBSIZE, KEYS, SCAN,
// RANDOMKEY; keyless writes such as FLUSHALL are refused in a keyed
// script before they run) and SORT, whose BY and GET patterns name keys
// anywhere. Unknown names and commands scripts may not call fail before
// they run.
func (t *Table) LeavesShard(name string) bool {
	cmd := t.Lookup([]byte(name))
	if cmd == nil || cmd.Local != nil || cmd.Flags&FlagNoScript != 0 {
		return false
	}
	if cmd.Name == "sort" || cmd.Name == "sort_ro" {
		return true
	}
	return cmd.FirstKey == 0 && cmd.KeyPositions == nil
}

// ReadsKeys reports whether c reads the keys it names, for CLIENT
// TRACKING: a read-only command, or a script (which may read them).
func (c *Command) ReadsKeys() bool {
	return c.Flags&FlagReadonly != 0 || c.IsScript()
}

// MayWrite reports whether c may change the dataset: a write command,
// EXEC or a script (the AOF's replies wait for their fsync).
func (c *Command) MayWrite() bool {
	return c.Flags&FlagWrite != 0 || c.IsScript() || c.Name == "exec"
}

// IsScript reports whether c runs a script: EVAL, FCALL and their
// variants.
func (c *Command) IsScript() bool {
	switch c.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// AllowsBusy reports whether the call args of c runs while a script is
// busy (Redis's allow_busy: AUTH, HELLO, MULTI, SHUTDOWN NOSAVE, SCRIPT KILL ...),
// a container's by its subcommand's flags.
func (c *Command) AllowsBusy(args [][]byte) bool {
	if c.Name == "shutdown" {
		// Only SHUTDOWN NOSAVE: a save would wait for the script.
		for _, a := range args[1:] {
			if strings.EqualFold(string(a), "nosave") {
				return true
			}
		}
		return false
	}
	if (c.Flags|c.InfoFlags)&FlagAllowBusy != 0 {
		return true
	}
	if len(c.Subcommands) == 0 || len(args) < 2 {
		return false
	}
	sub := FindSubcommand(c.Subcommands, strings.ToLower(string(args[1])))
	return sub != nil && sub.Flags&FlagAllowBusy != 0
}

// Count is a command's calls and their time in nanoseconds, as a shard or
// a loop counts them and INFO commandstats adds them up.
type Count struct{ Calls, Nsec uint64 }

// Counts are one shard's counts of the commands it ran, owned by its
// goroutine (INFO commandstats adds every shard's up): calls and
// nanoseconds (commands timed as for SLOWLOG; most run well under a
// microsecond, so whole microseconds would sum to nothing).
type Counts struct{ calls map[*Command]*Count }

// Add counts a call of cmd that took ns nanoseconds.
func (c *Counts) Add(cmd *Command, ns int64) {
	n := c.calls[cmd]
	if n == nil {
		if c.calls == nil {
			c.calls = make(map[*Command]*Count)
		}
		n = &Count{}
		c.calls[cmd] = n
	}
	n.Calls++
	n.Nsec += uint64(max(ns, 0))
}

// ByName is the counts by command name (a copy).
func (c *Counts) ByName() map[string]Count {
	m := make(map[string]Count, len(c.calls))
	for cmd, n := range c.calls {
		AddCount(m, cmd.Name, *n)
	}
	return m
}

// Reset forgets every count (CONFIG RESETSTAT).
func (c *Counts) Reset() { clear(c.calls) }

// AddCount adds v to m[k].
func AddCount(m map[string]Count, k string, v Count) {
	c := m[k]
	c.Calls += v.Calls
	c.Nsec += v.Nsec
	m[k] = c
}
