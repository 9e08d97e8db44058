package acl

import (
	"fmt"
	"os"
	"strings"

	"github.com/dfly/dfly/atomicfile"
	"github.com/dfly/dfly/command"
)

// Load replaces every user by those of the ACL file at path (the default
// user, when the file has none, by its initial rules), all or nothing; it
// returns the users it removed, whose connections the caller closes.
func (a *Users) Load(t *command.Table, path string) ([]*User, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	users, err := parseFile(t, path, string(data))
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var gone []*User
	for name, u := range a.users {
		if r := users[name]; r != nil {
			u.rules.Store(r)
			delete(users, name)
		} else {
			delete(a.users, name)
			u.deleted.Store(true)
			gone = append(gone, u)
		}
	}
	for name, r := range users {
		a.users[name] = newUser(name, r)
	}
	return gone, nil
}

// parseFile reads the users of an ACL file (path names it in errors),
// with a default user.
func parseFile(t *command.Table, path, data string) (map[string]*Rules, error) {
	users := map[string]*Rules{}
	for n, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		const unchanged = ". WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
		if len(f) < 2 || f[0] != "user" {
			return nil, fmt.Errorf("%s:%d should start with user keyword followed by the username%s", path, n+1, unchanged)
		}
		if _, dup := users[f[1]]; dup {
			return nil, fmt.Errorf("WARNING: Duplicate user '%s' found on line %d%s", f[1], n+1, unchanged)
		}
		r := newRules(t, f[1], false)
		for _, rule := range f[2:] {
			if why := r.apply(t, rule); why != "" {
				return nil, fmt.Errorf("%s:%d: %s%s", path, n+1, why, unchanged)
			}
		}
		users[f[1]] = r.finish()
	}
	if users["default"] == nil {
		users["default"] = newRules(t, "default", true).finish()
	}
	return users, nil
}

// Save writes every user to path as ACL LIST shows it, atomically.
func (a *Users) Save(path string) error {
	var b strings.Builder
	for _, n := range a.Names() {
		if u := a.Lookup(n); u != nil {
			b.WriteString(u.Rules().Describe() + "\n")
		}
	}
	return atomicfile.Write(path, []byte(b.String()))
}
