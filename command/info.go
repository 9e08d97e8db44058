package command

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/types/num"
)

// What COMMAND INFO, DOCS, GETKEYSANDFLAGS and LIST report about commands,
// as Redis 7.0 does. None of it decides how a command runs: dfly finds a
// command's keys with FirstKey/LastKey/Step or KeyPositions (Command.keys),
// and those stay as they are. The reported first/last/step derive from the
// key specs, as in Redis: a command whose keys are only found by a count
// or a keyword (EVAL, ZUNION, XREAD) reports 0 0 0 and movablekeys.

// keySpec is one of Redis 7's key specifications: where the search for
// keys begins (an index, or the argument after a keyword) and how the keys
// follow from there (a range, or a count given by an argument), with what
// the command does to them (flags: RO RW OW RM, access update insert
// delete, not_key incomplete variable_flags).
type keySpec struct {
	flags []string

	// Begin search: index > 0 starts at that argument; keyword != "" after
	// the keyword, looked for from argument startFrom (negative: from the
	// end, backwards); neither: unknown (and so is find).
	index     int
	keyword   string
	startFrom int

	// Find keys: a range up to lastKey (relative to the start; negative:
	// from the end, of the first 1/limit of the rest when limit > 1), or,
	// when keyNum, the argument keyNumIdx after the start counts the keys,
	// the first at firstKey after the start, step apart.
	keyNum                    bool
	lastKey, step, limit      int
	keyNumIdx, firstKey       int
	unknownBegin, unknownFind bool
}

// parseKeySpecs reads our notation of key specs: specs separated by ";",
// each its flags then where it begins — "@N" (index N), "kw:WORD:FROM" or
// "?" (unknown) — then optionally how keys follow: "range:LAST[:STEP[:LIMIT]]"
// (default range:0:1:0) or "keynum:IDX:FIRST:STEP".
func parseKeySpecs(s string) []keySpec {
	var out []keySpec
	for _, part := range strings.Split(s, ";") {
		ks := keySpec{step: 1}
		for _, tok := range strings.Fields(part) {
			kind, rest, _ := strings.Cut(tok, ":")
			nums := func(n int) []int {
				f := strings.Split(rest, ":")
				v := make([]int, n)
				for i := range f {
					x, err := strconv.Atoi(f[i])
					if err != nil || len(f) > n {
						panic("server: bad key spec " + strconv.Quote(s))
					}
					v[i] = x
				}
				return v
			}
			switch {
			case tok == "?":
				ks.unknownBegin, ks.unknownFind = true, true
			case strings.HasPrefix(tok, "@"):
				ks.index, _ = strconv.Atoi(tok[1:])
			case kind == "kw":
				w, from, _ := strings.Cut(rest, ":")
				ks.keyword = w
				ks.startFrom, _ = strconv.Atoi(from)
			case kind == "range":
				v := nums(3)
				ks.lastKey, ks.limit = v[0], v[2]
				if strings.Count(rest, ":") > 0 {
					ks.step = v[1]
				}
			case kind == "keynum":
				v := nums(3)
				ks.keyNum, ks.keyNumIdx, ks.firstKey, ks.step = true, v[0], v[1], v[2]
			default:
				ks.flags = append(ks.flags, tok)
			}
		}
		if ks.index == 0 && ks.keyword == "" && !ks.unknownBegin {
			panic("server: key spec without a beginning: " + strconv.Quote(s))
		}
		out = append(out, ks)
	}
	return out
}

// rangeSpec is the key spec of a command whose keys are FirstKey..LastKey
// by Step.
func rangeSpec(c *Command, flags string) keySpec {
	last := c.LastKey
	if last >= 0 {
		last -= c.FirstKey
	}
	step := c.Step
	if step <= 0 {
		step = 1
	}
	return keySpec{flags: strings.Fields(flags), index: c.FirstKey, lastKey: last, step: step}
}

// keySpecs of the commands whose keys are not one range, or not those of
// the command's own FirstKey (spublish's channels, which dfly does not
// lock as keys).
var keySpecs = map[string]string{
	"bitop":             "OW update @2; RO access @3 range:-1",
	"blmove":            "RW access delete @1; RW insert @2",
	"brpoplpush":        "RW access delete @1; RW insert @2",
	"lmove":             "RW access delete @1; RW insert @2",
	"rpoplpush":         "RW access delete @1; RW insert @2",
	"smove":             "RW access delete @1; RW insert @2",
	"blmpop":            "RW access delete @2 keynum:0:1:1",
	"bzmpop":            "RW access delete @2 keynum:0:1:1",
	"lmpop":             "RW access delete @1 keynum:0:1:1",
	"zmpop":             "RW access delete @1 keynum:0:1:1",
	"copy":              "RO access @1; OW update @2",
	"eval":              "RW access update @2 keynum:0:1:1",
	"evalsha":           "RW access update @2 keynum:0:1:1",
	"fcall":             "RW access update @2 keynum:0:1:1",
	"eval_ro":           "RO access @2 keynum:0:1:1",
	"evalsha_ro":        "RO access @2 keynum:0:1:1",
	"fcall_ro":          "RO access @2 keynum:0:1:1",
	"georadius":         "RO access @1; OW update kw:STORE:6; OW update kw:STOREDIST:6",
	"georadiusbymember": "RO access @1; OW update kw:STORE:5; OW update kw:STOREDIST:5",
	"geosearch":         "RO access @1",
	"geosearchstore":    "OW update @1; RO access @2",
	"migrate":           "RW access delete @3; RW access delete incomplete kw:KEYS:-2 range:-1",
	"pfmerge":           "RW access insert @1; RO access @2 range:-1",
	"rename":            "RW access delete @1; OW update @2",
	"renamenx":          "RW access delete @1; OW insert @2",
	"sdiffstore":        "OW update @1; RO access @2 range:-1",
	"sunionstore":       "OW update @1; RO access @2 range:-1",
	"sinterstore":       "RW update @1; RO access @2 range:-1",
	"sintercard":        "RO access @1 keynum:0:1:1",
	"zdiff":             "RO access @1 keynum:0:1:1",
	"zinter":            "RO access @1 keynum:0:1:1",
	"zintercard":        "RO access @1 keynum:0:1:1",
	"zunion":            "RO access @1 keynum:0:1:1",
	"zdiffstore":        "OW update @1; RO access @2 keynum:0:1:1",
	"zinterstore":       "OW update @1; RO access @2 keynum:0:1:1",
	"zunionstore":       "OW update @1; RO access @2 keynum:0:1:1",
	"zrangestore":       "OW update @1; RO access @2",
	// SORT's BY/GET patterns name keys by the sorted values, and STORE
	// may come anywhere: both unknown.
	"sort":    "RO access @1; RO access ?; OW update ?",
	"sort_ro": "RO access @1; RO access ?",
	// Shard channels: Redis routes them as keys; they are not keys.
	"spublish":     "not_key @1",
	"ssubscribe":   "not_key @1 range:-1",
	"sunsubscribe": "not_key @1 range:-1",
	"xread":        "RO access kw:STREAMS:1 range:-1:1:2",
	"xreadgroup":   "RO access kw:STREAMS:4 range:-1:1:2",
}

// keyAccess are the key spec flags of commands with one range of keys
// whose flags are not their kind's default: "RO access" for readers,
// "RW access update" for writers.
var keyAccess = map[string][]string{
	"RO": {"exists", "hexists", "hlen", "hstrlen", "llen", "scard", "sismember", "strlen", "touch",
		"type", "watch", "xlen", "zcard"},
	"RW update": {"expire", "expireat", "geoadd", "hmset", "hset", "lset", "persist", "pexpire",
		"pexpireat", "setrange", "xack", "xadd", "xclaim", "xsetid", "zadd"},
	"RW delete": {"hdel", "lrem", "ltrim", "srem", "xautoclaim", "xdel", "xtrim", "zrem",
		"zremrangebylex", "zremrangebyrank", "zremrangebyscore"},
	"RW access delete": {"blpop", "brpop", "bzpopmax", "bzpopmin", "getdel", "lpop", "rpop", "spop",
		"zpopmax", "zpopmin"},
	"RW insert": {"append", "hsetnx", "linsert", "lpush", "lpushx", "pfadd", "rpush", "rpushx", "sadd"},
	"OW update": {"mset", "psetex", "restore", "restore-asking", "setex"},
	"OW insert": {"msetnx", "setnx"},
	"RM delete": {"del", "unlink"},
	"RW access": {"pfcount", "pfdebug"},
	// The flags depend on the arguments (GETKEYSANDFLAGS, reportedKeyFlags).
	"RW access update variable_flags": {"set", "bitfield"},
}

// shownFlags are flags Redis 7 reports that dfly's table does not carry
// (display only: FlagNoMulti on SHUTDOWN would refuse it inside MULTI).
var shownFlags = map[string]Flags{
	"auth": FlagAllowBusy, "hello": FlagAllowBusy, "discard": FlagAllowBusy, "multi": FlagAllowBusy,
	"reset": FlagAllowBusy, "unwatch": FlagAllowBusy, "watch": FlagAllowBusy, "quit": FlagAllowBusy,
	"replconf": FlagAllowBusy, "shutdown": FlagAllowBusy | FlagNoMulti,
	"bgsave": FlagNoAsyncLoading, "replicaof": FlagNoAsyncLoading, "slaveof": FlagNoAsyncLoading,
	"save": FlagNoAsyncLoading, "sync": FlagNoAsyncLoading, "psync": FlagNoAsyncLoading,
	"exec": FlagSkipSlowlog,
	"eval": FlagSkipMonitor | FlagNoMandatoryKeys, "evalsha": FlagSkipMonitor | FlagNoMandatoryKeys,
	"eval_ro": FlagSkipMonitor | FlagNoMandatoryKeys, "evalsha_ro": FlagSkipMonitor | FlagNoMandatoryKeys,
	"fcall": FlagSkipMonitor | FlagNoMandatoryKeys, "fcall_ro": FlagSkipMonitor | FlagNoMandatoryKeys,
}

// hiddenFlags are flags of dfly's table that Redis does not report: a
// script's own write flag (its calls are judged one by one; Redis lets
// the script's flags decide).
var hiddenFlags = map[string]Flags{
	"eval": FlagWrite, "evalsha": FlagWrite, "fcall": FlagWrite,
}

// subcommandInfo: each subcommand's arity (counting the container's
// name), flags and key specs, as Redis 7.0 reports them; COMMAND's own
// subcommands too (command|info ...), which ACL does not tell apart.
var subcommandInfo = []struct {
	name  string
	arity int
	flags Flags
	keys  string
}{
	{"acl|cat", -2, lns, ""}, {"acl|deluser", -3, admin, ""}, {"acl|dryrun", -4, admin, ""},
	{"acl|genpass", -2, lns, ""}, {"acl|getuser", 3, admin, ""}, {"acl|help", 2, ls, ""},
	{"acl|list", 2, admin, ""}, {"acl|load", 2, admin, ""}, {"acl|log", -2, admin, ""},
	{"acl|save", 2, admin, ""}, {"acl|setuser", -3, admin, ""}, {"acl|users", 2, admin, ""},
	{"acl|whoami", 2, lns, ""},

	{"client|caching", 3, lns, ""}, {"client|getname", 2, lns, ""}, {"client|getredir", 2, lns, ""},
	{"client|help", 2, ls, ""}, {"client|id", 2, lns, ""}, {"client|info", 2, lns, ""},
	{"client|kill", -3, admin, ""}, {"client|list", -2, admin, ""}, {"client|no-evict", 3, admin, ""},
	{"client|no-touch", 3, lns, ""}, {"client|pause", -3, admin, ""}, {"client|reply", 3, lns, ""},
	{"client|setinfo", 4, lns, ""}, {"client|setname", 3, lns, ""}, {"client|tracking", -3, lns, ""},
	{"client|trackinginfo", 2, lns, ""}, {"client|unblock", -3, admin, ""},
	{"client|unpause", 2, admin, ""},

	{"cluster|countkeysinslot", 3, FlagStale, ""}, {"cluster|getkeysinslot", 4, FlagStale, ""},
	{"cluster|help", 2, ls, ""}, {"cluster|info", 2, FlagStale, ""}, {"cluster|keyslot", 3, FlagStale, ""},
	{"cluster|links", 2, FlagStale, ""}, {"cluster|myid", 2, FlagStale, ""},
	{"cluster|nodes", 2, FlagStale, ""}, {"cluster|shards", 2, FlagStale, ""},
	{"cluster|slots", 2, FlagStale, ""},

	{"command|count", 2, ls, ""}, {"command|docs", -2, ls, ""}, {"command|getkeys", -4, ls, ""},
	{"command|getkeysandflags", -4, ls, ""}, {"command|help", 2, ls, ""}, {"command|info", -2, ls, ""},
	{"command|list", -2, ls, ""},

	{"config|get", -3, admin, ""}, {"config|help", 2, ls, ""}, {"config|resetstat", 2, admin, ""},
	{"config|rewrite", 2, admin, ""}, {"config|set", -4, admin, ""},

	{"function|delete", 3, FlagNoScript | FlagWrite, ""}, {"function|dump", 2, FlagNoScript, ""},
	{"function|flush", -2, FlagNoScript | FlagWrite, ""}, {"function|help", 2, ls, ""},
	{"function|kill", 2, FlagNoScript | FlagAllowBusy, ""}, {"function|list", -2, FlagNoScript, ""},
	{"function|load", -3, FlagNoScript | FlagWrite | FlagDenyOOM, ""},
	{"function|restore", -3, FlagNoScript | FlagWrite | FlagDenyOOM, ""},
	{"function|stats", 2, FlagNoScript | FlagAllowBusy, ""},

	{"latency|doctor", 2, admin, ""}, {"latency|graph", 3, admin, ""}, {"latency|help", 2, ls, ""},
	{"latency|histogram", -2, admin, ""}, {"latency|history", 3, admin, ""},
	{"latency|latest", 2, admin, ""}, {"latency|reset", -2, admin, ""},

	{"memory|doctor", 2, 0, ""}, {"memory|help", 2, ls, ""}, {"memory|malloc-stats", 2, 0, ""},
	{"memory|purge", 2, 0, ""}, {"memory|stats", 2, 0, ""}, {"memory|usage", -3, FlagReadonly, "RO @2"},

	{"module|help", 2, ls, ""}, {"module|list", 2, FlagAdmin | FlagNoScript, ""},
	{"module|load", -3, FlagAdmin | FlagNoScript | FlagNoAsyncLoading, ""},
	{"module|loadex", -3, FlagAdmin | FlagNoScript | FlagNoAsyncLoading, ""},
	{"module|unload", 3, FlagAdmin | FlagNoScript | FlagNoAsyncLoading, ""},

	{"object|encoding", 3, FlagReadonly, "RO @2"}, {"object|freq", 3, FlagReadonly, "RO @2"},
	{"object|help", 2, ls, ""}, {"object|idletime", 3, FlagReadonly, "RO @2"},
	{"object|refcount", 3, FlagReadonly, "RO @2"},

	{"pubsub|channels", -2, ls | FlagPubSub, ""}, {"pubsub|help", 2, ls, ""},
	{"pubsub|numpat", 2, ls | FlagPubSub, ""}, {"pubsub|numsub", -2, ls | FlagPubSub, ""},
	{"pubsub|shardchannels", -2, ls | FlagPubSub, ""}, {"pubsub|shardnumsub", -2, ls | FlagPubSub, ""},

	{"script|debug", 3, FlagNoScript, ""}, {"script|exists", -3, FlagNoScript, ""},
	{"script|flush", -2, FlagNoScript, ""}, {"script|help", 2, ls, ""},
	{"script|kill", 2, FlagNoScript | FlagAllowBusy, ""}, {"script|load", 3, FlagNoScript | FlagStale, ""},

	{"slowlog|get", -2, FlagAdmin | ls, ""}, {"slowlog|help", 2, ls, ""},
	{"slowlog|len", 2, FlagAdmin | ls, ""}, {"slowlog|reset", 2, FlagAdmin | ls, ""},

	{"xgroup|create", -5, FlagWrite | FlagDenyOOM, "RW insert @2"},
	{"xgroup|createconsumer", 5, FlagWrite | FlagDenyOOM, "RW insert @2"},
	{"xgroup|delconsumer", 5, FlagWrite, "RW delete @2"}, {"xgroup|destroy", 4, FlagWrite, "RW delete @2"},
	{"xgroup|help", 2, ls, ""}, {"xgroup|setid", -5, FlagWrite, "RW update @2"},

	{"xinfo|consumers", 4, FlagReadonly, "RO access @2"}, {"xinfo|groups", 3, FlagReadonly, "RO access @2"},
	{"xinfo|help", 2, ls, ""}, {"xinfo|stream", -3, FlagReadonly, "RO access @2"},
}

// Flag sets of subcommandInfo.
const (
	ls    = FlagLoading | FlagStale
	lns   = ls | FlagNoScript
	admin = lns | FlagAdmin
)

// describe fills in what COMMAND INFO reports of c beyond its table
// entry: shown flags, key specs and the subcommands' entries.
func describe(c *Command) {
	c.shown = shownFlags[c.Name]
	c.specs = commandSpecs(c)
	var subs []*Command
	for _, s := range subcommandInfo {
		container, sub, _ := strings.Cut(s.name, "|")
		if container != c.Name {
			continue
		}
		sc := c.Subs[sub]
		if sc == nil {
			if c.Subs != nil {
				continue // a subcommand dfly does not have
			}
			// COMMAND's subcommands: ACL judges COMMAND as one command.
			sc = &Command{Name: s.name, Group: c.Group, Cats: c.Cats}
		}
		sc.Arity, sc.Flags = s.arity, s.flags
		if s.keys != "" {
			sc.specs = parseKeySpecs(s.keys)
		}
		subs = append(subs, sc)
	}
	for _, s := range sortedSubs(c) {
		if s.Arity == 0 {
			panic("server: no COMMAND INFO for subcommand " + s.Name)
		}
	}
	if len(subs) > 0 {
		c.infoSubs = sortedCommands(subs)
	}
}

// commandSpecs are c's key specs: its entry in keySpecs, else its one
// range with keyAccess's flags or its kind's.
func commandSpecs(c *Command) []keySpec {
	if c.Subs != nil {
		return nil // each subcommand has its own
	}
	if s, ok := keySpecs[c.Name]; ok {
		return parseKeySpecs(s)
	}
	if c.FirstKey == 0 {
		if c.KeyPositions != nil {
			flags := "RW access update"
			if c.Flags&FlagWrite == 0 {
				flags = "RO access"
			}
			return []keySpec{{flags: strings.Fields(flags), unknownBegin: true, unknownFind: true}}
		}
		return nil
	}
	for flags, names := range keyAccess {
		for _, n := range names {
			if n == c.Name {
				return []keySpec{rangeSpec(c, flags)}
			}
		}
	}
	if c.Flags&FlagWrite != 0 {
		return []keySpec{rangeSpec(c, "RW access update")}
	}
	return []keySpec{rangeSpec(c, "RO access")}
}

// legacyRange is the first key, last key and step COMMAND INFO reports,
// derived from the key specs as Redis 7 does: one range spec is itself;
// otherwise the index specs of step 1 that follow one another merge into
// one range from the first's start to the furthest end (an end counted
// from the last argument is the furthest). movable: some keys are not
// found by such a range.
func legacyRange(specs []keySpec) (first, last, step int, movable bool) {
	isRange := func(s keySpec) bool {
		return s.index > 0 && !s.keyNum && !s.unknownFind
	}
	incomplete := func(s keySpec) bool {
		for _, f := range s.flags {
			if f == "incomplete" {
				return true
			}
		}
		return false
	}
	if len(specs) == 1 && isRange(specs[0]) {
		s := specs[0]
		last = s.lastKey
		if last >= 0 {
			last += s.index
		}
		return s.index, last, s.step, incomplete(s)
	}
	prevEnd := 0
	for _, s := range specs {
		if !isRange(s) || s.step != 1 || prevEnd != 0 && prevEnd != s.index-1 {
			movable = true
			continue
		}
		if incomplete(s) {
			movable = true
		}
		end := s.lastKey
		if end >= 0 {
			end += s.index
		}
		if first == 0 || s.index < first {
			first = s.index
		}
		if last >= 0 && (end < 0 || end > last) {
			last = end
		}
		prevEnd = last
	}
	if first == 0 {
		return 0, 0, 0, len(specs) > 0
	}
	return first, last, 1, movable
}

// positions appends the argument positions s finds in args.
func (s keySpec) positions(dst []int, args [][]byte) []int {
	start := s.index
	switch {
	case s.unknownBegin:
		return dst
	case s.keyword != "":
		start = 0
		if s.startFrom >= 0 {
			for i := s.startFrom; i < len(args); i++ {
				if strings.EqualFold(string(args[i]), s.keyword) {
					start = i + 1
					break
				}
			}
		} else {
			for i := len(args) + s.startFrom; i > 0; i-- {
				if strings.EqualFold(string(args[i]), s.keyword) {
					start = i + 1
					break
				}
			}
		}
		if start == 0 {
			return dst
		}
	}
	if start >= len(args) || s.unknownFind {
		return dst
	}
	first, last, step := start, 0, s.step
	switch {
	case s.keyNum:
		if start+s.keyNumIdx >= len(args) {
			return dst
		}
		n, ok := num.ParseInt(args[start+s.keyNumIdx])
		if !ok || n <= 0 || n > int64(len(args)) {
			return dst
		}
		first = start + s.firstKey
		last = first + (int(n)-1)*step
	case s.lastKey >= 0:
		last = start + s.lastKey
	case s.limit > 1:
		last = start + (len(args)-start)/s.limit + s.lastKey
	default:
		last = len(args) + s.lastKey
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	if step <= 0 {
		step = 1
	}
	for i := first; i <= last; i += step {
		dst = append(dst, i)
	}
	return dst
}

// hasKeySpecs reports whether specs find keys at all (one is not marked
// not_key): Redis's test before COMMAND GETKEYS looks further.
func hasKeySpecs(specs []keySpec) bool {
	for _, s := range specs {
		if !slices.Contains(s.flags, "not_key") {
			return true
		}
	}
	return false
}

// specKeys finds the keys of args with specs as Redis's
// getKeysUsingKeySpecs does, in spec order; complete false when a spec is
// incomplete or has variable flags (Redis then asks the command itself).
// A spec finding its keys out of the arguments' bounds is a syntax error:
// no keys (Redis asks the command then too, and every command with
// complete specs finds none in such arguments).
func specKeys(specs []keySpec, args [][]byte) (pos []int, complete bool) {
	argc := len(args)
	for _, s := range specs {
		if slices.Contains(s.flags, "not_key") {
			continue
		}
		if s.unknownBegin || s.unknownFind || slices.Contains(s.flags, "incomplete") || slices.Contains(s.flags, "variable_flags") {
			return nil, false
		}
	}
	for _, s := range specs {
		if slices.Contains(s.flags, "not_key") {
			continue
		}
		first := s.index
		if s.keyword != "" {
			first = 0
			start, end := s.startFrom, argc-1 // forward: the keyword is not the last argument
			if s.startFrom < 0 {
				start, end = argc+s.startFrom, 1
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if strings.EqualFold(string(args[i]), s.keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // keyword not found: no keys from this spec
			}
		}
		var last int
		step := s.step
		switch {
		case s.keyNum:
			if first+s.keyNumIdx >= argc {
				return nil, true
			}
			n, isNum := num.ParseInt(args[first+s.keyNumIdx])
			if !isNum || n < 0 || n > int64(argc) {
				return nil, true
			}
			first += s.firstKey
			last = first + (int(n)-1)*max(step, 1)
		case s.lastKey >= 0:
			last = first + s.lastKey
		case s.limit > 1:
			last = first + (argc-first)/s.limit + s.lastKey
		default:
			last = argc + s.lastKey
		}
		if last >= argc || last < first || first >= argc {
			return nil, true
		}
		for i := first; i <= last; i += max(step, 1) {
			pos = append(pos, i)
		}
	}
	return pos, true
}

// keyFlags are the key spec flags of the key at each position of args,
// as COMMAND GETKEYSANDFLAGS reports them: those of the spec that finds
// it; a key no spec finds (SORT's STORE) has the last unknown spec's.
func keyFlags(cmd *Command, args [][]byte, pos []int) [][]string {
	specs := cmd.specs
	if len(args) > 1 {
		if s := cmd.infoSub(args[1]); s != nil {
			specs = s.specs
		}
	}
	var fallback []string
	for _, s := range specs {
		if s.unknownBegin {
			fallback = s.flags
		}
	}
	if fallback == nil && len(specs) > 0 {
		fallback = specs[0].flags
	}
	out := make([][]string, len(pos))
	var found []int
	for i, p := range pos {
		out[i] = fallback
		for _, s := range specs {
			found = s.positions(found[:0], args)
			if slices.Contains(found, p) {
				out[i] = s.flags
				break
			}
		}
		out[i] = reportedKeyFlags(cmd.Name, args, out[i])
	}
	return out
}

// reportedKeyFlags are a key's flags for these arguments when its spec
// has variable_flags (SET without GET overwrites, BITFIELD with only GET
// reads), without the flags that describe the spec, not the key.
func reportedKeyFlags(name string, args [][]byte, flags []string) []string {
	if !slices.Contains(flags, "variable_flags") && !slices.Contains(flags, "incomplete") {
		return flags
	}
	// has: an option among args from index from (SET's value may be "get").
	has := func(from int, words ...string) bool {
		for _, a := range args[min(from, len(args)):] {
			for _, w := range words {
				if strings.EqualFold(string(a), w) {
					return true
				}
			}
		}
		return false
	}
	switch name {
	case "set":
		if !has(3, "get") {
			return []string{"OW", "update"}
		}
	case "bitfield":
		if !has(2, "set", "incrby") {
			return []string{"RO", "access"}
		}
	}
	var out []string
	for _, f := range flags {
		if f != "variable_flags" && f != "incomplete" {
			out = append(out, f)
		}
	}
	return out
}

// infoSub is c's subcommand named sub (in any case), for COMMAND INFO.
func (c *Command) infoSub(sub []byte) *Command {
	for _, s := range c.infoSubs {
		if _, n, _ := strings.Cut(s.Name, "|"); strings.EqualFold(n, string(sub)) {
			return s
		}
	}
	return nil
}

// lookupInfo finds a command, or a subcommand as "container|sub", by name.
func (t *Table) lookupInfo(name []byte) *Command {
	container, sub, ok := strings.Cut(string(name), "|")
	if !ok {
		return t.Lookup(name)
	}
	c := t.Lookup([]byte(container))
	if c == nil {
		return nil
	}
	return c.infoSub([]byte(sub))
}

// writeCommandInfo writes Redis 7's COMMAND INFO entry: name, arity,
// flags, first key, last key, step, ACL categories, tips, key specs,
// subcommands.
func writeCommandInfo(w *resp.Writer, cmd *Command) {
	w.Array(10)
	w.BulkString(cmd.Name)
	w.Int(int64(cmd.Arity))
	first, last, step, movable := legacyRange(cmd.specs)
	shown := (cmd.Flags | cmd.shown) &^ hiddenFlags[cmd.Name]
	if cmd.Subs != nil {
		shown = 0 // a container only leads to its subcommands
	}
	var flags []string
	for _, f := range flagNames {
		if shown&f.f != 0 {
			flags = append(flags, f.name)
		}
	}
	if movable {
		flags = append(flags, "movablekeys")
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.SimpleString(f)
	}
	w.Int(int64(first))
	w.Int(int64(last))
	w.Int(int64(step))
	cats := shownCategories(cmd)
	w.Set(len(cats))
	for _, c := range cats {
		w.SimpleString("@" + c)
	}
	w.Set(0)
	w.Array(len(cmd.specs))
	for _, s := range cmd.specs {
		writeKeySpec(w, s)
	}
	w.Array(len(cmd.infoSubs))
	for _, s := range cmd.infoSubs {
		writeCommandInfo(w, s)
	}
}

// writeKeySpec writes one key spec as a map: flags, begin_search,
// find_keys.
func writeKeySpec(w *resp.Writer, s keySpec) {
	w.Map(3)
	w.BulkString("flags")
	w.Set(len(s.flags))
	for _, f := range s.flags {
		w.SimpleString(f)
	}
	w.BulkString("begin_search")
	switch {
	case s.unknownBegin:
		writeSpecPart(w, "unknown")
	case s.keyword != "":
		writeSpecPart(w, "keyword", "keyword", s.keyword, "startfrom", s.startFrom)
	default:
		writeSpecPart(w, "index", "index", s.index)
	}
	w.BulkString("find_keys")
	switch {
	case s.unknownFind:
		writeSpecPart(w, "unknown")
	case s.keyNum:
		writeSpecPart(w, "keynum", "keynumidx", s.keyNumIdx, "firstkey", s.firstKey, "keystep", s.step)
	default:
		writeSpecPart(w, "range", "lastkey", s.lastKey, "keystep", s.step, "limit", s.limit)
	}
}

// writeSpecPart writes a begin_search or find_keys map: its type, and its
// spec from pairs of a field's name and its value (a string or an int).
func writeSpecPart(w *resp.Writer, typ string, pairs ...any) {
	w.Map(2)
	w.BulkString("type")
	w.BulkString(typ)
	w.BulkString("spec")
	w.Map(len(pairs) / 2)
	for i := 0; i+1 < len(pairs); i += 2 {
		w.BulkString(pairs[i].(string))
		switch v := pairs[i+1].(type) {
		case string:
			w.BulkString(v)
		case int:
			w.Int(int64(v))
		}
	}
}
