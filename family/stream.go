package family

import (
	"github.com/dfly/dfly/command"

	"bytes"
	"math"

	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/types/num"
	"github.com/dfly/dfly/types/stream"
)

func init() { command.Register("stream", streamCommands) }

func streamCommands() []*command.Command {
	rw := command.FlagWrite | command.FlagDenyOOM
	k1 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Shard: fn}
	}
	k2 := func(name string, arity int, flags command.Flags, fn func(x *command.Exec)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 2, LastKey: 2, Step: 1, Shard: fn}
	}
	return []*command.Command{
		withTips(rewritten(withKeyFlags(k1("xadd", -5, rw|command.FlagFast, cmdXAdd), "RW update"), rewriteXAdd), "nondeterministic_output"),
		withKeyFlags(k1("xlen", 2, command.FlagReadonly|command.FlagFast, cmdXLen), "RO"),
		k1("xrange", -4, command.FlagReadonly, func(x *command.Exec) { xrangeGeneric(x, false) }),
		k1("xrevrange", -4, command.FlagReadonly, func(x *command.Exec) { xrangeGeneric(x, true) }),
		withKeyFlags(k1("xdel", -3, command.FlagWrite|command.FlagFast, cmdXDel), "RW delete"),
		withTips(rewritten(withKeyFlags(k1("xtrim", -4, command.FlagWrite, cmdXTrim), "RW delete"), rewriteXTrim), "nondeterministic_output"),
		withKeyFlags(k1("xsetid", -3, rw|command.FlagFast|command.FlagQuiet, cmdXSetID), "RW update"),
		withKeyFlags(k1("xack", -4, command.FlagWrite|command.FlagFast|command.FlagQuiet, cmdXAck), "RW update"),
		withTips(k1("xpending", -3, command.FlagReadonly, cmdXPending), "nondeterministic_output"),
		withTips(withKeyFlags(k1("xclaim", -6, command.FlagWrite|command.FlagFast|command.FlagQuiet, cmdXClaim), "RW update"), "nondeterministic_output"),
		withTips(withKeyFlags(k1("xautoclaim", -6, command.FlagWrite|command.FlagFast|command.FlagQuiet, cmdXAutoClaim), "RW delete"), "nondeterministic_output"),
		withSubcommands(k2("xgroup", -2, rw|command.FlagQuiet, cmdXGroup), xgroupSubcommands),
		withSubcommands(k2("xinfo", -2, command.FlagReadonly, cmdXInfo), xinfoSubcommands),
		{Name: "xread", Arity: -4, Flags: command.FlagReadonly | command.FlagBlocking, KeySpecs: "RO access kw:STREAMS:1 range:-1:1:2", KeyPositions: xreadKeyPositions, Coordinate: xreadBlocks,
			Shard: func(x *command.Exec) { xreadOne(x, false) }, Multi: func(x *command.Coord) { xreadMulti(x, false) }},
		{Name: "xreadgroup", Arity: -7, Flags: command.FlagWrite | command.FlagBlocking, KeySpecs: "RO access kw:STREAMS:4 range:-1:1:2", KeyPositions: xreadKeyPositions, Coordinate: xreadBlocks,
			Shard: func(x *command.Exec) { xreadOne(x, true) }, Multi: func(x *command.Coord) { xreadMulti(x, true) },
			Rewrite: rewriteXReadGroup, JournalArgs: stripBlock},
	}
}

// Error replies of the stream commands, in Redis 7.0's words.
const (
	errStreamID       = "ERR Invalid stream ID specified as stream command argument"
	errXAddTooSmall   = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errXAddZero       = "ERR The ID specified in XADD must be greater than 0-0"
	errXAddExhausted  = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errStartInterval  = "ERR invalid start ID for the interval"
	errEndInterval    = "ERR invalid end ID for the interval"
	errXGroupNeedsKey = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
)

// isWord reports whether arg is word (lower case) in any case, without
// allocating.
func isWord(arg []byte, word string) bool {
	if len(arg) != len(word) {
		return false
	}
	for i := range arg {
		c := arg[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}

func noGroupErr(key, group []byte) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'"
}

// streamValue finds key as a stream, writing WRONGTYPE for another type;
// s is nil for a missing key.
func streamValue(x *command.Exec, key []byte) (it shard.Iterator, s *stream.Stream, ok bool) {
	return command.TypedValue[*stream.Stream](x, key, shard.TypeStream)
}

// mutableStream announces an update of the stream at it and returns it.
func mutableStream(db *shard.DB, it shard.Iterator) *stream.Stream {
	return command.Mutable[*stream.Stream](db, it)
}

// parseStrictID parses an ID argument where "-" and "+" are not allowed.
func parseStrictID(b []byte, missingSeq uint64) (stream.ID, bool) {
	id, _, ok := stream.ParseID(b, missingSeq, true, false)
	return id, ok
}

// parseIDList parses XDEL's and XACK's IDs, writing Redis's error for a
// bad one.
func parseIDList(x *command.Exec, args [][]byte) ([]stream.ID, bool) {
	ids := make([]stream.ID, 0, len(args))
	for _, a := range args {
		id, ok := parseStrictID(a, 0)
		if !ok {
			x.W.Error(errStreamID)
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// parseIntervalID parses a range bound: "(" prefixes an exclusive bound
// (and then "-"/"+" are not allowed), "-"/"+" are the extremes.
func parseIntervalID(b []byte, missingSeq uint64) (id stream.ID, exclusive, ok bool) {
	if len(b) > 1 && b[0] == '(' {
		id, ok = parseStrictID(b[1:], missingSeq)
		return id, true, ok
	}
	id, _, ok = stream.ParseID(b, missingSeq, false, false)
	return id, false, ok
}

// parseRangeStart parses an inclusive-or-exclusive start bound, replying
// on error.
func parseRangeStart(w *resp.Writer, b []byte) (stream.ID, bool) {
	id, ex, ok := parseIntervalID(b, 0)
	if !ok {
		w.Error(errStreamID)
		return id, false
	}
	if ex {
		if id, ok = id.Next(); !ok {
			w.Error(errStartInterval)
			return id, false
		}
	}
	return id, true
}

func parseRangeEnd(w *resp.Writer, b []byte) (stream.ID, bool) {
	id, ex, ok := parseIntervalID(b, math.MaxUint64)
	if !ok {
		w.Error(errStreamID)
		return id, false
	}
	if ex {
		if id, ok = id.Prev(); !ok {
			w.Error(errEndInterval)
			return id, false
		}
	}
	return id, true
}

func writeID(w *resp.Writer, id stream.ID) {
	var buf [48]byte
	w.Bulk(id.Append(buf[:0]))
}

// writeEntry writes an entry as [id, [field, value ...]]; scratch is
// reused for the fields and returned for the next call.
func writeEntry(w *resp.Writer, e stream.Entry, scratch [][]byte) [][]byte {
	w.Array(2)
	writeID(w, e.ID)
	scratch = e.Fields(scratch[:0])
	w.Array(len(scratch))
	for _, f := range scratch {
		w.Bulk(f)
	}
	return scratch
}

// writeRange writes the entries of [start, end] (count 0 = all) as an
// array: counted first, so no reply buffer is patched afterwards.
func writeRange(w *resp.Writer, s *stream.Stream, start, end stream.ID, rev bool, count int64) {
	it := s.Range(start, end, rev)
	n := int64(0)
	for count == 0 || n < count {
		if _, ok := it.Next(); !ok {
			break
		}
		n++
	}
	w.Array(int(n))
	var buf [16][]byte
	scratch := buf[:0]
	it = s.Range(start, end, rev)
	for i := int64(0); i < n; i++ {
		e, _ := it.Next()
		scratch = writeEntry(w, e, scratch)
	}
}

// addTrimArgs are XADD's and XTRIM's options.
type addTrimArgs struct {
	trim               stream.Trim
	noMkStream         bool
	id                 stream.ID
	idGiven, seqGiven  bool
	limitGiven, approx bool
}

// parseAddTrim parses the options of XADD (xadd) or XTRIM from args[2]
// on, as Redis's streamParseAddOrTrimArgsOrReply; for XADD it returns the
// position of the ID argument (len(args) when there is none).
func parseAddTrim(args [][]byte, xadd bool) (a addTrimArgs, idPos int, errText string) {
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			return a.finish(xadd, i)
		case isWord(opt, "maxlen") && more > 0:
			if a.trim.Strategy != stream.TrimNone {
				return a, 0, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
			}
			a.approx, i = trimOperator(args, i, more)
			n, ok := num.ParseInt(args[i+1])
			if !ok {
				return a, 0, command.ErrNotInt
			}
			if n < 0 {
				return a, 0, "ERR The MAXLEN argument must be >= 0."
			}
			i++
			a.trim.Strategy, a.trim.MaxLen = stream.TrimMaxLen, n
		case isWord(opt, "minid") && more > 0:
			if a.trim.Strategy != stream.TrimNone {
				return a, 0, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
			}
			a.approx, i = trimOperator(args, i, more)
			id, ok := parseStrictID(args[i+1], 0)
			if !ok {
				return a, 0, errStreamID
			}
			i++
			a.trim.Strategy, a.trim.MinID = stream.TrimMinID, id
		case isWord(opt, "limit") && more > 0:
			n, ok := num.ParseInt(args[i+1])
			if !ok {
				return a, 0, command.ErrNotInt
			}
			if n < 0 {
				return a, 0, "ERR The LIMIT argument must be >= 0."
			}
			a.trim.Limit, a.limitGiven = n, true
			i++
		case xadd && isWord(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			id, seqGiven, ok := stream.ParseID(opt, 0, true, true)
			if !ok {
				return a, 0, errStreamID
			}
			a.id, a.seqGiven, a.idGiven = id, seqGiven, true
			return a.finish(xadd, i)
		default:
			return a, 0, command.ErrSyntax
		}
	}
	return a.finish(xadd, i)
}

// trimOperator consumes the optional "=" or "~" after MAXLEN or MINID at
// i, returning whether it asked for approximate trimming and the position
// before the threshold.
func trimOperator(args [][]byte, i, more int) (approx bool, at int) {
	if next := args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
		return next[0] == '~', i + 1
	}
	return false, i
}

func (a addTrimArgs) finish(xadd bool, idPos int) (addTrimArgs, int, string) {
	if a.trim.Limit != 0 && a.trim.Strategy == stream.TrimNone {
		return a, 0, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	}
	if !xadd && a.trim.Strategy == stream.TrimNone {
		return a, 0, "ERR syntax error, XTRIM must be called with a trimming strategy"
	}
	a.trim.Approx = a.approx
	switch {
	case a.limitGiven && !a.approx:
		return a, 0, "ERR syntax error, LIMIT cannot be used without the special ~ option"
	case !a.limitGiven && a.approx:
		a.trim.Limit = 100 * stream.NodeMaxEntries
	case !a.limitGiven:
		a.trim.Limit = 0
	}
	return a, idPos, ""
}

func cmdXAdd(x *command.Exec) {
	a, idPos, e := parseAddTrim(x.Args, true)
	if e != "" {
		x.W.Error(e)
		return
	}
	fieldPos := idPos + 1
	if n := len(x.Args) - fieldPos; n < 2 || n%2 == 1 {
		x.W.Error(command.WrongArity("xadd"))
		return
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		x.W.Error(errXAddZero)
		return
	}
	key := x.Args[1]
	it, s, ok := streamValue(x, key)
	if !ok {
		return
	}
	var explicit *stream.ID
	if a.idGiven {
		explicit = &a.id
	}
	created := s == nil
	if created {
		if a.noMkStream {
			x.W.Null()
			return
		}
		s = stream.New()
	}
	id, err := s.NextID(x.Now(), explicit, a.seqGiven)
	switch err {
	case stream.ErrExhausted:
		x.W.Error(errXAddExhausted)
		return
	case stream.ErrIDTooSmall:
		// Cannot happen on a new stream (0-0 was refused above).
		x.W.Error(errXAddTooSmall)
		return
	}
	if created {
		x.DB.Insert(key, shard.ObjectValue(shard.TypeStream, s))
	} else {
		s = mutableStream(x.DB, it)
	}
	s.Append(id, x.Args[fieldPos:])
	writeID(x.W, id)
	x.DB.Notify(notify.Stream, "xadd", key)
	if s.Trim(a.trim) > 0 {
		x.DB.Notify(notify.Stream, "xtrim", key)
	}
	streamAppended(x.DB, key)
}

// streamAppended is called after XADD added an entry to key, on the key's
// shard. It is the hook for the blocking machinery (BLOCK of XREAD and
// XREADGROUP) to wake clients waiting on the key; for now nothing blocks.
func streamAppended(db *shard.DB, key []byte) {}

func cmdXLen(x *command.Exec) {
	_, s, ok := streamValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil {
		x.W.Int(0)
		return
	}
	x.W.Int(int64(s.Len()))
}

func xrangeGeneric(x *command.Exec, rev bool) {
	startArg, endArg := x.Args[2], x.Args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := parseRangeStart(x.W, startArg)
	if !ok {
		return
	}
	end, ok := parseRangeEnd(x.W, endArg)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(x.Args); j++ {
		if isWord(x.Args[j], "count") && j+1 < len(x.Args) {
			n, ok := num.ParseInt(x.Args[j+1])
			if !ok {
				x.W.Error(command.ErrNotInt)
				return
			}
			count = max(n, 0)
			j++
			continue
		}
		x.W.Error(command.ErrSyntax)
		return
	}
	_, s, ok := streamValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil {
		x.W.Array(0)
		return
	}
	if count == 0 {
		// Redis 7.0 answers COUNT 0 (or negative) with a null array.
		x.W.NullArray()
		return
	}
	writeRange(x.W, s, start, end, rev, max(count, 0))
}

func cmdXDel(x *command.Exec) {
	it, s, ok := streamValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil {
		x.W.Int(0)
		return
	}
	ids, ok := parseIDList(x, x.Args[2:])
	if !ok {
		return
	}
	deleted := 0
	var m *stream.Stream
	for _, id := range ids {
		if !s.Exists(id) {
			continue
		}
		if m == nil {
			m = mutableStream(x.DB, it)
		}
		if m.Delete(id) {
			deleted++
		}
	}
	if deleted > 0 {
		x.DB.Notify(notify.Stream, "xdel", x.Args[1])
	}
	x.W.Int(int64(deleted))
}

func cmdXTrim(x *command.Exec) {
	a, _, e := parseAddTrim(x.Args, false)
	if e != "" {
		x.W.Error(e)
		return
	}
	it, s, ok := streamValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil || !s.Trims(a.trim) {
		x.W.Int(0) // nothing to trim: no write (WATCH holds, as in Redis)
		return
	}
	n := mutableStream(x.DB, it).Trim(a.trim)
	if n > 0 {
		x.DB.Notify(notify.Stream, "xtrim", x.Args[1])
	}
	x.W.Int(n)
}

func cmdXSetID(x *command.Exec) {
	id, ok := parseStrictID(x.Args[2], 0)
	if !ok {
		x.W.Error(errStreamID)
		return
	}
	entriesAdded := int64(-1)
	var maxDeleted stream.ID
	for i := 3; i < len(x.Args); i++ {
		more := len(x.Args) - 1 - i
		opt := x.Args[i]
		switch {
		case isWord(opt, "entriesadded") && more > 0:
			n, ok := num.ParseInt(x.Args[i+1])
			if !ok {
				x.W.Error(command.ErrNotInt)
				return
			}
			if n < 0 {
				x.W.Error("ERR entries_added must be positive")
				return
			}
			entriesAdded = n
			i++
		case isWord(opt, "maxdeletedid") && more > 0:
			md, ok := parseStrictID(x.Args[i+1], 0)
			if !ok {
				x.W.Error(errStreamID)
				return
			}
			if id.Less(md) {
				x.W.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
			maxDeleted = md
			i++
		default:
			x.W.Error(command.ErrSyntax)
			return
		}
	}
	it, s, ok := streamValue(x, x.Args[1])
	if !ok {
		return
	}
	if s == nil {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	// Redis 7.0 has no check against the current max deleted ID, and lets
	// the last ID of an empty stream go back.
	if s.Len() > 0 {
		if id.Less(s.LastEntryID()) {
			x.W.Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded != -1 && int64(s.Len()) > entriesAdded {
			x.W.Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	s = mutableStream(x.DB, it)
	s.LastID = id
	if entriesAdded != -1 {
		s.EntriesAdded = entriesAdded
	}
	if !maxDeleted.IsZero() {
		s.MaxDeletedID = maxDeleted
	}
	x.DB.Notify(notify.Stream, "xsetid", x.Args[1])
	x.W.SimpleString("OK")
}

// --- consumer groups -------------------------------------------------------

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

// xgroupSubcommands describe XGROUP's subcommands: arity, flags, key specs, ACL categories.
var xgroupSubcommands = []command.SubcommandInfo{
	{Name: "create", Arity: -5, Flags: command.FlagWrite | command.FlagDenyOOM, KeySpecs: "RW insert @2", ACLCats: "write stream"},
	{Name: "createconsumer", Arity: 5, Flags: command.FlagWrite | command.FlagDenyOOM, KeySpecs: "RW insert @2", ACLCats: "write stream"},
	{Name: "delconsumer", Arity: 5, Flags: command.FlagWrite, KeySpecs: "RW delete @2", ACLCats: "write stream"},
	{Name: "destroy", Arity: 4, Flags: command.FlagWrite, KeySpecs: "RW delete @2", ACLCats: "write stream"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale, ACLCats: "stream"},
	{Name: "setid", Arity: -5, Flags: command.FlagWrite, KeySpecs: "RW update @2", ACLCats: "write stream"},
}

func cmdXGroup(x *command.Exec) {
	sub := command.Subcommand(x.W, x.Args, "xgroup", xgroupSubcommands)
	switch sub {
	case "":
		return
	case "help":
		command.WriteHelp(x.W, xgroupHelp)
		return
	}
	key, name := x.Args[2], x.Args[3]
	mkstream := false
	entriesRead := int64(stream.EntriesReadUnknown)
	if sub == "create" || sub == "setid" {
		for i := 5; i < len(x.Args); {
			opt := x.Args[i]
			switch {
			case sub == "create" && isWord(opt, "mkstream"):
				mkstream = true
				i++
			case isWord(opt, "entriesread") && i+1 < len(x.Args):
				n, ok := num.ParseInt(x.Args[i+1])
				if !ok {
					x.W.Error(command.ErrNotInt)
					return
				}
				if n < 0 && n != stream.EntriesReadUnknown {
					x.W.Error("ERR value for ENTRIESREAD must be positive or -1")
					return
				}
				entriesRead = n
				i += 2
			default:
				command.SubcommandSyntaxErr(x.W, x.Args, "xgroup")
				return
			}
		}
	}
	it, s, ok := streamValue(x, key)
	if !ok {
		return
	}
	var g *stream.Group
	if !mkstream {
		if s == nil {
			x.W.Error(errXGroupNeedsKey)
			return
		}
		g = s.Group(name)
		if g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			x.W.Error("NOGROUP No such consumer group '" + string(name) + "' for key name '" + string(key) + "'")
			return
		}
	}
	switch sub {
	case "create":
		if len(x.Args) > 8 {
			command.SubcommandSyntaxErr(x.W, x.Args, "xgroup")
			return
		}
		var id stream.ID
		if string(x.Args[4]) == "$" {
			if s != nil {
				id = s.LastID
			}
		} else if id, ok = parseStrictID(x.Args[4], 0); !ok {
			x.W.Error(errStreamID)
			return
		}
		switch {
		case s == nil:
			s = stream.New()
			s.CreateGroup(name, id, entriesRead)
			x.DB.Insert(key, shard.ObjectValue(shard.TypeStream, s))
			x.DB.TouchAlways(key) // a new key is a change (the rest of XGROUP is quiet)
		case s.Group(name) != nil:
			x.W.Error("BUSYGROUP Consumer Group name already exists")
			return
		default:
			mutableStream(x.DB, it).CreateGroup(name, id, entriesRead)
		}
		x.DB.Notify(notify.Stream, "xgroup-create", key)
		x.W.SimpleString("OK")
	case "setid":
		if len(x.Args) != 5 && len(x.Args) != 7 {
			command.SubcommandSyntaxErr(x.W, x.Args, "xgroup")
			return
		}
		var id stream.ID
		if string(x.Args[4]) == "$" {
			id = s.LastID
		} else if id, _, ok = stream.ParseID(x.Args[4], 0, false, false); !ok {
			x.W.Error(errStreamID)
			return
		}
		g = mutableStream(x.DB, it).Group(name)
		g.LastID, g.EntriesRead = id, entriesRead
		x.DB.Notify(notify.Stream, "xgroup-setid", key)
		x.W.SimpleString("OK")
	case "destroy":
		if g == nil {
			x.W.Int(0)
			return
		}
		mutableStream(x.DB, it).DestroyGroup(name)
		x.DB.Notify(notify.Stream, "xgroup-destroy", key)
		x.W.Int(1)
	case "createconsumer":
		if g.Consumer(x.Args[4]) != nil {
			x.W.Int(0)
			return
		}
		mutableStream(x.DB, it).Group(name).CreateConsumer(x.Args[4], x.Now())
		x.DB.Notify(notify.Stream, "xgroup-createconsumer", key)
		x.W.Int(1)
	case "delconsumer":
		if g.Consumer(x.Args[4]) == nil {
			x.W.Int(0)
			return
		}
		n, _ := mutableStream(x.DB, it).Group(name).DeleteConsumer(x.Args[4])
		x.DB.Notify(notify.Stream, "xgroup-delconsumer", key)
		x.W.Int(int64(n))
	}
}

// groupOf finds key's stream and group for XACK/XCLAIM/XAUTOCLAIM style
// commands: WRONGTYPE is written (ok=false); a missing key or group gives
// nil s or g.
func groupOf(x *command.Exec, key, group []byte) (it shard.Iterator, s *stream.Stream, g *stream.Group, ok bool) {
	defer x.S.ReadMisses(x.S.ReadMisses(true)) // a read (XACK, XCLAIM ...): a miss is a keymiss, as Redis's
	it, s, ok = streamValue(x, key)
	if !ok || s == nil {
		return it, s, nil, ok
	}
	return it, s, s.Group(group), true
}

func cmdXAck(x *command.Exec) {
	it, _, g, ok := groupOf(x, x.Args[1], x.Args[2])
	if !ok {
		return
	}
	if g == nil {
		x.W.Int(0)
		return
	}
	ids, ok := parseIDList(x, x.Args[3:])
	if !ok {
		return
	}
	acked := 0
	mutated := false
	for _, id := range ids {
		if _, found := g.FindPending(id); !found {
			continue
		}
		if !mutated {
			g, mutated = mutableStream(x.DB, it).Group(x.Args[2]), true
		}
		g.Ack(id)
		acked++
	}
	x.W.Int(int64(acked))
}

func cmdXPending(x *command.Exec) {
	args := x.Args
	summary := len(args) == 3
	if !summary && (len(args) < 6 || len(args) > 9) {
		x.W.Error(command.ErrSyntax)
		return
	}
	var start, end stream.ID
	var count, minIdle int64
	var consumerName []byte
	if !summary {
		at := 3
		if isWord(args[3], "idle") {
			n, ok := num.ParseInt(args[4])
			if !ok {
				x.W.Error(command.ErrNotInt)
				return
			}
			minIdle = n
			if len(args) < 8 {
				x.W.Error(command.ErrSyntax)
				return
			}
			at += 2
		}
		n, ok := num.ParseInt(args[at+2])
		if !ok {
			x.W.Error(command.ErrNotInt)
			return
		}
		count = max(n, 0)
		if start, ok = parseRangeStart(x.W, args[at]); !ok {
			return
		}
		if end, ok = parseRangeEnd(x.W, args[at+1]); !ok {
			return
		}
		if at+3 < len(args) {
			consumerName = args[at+3]
		}
	}
	_, s, g, ok := groupOf(x, args[1], args[2])
	if !ok {
		return
	}
	if s == nil || g == nil {
		x.W.Error(noGroupErr(args[1], args[2]))
		return
	}
	if summary {
		x.W.Array(4)
		x.W.Int(int64(g.PendingLen()))
		if g.PendingLen() == 0 {
			x.W.Null()
			x.W.Null()
			x.W.NullArray()
			return
		}
		writeID(x.W, g.PendingAt(0).ID)
		writeID(x.W, g.PendingAt(g.PendingLen()-1).ID)
		n := 0
		for _, c := range g.Consumers() {
			if len(c.Pending()) > 0 {
				n++
			}
		}
		x.W.Array(n)
		var buf [24]byte
		for _, c := range g.Consumers() {
			if len(c.Pending()) > 0 {
				x.W.Array(2)
				x.W.BulkString(c.Name)
				// Redis 7.0 sends the count as a bulk string here.
				x.W.Bulk(appendInt(buf[:0], int64(len(c.Pending()))))
			}
		}
		return
	}
	var c *stream.Consumer
	if consumerName != nil {
		if c = g.Consumer(consumerName); c == nil {
			x.W.Array(0)
			return
		}
	}
	now := x.Now()
	var out []*stream.Pending
	visit := func(p *stream.Pending) bool {
		if end.Less(p.ID) {
			return false
		}
		if minIdle != 0 && now-p.DeliveryTime < minIdle {
			return true
		}
		out = append(out, p)
		return int64(len(out)) < count
	}
	if count > 0 {
		if c != nil {
			ids := c.Pending()
			for i := searchIDsFrom(ids, start); i < len(ids); i++ {
				j, _ := g.FindPending(ids[i])
				if !visit(g.PendingAt(j)) {
					break
				}
			}
		} else {
			for i := g.SeekPending(start); i < g.PendingLen(); i++ {
				if !visit(g.PendingAt(i)) {
					break
				}
			}
		}
	}
	x.W.Array(len(out))
	for _, p := range out {
		x.W.Array(4)
		writeID(x.W, p.ID)
		x.W.BulkString(p.Owner.Name)
		x.W.Int(max(now-p.DeliveryTime, 0))
		x.W.Int(p.DeliveryCount)
	}
}

// searchIDsFrom is the index of the first of the sorted ids >= id.
func searchIDsFrom(ids []stream.ID, id stream.ID) int {
	lo, hi := 0, len(ids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ids[m].Less(id) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func cmdXClaim(x *command.Exec) {
	args := x.Args
	it, s, g, ok := groupOf(x, args[1], args[2])
	if !ok {
		return
	}
	if s == nil || g == nil {
		x.W.Error(noGroupErr(args[1], args[2]))
		return
	}
	minIdle, ok := num.ParseInt(args[4])
	if !ok {
		x.W.Error("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	j := 5
	for ; j < len(args); j++ {
		if _, ok := parseStrictID(args[j], 0); !ok {
			break
		}
	}
	lastIDArg := j - 1
	now := x.Now()
	retryCount, deliveryTime := int64(-1), int64(-1)
	force, justID := false, false
	var lastID stream.ID
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case isWord(opt, "force"):
			force = true
		case isWord(opt, "justid"):
			justID = true
		case isWord(opt, "idle") && more > 0:
			j++
			n, ok := num.ParseInt(args[j])
			if !ok {
				x.W.Error("ERR Invalid IDLE option argument for XCLAIM")
				return
			}
			deliveryTime = now - n
		case isWord(opt, "time") && more > 0:
			j++
			n, ok := num.ParseInt(args[j])
			if !ok {
				x.W.Error("ERR Invalid TIME option argument for XCLAIM")
				return
			}
			deliveryTime = n
		case isWord(opt, "retrycount") && more > 0:
			j++
			n, ok := num.ParseInt(args[j])
			if !ok {
				x.W.Error("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				return
			}
			retryCount = n
		case isWord(opt, "lastid") && more > 0:
			j++
			id, ok := parseStrictID(args[j], 0)
			if !ok {
				x.W.Error(errStreamID)
				return
			}
			lastID = id
		default:
			x.W.Error("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			return
		}
	}
	s = mutableStream(x.DB, it)
	g = s.Group(args[2])
	if g.LastID.Less(lastID) {
		g.LastID = lastID
	}
	if deliveryTime == -1 || deliveryTime < 0 || deliveryTime > now {
		deliveryTime = now
	}
	var c *stream.Consumer
	var claimed []stream.ID
	for j := 5; j <= lastIDArg; j++ {
		id, _ := parseStrictID(args[j], 0)
		i, found := g.FindPending(id)
		if !s.Exists(id) {
			// The entry is gone: drop it from the PEL.
			if found {
				g.RemovePendingAt(i)
			}
			continue
		}
		if !found && !force {
			continue
		}
		if found && minIdle != 0 && now-g.PendingAt(i).DeliveryTime < minIdle {
			continue
		}
		if c == nil {
			if c = g.Consumer(args[3]); c != nil {
				c.SeenTime = now
			} else {
				c, _ = g.CreateConsumer(args[3], now)
				x.DB.Notify(notify.Stream, "xgroup-createconsumer", args[1])
			}
		}
		if !found {
			i = g.ForcePending(id, c, now)
		}
		g.Claim(i, c, deliveryTime, retryCount, !justID)
		claimed = append(claimed, id)
	}
	x.W.Array(len(claimed))
	var scratch [][]byte
	for _, id := range claimed {
		if justID {
			writeID(x.W, id)
			continue
		}
		e, _ := s.Lookup(id)
		scratch = writeEntry(x.W, e, scratch)
	}
}

func cmdXAutoClaim(x *command.Exec) {
	args := x.Args
	minIdle, ok := num.ParseInt(args[4])
	if !ok {
		x.W.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := parseRangeStart(x.W, args[5])
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case isWord(args[j], "count") && more > 0:
			n, ok := num.ParseInt(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				x.W.Error("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case isWord(args[j], "justid"):
			justID = true
		default:
			x.W.Error(command.ErrSyntax)
			return
		}
	}
	it, s, g, ok := groupOf(x, args[1], args[2])
	if !ok {
		return
	}
	if s == nil || g == nil {
		x.W.Error(noGroupErr(args[1], args[2]))
		return
	}
	s = mutableStream(x.DB, it)
	g = s.Group(args[2])
	now := x.Now()
	attempts := count * 10
	var c *stream.Consumer
	var claimed, deleted []stream.ID
	i := g.SeekPending(start)
	for attempts > 0 && count > 0 && i < g.PendingLen() {
		attempts--
		p := g.PendingAt(i)
		id := p.ID
		if !s.Exists(id) {
			g.RemovePendingAt(i)
			deleted = append(deleted, id)
			count--
			continue
		}
		if minIdle != 0 && now-p.DeliveryTime < minIdle {
			i++
			continue
		}
		if c == nil {
			if c = g.Consumer(args[3]); c != nil {
				c.SeenTime = now
			} else {
				c, _ = g.CreateConsumer(args[3], now)
				x.DB.Notify(notify.Stream, "xgroup-createconsumer", args[1])
			}
		}
		g.Claim(i, c, now, -1, !justID)
		claimed = append(claimed, id)
		count--
		i++
	}
	var next stream.ID
	if i < g.PendingLen() {
		next = g.PendingAt(i).ID
	}
	x.W.Array(3)
	writeID(x.W, next)
	x.W.Array(len(claimed))
	var scratch [][]byte
	for _, id := range claimed {
		if justID {
			writeID(x.W, id)
			continue
		}
		e, _ := s.Lookup(id)
		scratch = writeEntry(x.W, e, scratch)
	}
	x.W.Array(len(deleted))
	for _, id := range deleted {
		writeID(x.W, id)
	}
}

// --- XINFO ------------------------------------------------------------------

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

// xinfoSubcommands describe XINFO's subcommands: arity, flags, key specs, ACL categories.
var xinfoSubcommands = []command.SubcommandInfo{
	{Name: "consumers", Tips: "nondeterministic_output", Arity: 4, Flags: command.FlagReadonly, KeySpecs: "RO access @2", ACLCats: "read stream"},
	{Name: "groups", Arity: 3, Flags: command.FlagReadonly, KeySpecs: "RO access @2", ACLCats: "read stream"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale, ACLCats: "stream"},
	{Name: "stream", Arity: -3, Flags: command.FlagReadonly, KeySpecs: "RO access @2", ACLCats: "read stream"},
}

func cmdXInfo(x *command.Exec) {
	sub := command.Subcommand(x.W, x.Args, "xinfo", xinfoSubcommands)
	switch sub {
	case "":
		return
	case "help":
		command.WriteHelp(x.W, xinfoHelp)
		return
	}
	key := x.Args[2]
	_, s, ok := streamValue(x, key)
	if !ok {
		return
	}
	if s == nil {
		x.W.Error(command.ErrNoSuchKey)
		return
	}
	w := x.W
	switch sub {
	case "consumers":
		g := s.Group(x.Args[3])
		if g == nil {
			w.Error("NOGROUP No such consumer group '" + string(x.Args[3]) + "' for key name '" + string(key) + "'")
			return
		}
		now := x.Now()
		w.Array(len(g.Consumers()))
		for _, c := range g.Consumers() {
			w.Map(3)
			w.BulkString("name")
			w.BulkString(c.Name)
			w.BulkString("pending")
			w.Int(int64(len(c.Pending())))
			w.BulkString("idle")
			w.Int(max(now-c.SeenTime, 0))
		}
	case "groups":
		w.Array(len(s.Groups()))
		for _, g := range s.Groups() {
			w.Map(6)
			w.BulkString("name")
			w.BulkString(g.Name)
			w.BulkString("consumers")
			w.Int(int64(len(g.Consumers())))
			w.BulkString("pending")
			w.Int(int64(g.PendingLen()))
			w.BulkString("last-delivered-id")
			writeID(w, g.LastID)
			writeGroupCounters(w, s, g)
		}
	case "stream":
		xinfoStream(x, s)
	}
}

// writeGroupCounters writes a group's entries-read and lag fields.
func writeGroupCounters(w *resp.Writer, s *stream.Stream, g *stream.Group) {
	w.BulkString("entries-read")
	if g.EntriesRead != stream.EntriesReadUnknown {
		w.Int(g.EntriesRead)
	} else {
		w.Null()
	}
	w.BulkString("lag")
	if lag, ok := s.Lag(g); ok {
		w.Int(lag)
	} else {
		w.Null()
	}
}

// writeEdge writes the first (or last) entry, null when empty.
func writeEdge(w *resp.Writer, s *stream.Stream, last bool) {
	it := s.Range(stream.MinID, stream.MaxID, last)
	if e, ok := it.Next(); ok {
		writeEntry(w, e, nil)
	} else {
		w.Null()
	}
}

func xinfoStream(x *command.Exec, s *stream.Stream) {
	args := x.Args[2:]
	full, count := false, int64(10)
	if len(args) > 1 {
		if (len(args) != 2 && len(args) != 4) || !isWord(args[1], "full") {
			command.SubcommandSyntaxErr(x.W, x.Args, "xinfo")
			return
		}
		full = true
		if len(args) == 4 {
			if !isWord(args[2], "count") {
				command.SubcommandSyntaxErr(x.W, x.Args, "xinfo")
				return
			}
			n, ok := num.ParseInt(args[3])
			if !ok {
				x.W.Error(command.ErrNotInt)
				return
			}
			if n < 0 {
				n = 10
			}
			count = n
		}
	}
	w := x.W
	if full {
		w.Map(9)
	} else {
		w.Map(10)
	}
	w.BulkString("length")
	w.Int(int64(s.Len()))
	// Our nodes play the part of Redis's rax keys; the rax's inner node
	// count has no counterpart, so it is estimated the same way.
	w.BulkString("radix-tree-keys")
	w.Int(int64(s.Nodes()))
	w.BulkString("radix-tree-nodes")
	w.Int(int64(s.Nodes()) + 1)
	w.BulkString("last-generated-id")
	writeID(w, s.LastID)
	w.BulkString("max-deleted-entry-id")
	writeID(w, s.MaxDeletedID)
	w.BulkString("entries-added")
	w.Int(s.EntriesAdded)
	w.BulkString("recorded-first-entry-id")
	writeID(w, s.FirstID())
	if !full {
		w.BulkString("groups")
		w.Int(int64(len(s.Groups())))
		w.BulkString("first-entry")
		writeEdge(w, s, false)
		w.BulkString("last-entry")
		writeEdge(w, s, true)
		return
	}
	w.BulkString("entries")
	writeRange(w, s, stream.MinID, stream.MaxID, false, count)
	w.BulkString("groups")
	w.Array(len(s.Groups()))
	limit := func(n int) int {
		if count == 0 || int64(n) < count {
			return n
		}
		return int(count)
	}
	for _, g := range s.Groups() {
		w.Map(7)
		w.BulkString("name")
		w.BulkString(g.Name)
		w.BulkString("last-delivered-id")
		writeID(w, g.LastID)
		writeGroupCounters(w, s, g)
		w.BulkString("pel-count")
		w.Int(int64(g.PendingLen()))
		w.BulkString("pending")
		n := limit(g.PendingLen())
		w.Array(n)
		for i := 0; i < n; i++ {
			p := g.PendingAt(i)
			w.Array(4)
			writeID(w, p.ID)
			w.BulkString(p.Owner.Name)
			w.Int(p.DeliveryTime)
			w.Int(p.DeliveryCount)
		}
		w.BulkString("consumers")
		w.Array(len(g.Consumers()))
		for _, c := range g.Consumers() {
			w.Map(4)
			w.BulkString("name")
			w.BulkString(c.Name)
			w.BulkString("seen-time")
			w.Int(c.SeenTime)
			w.BulkString("pel-count")
			w.Int(int64(len(c.Pending())))
			w.BulkString("pending")
			ids := c.Pending()
			n := limit(len(ids))
			w.Array(n)
			for _, id := range ids[:n] {
				j, _ := g.FindPending(id)
				p := g.PendingAt(j)
				w.Array(3)
				writeID(w, id)
				w.Int(p.DeliveryTime)
				w.Int(p.DeliveryCount)
			}
		}
	}
}

// --- XREAD / XREADGROUP -----------------------------------------------------

// xreadStreamsArg is the index of the first key after STREAMS, walking the
// options as XREAD's parser does (so a group named "streams" is no
// keyword); 0 when there is no STREAMS option.
// XReadHasBlock reports whether XREAD or XREADGROUP args give BLOCK.
func XReadHasBlock(args [][]byte) bool {
	end := xreadStreamsArg(args)
	for i := 1; i < end && i < len(args)-1; i++ {
		if isWord(args[i], "block") {
			return true
		}
	}
	return false
}

func xreadStreamsArg(args [][]byte) int {
	for i := 1; i < len(args); i++ {
		more := len(args) - 1 - i
		o := args[i]
		switch {
		case (isWord(o, "block") || isWord(o, "count")) && more > 0:
			i++
		case isWord(o, "streams") && more > 0:
			return i + 1
		case isWord(o, "group") && more >= 2:
			i += 2
		case isWord(o, "noack"):
		default:
			return 0
		}
	}
	return 0
}

// xreadKeyPositions: the keys are the first half of the arguments after
// STREAMS; none when the layout is malformed (the handler reports it).
func xreadKeyPositions(dst []int, args [][]byte) []int {
	at := xreadStreamsArg(args)
	if at == 0 || (len(args)-at)%2 != 0 {
		return dst
	}
	for i := at; i < at+(len(args)-at)/2; i++ {
		dst = append(dst, i)
	}
	return dst
}

// xreadRequest is a parsed XREAD or XREADGROUP. It is what the blocking
// machinery keeps for a blocked client: ids are resolved at call time ($
// becomes the stream's last ID then), and ">" stays stream.MaxID so that
// it means the group's last delivered ID whenever the client is served.
type xreadRequest struct {
	group, consumer []byte // XREADGROUP only
	count           int64  // 0 = no limit
	block           int64  // BLOCK timeout in ms; -1 = no BLOCK, 0 = forever
	noack           bool
	keys            int // index of the first key in the arguments
	n               int // number of streams
	ids             []stream.ID
}

// parseXRead parses the options, up to the resolution of the IDs (which
// needs the streams).
func parseXRead(args [][]byte, readGroup bool) (*xreadRequest, string) {
	r := &xreadRequest{block: -1}
	for i := 1; i < len(args); i++ {
		more := len(args) - 1 - i
		o := args[i]
		switch {
		case isWord(o, "block") && more > 0:
			i++
			n, ok := num.ParseInt(args[i])
			if !ok {
				return nil, "ERR timeout is not an integer or out of range"
			}
			if n < 0 {
				return nil, "ERR timeout is negative"
			}
			r.block = n
		case isWord(o, "count") && more > 0:
			i++
			n, ok := num.ParseInt(args[i])
			if !ok {
				return nil, command.ErrNotInt
			}
			r.count = max(n, 0)
		case isWord(o, "streams") && more > 0:
			r.keys = i + 1
			if (len(args)-r.keys)%2 != 0 {
				// Redis 7.0 says XREAD and '$' for XREADGROUP too.
				return nil, "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
			}
			r.n = (len(args) - r.keys) / 2
			i = len(args)
		case isWord(o, "group") && more >= 2:
			if !readGroup {
				return nil, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
			}
			r.group, r.consumer = args[i+1], args[i+2]
			i += 2
		case isWord(o, "noack"):
			if !readGroup {
				return nil, "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
			}
			r.noack = true
		default:
			return nil, command.ErrSyntax
		}
	}
	if r.keys == 0 {
		return nil, command.ErrSyntax
	}
	if readGroup && r.group == nil {
		return nil, "ERR Missing GROUP option for XREADGROUP"
	}
	r.ids = make([]stream.ID, r.n)
	return r, ""
}

// xreadKeyState is what validation needs to know of one stream.
type xreadKeyState struct {
	wrongType, exists, hasGroup bool
	lastID                      stream.ID
}

func xreadState(db *shard.DB, key, group []byte) (st xreadKeyState) {
	_, v := db.FindRead(key) // XREADGROUP's too

	if v == nil {
		return st
	}
	if v.Type != shard.TypeStream {
		st.wrongType = true
		return st
	}
	s := v.Obj().(*stream.Stream)
	st.exists, st.lastID = true, s.LastID
	st.hasGroup = group != nil && s.Group(group) != nil
	return st
}

// resolve checks every stream in argument order, as Redis does (type,
// group, then the ID), and resolves the IDs. It returns an error text.
func (r *xreadRequest) resolve(args [][]byte, states []xreadKeyState) string {
	for i := 0; i < r.n; i++ {
		st, key, arg := &states[i], args[r.keys+i], args[r.keys+r.n+i]
		if st.wrongType {
			return command.ErrWrongType
		}
		if r.group != nil && !st.hasGroup {
			return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(r.group) + "' in XREADGROUP with GROUP option"
		}
		switch string(arg) {
		case "$":
			if r.group != nil {
				return "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
			}
			r.ids[i] = st.lastID
		case ">":
			if r.group == nil {
				return "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
			}
			r.ids[i] = stream.MaxID
		default:
			id, ok := parseStrictID(arg, 0)
			if !ok {
				return errStreamID
			}
			r.ids[i] = id
		}
	}
	return ""
}

// xreadEntry is one entry of a reply; deleted marks a consumer PEL entry
// whose stream entry is gone (sent as the ID and a null).
type xreadEntry struct {
	id      stream.ID
	fields  [][]byte
	deleted bool
}

// xreadResult is what one stream contributes to the reply.
type xreadResult struct {
	served  bool
	entries []xreadEntry
}

// xreadReady reports whether xreadServe would serve stream i of r now,
// changing nothing: the check a blocked client's shard.Blocker Serve makes
// before it claims the client.
func xreadReady(db *shard.DB, args [][]byte, r *xreadRequest, i int) bool {
	_, v := db.Find(args[r.keys+i])
	if v == nil || v.Type != shard.TypeStream {
		return false
	}
	_, ok := readFrom(v.Obj().(*stream.Stream), r, i)
	return ok
}

// readFrom is where stream i of r is served from (entries after the
// returned ID), ok=false when there is nothing to serve: XREAD needs
// entries after its ID; XREADGROUP serves history (an explicit ID) always,
// and ">" when the group is behind the stream's last entry.
func readFrom(s *stream.Stream, r *xreadRequest, i int) (after stream.ID, ok bool) {
	after = r.ids[i]
	if r.group == nil {
		return after, s.Len() > 0 && after.Less(s.LastEntryID())
	}
	g := s.Group(r.group)
	switch {
	case g == nil:
		return after, false
	case after != stream.MaxID:
		return after, true
	case s.Len() > 0 && g.LastID.Less(s.LastEntryID()):
		return g.LastID, true
	}
	return after, false
}

// xreadServe serves stream i of r on its shard into res, as Redis serves
// a client synchronously (or a woken blocked client): XREAD returns the
// entries after the resolved ID; XREADGROUP returns the consumer's history
// for an explicit ID or new entries for ">", creating the consumer and
// updating the PELs (Redis 7.0 creates or touches the consumer only when
// it serves). With copyOut the field bytes are copied (the reply is
// written on another goroutine). This is the entry point for the blocking
// machinery, after xreadReady.
func xreadServe(db *shard.DB, args [][]byte, r *xreadRequest, i int, now int64, copyOut bool, res *xreadResult) {
	if r.group != nil {
		// A group's delivery state is no key change (Redis 7.0).
		db.Shard().Quiet(true)
		defer db.Shard().Quiet(false)
	}
	it, v := db.Find(args[r.keys+i])
	if v == nil || v.Type != shard.TypeStream {
		return
	}
	s := v.Obj().(*stream.Stream)
	gt, ok := readFrom(s, r, i)
	if !ok {
		return
	}
	res.served = true
	add := func(e stream.Entry) {
		f := e.Fields(nil)
		if copyOut {
			for k := range f {
				f[k] = bytes.Clone(f[k])
			}
		}
		res.entries = append(res.entries, xreadEntry{id: e.ID, fields: f})
	}
	start, _ := gt.Next()
	if r.group == nil {
		iter := s.Range(start, stream.MaxID, false)
		for r.count == 0 || int64(len(res.entries)) < r.count {
			e, ok := iter.Next()
			if !ok {
				break
			}
			add(e)
		}
		return
	}
	history := r.ids[i] != stream.MaxID
	s = mutableStream(db, it)
	g := s.Group(r.group)
	c := g.Consumer(r.consumer)
	if c == nil {
		c, _ = g.CreateConsumer(r.consumer, now)
		db.Notify(notify.Stream, "xgroup-createconsumer", args[r.keys+i])
	}
	c.SeenTime = now
	if history {
		ids := c.Pending()
		for k := searchIDsFrom(ids, start); k < len(ids); k++ {
			if r.count != 0 && int64(len(res.entries)) >= r.count {
				break
			}
			e, ok := s.Lookup(ids[k])
			if !ok {
				res.entries = append(res.entries, xreadEntry{id: ids[k], deleted: true})
				continue
			}
			add(e)
			j, _ := g.FindPending(ids[k])
			p := g.PendingAt(j)
			p.DeliveryTime = now
			p.DeliveryCount++
		}
		return
	}
	iter := s.Range(start, stream.MaxID, false)
	for r.count == 0 || int64(len(res.entries)) < r.count {
		e, ok := iter.Next()
		if !ok {
			break
		}
		s.Advance(g, e.ID)
		add(e)
		if !r.noack {
			g.Deliver(e.ID, c, now)
		}
	}
}

// writeXRead writes the reply for the served streams; false when none was
// served (nothing written).
func writeXRead(w *resp.Writer, args [][]byte, r *xreadRequest, results []xreadResult) bool {
	n := 0
	for i := range results {
		if results[i].served {
			n++
		}
	}
	if n == 0 {
		return false
	}
	if w.Proto == 3 {
		w.Map(n)
	} else {
		w.Array(n)
	}
	for i := range results {
		res := &results[i]
		if !res.served {
			continue
		}
		if w.Proto != 3 {
			w.Array(2)
		}
		w.Bulk(args[r.keys+i])
		w.Array(len(res.entries))
		for _, e := range res.entries {
			w.Array(2)
			writeID(w, e.id)
			if e.deleted {
				w.NullArray()
				continue
			}
			w.Array(len(e.fields))
			for _, f := range e.fields {
				w.Bulk(f)
			}
		}
	}
	return true
}

// xreadNoData answers a read that found nothing to serve. With BLOCK the
// client would wait for streamAppended on one of its keys (serving it with
// xreadServe); until the blocking machinery exists, every timeout expires
// at once, so both cases reply with a null array.
func xreadNoData(w *resp.Writer, r *xreadRequest) {
	w.NullArray()
}

func xreadOne(x *command.Exec, readGroup bool) {
	r, e := parseXRead(x.Args, readGroup)
	if e != "" {
		x.W.Error(e)
		return
	}
	states := make([]xreadKeyState, r.n)
	for i := range states {
		states[i] = xreadState(x.DB, x.Args[r.keys+i], r.group)
	}
	if e := r.resolve(x.Args, states); e != "" {
		x.W.Error(e)
		return
	}
	results := make([]xreadResult, r.n)
	now := x.Now()
	for i := range results {
		xreadServe(x.DB, x.Args, r, i, now, false, &results[i])
	}
	if !writeXRead(x.W, x.Args, r, results) {
		xreadNoData(x.W, r)
	}
}

// xreadMulti reads streams on several shards: with every key locked
// (exclusively for XREADGROUP, which changes group state), it gathers each
// stream's state, validates in argument order, then serves each stream on
// its shard and writes the reply here.
func xreadMulti(x *command.Coord, readGroup bool) {
	r, e := parseXRead(x.Args, readGroup)
	if e != "" {
		x.W.Error(e)
		return
	}
	if r.block >= 0 && !x.InTx {
		xreadBlock(x, r)
		return
	}
	pos := xreadKeyPositions(nil, x.Args)
	t, parts := x.LockSplit(pos, readGroup)
	states := make([]xreadKeyState, r.n)
	t.RunAll(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		for _, p := range parts[s.ID] {
			states[p-r.keys] = xreadState(db, x.Args[p], r.group)
		}
	})
	if e := r.resolve(x.Args, states); e != "" {
		t.Finish(nil)
		x.W.Error(e)
		return
	}
	results := make([]xreadResult, r.n)
	t.Finish(func(s *shard.Shard) {
		db := s.DBs[x.DB]
		now := s.Now()
		for _, p := range parts[s.ID] {
			xreadServe(db, x.Args, r, p-r.keys, now, true, &results[p-r.keys])
		}
	})
	if !writeXRead(x.W, x.Args, r, results) {
		xreadNoData(x.W, r)
	}
}
