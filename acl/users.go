package acl

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/command"
)

// User is a user as connections hold it: its name and its current rules.
type User struct {
	name    string
	rules   atomic.Pointer[Rules]
	deleted atomic.Bool
}

func newUser(name string, r *Rules) *User {
	u := &User{name: name}
	u.rules.Store(r)
	return u
}

// Name is u's name ("default" for nil: a connection made before users,
// such as a test's bare one).
func (u *User) Name() string {
	if u == nil {
		return "default"
	}
	return u.name
}

// Rules are u's current rules (one atomic load).
func (u *User) Rules() *Rules { return u.rules.Load() }

// Master is the user a replica applies its master's stream as: every
// permission, whatever the default user's.
var Master = newUser("default", &Rules{name: "default", enabled: true, nopass: true, allKeys: true, allChans: true, unrestricted: true})

// LogMax is how many entries ACL LOG keeps.
const LogMax = 128

// LogEntry is one entry of ACL LOG: a denial, with how often it recurred.
type LogEntry struct {
	Count                   int
	Reason, Context, Object string
	Username, ClientInfo    string
	Created, Updated        time.Time
}

// Users are the server's users by name, and the ACL LOG.
type Users struct {
	mu    sync.Mutex
	users map[string]*User
	def   *User
	log   []*LogEntry // newest first
}

// New makes the users of a server starting without an ACL file: the
// default user, with every permission and requirepass as its password
// (none: nopass).
func New(t *command.Table, requirepass string) *Users {
	a := &Users{users: map[string]*User{}}
	a.def = newUser("default", newRules(t, "default", true).finish())
	a.users["default"] = a.def
	if requirepass != "" {
		a.SetRequirepass(requirepass)
	}
	return a
}

// Default is the default user, the one a new connection starts as.
func (a *Users) Default() *User { return a.def }

// SetRequirepass makes pass the default user's only password ("" removes
// it: nopass), as CONFIG SET requirepass does.
func (a *Users) SetRequirepass(pass string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.def.Rules().clone()
	if pass == "" {
		r.nopass, r.passwords = true, nil
	} else {
		r.nopass, r.passwords = false, []string{hashPassword(pass)}
	}
	a.def.rules.Store(r.finish())
}

// Open reports whether a new connection starts authenticated (as the
// default user: enabled without a password).
func (a *Users) Open() bool {
	r := a.def.Rules()
	return r.enabled && r.nopass
}

// Names are the users' names, sorted.
func (a *Users) Names() []string {
	a.mu.Lock()
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	a.mu.Unlock()
	sort.Strings(names)
	return names
}

// Lookup is the user named name, nil when there is none.
func (a *Users) Lookup(name string) *User {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// Authenticate checks a user's password; the user when it matches and
// the user is enabled.
func (a *Users) Authenticate(user, pass []byte) *User {
	a.mu.Lock()
	u := a.users[string(user)]
	a.mu.Unlock()
	if u == nil {
		return nil
	}
	r := u.Rules()
	if !r.enabled {
		return nil
	}
	if r.nopass {
		return u
	}
	h := hashPassword(string(pass))
	for _, p := range r.passwords {
		if p == h {
			return u
		}
	}
	return nil
}

// SetUser is ACL SETUSER: it applies rules to user name (created when
// new: off, no permissions), all or nothing; the error is the reply.
func (a *Users) SetUser(t *command.Table, name string, rules [][]byte) error {
	if strings.ContainsAny(name, " \t\r\n") || name == "" {
		return errors.New("ERR Usernames can't contain spaces or null characters")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var r *Rules
	if u != nil {
		r = u.Rules().clone()
	} else {
		r = newRules(t, name, false)
	}
	for _, b := range rules {
		rule := string(b)
		if rule == "" {
			return errors.New("ERR Error in ACL SETUSER modifier '': Syntax error")
		}
		if why := r.apply(t, rule); why != "" {
			return errors.New("ERR Error in ACL SETUSER modifier '" + rule + "': " + why)
		}
	}
	if u == nil {
		u = &User{name: name}
		a.users[name] = u
	}
	u.rules.Store(r.finish())
	return nil
}

// Delete is ACL DELUSER: the users named go; it returns those that were
// there (whose connections the caller closes). The error is the reply.
func (a *Users) Delete(names [][]byte) ([]*User, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range names {
		if string(n) == "default" {
			return nil, errors.New("ERR The 'default' user cannot be removed")
		}
	}
	var gone []*User
	for _, n := range names {
		if u := a.users[string(n)]; u != nil {
			delete(a.users, string(n))
			u.deleted.Store(true)
			gone = append(gone, u)
		}
	}
	return gone, nil
}

// Log adds a denial to ACL LOG (user: the one named, for a failed AUTH;
// client: the client as CLIENT LIST describes it), merging it with a
// recent equal one, which moves to the top.
func (a *Users) Log(user, reason, context, object, client string) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.log {
		if e.Reason == reason && e.Context == context && e.Object == object && e.Username == user &&
			now.Sub(e.Updated) < time.Minute {
			e.Count++
			e.Updated, e.ClientInfo = now, client
			copy(a.log[1:i+1], a.log[:i])
			a.log[0] = e
			return
		}
	}
	e := &LogEntry{Count: 1, Reason: reason, Context: context, Object: object, Username: user,
		ClientInfo: client, Created: now, Updated: now}
	a.log = append([]*LogEntry{e}, a.log...)
	if len(a.log) > LogMax {
		a.log = a.log[:LogMax]
	}
}

// LogEntries are copies of the newest count entries of ACL LOG.
func (a *Users) LogEntries(count int) []LogEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	entries := make([]LogEntry, 0, min(count, len(a.log)))
	for _, e := range a.log[:min(count, len(a.log))] {
		entries = append(entries, *e)
	}
	return entries
}

// ResetLog is ACL LOG RESET.
func (a *Users) ResetLog() {
	a.mu.Lock()
	a.log = nil
	a.mu.Unlock()
}
