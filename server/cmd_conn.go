package server

import (
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/acl"
	"github.com/dfly/dfly/client"
	"github.com/dfly/dfly/cluster"
	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/resp"
	"github.com/dfly/dfly/tracking"
)

func init() { command.Register("connection", connCommands) }

func connCommands() []*command.Command {
	return []*command.Command{
		{Name: "ping", Tips: "request_policy:all_shards response_policy:all_succeeded", Arity: -1, Flags: command.FlagFast, Local: viaConn(cmdPing)},
		{Name: "echo", Arity: 2, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Local: viaConn(func(c *Conn, a [][]byte, w *resp.Writer) { w.Bulk(a[1]) })},
		{Name: "quit", Arity: -1, Flags: command.FlagNoAuth | command.FlagFast | command.FlagLoading | command.FlagStale | command.FlagNoScript, InfoFlags: command.FlagAllowBusy, Local: viaConn(func(c *Conn, a [][]byte, w *resp.Writer) {
			w.SimpleString("OK")
			c.closing = true
		})},
		{Name: "select", Arity: 2, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Local: viaConn(cmdSelect)},
		{Name: "auth", Arity: -2, Flags: command.FlagNoAuth | command.FlagFast | command.FlagNoScript | command.FlagLoading | command.FlagStale, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdAuth)},
		{Name: "hello", Arity: -1, Flags: command.FlagNoAuth | command.FlagFast | command.FlagNoScript | command.FlagLoading | command.FlagStale, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdHello)},
		{Name: "reset", Arity: 1, Flags: command.FlagNoAuth | command.FlagFast | command.FlagNoScript | command.FlagLoading | command.FlagStale, InfoFlags: command.FlagAllowBusy, Local: viaConn(cmdReset)},
		{Name: "monitor", Arity: 1, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, ACLCats: "-connection", Local: viaConn(cmdMonitor)},
		{Name: "client", Arity: -2, Flags: command.FlagAdmin | command.FlagNoScript | command.FlagLoading | command.FlagStale, Subcommands: clientSubcommands, ACLCats: "-connection dangerous", Local: viaConn(cmdClient)},
		{Name: "time", Tips: "nondeterministic_output", Arity: 1, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, ACLCats: "-connection", Local: viaConn(func(c *Conn, a [][]byte, w *resp.Writer) {
			now := time.Now()
			w.Array(2)
			w.BulkString(strconv.FormatInt(now.Unix(), 10))
			w.BulkString(strconv.Itoa(now.Nanosecond() / 1000))
		})},
	}
}

func cmdPing(c *Conn, a [][]byte, w *resp.Writer) {
	if c.proto == 2 && c.subscriptions() > 0 && len(a) <= 2 {
		// Subscribed RESP2 clients get PING as a message-like array.
		w.Array(2)
		w.BulkString("pong")
		if len(a) == 2 {
			w.Bulk(a[1])
		} else {
			w.BulkString("")
		}
		return
	}
	switch len(a) {
	case 1:
		w.SimpleString("PONG")
	case 2:
		w.Bulk(a[1])
	default:
		w.Error(command.WrongArity("ping"))
	}
}

func cmdSelect(c *Conn, a [][]byte, w *resp.Writer) {
	n, err := strconv.Atoi(string(a[1]))
	if err != nil {
		w.Error(command.ErrNotInt)
		return
	}
	if n < 0 || n >= c.srv.cfg.Databases {
		w.Error("ERR DB index is out of range")
		return
	}
	if n != 0 && c.srv.cluster.Mode != cluster.Off {
		w.Error("ERR SELECT is not allowed in cluster mode")
		return
	}
	c.db = n
	c.setInfo(func() { c.info.db = n })
	w.SimpleString("OK")
}

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// checkAuth authenticates the connection as user with pass (ACL users,
// acl.go); false when they do not match or the user is disabled.
func (c *Conn) checkAuth(user, pass []byte) bool {
	u := c.srv.acl.Authenticate(user, pass)
	if u == nil {
		c.srv.logDenialAs(c, string(user), "auth", "toplevel", "AUTH")
		return false
	}
	c.setUser(u)
	c.authed = true
	c.parser.SetAuthenticated(true)
	return true
}

func cmdAuth(c *Conn, a [][]byte, w *resp.Writer) {
	if len(a) > 3 {
		w.Error(command.ErrSyntax)
		return
	}
	user, pw := []byte("default"), a[1]
	if len(a) == 3 {
		user, pw = a[1], a[2]
	}
	if len(a) == 2 && c.srv.acl.Default().Rules().NoPass() {
		w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if !c.checkAuth(user, pw) {
		w.Error(errWrongPass)
		return
	}
	w.SimpleString("OK")
}

func cmdHello(c *Conn, a [][]byte, w *resp.Writer) {
	proto := c.proto
	i := 1
	if len(a) > 1 {
		v, err := strconv.Atoi(string(a[1]))
		if err != nil {
			w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			w.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = v
		i = 2
	}
	var name []byte
	setName := false
	for ; i < len(a); i++ {
		opt := strings.ToLower(string(a[i]))
		switch {
		case opt == "auth" && i+2 < len(a):
			if !c.checkAuth(a[i+1], a[i+2]) {
				w.Error(errWrongPass)
				return
			}
			i += 2
		case opt == "setname" && i+1 < len(a):
			name, setName = a[i+1], true
			i++
		default:
			w.Error("ERR Syntax error in HELLO option '" + string(a[i]) + "'")
			return
		}
	}
	if !c.authed {
		w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if !client.ValidName(name) {
			w.Error(client.ErrName)
			return
		}
		n := string(name)
		c.setInfo(func() { c.info.name = n })
	}
	c.proto = proto
	w.Proto = proto
	c.setInfo(func() { c.info.proto = proto })
	c.protoShared.Store(int32(proto))
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(int64(proto))
	w.BulkString("id")
	w.Int(c.ID)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString(c.srv.roleName())
	w.BulkString("modules")
	w.Array(0)
}

func cmdReset(c *Conn, a [][]byte, w *resp.Writer) {
	c.dropSubscriptions()
	c.stopMonitor()
	c.stopTracking(false)
	c.caching = false
	c.multi = nil
	c.unwatch()
	c.db = 0
	c.proto = 2
	c.protoShared.Store(2)
	w.Proto = 2
	c.setUser(c.srv.acl.Default())
	c.authed = c.srv.acl.Open()
	c.parser.SetAuthenticated(c.authed)
	c.setInfo(func() { c.info.name, c.info.db, c.info.proto = "", 0, 2 })
	w.SimpleString("RESET")
}

// setInfo edits the fields CLIENT LIST reads, under their lock.
// setUser makes e the connection's user; other loops read it from info.
func (c *Conn) setUser(u *acl.User) {
	c.user = u
	c.setInfo(func() { c.info.user = u })
}

func (c *Conn) setInfo(fn func()) {
	c.info.Lock()
	fn()
	c.info.Unlock()
}

// clientSubcommands describe CLIENT's subcommands: arity, flags, key specs, ACL categories.
var clientSubcommands = []command.SubcommandInfo{
	{Name: "caching", Arity: 3, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "getname", Arity: 2, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "getredir", Arity: 2, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "help", Arity: 2, Flags: command.FlagsLoadingStale, ACLCats: "connection"},
	{Name: "id", Arity: 2, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "info", Tips: "nondeterministic_output", Arity: 2, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "kill", Arity: -3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous connection"},
	{Name: "list", Tips: "nondeterministic_output", Arity: -2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous connection"},
	{Name: "no-evict", Arity: 3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous connection"},
	{Name: "no-touch", Arity: 3, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "admin dangerous connection"},
	{Name: "pause", Arity: -3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous connection"},
	{Name: "reply", Arity: 3, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "setinfo", Arity: 4, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "setname", Arity: 3, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "tracking", Arity: -3, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "trackinginfo", Arity: 2, Flags: command.FlagsLoadingStaleNoScript, ACLCats: "connection"},
	{Name: "unblock", Arity: -3, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous connection"},
	{Name: "unpause", Arity: 2, Flags: command.FlagsAdminSub, ACLCats: "admin dangerous connection"},
}

func cmdClient(c *Conn, a [][]byte, w *resp.Writer) {
	sub := strings.ToLower(string(a[1]))
	if s := command.FindSubcommand(clientSubcommands, sub); s != nil && !((s.Arity >= 0 && len(a) == s.Arity) || (s.Arity < 0 && len(a) >= -s.Arity)) {
		w.Error(command.WrongArity("client|" + sub))
		return
	}
	switch {
	case sub == "id" && len(a) == 2:
		w.Int(c.ID)
	case sub == "setname" && len(a) == 3:
		if !client.ValidName(a[2]) {
			w.Error(client.ErrName)
			return
		}
		n := string(a[2])
		c.setInfo(func() { c.info.name = n })
		w.SimpleString("OK")
	case sub == "getname" && len(a) == 2:
		c.info.Lock()
		n := c.info.name
		c.info.Unlock()
		if n == "" {
			w.Null()
		} else {
			w.BulkString(n)
		}
	case sub == "setinfo" && len(a) == 4:
		attr, val := strings.ToLower(string(a[2])), string(a[3])
		if !client.ValidName(a[3]) && val != "" {
			w.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
			return
		}
		switch attr {
		case "lib-name":
			c.setInfo(func() { c.info.lib = val })
		case "lib-ver":
			c.setInfo(func() { c.info.libver = val })
		default:
			w.Error("ERR Unrecognized option '" + string(a[2]) + "'")
			return
		}
		w.SimpleString("OK")
	case sub == "list":
		clientList(c, a, w)
	case sub == "info" && len(a) == 2:
		now := time.Now()
		info := c.snapshot(now)
		info.ArgvMem = argvLen(a)
		w.Verbatim("txt", append(info.Append(nil, now), '\n'))
	case sub == "kill" && len(a) >= 3:
		cmdClientKill(c, a, w)
	case (sub == "no-evict" || sub == "no-touch") && len(a) == 3:
		on, err := config.ParseYesNo(strings.Replace(strings.Replace(strings.ToLower(string(a[2])), "on", "yes", 1), "off", "no", 1))
		if err != nil {
			w.Error(command.ErrSyntax)
			return
		}
		if sub == "no-evict" {
			c.setInfo(func() { c.info.noEvict = on })
		}
		w.SimpleString("OK")
	case sub == "pause":
		clientPause(c, a, w) // pause.go
	case sub == "unblock":
		clientUnblock(c, a, w) // blocking.go
	case sub == "unpause":
		c.srv.unpause()
		w.SimpleString("OK")
	case sub == "reply" && len(a) == 3:
		// The mode applies as the reply is gated (collectReplies, the
		// client package's Gate); only ON answers.
		switch strings.ToLower(string(a[2])) {
		case "on":
			w.SimpleString("OK")
		case "off", "skip":
		default:
			w.Error(command.ErrSyntax)
		}
	case sub == "tracking":
		clientTracking(c, a, w)
	case sub == "caching":
		clientCaching(c, a, w)
	case sub == "getredir":
		clientGetRedir(c, w)
	case sub == "trackinginfo":
		tracking.WriteInfo(w, c.tracker, c.caching)
	case sub == "help":
		lines := []string{"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ID", "GETNAME", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>", "LIST", "INFO",
			"KILL <ip:port> | ID <id> | ADDR <ip:port> | LADDR <ip:port>", "NO-EVICT (ON|OFF)",
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] [NOLOOP]",
			"CACHING (YES|NO)", "GETREDIR", "TRACKINGINFO", "PAUSE <timeout> [WRITE|ALL]", "UNPAUSE", "UNBLOCK <clientid> [TIMEOUT|ERROR]", "HELP"}
		w.Array(len(lines))
		for _, l := range lines {
			w.SimpleString(l)
		}
	default:
		w.Error("ERR unknown subcommand '" + command.TruncArg(a[1]) + "'. Try CLIENT HELP.")
	}
}

// cmdClientKill is CLIENT KILL addr (OK, or an error when no client has
// that address) or CLIENT KILL <filter> <value> ... (the number of clients
// killed; every filter must match; SKIPME yes by default).
func cmdClientKill(c *Conn, a [][]byte, w *resp.Writer) {
	if len(a) == 3 { // old form: CLIENT KILL addr
		for _, o := range c.srv.clientList() {
			if o.addrString() == string(a[2]) {
				o.kill(c)
				w.SimpleString("OK")
				return
			}
		}
		w.Error("ERR No such client")
		return
	}
	f, e := client.ParseKill(a[2:], func(u string) bool { return c.srv.acl.Lookup(u) != nil })
	if e != "" {
		w.Error(e)
		return
	}
	killed, now := 0, time.Now()
	for _, o := range c.srv.clientList() {
		if info := o.snapshot(now); (len(f.IDs) == 0 || o.ID == f.IDs[0]) && f.Match(&info, o == c, now) {
			o.kill(c)
			killed++
		}
	}
	w.Int(int64(killed))
}

// clientList is CLIENT LIST [TYPE type | ID id ...].
func clientList(c *Conn, a [][]byte, w *resp.Writer) {
	f, e := client.ParseList(a[2:])
	if e != "" {
		w.Error(e)
		return
	}
	var out []byte
	now := time.Now()
	add := func(o *Conn) {
		if info := o.snapshot(now); f.Match(&info, o == c, now) {
			if o == c {
				info.ArgvMem = argvLen(a) // the command running, as Redis
			}
			out = append(info.Append(out, now), '\n')
		}
	}
	if f.IDs != nil {
		for _, id := range f.IDs {
			if o := c.srv.connByID(id); o != nil {
				add(o)
			}
		}
	} else {
		for _, o := range c.srv.clientList() {
			add(o)
		}
	}
	w.Verbatim("txt", out)
}

// kill closes o; a client killing itself closes after this reply.
func (o *Conn) kill(by *Conn) {
	if o == by {
		by.closing = true
		return
	}
	_ = o.gc.Close()
}

func (c *Conn) addrString() string {
	c.info.Lock()
	defer c.info.Unlock()
	return c.info.addr
}

// connByID is the connected client with that ID, nil when none.
func (s *Server) connByID(id int64) *Conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	return s.conns[id]
}

func (s *Server) clientList() []*Conn {
	s.connsMu.Lock()
	out := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		out = append(out, c)
	}
	s.connsMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// describe renders the client as a CLIENT LIST line.
func (c *Conn) describe() string {
	now := time.Now()
	info := c.snapshot(now)
	return string(info.Append(nil, now))
}

// snapshot is the client as CLIENT LIST shows it; any goroutine.
func (c *Conn) snapshot(now time.Time) client.Info {
	i := client.Info{ID: c.ID, FD: c.gc.Fd(), Cmd: "NULL", Redir: -1}
	if cmd := c.lastCmd.Load(); cmd != nil {
		i.Cmd = command.FullName(cmd, c.lastSub.Load())
	}
	i.Flags.Blocked = c.waiting.Load()
	if o := c.tracker.Options(); o != nil {
		i.Flags.Tracking, i.Flags.Bcast, i.Redir = true, o.BCAST, o.Redirect
	}
	i.Idle = time.Duration(nanotime() - c.lastActive.Load())
	c.bufferFields(&i)
	c.info.Lock()
	defer c.info.Unlock()
	i.Addr, i.LAddr, i.Name, i.Created, i.DB = c.info.addr, c.info.laddr, c.info.name, c.info.created, c.info.db
	i.Sub, i.PSub, i.SSub = c.info.subs[subChannel], c.info.subs[subPattern], c.info.subs[subShard]
	i.Flags.Monitor, i.Flags.Subscribed = c.info.monitor, i.Sub+i.PSub+i.SSub > 0
	i.Flags.NoEvict = c.info.noEvict
	i.User, i.Resp, i.LibName, i.LibVer = c.info.user.Name(), c.info.proto, c.info.lib, c.info.libver
	return i
}

// gateCmd is p as CLIENT REPLY's gate sees it (collectReplies).
func (c *Conn) gateCmd(p *pending) client.Cmd {
	if p.cmd == nil || p.rejected || p.queued {
		return client.Cmd{}
	}
	g := client.CmdOf(p.cmd.Name, p.args)
	g.Exec = p.gateExec
	return g
}

// execGate is m's commands as the gate sees them (nil: EXEC's reply is
// gated whole).
func execGate(m *multiState) []client.Cmd {
	if m == nil || m.dirty {
		return nil
	}
	return client.ExecCmds(len(m.cmds), func(i int) (string, [][]byte) { return m.cmds[i].cmd.Name, m.cmds[i].args })
}

func argvLen(args [][]byte) (n int64) {
	for _, a := range args {
		n += int64(len(a))
	}
	return n
}

// local reports whether the client is on this machine, as Redis's
// islocalClient: a unix socket, or 127.0.0.1 or ::1 (enable-debug-command
// local).
func (c *Conn) local() bool {
	host, _, err := net.SplitHostPort(c.info.addr)
	return err != nil || host == "127.0.0.1" || host == "::1"
}
