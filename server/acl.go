package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/atomicfile"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/glob"
	"github.com/dfly/dfly/resp"
)

// ACL: users with passwords and permissions (commands and categories,
// key patterns, Pub/Sub channel patterns), AUTH and HELLO AUTH as a user,
// and the ACL command, in Redis 7.0's words.
//
// A user's rules are one immutable aclUser; ACL SETUSER builds a new one
// and publishes it in the user's aclEntry, which connections hold: a
// change applies to connections already authenticated, as in Redis, and a
// command reads its user with one atomic load. The default user starts
// with every permission and no password (requirepass gives it one); while
// it keeps them, the check is that load and one flag.
//
// Users persist in --aclfile, one "user <name> <rules>" line each (ACL
// LIST's lines): loaded at start, by ACL LOAD (all or nothing), written by
// ACL SAVE. Not done: selectors; key permissions judged per key by key
// specs (a command that writes needs W on every key, one that reads R).

const (
	errACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
	aclLogMax  = 128
)

type aclKeyPattern struct {
	pat         string
	read, write bool
}

// aclUser is one version of a user's rules; never changed once published.
type aclUser struct {
	name      string
	enabled   bool
	nopass    bool
	passwords []string // SHA-256, hex
	// Commands: allowed by command, plus first arguments allowed or denied
	// apart from their command ("config|get"); rules is how ACL LIST
	// shows them.
	allowed    map[*command.Command]bool
	allowedSub map[string]bool
	deniedSub  map[string]bool
	rules      []string
	allKeys    bool
	keys       []aclKeyPattern
	allChans   bool
	channels   []string
	// unrestricted: every command, key and channel (the check's fast path).
	unrestricted bool
}

// aclEntry is a user as connections hold it.
type aclEntry struct {
	name    string
	cur     atomic.Pointer[aclUser]
	deleted atomic.Bool
}

type aclLogEntry struct {
	count                   int
	reason, context, object string
	username, clientInfo    string
	created, updated        time.Time
}

type aclState struct {
	mu    sync.Mutex
	users map[string]*aclEntry
	def   *aclEntry
	log   []*aclLogEntry // newest first
}

// masterUser is the user a replica applies its master's stream as: every
// permission, whatever the default user's.
var masterUser = func() *aclEntry {
	e := &aclEntry{name: "default"}
	e.cur.Store(&aclUser{name: "default", enabled: true, nopass: true, allKeys: true, allChans: true, unrestricted: true})
	return e
}()

func newACL(t *command.Table, requirepass string) *aclState {
	a := &aclState{users: map[string]*aclEntry{}}
	u := &aclUser{name: "default", enabled: true, nopass: true, allKeys: true, allChans: true}
	u.setAll(t, true)
	a.def = &aclEntry{name: "default"}
	a.def.cur.Store(u.finish())
	a.users["default"] = a.def
	if requirepass != "" {
		a.setRequirepass(requirepass)
	}
	return a
}

// setRequirepass makes pass the default user's only password ("" removes
// it: nopass), as CONFIG SET requirepass does.
func (a *aclState) setRequirepass(pass string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.def.cur.Load().clone()
	if pass == "" {
		u.nopass, u.passwords = true, nil
	} else {
		u.nopass, u.passwords = false, []string{hashPassword(pass)}
	}
	a.def.cur.Store(u.finish())
}

// open reports whether a new connection starts authenticated (as the
// default user: enabled without a password).
func (a *aclState) open() bool {
	u := a.def.cur.Load()
	return u.enabled && u.nopass
}

func hashPassword(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:])
}

func (u *aclUser) clone() *aclUser {
	c := *u
	c.passwords = append([]string(nil), u.passwords...)
	c.allowed = make(map[*command.Command]bool, len(u.allowed))
	for k, v := range u.allowed {
		c.allowed[k] = v
	}
	c.allowedSub, c.deniedSub = cloneSet(u.allowedSub), cloneSet(u.deniedSub)
	c.rules = append([]string(nil), u.rules...)
	c.keys = append([]aclKeyPattern(nil), u.keys...)
	c.channels = append([]string(nil), u.channels...)
	return &c
}

func cloneSet(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// finish computes the derived fields and returns u.
func (u *aclUser) finish() *aclUser {
	all := u.enabled && u.allKeys && u.allChans && len(u.deniedSub) == 0
	for _, ok := range u.allowed {
		all = all && ok
	}
	u.unrestricted = all && len(u.rules) == 1 && u.rules[0] == "+@all"
	return u
}

// setAll allows (or denies) every command.
func (u *aclUser) setAll(t *command.Table, on bool) {
	u.allowed = make(map[*command.Command]bool, len(t.ByName))
	for _, c := range t.ByName {
		u.allowed[c] = on
		for _, s := range c.Subs {
			u.allowed[s] = on
		}
	}
	u.allowedSub, u.deniedSub = map[string]bool{}, map[string]bool{}
	if on {
		u.rules = []string{"+@all"}
	} else {
		u.rules = []string{"-@all"}
	}
}

// addRule records a command rule for ACL LIST, replacing an earlier one of
// the same command or category.
func (u *aclUser) addRule(rule string) {
	out := u.rules[:0:0]
	for _, r := range u.rules {
		if r[1:] != rule[1:] {
			out = append(out, r)
		}
	}
	u.rules = append(out, rule)
}

// apply applies one SETUSER rule; the error is the reason Redis gives.
func (u *aclUser) apply(t *command.Table, rule string) string {
	low := strings.ToLower(rule)
	switch low {
	case "on":
		u.enabled = true
		return ""
	case "off":
		u.enabled = false
		return ""
	case "nopass":
		u.nopass, u.passwords = true, nil
		return ""
	case "resetpass":
		u.nopass, u.passwords = false, nil
		return ""
	case "allkeys":
		u.allKeys, u.keys = true, nil
		return ""
	case "resetkeys":
		u.allKeys, u.keys = false, nil
		return ""
	case "allchannels":
		u.allChans, u.channels = true, nil
		return ""
	case "resetchannels":
		u.allChans, u.channels = false, nil
		return ""
	case "allcommands", "+@all":
		u.setAll(t, true)
		return ""
	case "nocommands", "-@all":
		u.setAll(t, false)
		return ""
	case "reset":
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels", "off", "-@all"} {
			u.apply(t, r)
		}
		return ""
	case "clearselectors", "sanitize-payload", "skip-sanitize-payload":
		return ""
	}
	switch {
	case rule[0] == '>':
		h := hashPassword(rule[1:])
		for _, p := range u.passwords {
			if p == h {
				u.nopass = false
				return ""
			}
		}
		u.passwords, u.nopass = append(u.passwords, h), false
		return ""
	case rule[0] == '#':
		h := rule[1:]
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
		}
		for _, p := range u.passwords {
			if p == h {
				return ""
			}
		}
		u.passwords, u.nopass = append(u.passwords, h), false
		return ""
	case rule[0] == '<' || rule[0] == '!':
		h := rule[1:]
		if rule[0] == '<' {
			h = hashPassword(h)
		}
		for i, p := range u.passwords {
			if p == h {
				u.passwords = append(u.passwords[:i:i], u.passwords[i+1:]...)
				return ""
			}
		}
		return "The password you are trying to remove from the user does not exist"
	case rule[0] == '~' || rule[0] == '%':
		p := aclKeyPattern{read: true, write: true}
		if rule[0] == '%' {
			perm, pat, ok := strings.Cut(rule[1:], "~")
			if !ok || perm == "" || strings.Trim(strings.ToUpper(perm), "RW") != "" {
				return "Syntax error"
			}
			up := strings.ToUpper(perm)
			p.read, p.write, p.pat = strings.Contains(up, "R"), strings.Contains(up, "W"), pat
		} else {
			p.pat = rule[1:]
		}
		if u.allKeys {
			return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
		}
		if p.pat == "*" && p.read && p.write {
			u.allKeys, u.keys = true, nil
			return ""
		}
		u.keys = append(u.keys, p)
		return ""
	case rule[0] == '&':
		if u.allChans {
			return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
		}
		if rule[1:] == "*" {
			u.allChans, u.channels = true, nil
			return ""
		}
		u.channels = append(u.channels, rule[1:])
		return ""
	case rule[0] == '(':
		return "Selectors are not supported"
	case rule[0] == '+' || rule[0] == '-':
		return u.applyCommandRule(t, rule[0] == '+', low[1:])
	}
	return "Syntax error"
}

func (u *aclUser) applyCommandRule(t *command.Table, allow bool, target string) string {
	sign := "-"
	if allow {
		sign = "+"
	}
	if cat, ok := strings.CutPrefix(target, "@"); ok {
		bit := command.CategoryBit(cat)
		if bit == 0 {
			return "Unknown command or category name in ACL"
		}
		for _, c := range t.ByName {
			if c.Cats&bit != 0 && c.Subs == nil {
				u.allowed[c] = allow
				u.clearSubs(c.Name)
			}
			for _, s := range c.Subs {
				if s.Cats&bit != 0 {
					u.allowed[s] = allow
				}
			}
		}
		u.addRule(sign + target)
		return ""
	}
	name, sub, hasSub := strings.Cut(target, "|")
	c := t.ByName[name]
	if c == nil || (hasSub && (sub == "" || strings.Contains(sub, "|"))) {
		return "Unknown command or category name in ACL"
	}
	if s := c.Subs[sub]; hasSub && s != nil {
		u.allowed[s] = allow
	} else if hasSub && c.Subs != nil {
		return "Unknown command or category name in ACL"
	} else if hasSub {
		if allow {
			delete(u.deniedSub, target)
			if !u.allowed[c] {
				u.allowedSub[target] = true
			}
		} else {
			delete(u.allowedSub, target)
			if u.allowed[c] {
				u.deniedSub[target] = true
			}
		}
	} else {
		u.allowed[c] = allow
		u.clearSubs(name)
		for _, s := range c.Subs {
			u.allowed[s] = allow
		}
	}
	u.addRule(sign + target)
	return ""
}

// clearSubs drops the first-argument rules of command name (a rule for the
// whole command replaces them).
func (u *aclUser) clearSubs(name string) {
	for k := range u.allowedSub {
		if strings.HasPrefix(k, name+"|") {
			delete(u.allowedSub, k)
		}
	}
	for k := range u.deniedSub {
		if strings.HasPrefix(k, name+"|") {
			delete(u.deniedSub, k)
		}
	}
}

// describe is the user as ACL LIST shows it.
func (u *aclUser) describe() string {
	var b strings.Builder
	b.WriteString("user " + u.name)
	if u.enabled {
		b.WriteString(" on")
	} else {
		b.WriteString(" off")
	}
	if u.nopass {
		b.WriteString(" nopass")
	}
	for _, p := range u.passwords {
		b.WriteString(" #" + p)
	}
	if k := u.keysText(); k != "" {
		b.WriteString(" " + k)
	}
	if u.allChans {
		b.WriteString(" &*")
	} else {
		b.WriteString(" resetchannels")
		for _, c := range u.channels {
			b.WriteString(" &" + c)
		}
	}
	b.WriteString(" " + strings.Join(u.rules, " "))
	return b.String()
}

func (u *aclUser) keysText() string {
	if u.allKeys {
		return "~*"
	}
	parts := make([]string, 0, len(u.keys))
	for _, k := range u.keys {
		switch {
		case k.read && k.write:
			parts = append(parts, "~"+k.pat)
		case k.read:
			parts = append(parts, "%R~"+k.pat)
		default:
			parts = append(parts, "%W~"+k.pat)
		}
	}
	return strings.Join(parts, " ")
}

func (u *aclUser) channelsText() string {
	if u.allChans {
		return "&*"
	}
	parts := make([]string, 0, len(u.channels))
	for _, c := range u.channels {
		parts = append(parts, "&"+c)
	}
	return strings.Join(parts, " ")
}

// Denials, as ACL LOG's reasons name them.
const (
	deniedCommand = "command"
	deniedKey     = "key"
	deniedChannel = "channel"
)

// check reports why u may not run cmd with args ("" when it may), and the
// object denied: the command, key or channel.
func (u *aclUser) check(cmd *command.Command, args [][]byte) (string, string) {
	if cmd.Subs != nil && len(args) > 1 {
		if s := cmd.Subs[strings.ToLower(string(args[1]))]; s != nil {
			if !u.allowed[s] {
				return deniedCommand, s.Name
			}
		}
	}
	if cmd.Subs == nil && !u.commandAllowed(cmd, args) {
		return deniedCommand, cmd.Name
	}
	if !u.allKeys {
		// A command that writes needs W on its keys, one that only reads
		// R (Redis judges each key by its key spec: INCR needs both).
		write := cmd.Flags&command.FlagWrite != 0
		read := !write
		for _, i := range cmd.Keys(nil, args) {
			if !u.keyAllowed(string(args[i]), read, write) {
				return deniedKey, string(args[i])
			}
		}
	}
	if !u.allChans {
		for _, ch := range channelArgs(cmd, args) {
			if !u.channelAllowed(ch, cmd.Name == "psubscribe" || cmd.Name == "punsubscribe") {
				return deniedChannel, ch
			}
		}
	}
	return "", ""
}

func (u *aclUser) commandAllowed(cmd *command.Command, args [][]byte) bool {
	if len(args) > 1 && (len(u.allowedSub) > 0 || len(u.deniedSub) > 0) {
		sub := cmd.Name + "|" + strings.ToLower(string(args[1]))
		if u.deniedSub[sub] {
			return false
		}
		if u.allowedSub[sub] {
			return true
		}
	}
	return u.allowed[cmd]
}

// keyAllowed: a pattern grants reads (R), writes (W) or both; the access
// asked for (read, write) must be granted by the patterns key matches.
func (u *aclUser) keyAllowed(key string, read, write bool) bool {
	canRead, canWrite := !read, !write
	for _, p := range u.keys {
		if glob.MatchString(p.pat, key, false) {
			canRead = canRead || p.read
			canWrite = canWrite || p.write
		}
	}
	return canRead && canWrite
}

// readsAnyKey reports whether u may read every key (allkeys, "~*" or
// "%R~*"). Redis 7.0 lets only such a user name keys by pattern, as
// SORT's BY and GET do: the keys they reach are not among the arguments
// check judges, so a narrower user is refused the option outright.
func (u *aclUser) readsAnyKey() bool {
	if u.allKeys {
		return true
	}
	for _, p := range u.keys {
		if p.read && p.pat == "*" {
			return true
		}
	}
	return false
}

// user is the ACL user x's command runs as: its connection's (a script's
// calls and EXEC's commands run as the caller), or, without a
// connection, one with every permission.
func (x *Coord) user() *aclUser {
	c := x.Conn
	if c == nil {
		return masterUser.cur.Load()
	}
	c.info.Lock() // x may run on a shard's goroutine, for a script
	e := c.info.user
	c.info.Unlock()
	if e == nil {
		return masterUser.cur.Load()
	}
	return e.cur.Load()
}

// channelAllowed: a channel must match a pattern; a pattern subscription
// must be one of the patterns itself.
func (u *aclUser) channelAllowed(ch string, literal bool) bool {
	for _, p := range u.channels {
		if literal && p == ch || !literal && glob.MatchString(p, ch, false) {
			return true
		}
	}
	return false
}

// channelArgs are the channels a Pub/Sub command names.
func channelArgs(cmd *command.Command, args [][]byte) []string {
	var from, to int
	switch cmd.Name {
	case "publish", "spublish":
		from, to = 1, 2
	case "subscribe", "psubscribe", "ssubscribe":
		from, to = 1, len(args)
	default:
		return nil
	}
	out := make([]string, 0, to-from)
	for _, a := range args[from:min(to, len(args))] {
		out = append(out, string(a))
	}
	return out
}

// aclDenied is the error reply for a denial.
func aclDenied(reason, object string) string {
	switch reason {
	case deniedKey:
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case deniedChannel:
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return "NOPERM this user has no permissions to run the '" + object + "' command"
}

// aclScriptDenied is the error a script's call gets.
func aclScriptDenied(reason string) string {
	switch reason {
	case deniedKey:
		return "The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case deniedChannel:
		return "The user executing the script can't publish to the channel mentioned in the command"
	}
	return "The user executing the script can't run this command or subcommand"
}

// logDenial adds a denial by c's user to ACL LOG.
func (s *Server) logDenial(c *Conn, reason, context, object string) {
	c.info.Lock() // a script's call logs from a shard's goroutine
	user := entryName(c.info.user)
	c.info.Unlock()
	s.logDenialAs(c, user, reason, context, object)
}

// logDenialAs adds a denial to ACL LOG (user: the one named, for a failed
// AUTH), merging it with a recent equal one, which moves to the top.
func (s *Server) logDenialAs(c *Conn, user, reason, context, object string) {
	a := s.acl
	now := time.Now()
	info := c.describe()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.log {
		if e.reason == reason && e.context == context && e.object == object && e.username == user &&
			now.Sub(e.updated) < time.Minute {
			e.count++
			e.updated, e.clientInfo = now, info
			copy(a.log[1:i+1], a.log[:i])
			a.log[0] = e
			return
		}
	}
	e := &aclLogEntry{count: 1, reason: reason, context: context, object: object, username: user,
		clientInfo: info, created: now, updated: now}
	a.log = append([]*aclLogEntry{e}, a.log...)
	if len(a.log) > aclLogMax {
		a.log = a.log[:aclLogMax]
	}
}

// authenticate checks a user's password; the entry when it matches and
// the user is enabled.
func (s *Server) authenticate(user, pass []byte) *aclEntry {
	a := s.acl
	a.mu.Lock()
	e := a.users[string(user)]
	a.mu.Unlock()
	if e == nil {
		return nil
	}
	u := e.cur.Load()
	if !u.enabled {
		return nil
	}
	if u.nopass {
		return e
	}
	h := hashPassword(string(pass))
	for _, p := range u.passwords {
		if p == h {
			return e
		}
	}
	return nil
}

var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Prints this help.",
}

var aclArities = map[string]int{"cat": -2, "deluser": -3, "dryrun": -4, "getuser": 3, "genpass": -2,
	"list": 2, "load": 2, "log": -2, "save": 2, "setuser": -3, "users": 2, "whoami": 2, "help": 2}

func cmdACL(c *Conn, a [][]byte, w *resp.Writer) {
	s := c.srv
	acl := s.acl
	switch command.Subcommand(w, a, "acl", aclArities) {
	case "":
		return
	case "help":
		command.WriteHelp(w, aclHelp)
	case "whoami":
		w.BulkString(c.user.name)
	case "users":
		names := acl.names()
		w.Array(len(names))
		for _, n := range names {
			w.BulkString(n)
		}
	case "list":
		names := acl.names()
		w.Array(len(names))
		for _, n := range names {
			if e := acl.lookup(n); e != nil {
				w.BulkString(e.cur.Load().describe())
			}
		}
	case "cat":
		aclCat(s, a, w)
	case "setuser":
		if err := acl.setUser(s.table, string(a[2]), a[3:]); err != "" {
			w.Error(err)
			return
		}
		w.SimpleString("OK")
	case "getuser":
		e := acl.lookup(string(a[2]))
		if e == nil {
			w.Null()
			return
		}
		writeACLUser(w, e.cur.Load())
	case "deluser":
		n, err := s.deleteUsers(c, a[2:])
		if err != "" {
			w.Error(err)
			return
		}
		w.Int(int64(n))
	case "genpass":
		bits := 256
		if len(a) == 3 {
			v, err := strconv.Atoi(string(a[2]))
			if err != nil || v <= 0 || v > 4096 {
				w.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
				return
			}
			bits = v
		}
		b := make([]byte, (bits+7)/8)
		_, _ = rand.Read(b)
		w.BulkString(hex.EncodeToString(b)[:(bits+3)/4])
	case "dryrun":
		aclDryRun(s, a, w)
	case "log":
		aclLog(acl, a, w)
	case "load", "save":
		if s.cfg.ACLFile == "" {
			w.Error(errACLFile)
			return
		}
		var err error
		if strings.EqualFold(string(a[1]), "save") {
			err = s.saveACLFile()
		} else {
			err = s.loadACLFile(c)
		}
		if err != nil {
			w.Error("ERR " + err.Error())
			return
		}
		w.SimpleString("OK")
	}
}

func (a *aclState) names() []string {
	a.mu.Lock()
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	a.mu.Unlock()
	sort.Strings(names)
	return names
}

func (a *aclState) lookup(name string) *aclEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// setUser applies rules to user name (created when new: off, no
// permissions), all or nothing.
func (a *aclState) setUser(t *command.Table, name string, rules [][]byte) string {
	if strings.ContainsAny(name, " \t\r\n") || name == "" {
		return "ERR Usernames can't contain spaces or null characters"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.users[name]
	var u *aclUser
	if e != nil {
		u = e.cur.Load().clone()
	} else {
		u = &aclUser{name: name}
		u.setAll(t, false)
	}
	for _, r := range rules {
		rule := string(r)
		if rule == "" {
			return "ERR Error in ACL SETUSER modifier '': Syntax error"
		}
		if why := u.apply(t, rule); why != "" {
			return "ERR Error in ACL SETUSER modifier '" + rule + "': " + why
		}
	}
	if e == nil {
		e = &aclEntry{name: name}
		a.users[name] = e
	}
	e.cur.Store(u.finish())
	return ""
}

// deleteUsers is ACL DELUSER: the users go, and so do their connections.
func (s *Server) deleteUsers(by *Conn, names [][]byte) (int, string) {
	a := s.acl
	a.mu.Lock()
	var gone []*aclEntry
	for _, n := range names {
		if string(n) == "default" {
			a.mu.Unlock()
			return 0, "ERR The 'default' user cannot be removed"
		}
	}
	for _, n := range names {
		if e := a.users[string(n)]; e != nil {
			delete(a.users, string(n))
			e.deleted.Store(true)
			gone = append(gone, e)
		}
	}
	a.mu.Unlock()
	s.closeUsers(by, gone)
	return len(gone), ""
}

// closeUsers closes the connections authenticated as the users gone.
func (s *Server) closeUsers(by *Conn, gone []*aclEntry) {
	if len(gone) == 0 {
		return
	}
	for _, o := range s.clientList() {
		o.info.Lock()
		u := o.info.user
		o.info.Unlock()
		for _, e := range gone {
			if u == e {
				o.kill(by)
			}
		}
	}
}

func writeACLUser(w *resp.Writer, u *aclUser) {
	w.Map(6)
	w.BulkString("flags")
	flags := []string{"off"}
	if u.enabled {
		flags[0] = "on"
	}
	if u.nopass {
		flags = append(flags, "nopass")
	}
	w.Array(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	w.Array(len(u.passwords))
	for _, p := range u.passwords {
		w.BulkString(p)
	}
	w.BulkString("commands")
	w.BulkString(strings.Join(u.rules, " "))
	w.BulkString("keys")
	w.BulkString(u.keysText())
	w.BulkString("channels")
	w.BulkString(u.channelsText())
	w.BulkString("selectors")
	w.Array(0)
}

func aclCat(s *Server, a [][]byte, w *resp.Writer) {
	if len(a) == 2 {
		w.Array(len(command.ACLCategories))
		for _, c := range command.ACLCategories {
			w.BulkString(c)
		}
		return
	}
	if len(a) > 3 {
		w.Error(command.WrongArity("acl|cat"))
		return
	}
	bit := command.CategoryBit(strings.ToLower(string(a[2])))
	if bit == 0 {
		w.Error("ERR Unknown category '" + string(a[2]) + "'")
		return
	}
	var names []string
	for _, c := range s.table.Sorted() {
		if c.Subs == nil && c.Cats&bit != 0 {
			names = append(names, c.Name)
		}
		for _, sub := range c.Subs {
			if sub.Cats&bit != 0 {
				names = append(names, sub.Name)
			}
		}
	}
	w.Array(len(names))
	for _, n := range names {
		w.BulkString(n)
	}
}

func aclDryRun(s *Server, a [][]byte, w *resp.Writer) {
	e := s.acl.lookup(string(a[2]))
	if e == nil {
		w.Error("ERR User '" + string(a[2]) + "' not found")
		return
	}
	cmd := s.table.Lookup(a[3])
	if cmd == nil {
		w.Error("ERR Command '" + string(a[3]) + "' not found")
		return
	}
	args := a[3:]
	if !cmd.ArityOK(len(args)) {
		w.Error(command.WrongArity(cmd.Name))
		return
	}
	switch reason, object := e.cur.Load().check(cmd, args); reason {
	case "":
		w.SimpleString("OK")
	case deniedKey:
		w.BulkString("This user has no permissions to access the '" + object + "' key")
	case deniedChannel:
		w.BulkString("This user has no permissions to access the '" + object + "' channel")
	default:
		w.BulkString("This user has no permissions to run the '" + object + "' command")
	}
}

func aclLog(acl *aclState, a [][]byte, w *resp.Writer) {
	count := 10
	if len(a) > 3 {
		w.Error(command.WrongArity("acl|log"))
		return
	}
	if len(a) == 3 {
		if strings.EqualFold(string(a[2]), "reset") {
			acl.mu.Lock()
			acl.log = nil
			acl.mu.Unlock()
			w.SimpleString("OK")
			return
		}
		v, err := strconv.Atoi(string(a[2]))
		if err != nil || v < 0 {
			w.Error("ERR value is out of range, must be positive")
			return
		}
		count = v
	}
	acl.mu.Lock()
	entries := make([]aclLogEntry, 0, min(count, len(acl.log)))
	for _, e := range acl.log[:min(count, len(acl.log))] {
		entries = append(entries, *e)
	}
	acl.mu.Unlock()
	now := time.Now()
	w.Array(len(entries))
	for _, e := range entries {
		w.Map(7)
		w.BulkString("count")
		w.Int(int64(e.count))
		w.BulkString("reason")
		w.BulkString(e.reason)
		w.BulkString("context")
		w.BulkString(e.context)
		w.BulkString("object")
		w.BulkString(e.object)
		w.BulkString("username")
		w.BulkString(e.username)
		w.BulkString("age-seconds")
		// Milliseconds, as Redis keeps them: a sub-millisecond age would
		// print in exponent notation (8.3e-05) where Redis prints 0.
		w.Double(float64(now.Sub(e.created).Milliseconds()) / 1000)
		w.BulkString("client-info")
		w.BulkString(e.clientInfo)
	}
}

// entryName is e's user name ("default" for a connection made before
// users: a test's bare Conn).
func entryName(e *aclEntry) string {
	if e == nil {
		return "default"
	}
	return e.name
}

// LoadACLFile loads --aclfile at start; a missing file is an error, as in
// Redis.
func (s *Server) LoadACLFile() error {
	if s.cfg.ACLFile == "" {
		return nil
	}
	return s.loadACLFile(nil)
}

// loadACLFile replaces every user by the file's (the default user, when
// the file has none, by its initial rules), all or nothing; the
// connections of users it removed are closed (by: the client asking).
func (s *Server) loadACLFile(by *Conn) error {
	data, err := os.ReadFile(s.cfg.ACLFile)
	if err != nil {
		return err
	}
	t := s.table
	users := map[string]*aclUser{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		const unchanged = ". WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
		if len(f) < 2 || f[0] != "user" {
			return fmt.Errorf("%s:%d should start with user keyword followed by the username%s", s.cfg.ACLFile, n+1, unchanged)
		}
		if _, dup := users[f[1]]; dup {
			return fmt.Errorf("WARNING: Duplicate user '%s' found on line %d%s", f[1], n+1, unchanged)
		}
		u := &aclUser{name: f[1]}
		u.setAll(t, false)
		for _, rule := range f[2:] {
			if why := u.apply(t, rule); why != "" {
				return fmt.Errorf("%s:%d: %s%s", s.cfg.ACLFile, n+1, why, unchanged)
			}
		}
		users[f[1]] = u.finish()
	}
	if users["default"] == nil {
		u := &aclUser{name: "default", enabled: true, nopass: true, allKeys: true, allChans: true}
		u.setAll(t, true)
		users["default"] = u.finish()
	}
	a := s.acl
	a.mu.Lock()
	var gone []*aclEntry
	for name, e := range a.users {
		if u := users[name]; u != nil {
			e.cur.Store(u)
			delete(users, name)
		} else {
			delete(a.users, name)
			e.deleted.Store(true)
			gone = append(gone, e)
		}
	}
	for name, u := range users {
		e := &aclEntry{name: name}
		e.cur.Store(u)
		a.users[name] = e
	}
	a.mu.Unlock()
	s.closeUsers(by, gone)
	return nil
}

// saveACLFile writes every user as ACL LIST shows it, atomically.
func (s *Server) saveACLFile() error {
	var b strings.Builder
	for _, n := range s.acl.names() {
		if e := s.acl.lookup(n); e != nil {
			b.WriteString(e.cur.Load().describe() + "\n")
		}
	}
	return atomicfile.Write(s.cfg.ACLFile, []byte(b.String()))
}

// recheckQueued is Redis 7's check at EXEC: a queued command the user may
// no longer run (its rules changed after it was queued) answers NOPERM in
// its place, and the others run. Every EXEC path runs a queued connection
// command (Local) where it stands, holding no lock for it.
func (c *Conn) recheckQueued() {
	m := c.multi
	if m == nil {
		return
	}
	u := c.user.cur.Load()
	if u.unrestricted {
		return
	}
	for i := range m.cmds {
		q := &m.cmds[i]
		reason, object := u.check(q.cmd, q.args)
		if reason == "" {
			continue
		}
		c.srv.logDenial(c, reason, "multi", object)
		why := "no permission to execute the command or subcommand"
		switch reason {
		case deniedKey:
			why = "no permission to touch the specified keys"
		case deniedChannel:
			why = "no permission to access one of the channels used as arguments"
		}
		msg := "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
			"This command is no longer allowed for the following reason: " + why
		q.cmd = &command.Command{Name: q.cmd.Name, Arity: -1, Group: q.cmd.Group,
			Local: viaConn(func(_ *Conn, _ [][]byte, w *resp.Writer) { w.Error(msg) })}
	}
}
