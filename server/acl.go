package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/resp"
)

// The ACL command, and what ACL does to connections: a denial logged with
// the client's description, the clients of a deleted user closed, EXEC's
// recheck of its queued commands. Users, rules, the permission check, the
// log and the ACL file are package acl's; a connection holds its
// *acl.User (Conn.user) and a command reads its rules with one atomic load.

const errACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

// user is the ACL rules x's command runs with: its connection's user's (a
// script's calls and EXEC's commands run as the caller), or, without a
// connection, every permission.
func (x *Coord) user() *acl.Rules {
	c := x.Conn
	if c == nil {
		return acl.Master.Rules()
	}
	c.info.Lock() // x may run on a shard's goroutine, for a script
	u := c.info.user
	c.info.Unlock()
	if u == nil {
		return acl.Master.Rules()
	}
	return u.Rules()
}

// logDenial adds a denial by c's user to ACL LOG.
func (s *Server) logDenial(c *Conn, reason, context, object string) {
	c.info.Lock() // a script's call logs from a shard's goroutine
	user := c.info.user.Name()
	c.info.Unlock()
	s.logDenialAs(c, user, reason, context, object)
}

// logDenialAs adds a denial to ACL LOG (user: the one named, for a failed
// AUTH).
func (s *Server) logDenialAs(c *Conn, user, reason, context, object string) {
	s.acl.Log(user, reason, context, object, c.describe())
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

// aclSubcommands describe ACL's subcommands: arity, flags, key specs, ACL categories.
var aclSubcommands = []command.SubcommandInfo{
	{Name: "cat", Arity: -2, Flags: command.FlagsLoadingStaleNoScript},
	{Name: "deluser", Arity: -3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "dryrun", Arity: -4, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "genpass", Arity: -2, Flags: command.FlagsLoadingStaleNoScript},
	{Name: "getuser", Arity: 3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale},
	{Name: "list", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "load", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "log", Arity: -2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "save", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "setuser", Arity: -3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "users", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous"},
	{Name: "whoami", Arity: 2, Flags: command.FlagsLoadingStaleNoScript},
}

func cmdACL(c *Conn, a [][]byte, w *resp.Writer) {
	s := c.srv
	users := s.acl
	switch command.Subcommand(w, a, "acl", aclSubcommands) {
	case "":
		return
	case "help":
		command.WriteHelp(w, aclHelp)
	case "whoami":
		w.BulkString(c.user.Name())
	case "users":
		names := users.Names()
		w.Array(len(names))
		for _, n := range names {
			w.BulkString(n)
		}
	case "list":
		names := users.Names()
		w.Array(len(names))
		for _, n := range names {
			if u := users.Lookup(n); u != nil {
				w.BulkString(u.Rules().Describe())
			}
		}
	case "cat":
		aclCat(s, a, w)
	case "setuser":
		if err := users.SetUser(s.table, string(a[2]), a[3:]); err != nil {
			w.Error(err.Error())
			return
		}
		w.SimpleString("OK")
	case "getuser":
		u := users.Lookup(string(a[2]))
		if u == nil {
			w.Null()
			return
		}
		writeACLUser(w, u.Rules())
	case "deluser":
		gone, err := users.Delete(a[2:])
		if err != nil {
			w.Error(err.Error())
			return
		}
		s.closeUsers(c, gone)
		w.Int(int64(len(gone)))
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
		w.BulkString(acl.GeneratePassword(bits))
	case "dryrun":
		aclDryRun(s, a, w)
	case "log":
		aclLog(users, a, w)
	case "load", "save":
		if s.cfg.ACLFile == "" {
			w.Error(errACLFile)
			return
		}
		var err error
		if strings.EqualFold(string(a[1]), "save") {
			err = users.Save(s.cfg.ACLFile)
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

// closeUsers closes the connections authenticated as the users gone (by:
// the client asking, nil at start).
func (s *Server) closeUsers(by *Conn, gone []*acl.User) {
	if len(gone) == 0 {
		return
	}
	for _, o := range s.clientList() {
		o.info.Lock()
		u := o.info.user
		o.info.Unlock()
		for _, g := range gone {
			if u == g {
				o.kill(by)
			}
		}
	}
}

func writeACLUser(w *resp.Writer, r *acl.Rules) {
	w.Map(6)
	w.BulkString("flags")
	flags := r.Flags()
	w.Array(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	w.Array(len(r.Passwords()))
	for _, p := range r.Passwords() {
		w.BulkString(p)
	}
	w.BulkString("commands")
	w.BulkString(r.CommandRules())
	w.BulkString("keys")
	w.BulkString(r.KeyPatterns())
	w.BulkString("channels")
	w.BulkString(r.ChannelPatterns())
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
	names := s.table.InCategory(bit)
	w.Array(len(names))
	for _, n := range names {
		w.BulkString(n)
	}
}

func aclDryRun(s *Server, a [][]byte, w *resp.Writer) {
	u := s.acl.Lookup(string(a[2]))
	if u == nil {
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
	if why := acl.DryRunReply(u.Rules().Check(cmd, args)); why != "" {
		w.BulkString(why)
		return
	}
	w.SimpleString("OK")
}

func aclLog(users *acl.Users, a [][]byte, w *resp.Writer) {
	count := 10
	if len(a) > 3 {
		w.Error(command.WrongArity("acl|log"))
		return
	}
	if len(a) == 3 {
		if strings.EqualFold(string(a[2]), "reset") {
			users.ResetLog()
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
	entries := users.LogEntries(count)
	now := time.Now()
	w.Array(len(entries))
	for _, e := range entries {
		w.Map(7)
		w.BulkString("count")
		w.Int(int64(e.Count))
		w.BulkString("reason")
		w.BulkString(e.Reason)
		w.BulkString("context")
		w.BulkString(e.Context)
		w.BulkString("object")
		w.BulkString(e.Object)
		w.BulkString("username")
		w.BulkString(e.Username)
		w.BulkString("age-seconds")
		// Milliseconds, as Redis keeps them: a sub-millisecond age would
		// print in exponent notation (8.3e-05) where Redis prints 0.
		w.Double(float64(now.Sub(e.Created).Milliseconds()) / 1000)
		w.BulkString("client-info")
		w.BulkString(e.ClientInfo)
	}
}

// LoadACLFile loads --aclfile at start; a missing file is an error, as in
// Redis.
func (s *Server) LoadACLFile() error {
	if s.cfg.ACLFile == "" {
		return nil
	}
	return s.loadACLFile(nil)
}

// loadACLFile replaces every user by the file's, all or nothing; the
// connections of users it removed are closed (by: the client asking).
func (s *Server) loadACLFile(by *Conn) error {
	gone, err := s.acl.Load(s.table, s.cfg.ACLFile)
	if err != nil {
		return err
	}
	s.closeUsers(by, gone)
	return nil
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
	r := c.user.Rules()
	if r.Unrestricted() {
		return
	}
	for i := range m.cmds {
		q := &m.cmds[i]
		reason, object := r.Check(q.cmd, q.args)
		if reason == "" {
			continue
		}
		c.srv.logDenial(c, reason, "multi", object)
		msg := acl.ChangedError(reason)
		q.cmd = &command.Command{Name: q.cmd.Name, Arity: -1, Group: q.cmd.Group,
			Local: viaConn(func(_ *Conn, _ [][]byte, w *resp.Writer) { w.Error(msg) })}
	}
}
