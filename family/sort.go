package family

import (
	"github.com/dfly/dfly/command"

	"bytes"
	"math"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dfly/dfly/notify"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
	"github.com/dfly/dfly/types/hash"
	"github.com/dfly/dfly/types/list"
	"github.com/dfly/dfly/types/num"
	"github.com/dfly/dfly/types/set"
	"github.com/dfly/dfly/types/zset"
)

// SORT and SORT_RO, with Redis 7.0's semantics.
//
// Routing. BY and GET patterns name keys that are known only once the
// elements have been read, and those keys may live on any shard, so the
// dispatcher cannot pick one shard from the arguments: SORT has only a Multi
// handler. It works in at most three locked steps:
//
//  1. The sorted key (shared) and the STORE destination (exclusive) are
//     locked and the elements are read on the key's shard. Pattern keys that
//     live on that shard and that no transaction holds are read in the same
//     step; when that resolves every pattern (no patterns, patterns whose
//     keys share the sorted key's hash tag, or a single shard), the sort and
//     the STORE complete under these locks: the command is atomic, as in
//     Redis.
//  2. Otherwise the first step's locks are released and the remaining
//     pattern keys are read under shared locks of a second transaction: BY
//     keys first, then (after sorting) the GET keys of the LIMIT window.
//  3. STORE then writes its destination under a third transaction.
//
// So a SORT whose patterns reach other shards reads the sorted key, the BY
// keys and the GET keys each consistently, but not as one snapshot: a write
// between the steps may be seen by a later step and not by an earlier one.
// Redis Cluster and Dragonfly refuse such patterns instead. Inside EXEC the
// transaction already holds the sorted key and the destination; pattern
// keys on other shards are then read without locks of their own, since
// taking locks inside a transaction that holds some could deadlock.
//
// ACL. The keys BY and GET patterns reach are named by no argument, so no
// per-key check can judge them: as in Redis 7.0, a user who may not read
// every key is refused the options themselves (parseSort, readsAnyKey), in
// scripts and EXEC too.
//
// Tiered storage: an offloaded pattern value is read asynchronously
// (patternRef.resolve) while the coordinator waits, holding the step's
// locks; the key's shard then runs another step that goes on from it. The
// read returns the bytes the value had when it was issued, so the result
// is the one reading it in place would have given. SORT runs on a shard's
// goroutine, which cannot wait, only inside a script confined to the
// shard; with tiering a script whose text names SORT runs on a
// coordinator instead (evalCoordinate), so only one that makes the name at
// run time gets here (see resolve).
//
// Differences from Redis 7.0: sorting a listpack-encoded sorted set does not
// convert it to a skiplist (OBJECT ENCODING is left alone); ties under ALPHA
// BY keep the stored order (Redis leaves them to qsort: glibc's merge sort
// does the same for lists, its partial quicksort under LIMIT may not); and
// BY nosort of a set inside a Lua script is not forced to ALPHA (a Coord
// cannot tell a script from EXEC), so it keeps the set's own order.

func init() { command.Register("generic", sortCommands) }

const errSortScore = "ERR One or more scores can't be converted into double"

// A BY pattern with a '*' and any GET (even "#") read keys the arguments do
// not name: refused unless the user may read every key (readsAnyKey).
const (
	errSortByDenied  = "ERR BY option of SORT denied due to insufficient ACL permissions."
	errSortGetDenied = "ERR GET option of SORT denied due to insufficient ACL permissions."
)

// errSortDemoted: a SORT inline in a script stopped it to run it again
// on a coordinator (resolve); nobody sees this reply.
const errSortDemoted = "ERR SORT: script moved to a coordinator"

func sortCommands() []*command.Command {
	return []*command.Command{
		{Name: "sort", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM, KeySpecs: "RO access @1; RO access ?; OW update ?", ACLCats: "-keyspace set sortedset list dangerous", KeyPositions: sortKeys,
			Multi: func(x *command.Coord) { sortCommand(x, false) }},
		{Name: "sort_ro", Arity: -2, Flags: command.FlagReadonly, KeySpecs: "RO access @1; RO access ?", ACLCats: "-keyspace set sortedset list dangerous", FirstKey: 1, LastKey: 1, Step: 1,
			Multi: func(x *command.Coord) { sortCommand(x, true) }},
	}
}

// sortKeys is the sorted key and the last STORE destination, as Redis's
// sortGetKeys finds them (skipping the arguments of LIMIT, GET and BY).
func sortKeys(dst []int, args [][]byte) []int {
	if len(args) < 2 {
		return dst
	}
	dst = append(dst, 1)
	store := -1
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "limit":
			i += 2
		case "get", "by":
			i++
		case "store":
			if i+1 < len(args) {
				store = i + 1
			}
		}
	}
	if store >= 0 {
		dst = append(dst, store)
	}
	return dst
}

// sortOpts are SORT's parsed arguments.
type sortOpts struct {
	by       []byte // BY pattern with a '*'; nil: sort by the elements
	dontSort bool   // BY pattern without '*': keep the stored order
	gets     [][]byte
	offset   int64
	count    int64 // -1: no LIMIT
	desc     bool
	alpha    bool
	store    []byte // nil: reply with the result
}

// parseSort reads SORT's options in order, the first bad one answering.
// readsAnyKey: the user may read every key; otherwise BY and GET patterns
// are refused where they stand (after a syntax error before them).
func parseSort(args [][]byte, readonly, readsAnyKey bool) (sortOpts, string) {
	o := sortOpts{count: -1}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "asc":
			o.desc = false
		case opt == "desc":
			o.desc = true
		case opt == "alpha":
			o.alpha = true
		case opt == "limit" && left >= 2:
			var ok bool
			if o.offset, ok = num.ParseInt(args[j+1]); !ok {
				return o, command.ErrNotInt
			}
			if o.count, ok = num.ParseInt(args[j+2]); !ok {
				return o, command.ErrNotInt
			}
			j += 2
		case opt == "store" && left >= 1 && !readonly:
			o.store = args[j+1]
			j++
		case opt == "by" && left >= 1:
			o.by = args[j+1]
			// A pattern without '*' names no keys: nothing to sort by.
			o.dontSort = bytes.IndexByte(cString(o.by), '*') < 0
			if !o.dontSort && !readsAnyKey {
				return o, errSortByDenied
			}
			j++
		case opt == "get" && left >= 1:
			if !readsAnyKey {
				return o, errSortGetDenied
			}
			o.gets = append(o.gets, args[j+1])
			j++
		default:
			return o, command.ErrSyntax
		}
	}
	if o.dontSort {
		o.by = nil
	}
	return o, ""
}

// cString is b up to its first NUL: Redis reads patterns and numbers with C
// string functions.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// patternRef is the key a BY or GET pattern forms for one element, and what
// was found there.
type patternRef struct {
	key, field []byte // field: the hash field after "->"; nil for a string
	val        []byte // nil: no such key, wrong type or missing field
	done       bool
}

// expand substitutes elem for the first '*' of pat, splitting off a
// "->field" suffix, as Redis's lookupKeyByPattern does. ok is false for a
// pattern without '*', which finds nothing.
func expand(pat, elem []byte) (key, field []byte, ok bool) {
	c := cString(pat)
	star := bytes.IndexByte(c, '*')
	if star < 0 {
		return nil, nil, false
	}
	post := pat[star+1:]
	if a := bytes.Index(c[star+1:], []byte("->")); a >= 0 && star+1+a+2 < len(c) {
		field = pat[star+1+a+2:]
		post = pat[star+1 : star+1+a]
	}
	key = make([]byte, 0, star+len(elem)+len(post))
	key = append(append(append(key, pat[:star]...), elem...), post...)
	return key, field, true
}

// isHashSign reports a GET pattern of "#", which stands for the element.
func isHashSign(pat []byte) bool {
	c := cString(pat)
	return len(c) == 1 && c[0] == '#'
}

// resolve reads ref's key in db. The value is copied: it leaves the shard.
// With tiering and r not nil, an offloaded string is read asynchronously
// (shard.Tier.Read: the bytes it has now, whatever happens to it later)
// and resolve reports true; ref.val is set when r.wg is done, which the
// coordinator waits for before it uses the value. A SORT run inline on a
// shard goroutine (inside a script confined to a shard, whose text does
// not name SORT: see evalCoordinate) cannot wait for a read: it stops the
// script, which runs again on a coordinator (r.inline, script.Run.Demote),
// or, when the script has written already (or r is nil: the script runs
// inside EXEC), Find loads the value, blocking: the one synchronous path
// left, once per script (its later runs take a coordinator).
func (ref *patternRef) resolve(s *shard.Shard, db *shard.DB, r *sortReads) (async bool) {
	ref.done = true
	defer s.ReadMisses(s.ReadMisses(true)) // a miss is a keymiss, as Redis's lookupKeyRead
	var v *shard.Value
	if r != nil {
		_, v = db.FindMeta(ref.key)
		if v != nil && v.IsExternal() && r.inline {
			if r.demoted.Load() || r.demote() {
				r.demoted.Store(true) // the result is not used
				return false
			}
			_, v = db.Find(ref.key)
			if v != nil && v.IsExternal() {
				r.failed.Store(true) // its load failed; inline, nothing is read asynchronously
				return false
			}
		}
	} else {
		_, v = db.Find(ref.key)
	}
	if v == nil {
		return false
	}
	if r != nil && v.IsExternal() {
		if ref.field != nil || v.Type != shard.TypeString {
			return false
		}
		r.wg.Add(1)
		s.Tier().Read(v, func(data []byte, err error) {
			if err != nil {
				r.failed.Store(true)
			} else {
				ref.val = append([]byte{}, data...)
			}
			r.wg.Done()
		})
		return true
	}
	if ref.field != nil {
		if v.Type != shard.TypeHash {
			return
		}
		if f, ok := v.Obj().(*hash.Hash).Get(ref.field); ok {
			ref.val = append([]byte{}, f...)
		}
		return false
	}
	if v.Type == shard.TypeString {
		ref.val = append([]byte{}, v.Str()...)
	}
	return false
}

// sortReads are a SORT's asynchronous reads of offloaded pattern values:
// callbacks run on the shards, the coordinator waits on wg.
type sortReads struct {
	wg     sync.WaitGroup
	failed atomic.Bool // a read failed: the command fails
	issued int         // reads issued by the key's shard's steps (read between steps)
	// inline: the SORT runs on a shard goroutine, in a script that may
	// still be demoted (demote, the script's script.Run.Demote); demoted:
	// it was, the SORT stops.
	inline  bool
	demote  func() bool
	demoted atomic.Bool
}

type sortItem struct {
	elem  []byte
	score float64
	by    *patternRef // the BY value, when sorting BY a pattern
}

// sortStage is how far a sortJob got.
type sortStage uint8

const (
	stageBy   sortStage = iota // waiting for the BY values
	stageGet                   // sorted; waiting for the GET values
	stageDone                  // rows ready (or a conversion error)
)

// sortJob is one SORT between its steps. It holds copies of everything it
// read, so it can move from the key's shard to the coordinator.
type sortJob struct {
	o          sortOpts
	items      []sortItem
	start, end int // the output window into items; empty when end < start
	stage      sortStage
	byRefs     []patternRef
	getRefs    []patternRef
	rows       [][]byte // the result; nil entries are missing GET values
	convErr    bool
	errText    string
}

// load reads the sorted key's elements on its shard. It sets errText for a
// key of the wrong type.
func (j *sortJob) load(db *shard.DB, key []byte) {
	_, v := db.FindRead(key) // SORT ... STORE's too
	if v != nil && v.Type != shard.TypeList && v.Type != shard.TypeSet && v.Type != shard.TypeZSet {
		j.errText = command.ErrWrongType
		return
	}
	if v != nil && v.Type == shard.TypeZSet {
		// Redis 7.0 converts the sorted set it sorts to a skiplist, for
		// good (SORT_RO and BY nosort too): OBJECT ENCODING shows it. The
		// contents stay, so no hook or version sees a change; a listpack
		// set is small enough that no snapshot writes it in pieces.
		v.Obj().(*zset.Set).ToSkiplist()
	}
	o := &j.o
	if o.dontSort && v != nil && v.Type == shard.TypeSet && o.store != nil {
		// Redis sorts a set anyway when storing it, so the stored list does
		// not depend on the set's internal order.
		o.dontSort, o.alpha = false, true
	}
	n := 0
	if v != nil {
		switch obj := v.Obj().(type) {
		case *list.List:
			n = obj.Len()
		case *set.Set:
			n = obj.Len()
		case *zset.Set:
			n = obj.Len()
		}
	}
	j.start, j.end = sortWindow(n, o.offset, o.count)
	if v == nil {
		return
	}
	add := func(e []byte) { j.items = append(j.items, sortItem{elem: append([]byte{}, e...)}) }
	// Without sorting, a list or sorted set is read only over the window,
	// in the requested direction; the window then starts at 0.
	ranged := o.dontSort && v.Type != shard.TypeSet
	if ranged && j.end >= j.start {
		j.items = make([]sortItem, 0, j.end-j.start+1)
	}
	switch obj := v.Obj().(type) {
	case *list.List:
		if !ranged {
			j.items = make([]sortItem, 0, n)
			obj.Range(0, n-1, func(e []byte) bool { add(e); return true })
		} else if j.end >= j.start {
			if o.desc {
				for it := obj.At(n - 1 - j.start); it.Valid() && len(j.items) < j.end-j.start+1; it.Prev() {
					add(it.Value())
				}
			} else {
				obj.Range(j.start, j.end, func(e []byte) bool { add(e); return true })
			}
			j.start, j.end = 0, j.end-j.start
		}
	case *set.Set:
		j.items = make([]sortItem, 0, n)
		obj.Range(func(e []byte) bool { add(e); return true })
	case *zset.Set:
		if !ranged {
			j.items = make([]sortItem, 0, n)
			obj.Ascend(0, func(m string, _ float64) bool { add([]byte(m)); return true })
			break
		}
		want := j.end - j.start + 1
		visit := func(m string, _ float64) bool { add([]byte(m)); return len(j.items) < want }
		if want > 0 {
			if o.desc {
				obj.Descend(n-1-j.start, visit)
			} else {
				obj.Ascend(j.start, visit)
			}
		}
		j.start, j.end = 0, j.end-j.start
	}
}

// sortWindow clamps LIMIT offset count to n elements exactly as Redis does,
// returning the inclusive window [start, end] (empty when end < start).
func sortWindow(n int, offset, count int64) (start, end int) {
	s := min(max(offset, 0), int64(n))
	c := min(max(count, -1), int64(n))
	e := s + c - 1
	if c < 0 {
		e = int64(n) - 1
	}
	if s >= int64(n) {
		s, e = int64(n)-1, int64(n)-2
	}
	if e >= int64(n) {
		e = int64(n) - 1
	}
	return int(s), int(e)
}

// prepare builds the BY references after load.
func (j *sortJob) prepare() {
	j.stage = stageBy
	if j.o.dontSort || j.o.by == nil {
		return
	}
	j.byRefs = make([]patternRef, len(j.items))
	for i := range j.items {
		ref := &j.byRefs[i]
		var ok bool
		ref.key, ref.field, ok = expand(j.o.by, j.items[i].elem)
		ref.done = !ok
		j.items[i].by = ref
	}
}

// advance takes the job as far as resolve lets it. resolve reads the refs
// it can and reports whether all of them are done.
func (j *sortJob) advance(resolve func([]patternRef) bool) bool {
	if j.stage == stageBy {
		if !resolve(j.byRefs) {
			return false
		}
		j.sort()
		if j.convErr {
			j.stage = stageDone
			return true
		}
		j.prepareGets()
		j.stage = stageGet
	}
	if j.stage == stageGet {
		if !resolve(j.getRefs) {
			return false
		}
		j.buildRows()
		j.stage = stageDone
	}
	return true
}

func (j *sortJob) sort() {
	if j.o.dontSort {
		return
	}
	if !j.o.alpha {
		for i := range j.items {
			it := &j.items[i]
			src := it.elem
			if it.by != nil {
				if it.by.val == nil {
					continue // a missing weight sorts as 0
				}
				src = it.by.val
			}
			f, ok := sortScore(src)
			if !ok {
				j.convErr = true
				return
			}
			it.score = f
		}
	}
	store := j.o.store != nil
	slices.SortStableFunc(j.items, func(a, b sortItem) int {
		var cmp int
		switch {
		case !j.o.alpha:
			switch {
			case a.score > b.score:
				cmp = 1
			case a.score < b.score:
				cmp = -1
			default:
				cmp = bytes.Compare(a.elem, b.elem)
			}
		case j.o.by != nil:
			switch av, bv := a.by.val, b.by.val; {
			case av == nil && bv == nil:
				cmp = 0
			case av == nil:
				cmp = -1
			case bv == nil:
				cmp = 1
			default:
				cmp = collate(av, bv, store)
			}
		default:
			cmp = collate(a.elem, b.elem, store)
		}
		if j.o.desc {
			return -cmp
		}
		return cmp
	})
}

// collate compares like Redis's ALPHA: binary-safe with STORE, else
// strcoll, which in the C locale compares bytes up to the first NUL.
func collate(a, b []byte, binary bool) int {
	if binary {
		return bytes.Compare(a, b)
	}
	return bytes.Compare(cString(a), cString(b))
}

// sortScore parses a weight as Redis's SORT does, with strtod: the text up
// to a NUL, leading spaces allowed, the empty string is 0, and NaN, overflow
// and inexact underflow are errors.
func sortScore(b []byte) (float64, bool) {
	b = cString(b)
	if len(b) == 0 {
		return 0, true
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	f, ok := num.ParseFloat(b[i:])
	if !ok {
		return 0, false
	}
	if f != 0 && math.Abs(f) < 0x1p-1022 && !exactFloat(b[i:], f) {
		return 0, false // glibc sets ERANGE for an inexact subnormal
	}
	return f, true
}

// exactFloat reports whether the decimal or hex text s denotes f exactly.
func exactFloat(s []byte, f float64) bool {
	str := string(s)
	sign := ""
	if str[0] == '-' || str[0] == '+' {
		sign, str = str[:1], str[1:]
	}
	if (strings.HasPrefix(str, "0x") || strings.HasPrefix(str, "0X")) && !strings.ContainsAny(str, "pP") {
		str += "p0" // Go wants the exponent C makes optional
	}
	z, _, err := big.ParseFloat(sign+str, 0, 1<<14, big.ToNearestEven)
	return err == nil && z.Cmp(big.NewFloat(f)) == 0
}

// prepareGets builds the GET references for the rows of the window.
func (j *sortJob) prepareGets() {
	if len(j.o.gets) == 0 || j.end < j.start {
		return
	}
	j.getRefs = make([]patternRef, 0, (j.end-j.start+1)*len(j.o.gets))
	for i := j.start; i <= j.end; i++ {
		for _, pat := range j.o.gets {
			var ref patternRef
			if isHashSign(pat) {
				ref.val, ref.done = j.items[i].elem, true
			} else {
				var ok bool
				ref.key, ref.field, ok = expand(pat, j.items[i].elem)
				ref.done = !ok
			}
			j.getRefs = append(j.getRefs, ref)
		}
	}
}

func (j *sortJob) buildRows() {
	if j.end < j.start {
		return
	}
	if len(j.o.gets) == 0 {
		j.rows = make([][]byte, 0, j.end-j.start+1)
		for i := j.start; i <= j.end; i++ {
			j.rows = append(j.rows, j.items[i].elem)
		}
		return
	}
	j.rows = make([][]byte, len(j.getRefs))
	for i := range j.getRefs {
		j.rows[i] = j.getRefs[i].val
	}
}

// localResolver reads the refs whose keys live on shard s and are not
// locked by any transaction (reading them now is then as good as holding a
// shared lock).
// Values read asynchronously (r) count as not done in this step: the
// caller waits for them and runs another step.
func localResolver(srv command.Server, s *shard.Shard, db *shard.DB, r *sortReads) func([]patternRef) bool {
	var lk [1]shard.KeyLock
	return func(refs []patternRef) bool {
		all := true
		for i := range refs {
			ref := &refs[i]
			if ref.done {
				continue
			}
			lk[0] = shard.KeyLock{DB: db.Index, Key: string(ref.key)}
			if srv.ShardOf(ref.key) != s.ID || !s.Available(lk[:]) {
				all = false
				continue
			}
			if ref.resolve(s, db, r) {
				r.issued++
				all = false
			}
		}
		return all
	}
}

// remoteResolver reads the refs still open under shared locks of a new
// transaction, each shard reading its own keys in parallel.
func remoteResolver(x *command.Coord, r *sortReads) func([]patternRef) bool {
	return func(refs []patternRef) bool {
		parts := make([][]int, x.NumShards())
		t := x.Tx()
		for i := range refs {
			if refs[i].done {
				continue
			}
			sid := x.ShardOf(refs[i].key)
			parts[sid] = append(parts[sid], i)
			t.Add(sid, x.DB, string(refs[i].key), false)
		}
		if len(t.Shards()) == 0 {
			return true
		}
		t.Lock()
		t.Finish(func(s *shard.Shard) {
			db := s.DBs[x.DB]
			for _, i := range parts[s.ID] {
				refs[i].resolve(s, db, r)
			}
		})
		if r != nil {
			// The reads hold what the values were under the locks.
			r.wg.Wait()
		}
		return true
	}
}

func sortCommand(x *command.Coord, readonly bool) {
	o, e := parseSort(x.Args, readonly, x.Run.ReadsAnyKey())
	if e != "" {
		x.W.Error(e)
		return
	}
	key := x.Args[1]
	ks, ds := x.ShardOf(key), -1
	t := x.Tx()
	t.Add(ks, x.DB, string(key), false)
	if o.store != nil {
		ds = x.ShardOf(o.store)
		t.Add(ds, x.DB, string(o.store), true)
	}
	t.Lock()
	j := &sortJob{o: o}
	var r *sortReads
	if async, demote := x.Run.TieredReads(); async {
		r = &sortReads{}
	} else if demote != nil {
		r = &sortReads{inline: true, demote: demote}
	}
	done, loaded := false, false
	for {
		// Offloaded pattern values met in a step are read asynchronously;
		// the step after the wait goes on from them, under the same locks.
		issued := 0
		if r != nil {
			issued = r.issued
		}
		t.Run(ks, func(s *shard.Shard) {
			db := s.DBs[x.DB]
			if !loaded {
				loaded = true
				j.load(db, key)
				if j.errText != "" {
					return
				}
				j.prepare()
			}
			done = j.advance(localResolver(x.Srv(), s, db, r))
		})
		if j.errText != "" || done || r == nil || r.issued == issued {
			break
		}
		r.wg.Wait()
	}
	if r != nil && r.demoted.Load() {
		t.Finish(nil)
		x.W.Error(errSortDemoted) // discarded: the script runs again on a coordinator
		return
	}
	if r != nil && r.failed.Load() {
		t.Finish(nil)
		x.W.Error(command.ErrTierRead)
		return
	}
	if j.errText != "" {
		t.Finish(nil)
		x.W.Error(j.errText)
		return
	}
	if !done {
		// Patterns reach keys this step may not read: finish the step and
		// read them under their own locks (see the comment at the top).
		t.Finish(nil)
		j.advance(remoteResolver(x, r))
		if r != nil && r.failed.Load() {
			x.W.Error(command.ErrTierRead)
			return
		}
		if r != nil && r.demoted.Load() {
			x.W.Error(errSortDemoted)
			return
		}
		if o.store != nil && !j.convErr {
			t = x.Tx()
			t.Add(ds, x.DB, string(o.store), true)
			t.Lock()
		} else {
			t = nil
		}
	}
	sortReply(x, t, ds, j)
}

// sortReply writes the result, storing it first under t's lock on the
// destination's shard ds when STORE was given; it finishes t (nil: already
// finished).
func sortReply(x *command.Coord, t *tx.Tx, ds int, j *sortJob) {
	if j.convErr {
		if t != nil {
			t.Finish(nil)
		}
		x.W.Error(errSortScore)
		return
	}
	if j.o.store == nil {
		if t != nil {
			t.Finish(nil)
		}
		x.W.Array(len(j.rows))
		for _, r := range j.rows {
			if r == nil {
				x.W.Null()
			} else {
				x.W.Bulk(r)
			}
		}
		return
	}
	dst := j.o.store
	if j.o.by != nil || len(j.o.gets) > 0 {
		// Journaled by its effect: the keys BY and GET reach are read
		// outside the lock step, so no snapshot saw them first
		// (shard.Capture), and a replica may not have them yet.
		x.Propagate([]byte("DEL"), dst)
		if len(j.rows) > 0 {
			x.Propagate(append([][]byte{[]byte("RPUSH"), dst}, j.rows...)...)
		}
	}
	t.Run(ds, func(s *shard.Shard) { storeList(s.DBs[x.DB], dst, j.rows) })
	t.Finish(nil)
	x.W.Int(int64(len(j.rows)))
}

// storeList replaces key with a list of rows (a missing GET value stored as
// ""), or deletes key when there are no rows.
func storeList(db *shard.DB, key []byte, rows [][]byte) {
	if len(rows) == 0 {
		if it, _ := db.FindMeta(key); it.Valid() { // an offloaded value is not read
			db.Delete(it)
			db.Notify(notify.Generic, "del", key)
		}
		return
	}
	l := list.New()
	for _, r := range rows {
		l.PushRight(r)
	}
	db.Set(key, shard.ObjectValue(shard.TypeList, l), false)
	db.Notify(notify.List, "sortstore", key)
}
