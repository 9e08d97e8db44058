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

// describe fills in what COMMAND INFO reports of c beyond its table
// entry: key specs and the subcommands' entries.
func describe(c *Command) {
	c.specs = commandSpecs(c)
	var subs []*Command
	for _, s := range c.Subcommands {
		sc := c.Subs[s.Name]
		if sc == nil {
			// COMMAND's subcommands: ACL judges COMMAND as one command.
			sc = &Command{Name: c.Name + "|" + s.Name, Group: c.Group, Cats: c.Cats}
		}
		sc.Arity, sc.Flags, sc.Tips = s.Arity, s.Flags, s.Tips
		if s.KeySpecs != "" {
			sc.specs = parseKeySpecs(s.KeySpecs)
		}
		subs = append(subs, sc)
	}
	if len(subs) > 0 {
		c.infoSubs = sortedCommands(subs)
	}
}

// commandSpecs are c's key specs: its KeySpecs, else its one range with
// its KeyFlags or its kind's.
func commandSpecs(c *Command) []keySpec {
	if c.Subs != nil {
		return nil // each subcommand has its own
	}
	if c.KeySpecs != "" {
		return parseKeySpecs(c.KeySpecs)
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
	if c.KeyFlags != "" {
		return []keySpec{rangeSpec(c, c.KeyFlags)}
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
	shown := (cmd.Flags | cmd.InfoFlags) &^ cmd.InfoHides
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
	tips := strings.Fields(cmd.Tips)
	w.Set(len(tips))
	for _, t := range tips {
		w.BulkString(t)
	}
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

// Called is what a call of c with args counts as in latency tracking: the
// subcommand's entry ("config|get") for a container, c for any other
// command, nil for an unknown subcommand (Redis refuses it before running
// it). It does not allocate.
func (c *Command) Called(args [][]byte) *Command {
	if c.infoSubs == nil {
		return c
	}
	if len(args) < 2 {
		return nil
	}
	for _, s := range c.infoSubs {
		n := s.Name[len(c.Name)+1:]
		if len(n) == len(args[1]) && asciiEqualFold(n, args[1]) {
			return s
		}
	}
	return nil
}

func asciiEqualFold(s string, b []byte) bool {
	for i := range len(s) {
		x, y := s[i], b[i]
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// LookupInfo finds a command, or a subcommand as "container|sub", by name
// (in any case).
func (t *Table) LookupInfo(name []byte) *Command { return t.lookupInfo(name) }

// InfoSubs are a container's subcommands' entries, sorted by name (nil for
// any other command).
func (c *Command) InfoSubs() []*Command { return c.infoSubs }
